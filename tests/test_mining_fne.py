"""FNE: right anchors, statistics, posterior weights, sampling, presets, memory, resumption."""

import math

import pytest
import torch
from torch import nn

from tags.mining import FeatureQueue, MomentumEncoder, get_miner, right_anchor_similarities
from tags.mining.fne import BRANCH_FALLBACK, BRANCH_SAMPLED, BRANCH_WARMUP


def test_right_anchors_single_caption():
    s = torch.tensor([[0.9, 0.2, 0.1], [0.3, 0.8, 0.85], [0.0, 0.4, 0.7]])
    pos, neg = right_anchor_similarities(s, [0, 1, 2])
    # pair 0 wins row and column; pair 1 loses its row (0.85), pair 2 loses its column (0.85)
    assert pos.tolist() == pytest.approx([0.9])
    assert sorted(neg.tolist()) == pytest.approx([0.2, 0.3])


def test_right_anchors_multiple_captions_per_image():
    s = torch.tensor([[0.9, 0.95, 0.1], [0.8, 0.7, 0.2], [0.1, 0.2, 0.6]])
    pos, neg = right_anchor_similarities(s, [0, 0, 1])
    # pairs 0/1 are captions of image 0: a top-1 on the other caption still counts as right
    assert pos.tolist() == pytest.approx([0.9, 0.7, 0.6])
    assert neg.tolist() == pytest.approx([0.1, 0.1, 0.2, 0.2, 0.2, 0.2])
    pos, _ = right_anchor_similarities(s, [0, 0, 1], anchors=torch.tensor([2]))
    assert pos.tolist() == pytest.approx([0.6])


def test_statistics_moments_and_reset():
    miner = get_miner("fne")
    miner.stats.update(torch.tensor([0.9, 0.7, 0.6]), torch.tensor([0.1, 0.3]))
    mean = (0.9 + 0.7 + 0.6) / 3
    var = ((0.9 - mean) ** 2 + (0.7 - mean) ** 2 + (0.6 - mean) ** 2) / 2
    assert miner.stats.pos_moments == pytest.approx((mean, var))
    assert miner.stats.neg_moments == pytest.approx((0.2, 0.02))
    assert miner.stats.pos_count == 3 and miner.stats.neg_count == 2
    miner.start_epoch()
    assert miner.stats.pos_count == 0 and not miner.ready


def _primed(preset="official", **kw):
    # positives {.7, .9}: mean .8, var .02; negatives {.3, .5}: mean .4, var .02
    miner = get_miner("fne", preset=preset, min_count=1, **kw)
    miner.stats.update(torch.tensor([0.7, 0.9], dtype=torch.float64), torch.tensor([0.3, 0.5]))
    return miner


def _expected_weight(
    s, s_pos, tau, threshold, alpha, mu_p=0.8, mu_n=0.4, var=0.02, prior=1e-4, cut=True
):
    if cut and s <= mu_p - 0.2:
        return 0.0
    pdf = lambda x, mu: math.exp(-((x - mu) ** 2) / (2 * var)) / math.sqrt(2 * math.pi * var)  # noqa: E731
    p = prior * pdf(s, mu_p) / (prior * pdf(s, mu_p) + (1 - prior) * pdf(s, mu_n))
    return math.exp(-tau * p) if p > threshold else math.exp(-alpha * (s - s_pos) ** 2)


@pytest.mark.parametrize(
    ("preset", "tau", "threshold", "alpha", "cut"),
    [("official", 0.5, 1e-3, 0.5, True), ("paper", 1.0, 1e-2, 0.5, False)],
)
def test_sampling_weights_match_bayes_posterior(preset, tau, threshold, alpha, cut):
    miner = _primed(preset)
    assert (miner.tau, miner.threshold, miner.alpha, miner.cut) == (tau, threshold, alpha, cut)
    cand = [0.85, 0.8, 0.65, 0.55, 0.95]
    scores = torch.tensor([cand], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, True, False]])
    w = miner.sampling_weights(scores, torch.tensor([0.9], dtype=torch.float64), mask)
    expected = [_expected_weight(s, 0.9, tau, threshold, alpha, cut=cut) for s in cand[:4]]
    expected += [0.0]
    torch.testing.assert_close(w[0], torch.tensor(expected, dtype=torch.float64))


def test_presets_differ_where_posterior_between_thresholds():
    # s = .8: P ~ 5.4e-3 lies between 1e-3 and 1e-2 -> damped (official) vs cut-down (paper)
    scores = torch.tensor([[0.8]], dtype=torch.float64)
    args = (scores, torch.tensor([0.9], dtype=torch.float64), torch.ones(1, 1, dtype=torch.bool))
    p = _primed().posterior(scores).item()
    assert 1e-3 < p < 1e-2
    assert _primed("official").sampling_weights(*args).item() == pytest.approx(math.exp(-0.5 * p))
    assert _primed("paper").sampling_weights(*args).item() == pytest.approx(
        math.exp(-0.5 * (0.8 - 0.9) ** 2)
    )
    with pytest.raises(ValueError):
        get_miner("fne", preset="nope")


