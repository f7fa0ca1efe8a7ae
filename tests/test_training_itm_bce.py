"""The ``tags-dc`` level terms ``itm_bce`` / ``istm_bce`` (BLIP's ITM cross-entropy)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from _training_utils import SwapNouns, tiny_config

from tags.training import training_function
from tags.training.config import ConfigError
from tags.training.recipes.tags_dc import match_bce


def rows(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_match_bce_is_the_balanced_cross_entropy_of_the_logits():
    pos = torch.tensor([2.0, -1.0])
    neg = torch.tensor([[0.5, 3.0, 9.0], [-2.0, 1.0, 0.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])  # 9.0, 1.0, 0.0 left out

    def nll(p: float) -> float:
        return -math.log(p)

    def sig(z: float) -> float:
        return 1 / (1 + math.exp(-z))

    positive = (nll(sig(2.0)) + nll(sig(-1.0))) / 2
    negative = (nll(1 - sig(0.5)) + nll(1 - sig(3.0)) + nll(1 - sig(-2.0))) / 3
    assert match_bce(pos, neg, mask).item() == pytest.approx((positive + negative) / 2, rel=1e-6)
    # bf16 logits are read in fp32: no saturation of a large logit
    big = match_bce(torch.tensor([20.0]).bfloat16(), torch.tensor([[20.0]]).bfloat16(),
                    torch.tensor([[True]]))  # fmt: skip
    assert big.dtype == torch.float32 and big.item() == pytest.approx(10.0, rel=1e-3)
    # no valid negative: the positive half only
    none = match_bce(pos, neg, torch.zeros_like(mask))
    assert none.item() == pytest.approx(positive / 2, rel=1e-6)


def test_itm_bce_is_added_to_the_loss_and_off_by_default(tmp_path):
    """Same seed, same first step: the total with the term is the hinge-only total plus the
    weighted term; the default run has no such term."""

    def first(name: str, *overrides: str) -> dict:
        cfg = tiny_config("tags-dc", tmp_path / name, "phases.0.steps=1", *overrides)
        training_function(cfg, source=SwapNouns())
        return rows(tmp_path / name)[0]

    plain = first("plain")
    both = first("both", "phases.0.weights={itm_bce: 2.0, istm_bce: 0.5}")
    assert "loss/itm_bce" not in plain and "loss/istm_bce" not in plain
    assert both["loss/itm_bce"] > 0 and both["loss/istm_bce"] > 0
    assert both["loss/itm_i2t"] == pytest.approx(plain["loss/itm_i2t"], rel=1e-6)
    assert both["loss/total"] == pytest.approx(
        plain["loss/total"] + 2.0 * both["loss/itm_bce"] + 0.5 * both["loss/istm_bce"],
        rel=1e-5,
    )


def test_match_bce_raises_positives_and_lowers_negatives():
    """Unlike a hinge that is met (zero gradient), the level term always pulls the positives'
    logits up and the valid negatives' down; masked negatives get no gradient."""
    pos = torch.tensor([3.0, 1.0], requires_grad=True)
    neg = torch.tensor([[-4.0, 0.0], [2.0, -1.0]], requires_grad=True)
    mask = torch.tensor([[True, True], [True, False]])
    match_bce(pos, neg, mask).backward()
    assert (pos.grad < 0).all()
    assert (neg.grad[mask] > 0).all() and neg.grad[~mask].item() == 0.0


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["phases.0.weights={itm_bce: -1.0}"], "phases.0.weights.itm_bce must be >= 0"),
        (["phases.0.weights={istm_bce: 1.0}", "tags_dc.synthetic.source=none"],
         "phases.0.weights.istm_bce scores the synthetic negatives"),
    ],
)  # fmt: skip
def test_bad_level_weights_are_refused(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        tiny_config("tags-dc", tmp_path, *overrides)
    assert "\n" not in str(err.value)
