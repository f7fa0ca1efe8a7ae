"""Match scores rank in fp32 under bf16/fp16 autocast: a half-precision sigmoid rounds every
logit above ~6 to exactly 1.0, so saturated candidates would tie and be kept in generation
order (synthetic top-m, retrieval top-k), SelHN would see no gap and FNE a bf16 posterior."""

from __future__ import annotations

import contextlib
import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from tags.backends.masked_lm import load_tokenizer
from tags.modeling import TagsConfig, TagsModel, tiny_mlm_path

FEATURE = 6


def bf16_autocast() -> contextlib.AbstractContextManager:
    return torch.autocast("cpu", dtype=torch.bfloat16)


class FixedLogits(nn.Module):
    """An ITM head whose logits are given (row ``r`` gets ``logits[r]``), in the dtype the
    pooled states have, as a ``Linear`` head under autocast gives them (bf16)."""

    def __init__(self, logits: list[float]) -> None:
        super().__init__()
        self.register_buffer("logits", torch.tensor(logits))

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return (pooled.sum(-1) * 0 + self.logits[: pooled.shape[0]]).to(pooled.dtype)


def tiny_model(logits: list[float], vocab_size: int = 99) -> TagsModel:
    torch.manual_seed(0)
    config = TagsConfig(
        vocab_size=vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=37, max_position_embeddings=32, region_feature_size=FEATURE,
    )  # fmt: skip
    model = TagsModel(config).eval()
    model.itm_head = FixedLogits(logits)
    return model


def itm_scores(model: TagsModel, rows: int, autocast: bool) -> torch.Tensor:
    batch = dict(
        input_ids=torch.tensor([[1, 7, 8, 9, 2]] * rows),
        region_features=torch.randn(rows, 3, FEATURE, generator=torch.Generator().manual_seed(0)),
        region_boxes=torch.tensor([[0, 0, 1, 1, 1, 1, 1.0]] * 3).expand(rows, 3, 7),
    )
    with torch.no_grad(), bf16_autocast() if autocast else contextlib.nullcontext():
        return model(**batch, heads=("itm",)).itm_scores


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_pair_probability_is_fp32_and_ordered_for_saturated_logits(dtype):
    from tags.backends.base import VLBackend

    backend = VLBackend(nn.Linear(1, 1))
    logits = torch.tensor([6.5, 7.0, 8.0], dtype=dtype)
    with torch.autocast("cpu", dtype=dtype):
        p = backend.pair_probability(logits)
    assert p.dtype == torch.float32
    assert p[0] < p[1] < p[2] < 1.0


def test_model_itm_scores_are_fp32_strictly_ordered_and_unchanged_in_fp32():
    model = tiny_model([6.5, 7.0, 8.0])
    mixed = itm_scores(model, 3, autocast=True)
    assert mixed.dtype == torch.float32
    assert mixed[0] < mixed[1] < mixed[2] < 1.0
    full = itm_scores(model, 3, autocast=False)
    # the logits are exact in bf16: the fp32 path gives the very same probabilities
    assert torch.equal(full, torch.sigmoid(torch.tensor([6.5, 7.0, 8.0])))
    assert torch.equal(mixed, full)


def test_negative_scorer_top_m_keeps_the_highest_logits_under_bf16():
    from tags.backends.masked_lm import TagsPairScorer
    from tags.core.regions import Regions, whole_image_boxes
    from tags.core.types import Candidate
    from tags.negatives.selection import select

    tokenizer = load_tokenizer(tiny_mlm_path())
    texts = ["a dog runs .", "a cat runs .", "a cow runs ."]  # generation order
    model = tiny_model([6.5, 8.0, 7.0], tokenizer.vocab_size)  # one logit per text, in order
    scorer = TagsPairScorer(model, tokenizer, "cpu")
    regions = Regions(np.ones((2, FEATURE), dtype=np.float32), whole_image_boxes(2))
    candidates = [Candidate(t, ()) for t in texts]
    with bf16_autocast():
        kept = select(candidates, 2, random.Random(0), scorer=scorer, image=regions)
    assert [c.text for c, _ in kept] == ["a cat runs .", "a cow runs ."]
    assert kept[0][1] > kept[1][1]


def test_selhn_takes_the_hardest_branch_on_a_large_logit_gap_under_bf16():
    from tags.mining.selhn import BRANCH_HARDEST, SelHNMiner

    # sigmoid(6.1875) - sigmoid(4.34375) = 0.0108 > eps; in bf16 the gap rounds to 0.0078
    model = tiny_model([6.1875, 4.34375, 0.0, -1.0])
    for autocast in (True, False):
        scores = itm_scores(model, 4, autocast)
        out = SelHNMiner(eps=0.01)(scores[1:][None], scores[:1], torch.ones(1, 3, dtype=torch.bool))
        assert out.branch.tolist() == [BRANCH_HARDEST]
        assert out.extras["gap"].item() == pytest.approx(0.01077, abs=1e-4)