def test_cut_at_mu_pos_minus_margin_is_a_switch():
    """The zero weight at or below mu_p - margin is the official code's, not the paper's:
    ``cut`` switches it (default: the preset's; the paper preset has none)."""
    scores = torch.tensor([[0.55, 0.85]], dtype=torch.float64)  # mu_p - margin = 0.6
    args = (scores, torch.tensor([0.9], dtype=torch.float64), torch.ones(1, 2, dtype=torch.bool))
    assert _primed("official").sampling_weights(*args)[0, 0] == 0
    assert _primed("official", cut=False).sampling_weights(*args)[0, 0] == pytest.approx(
        math.exp(-0.5 * (0.55 - 0.9) ** 2)
    )
    assert _primed("paper").sampling_weights(*args)[0, 0] > 0
    assert _primed("paper", cut=True).sampling_weights(*args)[0, 0] == 0
    assert not get_miner("fne", preset="paper").cut and get_miner("fne").cut


def test_sampling_frequencies_follow_weights():
    miner = _primed()
    cand = torch.tensor([0.85, 0.8, 0.65, 0.55, 0.95], dtype=torch.float64)
    n = 4000
    scores = cand.repeat(n, 1)
    mask = torch.tensor([True, True, True, True, False]).repeat(n, 1)
    pos = torch.full((n,), 0.9, dtype=torch.float64)
    out = miner(scores, pos, mask, generator=torch.Generator().manual_seed(0))
    assert (out.branch == BRANCH_SAMPLED).all()
    freq = torch.bincount(out.index, minlength=5).double() / n
    w = torch.tensor([_expected_weight(s, 0.9, 0.5, 1e-3, 0.5) for s in cand[:4].tolist()] + [0.0])
    torch.testing.assert_close(freq, w.double() / w.sum(), atol=0.03, rtol=0)
    assert freq[3] == 0 and freq[4] == 0  # below mu_p - margin, and masked
    chosen = cand[out.index]
    torch.testing.assert_close(out.loss, (0.2 + chosen - 0.9).clamp(min=0))
    # same generator seed -> same draws
    again = miner(scores, pos, mask, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again.index, out.index)


