"""``pretrain`` recipe: ITM (random negatives) + MLM + ITC, its helpers and its learning."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from _training_utils import tiny_config

from tags.modeling import TagsModel
from tags.training import training_function
from tags.training.config import ConfigError
from tags.training.recipes.pretrain import info_nce, sample_by_similarity, sample_other


def rows(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_info_nce_matches_hand_computation_and_masks_same_image_captions():
    scores = torch.tensor([[2.0, 1.0, 0.5], [0.0, 3.0, 1.0]])
    own = torch.tensor([0, 1])
    anchors = torch.tensor([10, 20])
    # candidate 2 belongs to image 10: not a negative of anchor 0, still one of anchor 1
    candidates = torch.tensor([10, 20, 10])
    got = info_nce(scores, own, anchors, candidates)
    row0 = -F.log_softmax(torch.tensor([2.0, 1.0]), 0)[0]
    row1 = -F.log_softmax(torch.tensor([0.0, 3.0, 1.0]), 0)[1]
    assert got.item() == pytest.approx((row0 + row1).item(), rel=1e-6)
    # the positive column is never masked even though it shares the anchor's image id
    assert math.isfinite(got.item())


def test_info_nce_gradient_pulls_the_positive_up():
    scores = torch.zeros(2, 3, requires_grad=True)
    info_nce(scores, torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([0, 1, 2])).backward()
    assert scores.grad[0, 0] < 0 and scores.grad[1, 1] < 0  # descent raises the positives
    assert (scores.grad[0, 1:] > 0).all()


def test_sample_other_excludes_and_fails_clearly():
    g = torch.Generator().manual_seed(0)
    picks = {sample_other(4, {1, 2}, g) for _ in range(100)}
    assert picks == {0, 3}
    assert sample_other(100, set(range(99)), g) == 99  # rejection fails, the scan finds it
    with pytest.raises(ValueError, match="no image left"):
        sample_other(2, {0, 1}, g, "image")


def test_sample_by_similarity_follows_the_softmax_over_other_images():
    ids = torch.tensor([7, 7, 8, 9])
    scores = torch.tensor(
        [
            [0.0, 50.0, 0.0, 9.0],  # column 1 is its own image: never drawn despite 50
            [0.0, 0.0, 40.0, 0.0],  # column 2 dominates the softmax
            [1.0, 1.0, 0.0, 1.0],  # uniform over 0, 1, 3
            [0.0, 0.0, 0.0, 0.0],
        ]
    )
    g = torch.Generator().manual_seed(0)
    draws = [sample_by_similarity(scores, ids, g) for _ in range(300)]
    assert {d[0] for d in draws} <= {2, 3} and sum(d[0] == 3 for d in draws) > 290
    assert all(d[1] == 2 for d in draws)
    assert {d[2] for d in draws} == {0, 1, 3}
    assert all(d[3] != 3 for d in draws)
    with pytest.raises(ValueError, match="at least two images"):
        sample_by_similarity(torch.zeros(2, 2), torch.tensor([1, 1]), g)


@pytest.mark.parametrize(
    ("negatives", "sampling"),
    [("both", "random"), ("caption", "random"), ("image", "random"), ("both", "itc")],
)
def test_pretrain_runs_and_logs_every_term(tmp_path, negatives, sampling):
    run = tmp_path / "run"
    cfg = tiny_config(
        "pretrain",
        run,
        "phases.0.steps=2",
        f"pretrain.itm_negatives={negatives}",
        f"pretrain.itm_sampling={sampling}",
        "phases.0.weights={itm: 1.0, mlm: 1.0, itc: 1.0}",
    )
    training_function(cfg)
    last = rows(run)[-1]
    for key in ("loss/itm", "loss/mlm", "loss/itc", "itm/accuracy", "itc/i2t_acc"):
        assert math.isfinite(last[key])
    assert last["loss/itc"] > 0 and last["loss/itm"] > 0
    model = TagsModel.from_pretrained(run / "model")
    assert model.config.hidden_size == 32


def test_pretrain_without_itc_skips_the_dual_pass(tmp_path):
    run = tmp_path / "run"
    training_function(
        tiny_config("pretrain", run, "phases.0.steps=1", "phases.0.weights={itc: 0.0}")
    )
    row = rows(run)[-1]
    assert row["loss/itc"] == 0.0 and "itc/i2t_acc" not in row


def test_pretrain_config_is_validated(tmp_path):
    with pytest.raises(ConfigError, match="itc_temperature"):
        tiny_config("pretrain", tmp_path, "pretrain.itc_temperature=0")
    with pytest.raises(ConfigError, match=r"pretrain\.itm_negatives"):
        tiny_config("pretrain", tmp_path, "pretrain.itm_negatives=text")
    with pytest.raises(ConfigError, match=r"pretrain\.itm_sampling"):
        tiny_config("pretrain", tmp_path, "pretrain.itm_sampling=hard")
    with pytest.raises(ConfigError, match="unknown loss term"):
        tiny_config("pretrain", tmp_path, "phases.0.weights={istm: 1.0}")


@pytest.mark.slow
def test_pretrain_learns_on_the_shapes_benchmark(tmp_path):
    """200 rendered training images, 100 steps: the ITM loss falls and ITC's in-batch
    accuracy rises to 3x chance or more (measured ~5x; a broken loss, a detached branch or a
    mask bug stays at chance)."""
    from tags.benchmark import BenchmarkConfig, build_benchmark

    paths = build_benchmark(tmp_path / "data", BenchmarkConfig(train=200, val=0, test=0)).paths
    run = tmp_path / "run"
    cfg = tiny_config(
        "pretrain",
        run,
        "batch_size=16",
        "phases.0.steps=100",
        "phases.0.lr=3e-3",
        "model.overrides.initializer_range=0.08",
        "model.overrides.hidden_size=64",
        "model.overrides.intermediate_size=128",
        data={"captions": str(paths.captions), "features": str(paths.features), "max_text_len": 24},
    )
    training_function(cfg)
    history = rows(run)
    first, last = history[:5], history[-20:]
    assert sum(r["loss/itm"] for r in last) / 20 < sum(r["loss/itm"] for r in first) / 5 - 0.04
    assert sum(r["itc/i2t_acc"] for r in last) / 20 > 3 / cfg.batch_size
