"""Registry contract, walked over every registered miner (timm style), plus gradchecks."""

import pytest
import torch

from tags.mining import MiningLoss, batch_pairs, create_loss, get_miner, list_miners
from tags.mining.registry import register_miner

A, C = 5, 7


def _extras(name: str, scores: torch.Tensor) -> dict:
    g = torch.Generator().manual_seed(11)
    if name == "aoq":
        return {
            "offline_scores": torch.rand(scores.shape[0], generator=g, dtype=scores.dtype),
            "pair_scores": torch.rand(scores.shape[0], generator=g, dtype=scores.dtype),
        }
    if name == "ndgl":
        return {
            "target_scores": torch.rand(scores.shape, generator=g, dtype=scores.dtype),
            "target_positive": torch.rand(scores.shape[0], generator=g, dtype=scores.dtype),
        }
    if name in ("fne", "topk"):
        return {"generator": torch.Generator().manual_seed(5)}
    return {}


def _build(name: str):
    miner = get_miner(name)
    if name == "fne":  # prime statistics so that the sampling branch runs
        miner.min_count = 1
        miner.stats.update(
            torch.tensor([0.5, 0.7, 0.6], dtype=torch.float64), torch.tensor([0.2, 0.4, 0.3])
        )
    return miner


def test_registry_lists_all_seed_strategies():
    assert set(list_miners()) >= {
        "all",
        "hardest",
        "semi_hard",
        "topk",
        "selhn",
        "fne",
        "aoq",
        "ndgl",
    }
    with pytest.raises(KeyError, match="unknown miner"):
        get_miner("does-not-exist")
    with pytest.raises(ValueError, match="already registered"):
        register_miner("hardest")(type("Other", (torch.nn.Module,), {}))
    assert get_miner("selhn", eps=0.05).eps == 0.05


@pytest.mark.parametrize("name", list_miners())
def test_every_miner_contract(name):
    g = torch.Generator().manual_seed(0)
    scores = torch.rand(A, C, generator=g, dtype=torch.float64)
    positive = torch.rand(A, generator=g, dtype=torch.float64) * 0.5 + 0.4
    mask = torch.rand(A, C, generator=g) > 0.35
    mask[0] = False  # an anchor without negatives
    mask[1, 3] = True
    # masked candidates score highest: a miner that ignored the mask would pick them
    scores = torch.where(mask, scores, scores + 3.0).requires_grad_(True)
    miner = _build(name)
    out = miner(scores, positive, mask, **_extras(name, scores))
    assert out.loss.shape == (A,)
    assert torch.isfinite(out.loss).all()
    out.loss.sum().backward()
    assert scores.grad is not None and scores.grad.abs().sum() > 0
    assert (scores.grad[~mask] == 0).all(), "masked candidates must not get a gradient"
    assert out.selected is not None and not (out.selected & ~mask).any()
    if out.index is not None:
        valid = out.index >= 0
        assert mask[valid.nonzero().squeeze(1), out.index[valid]].all()
        assert out.index[0] == -1


@pytest.mark.parametrize("name", list_miners())
def test_gradcheck_float64(name):
    g = torch.Generator().manual_seed(1)
    scores = torch.rand(3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    positive = torch.rand(3, generator=g, dtype=torch.float64).add(0.5).requires_grad_(True)
    mask = torch.tensor([[1, 1, 0, 1, 1], [0, 1, 1, 1, 1], [1, 1, 1, 1, 0]], dtype=torch.bool)
    kwargs = {"eps": 0.5} if name == "selhn" else {}  # exercise both SelHN branches
    miner = get_miner(name, **kwargs) if name != "fne" else _build(name)

    def fn(s, p):
        return miner(s, p, mask, **_extras(name, s)).loss

    assert torch.autograd.gradcheck(fn, (scores, positive), eps=1e-6, atol=1e-6)


def test_gradcheck_aoq_offline_inputs():
    g = torch.Generator().manual_seed(2)
    scores = torch.rand(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    pos = torch.rand(3, generator=g, dtype=torch.float64).add(0.3).requires_grad_(True)
    off = torch.rand(3, generator=g, dtype=torch.float64).add(0.3).requires_grad_(True)
    pair = torch.rand(3, generator=g, dtype=torch.float64).add(0.3).requires_grad_(True)
    mask = torch.ones(3, 4, dtype=torch.bool)
    miner = get_miner("aoq")
    assert torch.autograd.gradcheck(
        lambda s, p, o, q: miner(s, p, mask, offline_scores=o, pair_scores=q).loss,
        (scores, pos, off, pair),
    )


def test_gradcheck_ndgl_margin_kl_alone():
    g = torch.Generator().manual_seed(4)
    scores = torch.rand(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    pos = torch.rand(3, generator=g, dtype=torch.float64, requires_grad=True)
    target = torch.rand(3, 4, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1, 0, 1, 1], [1, 1, 1, 1], [0, 1, 1, 0]], dtype=torch.bool)
    miner = get_miner("ndgl", temperature=0.3)
    assert torch.autograd.gradcheck(
        lambda s, p: miner.margin_kl(s, p, target, target[:, 0], mask), (scores, pos)
    )


@pytest.mark.parametrize("name", ["hardest", "selhn", "all"])
def test_mining_loss_single_process_equals_square_path(name):
    g = torch.Generator().manual_seed(7)
    img = torch.nn.functional.normalize(torch.randn(6, 4, generator=g, dtype=torch.float64), dim=1)
    txt = torch.nn.functional.normalize(torch.randn(6, 4, generator=g, dtype=torch.float64), dim=1)
    ids = torch.tensor([0, 1, 1, 2, 3, 3])
    loss_fn = create_loss(name)
    assert isinstance(loss_fn, MiningLoss) and loss_fn.world_size == 1 and loss_fn.rank == 0
    out = loss_fn(img, txt, ids)
    pairs = batch_pairs(img @ txt.t(), ids)
    miner = get_miner(name)
    expected = miner(*pairs.i2t).loss.mean() + miner(*pairs.t2i).loss.mean()
    torch.testing.assert_close(out.loss, expected)
    torch.testing.assert_close(out.t2i.loss, miner(*pairs.t2i).loss)
