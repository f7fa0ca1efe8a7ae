"""FNE inside the tags-dc recipe: config, exact resume of the statistics inside an epoch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _training_utils import state_dict_close, tiny_config

from tags.training import ConfigError, checkpoint_dirs, training_function
from tags.training.state import load_custom_states

FNE = (
    "tags_dc.itm_miner={name: fne, kwargs: {min_count: 0}}",
    "tags_dc.istm_miner={name: fne, kwargs: {min_count: 0}}",
    "tags_dc.retrieval.pool_size=3",
    # a spread of ITM scores from the start, so that some anchors are "right" early
    "model.overrides.initializer_range=0.5",
    "phases.0.steps=7",
)


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _miner_state(checkpoint: Path, index: int) -> dict:
    return load_custom_states(checkpoint)[index]


def test_config_accepts_fne_and_still_rejects_the_others(tmp_path):
    tiny_config("tags-dc", tmp_path, "tags_dc.itm_miner.name=fne")
    with pytest.raises(ConfigError, match="aoq"):
        tiny_config("tags-dc", tmp_path, "tags_dc.itm_miner.name=aoq")
    for bad in ("fne", "nonsense"):
        with pytest.raises(ConfigError, match="fne_itm_loss"):
            tiny_config("tags-dc", tmp_path, f"tags_dc.fne_itm_loss={bad}")


def test_resume_inside_an_epoch_keeps_the_fne_statistics(tmp_path):
    straight = training_function(tiny_config("tags-dc", tmp_path / "a", *FNE))
    training_function(tiny_config("tags-dc", tmp_path / "b", *FNE, "max_steps=5"))
    half = checkpoint_dirs(tmp_path / "b")[-1]
    # registered: 0 scheduler, 1 train state, 2 ITM miner, 3 ISTM miner
    assert _miner_state(half, 1)["batch_in_epoch"] == 5  # 10 batches per epoch: inside it
    saved = _miner_state(half, 2)
    assert (
        saved["stats.pos"][0] >= 2 and saved["stats.neg"][0] >= 2
    )  # statistics exist at the checkpoint
    resumed = training_function(tiny_config("tags-dc", tmp_path / "b", *FNE, "resume_from=latest"))
    assert resumed.state.step == straight.state.step == 7
    state_dict_close(straight.model, resumed.model, atol=1e-6)
    a, b = _rows(tmp_path / "a"), _rows(tmp_path / "b")
    for ra, rb in zip(a[5:], b[5:]):
        for key in ("loss/itm", "loss/istm", "fne/pos_count", "itm_i2t/fne_sampled_share"):
            assert ra[key] == pytest.approx(rb[key], abs=1e-6), key
    # after the resume FNE samples (its statistics were kept, not reset)
    assert any(r["itm_i2t/fne_sampled_share"] + r["itm_t2i/fne_sampled_share"] > 0 for r in b[5:])
    assert any(r["istm/fne_sampled_share"] > 0 for r in b[5:])
    end_a, end_b = checkpoint_dirs(tmp_path / "a")[-1], checkpoint_dirs(tmp_path / "b")[-1]
    for index in (2, 3):
        sa, sb = _miner_state(end_a, index), _miner_state(end_b, index)
        for key in ("stats.pos", "stats.neg"):
            assert torch.allclose(sa[key], sb[key], atol=1e-9), (index, key)
    # a reset on resume would have dropped the checkpoint's counts (and differed from "a")
    assert _miner_state(end_b, 2)["stats.pos"][0] >= saved["stats.pos"][0]
