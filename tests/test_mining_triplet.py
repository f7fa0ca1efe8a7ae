"""Exact per-anchor values of the triplet miners and SelHN on hand-computed matrices."""

import pytest
import torch

from tags.mining import batch_pairs, direction_pairs, get_miner
from tags.mining.selhn import BRANCH_ALL, BRANCH_HARDEST

# Rows: images of pairs 0..3, columns: captions of pairs 0..3. Pairs 0 and 1 are two captions
# of image 0, so S[0, 1] = 0.8 and S[1, 0] = 0.7 are positives, never negatives.
S = torch.tensor(
    [
        [0.90, 0.80, 0.50, 0.30],
        [0.70, 0.60, 0.55, 0.10],
        [0.20, 0.45, 0.70, 0.65],
        [0.10, 0.35, 0.60, 0.50],
    ],
    dtype=torch.float64,
)
IDS = [0, 0, 1, 2]

# Expected by hand (margin 0.2), see the hinge of every valid negative:
# i2t  a0: pos .9, negs c2 .5, c3 .3 -> 0, 0      a1: pos .6, negs c2 .55, c3 .1 -> .15, 0
#      a2: pos .7, negs c0 .2, c1 .45, c3 .65 -> 0, 0, .15
#      a3: pos .5, negs c0 .1, c1 .35, c2 .6 -> 0, .05, .3
# t2i  c0: pos .9, negs r2 .2, r3 .1 -> 0, 0       c1: pos .6, negs r2 .45, r3 .35 -> .05, 0
#      c2: pos .7, negs r0 .5, r1 .55, r3 .6 -> 0, .05, .1
#      c3: pos .5, negs r0 .3, r1 .1, r2 .65 -> 0, 0, .35
EXPECTED = {
    "all": ([0.0, 0.075, 0.05, 0.35 / 3], [0.0, 0.025, 0.05, 0.35 / 3]),
    "hardest": ([0.0, 0.15, 0.15, 0.3], [0.0, 0.05, 0.1, 0.35]),
    "semi_hard": ([0.0, 0.15, 0.15, 0.05], [0.0, 0.05, 0.1, 0.0]),
    "topk": ([0.0, 0.075, 0.075, 0.175], [0.0, 0.025, 0.075, 0.175]),
}
HARDEST_INDEX = ([2, 2, 3, 2], [2, 2, 3, 2])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_values_both_directions(name):
    miner = get_miner(name, k=2) if name == "topk" else get_miner(name)
    pairs = batch_pairs(S, IDS)
    for direction, expected in zip((pairs.i2t, pairs.t2i), EXPECTED[name]):
        out = miner(*direction)
        torch.testing.assert_close(out.loss, torch.tensor(expected, dtype=torch.float64))


def test_hardest_index_and_semi_hard_skips_harder_than_positive():
    pairs = batch_pairs(S, IDS)
    hard = get_miner("hardest")
    for direction, idx in zip((pairs.i2t, pairs.t2i), HARDEST_INDEX):
        assert hard(*direction).index.tolist() == idx
    semi = get_miner("semi_hard")(*pairs.i2t)
    # anchor 3: the hardest (c2 .6) beats the positive .5, semi-hard takes c1 .35 instead
    assert semi.index.tolist() == [2, 2, 3, 1]
    # t2i c3: the only violating negative r2 .65 > .5 is excluded; r0 .3 -> hinge 0
    assert get_miner("semi_hard")(*pairs.t2i).index[3].item() == 0


def test_batch_pairs_masks_every_caption_of_the_same_image():
    pairs = batch_pairs(S, IDS)
    expected_mask = torch.tensor(
        [[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]], dtype=torch.bool
    )
    assert torch.equal(pairs.i2t.negative_mask, expected_mask)
    assert torch.equal(pairs.t2i.negative_mask, expected_mask.t())
    assert pairs.i2t.positive.tolist() == [0.9, 0.6, 0.7, 0.5]
    assert torch.equal(pairs.t2i.scores, S.t())
    # the positive-pair score 0.8 would be the hardest of anchor 0 without the id mask
    assert get_miner("hardest")(*pairs.i2t).loss[0] == 0


def test_direction_pairs_against_extra_candidates():
    # two local anchors against four candidates (e.g. gathered batch + queue)
    scores = torch.tensor([[0.5, 0.9, 0.4, 0.8], [0.1, 0.2, 0.3, 0.6]])
    p = direction_pairs(scores, torch.tensor([2, 3]), [7, 8], [7, 7, 7, 8])
    assert p.positive.tolist() == pytest.approx([0.4, 0.6])
    assert p.negative_mask.tolist() == [[False, False, False, True], [True, True, True, False]]


