"""AOQ: chunked offline ranking vs brute force, quintuplet sampling, Eq. 5 values."""

import pytest
import torch

from tags.mining import OfflineNegatives, build_offline_negatives, get_miner
from tags.mining.aoq import running_topk

# 6 images with an irregular number of captions (1 to 3): explicit caption -> image index
C2I = torch.tensor([0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5])


def _embeddings():
    g = torch.Generator().manual_seed(3)
    img = torch.nn.functional.normalize(torch.randn(6, 8, generator=g), dim=1)
    cap = torch.nn.functional.normalize(torch.randn(12, 8, generator=g), dim=1)
    return img, cap


def _brute_force(img, cap, h, h_cap):
    full = img @ cap.t()
    pos = C2I[None, :] == torch.arange(6)[:, None]
    i2t = full.masked_fill(pos, float("-inf")).topk(h, dim=1).indices
    t2i = full.t().masked_fill(pos.t(), float("-inf")).topk(h_cap, dim=1).indices
    return i2t, t2i


@pytest.mark.parametrize("chunk_size", [1, 4, 100])
def test_chunked_ranking_equals_full_matrix(chunk_size):
    img, cap = _embeddings()
    neg = build_offline_negatives(img, cap, C2I, h=5, h_caption=2, chunk_size=chunk_size)
    i2t, t2i = _brute_force(img, cap, 5, 2)
    assert torch.equal(neg.i2t, i2t)
    assert torch.equal(neg.t2i, t2i)
    # never a positive
    assert not (C2I[neg.i2t] == torch.arange(6)[:, None]).any()
    assert not (neg.t2i == C2I[:, None]).any()


def test_default_caption_h_is_h_over_5_and_too_large_h_raises():
    img, cap = _embeddings()
    neg = build_offline_negatives(img, cap, C2I, h=5)
    assert neg.t2i.shape == (12, 1)
    with pytest.raises(ValueError):
        build_offline_negatives(img, cap, C2I, h=11)  # image 0 has only 9 negative captions


def test_running_topk_merges():
    v, i = running_topk(
        torch.tensor([[0.9, 0.1]]),
        torch.tensor([[4, 7]]),
        torch.tensor([[0.5, 0.95]]),
        torch.tensor([[2, 3]]),
        k=3,
    )
    assert i.tolist() == [[3, 4, 2]]
    assert v[0].tolist() == pytest.approx([0.95, 0.9, 0.5])


def test_sample_quintuplet_members(tmp_path):
    img, cap = _embeddings()
    neg = build_offline_negatives(img, cap, C2I, h=5, h_caption=2, chunk_size=3)
    neg.save(tmp_path / "aoq.pt")
    neg = OfflineNegatives.load(tmp_path / "aoq.pt")
    caps = torch.arange(12).repeat(20)
    out = neg.sample(caps, generator=torch.Generator().manual_seed(0))
    images = C2I[caps]
    for k in range(caps.numel()):
        assert out["t_off"][k].item() in neg.i2t[images[k]].tolist()
        assert out["i_off"][k].item() in neg.t2i[caps[k]].tolist()
    assert torch.equal(out["i_off2"], C2I[out["t_off"]])
    assert torch.equal(C2I[out["t_off2"]], out["i_off"])
    assert (C2I[out["t_off"]] != images).all() and (out["i_off"] != images).all()


def test_derived_offline_pairs_are_never_true_pairs(monkeypatch):
    """Caption 0 (image 0): its offline captions are both of image 1, its offline images
    [1, 2]. Rank 0 gives t_off = 3 (image 1) with i_off = 1, so (i_off, t_off) and
    (i_off', t_off') would be the true pair (1, 3): such rows are redrawn."""
    c2i = torch.tensor([0, 0, 1, 1, 2, 2])
    i2t = torch.tensor([[3, 2], [0, 4], [1, 2]])
    t2i = torch.tensor([[1, 2], [1, 2], [0, 2], [0, 2], [0, 1], [0, 1]])
    neg = OfflineNegatives(i2t, t2i, c2i)
    caps = torch.zeros(400, dtype=torch.long)
    out = neg.sample(caps, generator=torch.Generator().manual_seed(0))
    assert (c2i[out["t_off"]] != out["i_off"]).all()  # (i_off, t_off) is not a true pair
    assert (out["i_off2"] != c2i[out["t_off2"]]).all()  # nor (i_off', t_off')
    # without redraws: the first offline image that is not the offline caption's
    monkeypatch.setattr(OfflineNegatives, "REDRAWS", 0)
    out = neg.sample(caps, generator=torch.Generator().manual_seed(0))
    assert ((out["i_off"] == 2) | (out["t_off"] == 2)).all()
    assert (c2i[out["t_off"]] != out["i_off"]).all()
    # no offline image that is not the offline caption's own image: refused, not a true pair
    stuck = OfflineNegatives(i2t, t2i[:, :1], c2i)
    with pytest.raises(ValueError, match="true pairs"):
        stuck.sample(torch.zeros(1, dtype=torch.long), generator=torch.Generator())


def test_eq5_values_with_negative_weight():
    # anchor 0: online hardest .45, offline .95 -> w = 1.5 - (.95 - .45)/.3 = -1/6 (not clamped)
    #   online .2+.45-.5 = .15 -> -.025; offline [.95-.5]+ = .45; pair [.3-.5]+ = 0 -> .425
    # anchor 1: online hardest .7, offline .75 -> w = 1.5 - .05/.3 = 4/3
    #   online .1 -> 2/15; offline [.75-.8]+ = 0; pair [.85-.8]+ = .05
    scores = torch.tensor([[0.5, 0.45, 0.1], [0.7, 0.8, 0.2]], dtype=torch.float64)
    pos = torch.tensor([0.5, 0.8], dtype=torch.float64)
    mask = torch.tensor([[False, True, True], [True, False, True]])
    off = torch.tensor([0.95, 0.75], dtype=torch.float64)
    pair = torch.tensor([0.3, 0.85], dtype=torch.float64)
    out = get_miner("aoq")(scores, pos, mask, offline_scores=off, pair_scores=pair)
    torch.testing.assert_close(
        out.extras["weight"], torch.tensor([-1 / 6, 4 / 3], dtype=torch.float64)
    )
    torch.testing.assert_close(
        out.loss, torch.tensor([-0.025 + 0.45, 0.15 * 0 + 0.1 * 4 / 3 + 0.05], dtype=torch.float64)
    )
    assert out.index.tolist() == [1, 0]
    with pytest.raises(ValueError):
        get_miner("aoq")(scores, pos, mask)


def test_eq5_gradient_flows_through_weight_unless_detached():
    scores = torch.tensor([[0.5, 0.45, 0.1]], dtype=torch.float64, requires_grad=True)
    off = torch.tensor([0.6], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False, True, True]])
    args = dict(offline_scores=off, pair_scores=torch.tensor([0.0], dtype=torch.float64))
    get_miner("aoq")(scores, scores[:, 0], mask, **args).loss.sum().backward()
    # d/d s_off = hinge_on * (-1/alpha) + d[s_off - s_p]_+ = .15 * (-1/.3) + 1 = 0.5
    assert off.grad.item() == pytest.approx(0.5)
    off.grad = None
    get_miner("aoq", detach_weight=True)(scores, scores[:, 0], mask, **args).loss.sum().backward()
    assert off.grad.item() == pytest.approx(1.0)
