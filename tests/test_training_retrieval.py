"""``retrieve_negatives`` (UNITER's 399 -> 31): pools drawn per anchor, never the anchor's own
image, the top k by the scorer's score, both directions."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from tags.backends.masked_lm import load_tokenizer
from tags.data import PairCollator, build_dataset, write_synthetic_dataset
from tags.modeling import tiny_mlm_path
from tags.training.retrieval import draw_pool, retrieve_negatives


class SumScorer(nn.Module):
    """score = 1e-3 * sum of the caption's token ids + sum of the image's region features:
    a pool of captions (one image) ranks by the first term, a pool of images by the second.
    It poses as a TagsModel (``model_type`` "tags"), so the retrieval scores it through the
    TagsModel backend; its logits are scaled down so their sigmoid keeps the order."""

    config = SimpleNamespace(model_type="tags")

    def score_pairs(self, input_ids, attention_mask, region_features, region_boxes, region_mask):
        text = (input_ids * attention_mask).sum(1).double() * 1e-3
        image = (region_features * region_mask[..., None]).sum((1, 2)).double()
        return SimpleNamespace(logits=(text + image) * 1e-2)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieval")
    paths = write_synthetic_dataset(root, num_images=100, num_regions=3, feature_size=4)
    config = SimpleNamespace(
        captions=str(paths["captions"]), features=str(paths["features"]), format="precomp",
        split=None, max_text_len=16, max_regions=None, limit_images=None,
    )  # fmt: skip
    return build_dataset(config, load_tokenizer(tiny_mlm_path()))


def test_399_random_negatives_scored_and_the_top_31_kept(dataset):
    anchors = [3, 257]  # dataset indices of two pairs
    batch = PairCollator(0)([dataset[i] for i in anchors])
    config = SimpleNamespace(mode="pool", pool_size=399, num_negatives=31, score_batch_size=97)
    seeds = [11, 12]
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    caps, cap_valid, imgs, img_valid = retrieve_negatives(
        SumScorer(), dataset, batch, gens, config, contextlib.nullcontext
    )
    assert caps.shape == imgs.shape == (2, 31) and cap_valid.all() and img_valid.all()
    caption_score = torch.tensor([sum(dataset.tokens(c)) * 1e-3 for c in range(len(dataset))])
    image_score = torch.tensor([float(dataset.image(i)[0].sum()) for i in range(100)])
    for row, (anchor, seed) in enumerate(zip(anchors, seeds)):
        image = int(dataset.image_of[anchor])
        # the same pools, redrawn: 399 of the 495 captions of other images, then the images
        g = torch.Generator().manual_seed(seed)
        cap_pool = draw_pool(len(dataset), 399, dataset.image_of == image, g)
        own = torch.zeros(100, dtype=torch.bool)
        own[image] = True
        img_pool = draw_pool(100, 399, own, g)
        assert cap_pool.numel() == 399 and img_pool.numel() == 99  # only 99 other images
        assert set(caps[row].tolist()) <= set(cap_pool.tolist())
        assert not (dataset.image_of[caps[row]] == image).any()
        assert image not in imgs[row].tolist() and len(set(imgs[row].tolist())) == 31
        # the kept ones are the 31 best of the pool, best first
        best = caption_score[cap_pool].topk(31).values
        assert caption_score[caps[row]].tolist() == pytest.approx(best.tolist())
        best = image_score[img_pool].topk(31).values
        assert image_score[imgs[row]].tolist() == pytest.approx(best.tolist(), rel=1e-5)


def test_a_pool_smaller_than_k_is_padded_as_invalid(dataset):
    batch = PairCollator(0)([dataset[0]])
    config = SimpleNamespace(mode="pool", pool_size=4, num_negatives=6, score_batch_size=64)
    _, cap_valid, _, img_valid = retrieve_negatives(
        SumScorer(), dataset, batch, [torch.Generator().manual_seed(0)], config,
        contextlib.nullcontext,
    )  # fmt: skip
    assert cap_valid.tolist() == [[True] * 4 + [False] * 2]
    assert img_valid.tolist() == [[True] * 4 + [False] * 2]


def test_score_pools_scores_each_anchor_pair_alongside_its_pools(dataset):
    from tags.training.retrieval import score_pools

    anchors = [3, 257]
    batch = PairCollator(0)([dataset[i] for i in anchors])
    config = SimpleNamespace(mode="pool", pool_size=20, num_negatives=5, score_batch_size=16)

    def pools(positives):
        gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
        return score_pools(
            SumScorer(), dataset, batch, gens, config, contextlib.nullcontext, positives
        )

    with_pos, without = pools(True), pools(False)
    assert without.positive is None
    expected = [
        torch.sigmoid(
            torch.tensor(
                (
                    sum(dataset.tokens(a)) * 1e-3
                    + float(dataset.image(int(dataset.image_of[a]))[0].sum())
                )
                * 1e-2
            )
        ).item()
        for a in anchors
    ]
    assert with_pos.positive.tolist() == pytest.approx(expected, rel=1e-5)
    # the pools and their scores do not change when the positives ride along
    assert torch.equal(with_pos.captions, without.captions)
    assert torch.allclose(with_pos.caption_scores, without.caption_scores)
    assert with_pos.caption_scores.shape == (2, 20) and with_pos.caption_mask.all()
