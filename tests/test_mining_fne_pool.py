"""FNE over a retrieved pool (cross-encoder): right anchors, hand-computed posterior and
weights, draws without replacement, warm-up / fallback, planted false negatives."""

import math

import pytest
import torch

from tags.mining import get_miner
from tags.mining.fne import BRANCH_FALLBACK, BRANCH_SAMPLED, BRANCH_WARMUP
from tags.mining.fne_pool import draw_from_pool, observe_pool, pool_right_anchors, top_m


def _gens(n, offset=0):
    return [torch.Generator().manual_seed(1000 + offset + i) for i in range(n)]


def test_pool_right_anchors_need_both_directions():
    pos = torch.tensor([0.9, 0.6, 0.8, 0.7])
    i2t = torch.tensor([[0.5, 0.8], [0.2, 0.7], [0.81, 0.1], [0.9, 0.0]])
    t2i = torch.tensor([[0.3, 0.4], [0.1, 0.5], [0.2, 0.3], [0.0, 0.0]])
    i2t_mask = torch.tensor([[True, True], [True, True], [True, False], [False, False]])
    t2i_mask = torch.ones(4, 2, dtype=torch.bool)
    p, n = pool_right_anchors(pos, i2t, i2t_mask, t2i, t2i_mask)
    # anchor 0: beats 0.8 and 0.4 -> right; 1: loses its row (0.7 > 0.6); 2: 0.8 < 0.81
    # (valid) -> not right; 3: no valid i2t candidate, beats its column -> right
    assert p.tolist() == pytest.approx([0.9, 0.7])
    assert n.tolist() == pytest.approx([0.8, 0.4, 0.0])  # row/col hardest; anchor 3: col only


def test_observe_pool_feeds_the_statistics():
    miner = get_miner("fne", min_count=1)
    pos = torch.tensor([0.9, 0.8])
    scores = torch.tensor([[0.1, 0.3], [0.2, 0.5]])
    ones = torch.ones(2, 2, dtype=torch.bool)
    observe_pool(miner, pos, scores, ones, scores * 0.5, ones)
    assert miner.stats.pos_count == 2 and miner.stats.neg_count == 4
    mean = (0.3 + 0.15 + 0.5 + 0.25) / 4
    assert miner.stats.neg_moments[0] == pytest.approx(mean)
    assert miner.ready


def _primed(preset="official"):
    # positives {.7, .9}: mean .8, var .02; negatives {.3, .5}: mean .4, var .02
    miner = get_miner("fne", preset=preset, min_count=1)
    miner.stats.update(torch.tensor([0.7, 0.9]), torch.tensor([0.3, 0.5]))
    return miner


POOL = torch.tensor([[0.55, 0.65, 0.75, 0.85, 0.95]])
S_POS = torch.tensor([0.8])


def _hand_posterior(s):
    # equal variances: log N_p(s) - log N_n(s) = ((s - .4)^2 - (s - .8)^2) / (2 * .02) = 20 s - 12
    logit = math.log(1e-4 / (1 - 1e-4)) + 20 * s - 12
    return 1 / (1 + math.exp(-logit))


@pytest.mark.parametrize(
    ("preset", "tau", "threshold", "cut"),
    [("official", 0.5, 1e-3, True), ("paper", 1, 1e-2, False)],
)
def test_posterior_and_weights_by_hand(preset, tau, threshold, cut):
    miner = _primed(preset)
    draw = draw_from_pool(miner, POOL, S_POS, torch.ones_like(POOL, dtype=torch.bool), 3, _gens(1))
    expected_p = [_hand_posterior(s) for s in POOL[0].tolist()]
    assert draw.posterior[0].tolist() == pytest.approx(expected_p, rel=1e-4)
    # by hand: P(.95) = .0989, P(.85) = .0146, P(.75) = .0020, P(.65) = 2.7e-4
    assert expected_p[4] == pytest.approx(0.0989, abs=1e-3)
    weights = []
    for s, p in zip(POOL[0].tolist(), expected_p):
        if cut and s <= 0.8 - 0.2:  # mu_pos - margin (official code only)
            weights.append(0.0)
        elif p > threshold:
            weights.append(math.exp(-tau * p))
        else:
            weights.append(math.exp(-0.5 * (s - 0.8) ** 2))
    assert draw.weights[0].tolist() == pytest.approx(weights, rel=1e-5)
    assert (weights[0] == 0.0) == cut and weights[1] == pytest.approx(math.exp(-0.5 * 0.15**2))
    # the presets disagree at s = .75 (P = .0020: damped by "official", cut-down by "paper")
    assert (expected_p[2] > threshold) == (preset == "official")
    assert draw.branch.tolist() == [BRANCH_SAMPLED]
    assert (0 not in draw.index[0].tolist()) or not cut
    assert len(set(draw.index[0].tolist())) == 3


