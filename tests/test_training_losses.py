"""Loss terms, labels, masking and the schedule on hand-checkable cases."""

from __future__ import annotations

import math

import pytest
import torch

from tags.backends.masked_lm import load_tokenizer
from tags.core.types import Edit
from tags.data import NegativePools
from tags.modeling import tiny_mlm_path
from tags.training.config import PhaseConfig
from tags.training.losses import PoolTripletLoss, TokenCrossEntropy, global_mean
from tags.training.optim import learning_rate, phase_of
from tags.training.recipes.base import StepContext
from tags.training.recipes.tags_dc import mask_tokens
from tags.training.retrieval import draw_pool
from tags.training.synthetic import FixedPoolSource, SyntheticRequest, label_negatives


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(tiny_mlm_path())


def test_token_cross_entropy_ignores_unlabelled():
    logits = torch.zeros(2, 3, 4)
    logits[0, 0] = torch.tensor([2.0, 0.0, 0.0, 0.0])
    labels = torch.tensor([[0, -100, 1], [-100, -100, 3]])
    loss = TokenCrossEntropy()(logits, labels)
    expected = (math.log(1 + 3 * math.exp(-2.0)) + 2 * math.log(4.0)) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert TokenCrossEntropy()(torch.zeros(0, 5), torch.zeros(0, dtype=torch.long)).item() == 0.0


def test_wod_class_weights_scale_each_token_and_divide_by_the_token_count():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [0.5, 0.5], [3.0, 3.0]])
    labels = torch.tensor([0, 1, 1, -100])  # 0 = replaced token, 1 = matches the positive
    nll = [math.log(1 + math.exp(-2.0)), math.log(1 + math.exp(-1.0)), math.log(2.0)]
    plain = TokenCrossEntropy()(logits, labels).item()
    official = TokenCrossEntropy([1.0, 0.11])(logits, labels).item()
    assert plain == pytest.approx(sum(nll) / 3, rel=1e-6)
    assert official == pytest.approx((1.0 * nll[0] + 0.11 * (nll[1] + nll[2])) / 3, rel=1e-6)


def test_istm_is_mean_triplet_over_the_pool():
    positive = torch.tensor([0.9, 0.5, 0.7])
    negatives = torch.tensor([[0.8, 0.1], [0.6, 0.7], [0.0, 0.0]])
    mask = torch.tensor([[True, True], [True, False], [False, False]])
    loss, out = PoolTripletLoss("all", margin=0.2)(positive, negatives, mask)
    # anchor 0: ([0.1]_+ + [-0.6]_+) / 2 = 0.05; anchor 1: 0.3; anchor 2 has no negative
    assert out.loss.tolist() == pytest.approx([0.05, 0.3, 0.0], abs=1e-6)
    assert loss.item() == pytest.approx((0.05 + 0.3) / 2, abs=1e-6)


def test_itm_pool_loss_with_hardest_miner_picks_the_hardest():
    positive = torch.tensor([0.5], requires_grad=True)
    negatives = torch.tensor([[0.1, 0.45, 0.2]], requires_grad=True)
    loss, out = PoolTripletLoss("hardest", margin=0.2)(positive, negatives)
    assert out.index.tolist() == [1]
    assert loss.item() == pytest.approx(0.15, abs=1e-6)
    loss.backward()
    assert negatives.grad.tolist() == [[0.0, 1.0, 0.0]] and positive.grad.tolist() == [-1.0]


def test_global_mean_single_process():
    assert global_mean(torch.tensor(6.0), 4).item() == pytest.approx(1.5)
    assert global_mean(torch.tensor(0.0), 0).item() == 0.0