def test_fne_posterior_and_weights_are_fp32_for_bf16_scores():
    from tags.mining.fne import FNEMiner

    miner = FNEMiner(min_count=1)
    miner.stats.update(torch.tensor([0.99, 0.995, 0.999]), torch.tensor([0.5, 0.9, 0.97]))
    scores = torch.tensor([[0.9961, 0.9980, 0.9990]]).to(torch.bfloat16)
    assert miner.posterior(scores).dtype == torch.float32
    weights = miner.sampling_weights(
        scores, torch.tensor([1.0], dtype=torch.bfloat16), torch.ones(1, 3, dtype=torch.bool)
    )
    assert weights.dtype == torch.float32


class Bf16Scorer(nn.Module):
    """Poses as a TagsModel whose ITM logits (bf16, as under autocast) are
    ``6 + 0.125 * (sum of the caption's token ids mod 32)``: all saturated in bf16."""

    config = SimpleNamespace(model_type="tags")

    def score_pairs(self, input_ids, attention_mask, region_features, region_boxes, region_mask):
        return SimpleNamespace(logits=caption_logit(input_ids * attention_mask))


def caption_logit(ids: torch.Tensor) -> torch.Tensor:
    return (6.0 + 0.125 * (ids.sum(-1) % 32)).to(torch.bfloat16)


def test_retrieval_top_k_follows_the_logits_under_bf16(tmp_path):
    from tags.data import PairCollator, build_dataset, write_synthetic_dataset
    from tags.training.retrieval import retrieve_negatives

    paths = write_synthetic_dataset(tmp_path, num_images=30, num_regions=2, feature_size=4)
    config = SimpleNamespace(
        captions=str(paths["captions"]), features=str(paths["features"]), format="precomp",
        split=None, max_text_len=16, max_regions=None, limit_images=None,
    )  # fmt: skip
    dataset = build_dataset(config, load_tokenizer(tiny_mlm_path()))
    batch = PairCollator(0)([dataset[i] for i in (3, 57)])
    retrieval = SimpleNamespace(mode="pool", pool_size=60, num_negatives=8, score_batch_size=32)
    gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
    caps, valid, _, _ = retrieve_negatives(
        Bf16Scorer(), dataset, batch, gens, retrieval, bf16_autocast
    )
    assert valid.all()
    logit = torch.stack(
        [caption_logit(torch.tensor(dataset.tokens(c))) for c in range(len(dataset))]
    )
    for row, seed in enumerate((1, 2)):
        from tags.training.retrieval import draw_pool

        image = int(batch["image_ids"][row])
        pool = draw_pool(
            len(dataset), 60, dataset.image_of == image, torch.Generator().manual_seed(seed)
        )
        best = logit[pool].float().topk(8).values
        assert logit[caps[row]].float().tolist() == best.tolist()


def test_itm_head_logits_are_fp32_and_keep_close_pairs_apart_under_bf16():
    """A ``Linear`` under bf16 autocast gives 3-digit logits: 6.50 and 6.51 would both be 6.5."""
    from heads import ITMHead

    head = ITMHead(4).eval()
    with torch.no_grad():
        head.classifier.weight.copy_(torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
        head.classifier.bias.zero_()
    pooled = torch.tensor([[6.50, 0, 0, 0], [6.51, 0, 0, 0], [6.52, 0, 0, 0]])
    with torch.no_grad(), bf16_autocast():
        logits = head(pooled)
    assert logits.dtype == torch.float32
    assert logits[0] < logits[1] < logits[2]
    with torch.no_grad():
        torch.testing.assert_close(
            head(pooled), head.classifier(pooled).squeeze(-1), rtol=0, atol=0
        )


@pytest.mark.parametrize("name", ["blip", "blip-2", "clip", "siglip"])
def test_backend_pair_logits_are_fp32_under_bf16(tmp_path, name):
    """The score every backend ranks by leaves the model in fp32 (the evaluator's cross
    mode, the engine's top-m), and in fp32 runs it equals the model's own forward."""
    from research.hf_tiny import MAKERS, render_images

    from tags.backends import load_backend

    backend = load_backend(MAKERS[name](tmp_path / name))
    backend.model.eval()
    captions = ["a red dog runs on the grass", "two cats sit near a table"]
    text, pixels = backend.text_inputs(captions), backend.image_inputs(render_images(2))
    with torch.no_grad():
        full = backend.score_pairs(text, pixels)
        with bf16_autocast():
            half = backend.score_pairs(text, pixels)
    assert full.dtype == half.dtype == torch.float32
    torch.testing.assert_close(half, full, rtol=0.05, atol=0.05)