def test_first_draw_frequencies_follow_the_weights():
    miner = _primed()
    n = 3000
    scores = POOL.expand(n, -1)
    draw = draw_from_pool(
        miner, scores, S_POS.expand(n), torch.ones_like(scores, dtype=torch.bool), 1, _gens(n)
    )
    counts = torch.bincount(draw.index[:, 0], minlength=5).double() / n
    w = draw.weights[0].double()
    assert counts.tolist() == pytest.approx((w / w.sum()).tolist(), abs=0.03)
    assert counts[0] == 0  # zero weight: never drawn


def test_fewer_positive_weights_than_m_and_fallback_and_warmup():
    miner = _primed()
    mask = torch.ones(2, 5, dtype=torch.bool)
    scores = torch.stack([POOL[0], torch.tensor([0.1, 0.2, 0.3, 0.5, 0.4])])
    pos = torch.tensor([0.8, 0.8])
    draw = draw_from_pool(miner, scores, pos, mask, 5, _gens(2))
    # row 0: four candidates above mu_p - margin = .6 -> exactly those four, one slot empty
    assert sorted(draw.index[0, :4].tolist()) == [1, 2, 3, 4] and draw.index[0, 4] == -1
    # row 1: every candidate at or below .6 -> the top 5 by score (fallback)
    assert draw.index[1].tolist() == [3, 4, 2, 1, 0]
    assert draw.branch.tolist() == [BRANCH_SAMPLED, BRANCH_FALLBACK]
    cold = get_miner("fne")  # no statistics: UNITER's top-m
    warm = draw_from_pool(cold, scores, pos, mask, 2, _gens(2))
    assert warm.index.tolist() == [[4, 3], [3, 4]] and warm.posterior is None
    assert warm.branch.tolist() == [BRANCH_WARMUP] * 2


def test_draws_do_not_depend_on_how_the_batch_is_split():
    miner = _primed()
    g = torch.Generator().manual_seed(0)
    scores = 0.6 + 0.4 * torch.rand(6, 12, generator=g)
    mask = torch.rand(6, 12, generator=g) > 0.2
    pos = torch.full((6,), 0.85)
    whole = draw_from_pool(miner, scores, pos, mask, 4, _gens(6)).index
    head = draw_from_pool(miner, scores[:2], pos[:2], mask[:2], 4, _gens(2)).index
    tail = draw_from_pool(miner, scores[2:], pos[2:], mask[2:], 4, _gens(4, offset=2)).index
    assert torch.equal(whole, torch.cat([head, tail]))
    assert all(mask[a, c] for a in range(6) for c in whole[a].tolist() if c >= 0)


def test_top_m_pads_short_pools():
    scores = torch.tensor([[0.2, 0.9, 0.5], [0.1, 0.3, 0.2]])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    assert top_m(scores, mask, 2).tolist() == [[1, 2], [0, -1]]


def test_planted_false_negatives_fne_draws_far_fewer_than_hardest():
    """300 anchors, pools of 40: 4 planted false negatives scoring like positives
    (0.86-0.94), 20 true hard negatives (0.70-0.84), 16 easy ones (0.1-0.5); statistics from
    positives ~ N(0.9, 0.05) and hardest negatives ~ N(0.55, 0.12). Hardest (top-4) takes the
    planted ones every time; FNE must stay at or below a 25% false-negative rate (it draws
    17.7% here: about uniform over the 24 candidates above mu_pos - margin, 4/24 = 16.7%)."""
    g = torch.Generator().manual_seed(3)
    a, m = 300, 4
    planted = 0.86 + 0.08 * torch.rand(a, 4, generator=g)
    hard = 0.70 + 0.14 * torch.rand(a, 20, generator=g)
    easy = 0.1 + 0.4 * torch.rand(a, 16, generator=g)
    perm = torch.stack([torch.randperm(40, generator=g) for _ in range(a)])
    scores = torch.cat([planted, hard, easy], 1).gather(1, perm)  # shuffled columns
    is_fn = perm < 4
    pos = 0.9 + 0.05 * torch.randn(a, generator=g)
    miner = get_miner("fne", min_count=10)
    positives = 0.9 + 0.05 * torch.randn(500, generator=g)
    miner.stats.update(positives, 0.55 + 0.12 * torch.randn(500, generator=g))
    mask = torch.ones(a, 40, dtype=torch.bool)

    def fn_rate(index):
        ok = index >= 0
        return is_fn.gather(1, index.clamp(min=0))[ok].float().mean().item()

    hardest = fn_rate(top_m(scores, mask, m))
    fne = fn_rate(draw_from_pool(miner, scores, pos, mask, m, _gens(a)).index)
    assert hardest == 1.0
    assert fne <= 0.25, fne