def test_wod_woc_targets(tokenizer):
    edit = Edit("object", "dog", "cat", 2, 5)
    labelled = label_negatives(["a dog runs"], [[("a cat runs", (edit,))]], tokenizer, 20)
    ids = tokenizer("a cat runs")["input_ids"]
    pos = tokenizer("a dog runs")["input_ids"]
    assert labelled.input_ids == [ids] and labelled.owner == [0]
    # [CLS] a cat runs [SEP]: special tokens ignored, 'cat' does not match the positive
    assert labelled.wod_labels == [[-100, 1, 0, 1, -100]]
    assert labelled.woc_labels == [[-100, pos[1], pos[2], pos[3], -100]]
    # WoD loss of a head that is sure every token matches: only the edited token costs
    logits = torch.tensor([[[-5.0, 5.0]] * len(ids)])
    loss = TokenCrossEntropy()(logits, torch.tensor(labelled.wod_labels))
    expected = (2 * math.log1p(math.exp(-10.0)) + math.log1p(math.exp(10.0))) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_label_negatives_truncates_keeping_sep(tokenizer):
    edit = Edit("object", "dog", "cat", 2, 5)
    text = "a dog runs on the long sandy beach"
    neg = text.replace("dog", "cat")
    out = label_negatives([text], [[(neg, (edit,))]], tokenizer, 5)
    assert len(out.input_ids[0]) == 5 and out.input_ids[0][-1] == tokenizer.sep_token_id
    assert len(out.wod_labels[0]) == len(out.woc_labels[0]) == 5


def test_fixed_pool_source_uses_the_generated_positive(tmp_path):
    path = tmp_path / "neg.jsonl"
    path.write_text(
        '{"image_id": 0, "caption_id": 3, "positive": "a dog runs", "negative": "a cat runs",'
        ' "edits": [{"type": "object", "original": "dog", "replacement": "cat", "start": 2,'
        ' "end": 5}]}\n'
    )
    request = SyntheticRequest(
        ["a  dog runs"], ["3"], [[]], torch.zeros(1), torch.zeros(1), torch.zeros(1), 0
    )
    negatives = FixedPoolSource(NegativePools.from_jsonl(path), top_m=4)(None, request)
    assert [n for n, _ in negatives[0]] == ["a cat runs"]
    assert request.texts == ["a dog runs"]  # whitespace as the edits expect


def test_mask_tokens_is_seeded_and_spares_special_tokens():
    ids = torch.tensor([[101, 5, 6, 7, 8, 102, 0], [101, 9, 102, 0, 0, 0, 0]])
    att = (ids != 0).long()
    gens = lambda: [torch.Generator().manual_seed(s) for s in (1, 2)]  # noqa: E731
    masked, labels = mask_tokens(ids, att, gens(), 0.5, 103, 30522)
    again, labels2 = mask_tokens(ids, att, gens(), 0.5, 103, 30522)
    assert torch.equal(masked, again) and torch.equal(labels, labels2)
    chosen = labels != -100
    assert chosen.sum(1).min() >= 1  # at least one per row
    assert not chosen[:, 0].any() and not chosen[0, 5] and not chosen[1, 2]  # [CLS]/[SEP]
    assert torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(masked[~chosen], ids[~chosen])


def test_schedule_warms_up_and_decays_per_phase():
    phases = [PhaseConfig("a", 10, 1.0), PhaseConfig("b", 5, 0.5)]
    lrs = [learning_rate(s, phases, 0.1) for s in range(15)]
    assert lrs[0] == pytest.approx(0.5)  # warm-up: 1 step of 10
    assert lrs[1] == pytest.approx(1.0) and lrs[9] == pytest.approx(1.0 / 9)
    assert lrs[10] == pytest.approx(0.5) and lrs[14] == pytest.approx(0.1)
    assert [phase_of(s, [10, 5]) for s in (0, 9, 10, 14, 99)] == [0, 0, 1, 1, 1]


def test_pools_and_generators_are_deterministic():
    ctx = StepContext(step=3, phase_index=0, phase=None, weights={}, seed=7)
    a = torch.rand(3, generator=ctx.generator(1, 2))
    assert torch.equal(a, torch.rand(3, generator=ctx.generator(1, 2)))
    assert not torch.equal(a, torch.rand(3, generator=ctx.generator(2, 1)))
    exclude = torch.tensor([True, False, False, True, False])
    pool = draw_pool(5, 10, exclude, torch.Generator().manual_seed(0))
    assert sorted(pool.tolist()) == [1, 2, 4]