def test_ties_between_captions_of_one_image():
    # anchor image 0 vs captions: two captions of image 5 tie as hardest, one of image 6 lower
    scores = torch.tensor([[0.6, 0.5, 0.5, 0.2]], dtype=torch.float64)
    p = direction_pairs(scores, torch.tensor([0]), [0], [0, 5, 5, 6])
    hard = get_miner("hardest")(*p)
    assert hard.index.tolist() == [1]  # lowest index among the tied ones
    assert hard.loss.item() == pytest.approx(0.1)
    top2 = get_miner("topk", k=2)(*p)
    assert sorted(top2.extras["topk_index"][0].tolist()) == [1, 2]
    assert top2.loss.item() == pytest.approx(0.1)
    all_ = get_miner("all")(*p)  # hinges .1, .1 and 0 (caption of image 6: .2+.2-.6)
    assert all_.loss.item() == pytest.approx(0.2 / 3)
    # a tie of two positives (captions of the anchor's own image) is never a negative
    p2 = direction_pairs(torch.tensor([[0.3, 0.9, 0.9]]), torch.tensor([0]), [0], [0, 0, 4])
    assert get_miner("hardest")(*p2).index.tolist() == [2]


def test_topk_fewer_negatives_than_k_and_sampling():
    scores = torch.tensor([[0.9, 0.6, 0.5, 0.1]], dtype=torch.float64)
    mask = torch.tensor([[False, True, True, False]])
    # only two negatives (hinges .2+.6-.7 = .1 and .2+.5-.7 = 0): mean over those two
    out = get_miner("topk", k=31)(scores, torch.tensor([0.7], dtype=torch.float64), mask)
    assert out.loss.item() == pytest.approx((0.1 + 0.0) / 2)
    g = torch.Generator().manual_seed(0)
    big = torch.rand(4, 50, generator=g)
    m = torch.rand(4, 50, generator=g) > 0.3
    sub = get_miner("topk", k=3, num_candidates=10)
    out = sub(big, torch.full((4,), 0.5), m, generator=torch.Generator().manual_seed(1))
    assert (out.selected & ~m).sum() == 0
    assert (out.selected.sum(1) == 3).all()


def test_anchor_without_negatives_has_zero_loss():
    scores = torch.tensor([[0.1, 0.9], [0.3, 0.2]], requires_grad=True)
    mask = torch.tensor([[False, False], [True, False]])
    for name in ("all", "hardest", "semi_hard", "topk", "selhn"):
        out = get_miner(name)(scores, scores.diagonal(), mask)
        assert out.loss[0].item() == 0.0
        assert torch.isfinite(out.loss).all()


EPS = 2.0**-7  # 0.0078125, exactly representable, so |gap| == eps is tested exactly


def test_selhn_eps_boundaries_and_mean_over_negatives():
    pos = torch.tensor([0.5, 0.5, 0.5, 0.5], dtype=torch.float64)
    scores = torch.tensor(
        [
            [0.5 - EPS, 0.25, 0.0],  # gap == eps     -> hardest (strict <)
            [0.5 - EPS / 2, 0.25, 0.0],  # gap < eps  -> mean over 3 negatives
            [0.5 + EPS / 2, 0.4, 0.9],  # 0.9 masked; gap < eps -> mean over 2 negatives
            [0.5 + EPS, 0.1, 0.2],  # negative above positive, gap == eps -> hardest
        ],
        dtype=torch.float64,
    )
    mask = torch.ones(4, 3, dtype=torch.bool)
    mask[2, 2] = False
    out = get_miner("selhn", eps=EPS)(scores, pos, mask)
    expected = [
        0.2 + (0.5 - EPS) - 0.5,
        (0.2 + (0.5 - EPS / 2) - 0.5) / 3,
        ((0.2 + 0.5 + EPS / 2 - 0.5) + (0.2 + 0.4 - 0.5)) / 2,
        0.2 + (0.5 + EPS) - 0.5,
    ]
    torch.testing.assert_close(out.loss, torch.tensor(expected, dtype=torch.float64))
    assert out.branch.tolist() == [BRANCH_HARDEST, BRANCH_ALL, BRANCH_ALL, BRANCH_HARDEST]
    assert out.selected[1].tolist() == [True, True, True]
    assert out.selected[2].tolist() == [True, True, False]
    assert out.selected[0].tolist() == [True, False, False]


def test_selhn_default_matches_official_on_square_batch():
    # defaults margin .2 / eps .01 on S: i2t anchor 1 gap |.55-.6| = .05 -> hardest,
    # so with eps .06 it switches to the mean over its 2 negatives
    pairs = batch_pairs(S, IDS)
    out = get_miner("selhn")(*pairs.i2t)
    torch.testing.assert_close(out.loss, torch.tensor(EXPECTED["hardest"][0], dtype=torch.float64))
    out = get_miner("selhn", eps=0.06)(*pairs.i2t)
    # gaps: a0 .4, a1 .05, a2 .05, a3 .1 -> a1, a2 take the mean
    torch.testing.assert_close(out.loss, torch.tensor([0.0, 0.075, 0.05, 0.3], dtype=torch.float64))
