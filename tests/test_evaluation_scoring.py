"""Score matrices of a tiny TagsModel: cross vs a per-pair loop, dual, two-stage, protocols,
and two CPU processes (this file is also the ``torchrun`` script) vs one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tags.evaluation import (
    RetrievalImages,
    RetrievalTexts,
    encode_images,
    evaluate_retrieval,
    image_subset,
    kfold_metrics,
    rerank_topk,
    retrieval_metrics,
    score_matrix_cross,
    score_matrix_dual,
)
from tags.modeling import TagsConfig, TagsModel

VOCAB, FEATURE = 99, 12
N_IMAGES = 7
COUNTS = [1, 7, 2, 1, 2, 1, 1]  # captions per image (15 texts)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run much faster single-threaded (no thread wake-ups on a busy CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_model() -> TagsModel:
    torch.manual_seed(0)
    config = TagsConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=24,
        region_feature_size=FEATURE,
        max_regions=8,
        mask_token_id=4,
    )
    model = TagsModel(config).eval()
    with torch.no_grad():  # spread the ITM logits so the ranking is not flat
        model.itm_head.classifier.weight.normal_(0.0, 10.0)
    return model


def make_data(seed: int = 0) -> tuple[RetrievalImages, RetrievalTexts]:
    """Images with 2..6 regions (padded), captions of 3..9 tokens (right-padded)."""
    g = torch.Generator().manual_seed(seed)
    features, boxes = [], []
    for i in range(N_IMAGES):
        r = 2 + i % 5
        corners = torch.rand(r, 2, 2, generator=g).sort(dim=1).values
        boxes.append(torch.cat([corners[:, 0], corners[:, 1]], dim=1))  # 4-d, expanded
        features.append(torch.randn(r, FEATURE, generator=g))
    images = RetrievalImages.from_regions(features, boxes, ids=[f"img{i}" for i in range(7)])
    txt2img = torch.as_tensor(np.random.default_rng(seed).permutation(np.repeat(range(7), COUNTS)))
    lengths = torch.randint(3, 10, (txt2img.numel(),), generator=g)
    ids = torch.randint(5, VOCAB, (txt2img.numel(), 9), generator=g)
    ids[:, 0] = 1
    mask = (torch.arange(9)[None] < lengths[:, None]).long()
    return images, RetrievalTexts(ids * mask, txt2img, mask)


def pair_loop(model: TagsModel, images, texts) -> torch.Tensor:
    """ITM logits, one forward per pair, each without padding."""
    out = torch.empty(len(images), len(texts))
    with torch.no_grad():
        for i in range(len(images)):
            r = int(images.mask[i].sum())
            for j in range(len(texts)):
                n = int(texts.attention_mask[j].sum())
                res = model.score_pairs(
                    input_ids=texts.input_ids[j : j + 1, :n],
                    region_features=images.features[i : i + 1, :r],
                    region_boxes=images.boxes[i : i + 1, :r],
                )
                out[i, j] = res.logits[0]
    return out


@pytest.fixture(scope="module")
def setup():
    model, (images, texts) = make_model(), make_data()
    return model, images, texts, pair_loop(model, images, texts)


@pytest.mark.parametrize("batch_size", [4, 64])
def test_cross_matrix_equals_a_per_pair_loop(setup, batch_size):
    model, images, texts, reference = setup
    sims = score_matrix_cross(model, images, texts, batch_size=batch_size)
    assert sims.shape == (7, 15) and sims.dtype == torch.float32
    torch.testing.assert_close(sims, reference, atol=1e-4, rtol=1e-4)
    assert sims.max() - sims.min() > 100 * 1e-4  # not flat: the comparison means something


def test_cross_matrix_of_scores_and_training_mode_restored(setup):
    model, images, texts, reference = setup
    model.train()
    scores = score_matrix_cross(model, images, texts, batch_size=64, use_logits=False)
    assert model.training
    model.eval()
    torch.testing.assert_close(scores, torch.sigmoid(reference), atol=1e-5, rtol=1e-4)
    assert ((scores >= 0) & (scores <= 1)).all()


def test_dual_matrix_is_the_product_of_the_embeddings(setup):
    model, images, texts, _ = setup
    sims = score_matrix_dual(model, images, texts, batch_size=3)
    with torch.no_grad():
        img = torch.cat(
            [
                model.encode_image(
                    images.features[i : i + 1, : int(images.mask[i].sum())],
                    images.boxes[i : i + 1, : int(images.mask[i].sum())],
                )
                for i in range(7)
            ]
        )
        txt = model.encode_text(texts.input_ids, texts.attention_mask)
    torch.testing.assert_close(sims, img @ txt.T, atol=1e-5, rtol=1e-5)
    assert sims.abs().max() <= 1 + 1e-5


def test_two_stage_with_k_covering_everything_equals_cross(setup):
    model, images, texts, cross = setup
    dual = score_matrix_dual(model, images, texts)
    i2t, t2i = rerank_topk(model, images, texts, dual, k=len(texts), batch_size=6)
    torch.testing.assert_close(i2t, cross, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(t2i, cross, atol=1e-5, rtol=1e-5)


def test_two_stage_reranks_only_the_top_k(setup):
    model, images, texts, cross = setup
    dual = score_matrix_dual(model, images, texts)
    k = 3
    i2t, t2i = rerank_topk(model, images, texts, dual, k=k, batch_size=4)
    for matrix, d, c, dim in ((i2t, dual, cross, 1), (t2i, dual.T, cross.T, 0)):
        m = matrix if dim == 1 else matrix.T
        for row in range(d.shape[0]):
            top = torch.argsort(-d[row], stable=True)[:k]
            rest = torch.ones(d.shape[1], dtype=torch.bool)
            rest[top] = False
            torch.testing.assert_close(m[row, top], c[row, top], atol=1e-5, rtol=1e-5)
            assert m[row, rest].max() < m[row, top].min()  # below every reranked score
            # outside the top-k the dual order is kept
            outside = m[row, rest]
            assert torch.equal(
                torch.argsort(-outside, stable=True), torch.argsort(-d[row, rest], stable=True)
            )
    metrics = retrieval_metrics(i2t, texts.txt2img, t2i_sims=t2i)
    assert 0 <= metrics["rsum"] <= 600


def test_two_stage_fusion_reranks_by_dual_plus_weighted_cross(setup):
    model, images, texts, cross = setup
    dual = score_matrix_dual(model, images, texts)
    k = 3
    i2t, t2i = rerank_topk(model, images, texts, dual, k=k, batch_size=4, fusion=0.5)
    rows = torch.zeros_like(dual, dtype=torch.bool)
    rows.scatter_(1, torch.argsort(-dual, dim=1, stable=True)[:, :k], True)
    torch.testing.assert_close(i2t[rows], (dual + 0.5 * cross)[rows], atol=1e-5, rtol=1e-5)
    # weight 0: the dual order everywhere, so the dual metrics
    i2t, t2i = rerank_topk(model, images, texts, dual, k=k, batch_size=4, fusion=0.0)
    assert retrieval_metrics(i2t, texts.txt2img, t2i_sims=t2i) == retrieval_metrics(
        dual, texts.txt2img
    )


def test_protocol_folds_equal_kfold_of_the_full_matrix(setup):
    model, images, texts, cross = setup
    with pytest.warns(UserWarning, match="expects 5000 images"):
        result = evaluate_retrieval(model, images, texts, "coco-1k", "cross", batch_size=8)
    assert len(result.per_fold) == 5
    assert result.metrics == pytest.approx(kfold_metrics(cross, texts.txt2img, folds=5), abs=1e-9)
    full = evaluate_retrieval(model, images, texts, "full", "cross", batch_size=8)
    assert full.metrics == pytest.approx(retrieval_metrics(cross, texts.txt2img))
    assert full.notes == [] and result.notes


def test_image_subset_keeps_exactly_the_captions_of_the_images(setup):
    _, images, texts, _ = setup
    sub_images, sub_texts = image_subset(images, texts, [5, 1])
    assert sub_images.ids == ["img5", "img1"]
    expected = [j for j in range(15) if int(texts.txt2img[j]) in (5, 1)]
    assert torch.equal(sub_texts.input_ids, texts.input_ids[expected])
    assert sub_texts.txt2img.tolist() == [0 if int(texts.txt2img[j]) == 5 else 1 for j in expected]


def test_single_process_accelerator_gives_the_same_matrices(setup):
    from accelerate import Accelerator

    model, images, texts, cross = setup
    accelerator = Accelerator(cpu=True)
    torch.testing.assert_close(
        score_matrix_cross(model, images, texts, batch_size=5, accelerator=accelerator), cross
    )
    torch.testing.assert_close(
        encode_images(model, images, 2, accelerator), encode_images(model, images, 7)
    )


# ---------------------------------------------------------------------- two processes


@pytest.mark.slow
@pytest.mark.distributed
def test_two_processes_match_one_process(two_processes):
    two_processes.check("scoring")  # _distributed_checks below, in the session's launch


def _distributed_checks():
    """Under torchrun: every matrix of 2 processes equals the single-process one, and each
    process really scored only part of the images."""
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    assert accelerator.num_processes == 2, accelerator.num_processes
    model, (images, texts) = make_model(), make_data()
    pairs = []
    original = model.score_pairs

    def counting(**kwargs):
        pairs.append(max(kwargs["input_ids"].shape[0], kwargs["region_features"].shape[0]))
        return original(**kwargs)

    alone = score_matrix_cross(model, images, texts, batch_size=5)
    model.score_pairs = counting
    for batch_size in (5, 40):  # 1 and 2 images a step: uneven shards, padded last batch
        pairs.clear()
        shared = score_matrix_cross(model, images, texts, batch_size, accelerator)
        torch.testing.assert_close(shared, alone, atol=1e-5, rtol=1e-5)
        # this process scored a shard: 3 or 4 of the 7 images (+ one padded duplicate step)
        assert 0 < sum(pairs) <= len(texts) * 4 < alone.numel(), (batch_size, sum(pairs))
    model.score_pairs = original
    dual_alone = score_matrix_dual(model, images, texts, batch_size=3)
    dual = score_matrix_dual(model, images, texts, batch_size=3, accelerator=accelerator)
    torch.testing.assert_close(dual, dual_alone, atol=1e-6, rtol=1e-6)
    pair_alone = rerank_topk(model, images, texts, dual_alone, k=3, batch_size=4)
    pair = rerank_topk(model, images, texts, dual, k=3, batch_size=4, accelerator=accelerator)
    for a, b in zip(pair, pair_alone):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    result = evaluate_retrieval(
        model, images, texts, "full", "two-stage", topk=3, accelerator=accelerator
    )
    assert result.metrics == retrieval_metrics(
        *pair_alone[:1], texts.txt2img, t2i_sims=pair_alone[1]
    )
    return accelerator


def _distributed_main() -> None:
    accelerator = _distributed_checks()
    accelerator.wait_for_everyone()
    print(f"rank {accelerator.process_index}: OK", flush=True)
    # tear gloo down explicitly: exiting with a live process group can abort at shutdown
    # ("terminate called without an active exception" on a loaded machine)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    _distributed_main()