def test_warmup_and_zero_weight_fallback_take_hardest():
    scores = torch.tensor([[0.5, 0.55, 0.9], [0.3, 0.1, 0.2]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    pos = torch.tensor([0.6, 0.9], dtype=torch.float64)
    warm = get_miner("fne")(scores, pos, mask)  # no statistics yet
    assert warm.branch.tolist() == [BRANCH_WARMUP] * 2
    assert warm.index.tolist() == [1, 0]
    torch.testing.assert_close(warm.loss, torch.tensor([0.15, 0.0], dtype=torch.float64))
    # primed: mu_p - margin = .6, every candidate is at or below it -> all weights 0 -> hardest
    out = _primed()(scores, pos, mask)
    assert out.branch.tolist() == [BRANCH_FALLBACK] * 2
    assert out.index.tolist() == [1, 0]


def test_min_count_is_strict_like_official():
    miner = get_miner("fne", min_count=2)
    miner.stats.update(torch.tensor([0.7, 0.9]), torch.tensor([0.3, 0.5]))
    assert not miner.ready  # official: count > nums_right_sims
    miner.stats.update(torch.tensor([0.8]), torch.tensor([0.4]))
    assert miner.ready


def test_statistics_state_dict_roundtrip():
    miner = _primed()
    restored = get_miner("fne", min_count=1)
    restored.load_state_dict(miner.state_dict())
    assert restored.stats.pos_moments == pytest.approx(miner.stats.pos_moments)
    assert restored.ready


def test_momentum_encoder_ema():
    online = nn.Linear(3, 2)
    ema = MomentumEncoder(online, momentum=0.9)
    assert all(not p.requires_grad for p in ema.parameters())
    before = ema.module.weight.detach().clone()
    with torch.no_grad():
        online.weight.add_(1.0)
    ema.update(online)
    torch.testing.assert_close(ema.module.weight, 0.9 * before + 0.1 * online.weight.detach())
    out = ema(torch.randn(4, 3))
    assert not out.requires_grad


def test_queue_ring_buffer_wraps_and_resumes():
    q = FeatureQueue(size=5, image_dim=2)
    feats = torch.arange(16, dtype=torch.float32).reshape(8, 2)
    q.enqueue(feats[:3], -feats[:3], [0, 1, 2])
    assert len(q) == 3 and int(q.ptr) == 3
    q.enqueue(feats[3:6], -feats[3:6], [3, 4, 5])  # wraps: slot 0 gets row 5
    img, txt, ids = q.contents()
    assert ids.tolist() == [1, 2, 3, 4, 5]
    torch.testing.assert_close(img, feats[1:6])
    torch.testing.assert_close(txt, -feats[1:6])
    assert int(q.ptr) == 1
    # exact resumption: restore into a fresh queue, enqueue the same batch on both
    r = FeatureQueue(size=5, image_dim=2)
    r.load_state_dict(q.state_dict())
    for queue in (q, r):
        queue.enqueue(feats[6:8], -feats[6:8], [6, 7])
    assert torch.equal(q.contents()[2], r.contents()[2]) and q.contents()[2].tolist() == [
        3,
        4,
        5,
        6,
        7,
    ]
    # a batch larger than the queue keeps its last rows
    q.enqueue(feats, feats, list(range(10, 18)))
    assert q.contents()[2].tolist() == [13, 14, 15, 16, 17]
    cand, cand_ids = q.extend(torch.zeros(2, 2), torch.tensor([99, 98]), "text")
    assert cand.shape == (7, 2) and cand_ids.tolist() == [99, 98, 13, 14, 15, 16, 17]


def test_fne_training_step_with_momentum_queue():
    """Composition used by the trainer: online anchors vs momentum batch + queue candidates."""
    torch.manual_seed(0)
    img_enc, txt_enc = nn.Linear(6, 4), nn.Linear(6, 4)
    img_m, txt_m = MomentumEncoder(img_enc), MomentumEncoder(txt_enc)
    queue = FeatureQueue(size=8, image_dim=4)
    miner = get_miner("fne", min_count=1)
    opt = torch.optim.SGD([*img_enc.parameters(), *txt_enc.parameters()], lr=0.1)
    for step in range(3):
        x_img, x_txt = torch.randn(4, 6), torch.randn(4, 6)
        ids = torch.tensor([0, 0, 1, 2]) + 10 * (step % 2)  # ids repeat across steps
        img = nn.functional.normalize(img_enc(x_img), dim=1)
        txt = nn.functional.normalize(txt_enc(x_txt), dim=1)
        img_m.update(img_enc)
        txt_m.update(txt_enc)
        k_img = nn.functional.normalize(img_m(x_img), dim=1)
        k_txt = nn.functional.normalize(txt_m(x_txt), dim=1)
        miner.observe(img @ txt.t(), ids)
        cand, cand_ids = queue.extend(k_txt, ids, "text")
        scores = img @ cand.t()
        positive = scores[torch.arange(4), torch.arange(4)]  # own momentum caption
        mask = ids[:, None] != cand_ids[None, :]
        out = miner(scores, positive, mask, generator=torch.Generator().manual_seed(step))
        assert not (out.selected & ~mask).any()
        opt.zero_grad()
        out.loss.mean().backward()
        opt.step()
        queue.enqueue(k_img, k_txt, ids)
        assert len(queue) == min(8, 4 * (step + 1))
    # step 2 reuses the ids of step 0: those queued keys must be masked for their anchors
    assert (cand_ids[4:] == 0).any() and not mask[0, 4:][cand_ids[4:] == 0].any()


def test_inverse_cdf_draws_by_weight_and_never_a_zero_weight():
    from tags.mining.fne import inverse_cdf

    weights = torch.tensor([[0.0, 1.0, 0.0, 3.0]] * 4)  # cdf 0, .25, .25, 1
    u = torch.tensor([0.0, 0.1, 0.25, 0.99])
    assert inverse_cdf(weights, u).tolist() == [1, 1, 3, 3]
    draws = inverse_cdf(
        weights[:1].expand(4000, 4), torch.rand(4000, generator=torch.Generator().manual_seed(0))
    )
    assert set(draws.tolist()) == {1, 3}
    assert (draws == 3).float().mean().item() == pytest.approx(0.75, abs=0.03)


def test_statistics_on_the_cpu_are_reduced_on_the_gpu_under_nccl(monkeypatch):
    """NCCL reduces CUDA tensors only: FNE statistics left on the CPU (a phase-level miner)
    go to the current GPU for the all-reduce (gloo keeps them where they are)."""
    import torch.distributed as dist

    import tags.core.distributed as d

    monkeypatch.setattr(d, "is_distributed", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(dist, "get_backend", lambda *a: "nccl")
    assert d.collective_device(torch.zeros(3)) == torch.device("cuda", 3)
    monkeypatch.setattr(dist, "get_backend", lambda *a: "gloo")
    assert d.collective_device(torch.zeros(3)) == torch.device("cpu")
