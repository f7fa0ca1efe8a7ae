"""``metrics.jsonl`` across a resume: a row that a checkpoint cut in two is the row of the
uninterrupted run, and ``resume_from=latest`` without a checkpoint starts over without the
earlier run's rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _training_utils import tiny_config

from tags.training import checkpoint_dirs, training_function

# log every 4 steps, a checkpoint every 3: the checkpoint at step 3 sits inside a log window
OVERRIDES = ("phases.0.steps=8", "log_every=4", "save_every=3", "keep_checkpoints=5")


def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_row_the_checkpoint_cut_in_two_equals_the_uninterrupted_one(tmp_path):
    straight = tmp_path / "a"
    training_function(tiny_config("vse", straight, *OVERRIDES))
    # killed after step 5 (its step-4 row written), resumed from the checkpoint at step 3
    run = tmp_path / "b"
    training_function(tiny_config("vse", run, *OVERRIDES, "max_steps=5"))
    step3 = next(p for p in checkpoint_dirs(run) if p.name.endswith("3"))
    training_function(tiny_config("vse", run, *OVERRIDES, f"resume_from={step3}"))
    a, b = rows(straight), rows(run)
    assert [r["step"] for r in a] == [r["step"] for r in b] == [4, 8]
    for ra, rb in zip(a, b):  # the step-4 row averages steps 1-4 in both
        for key in ra:
            if key.startswith("time/"):
                continue
            assert rb[key] == pytest.approx(ra[key], abs=1e-6), (rb["step"], key)


def test_resume_latest_without_a_checkpoint_starts_over_without_the_old_rows(tmp_path, capsys):
    run = tmp_path / "run"
    overrides = ("phases.0.steps=4", "log_every=1")
    training_function(tiny_config("vse", run, *overrides, "max_steps=3"))
    shutil.rmtree(run / "checkpoints")  # killed before its first checkpoint was complete
    capsys.readouterr()
    result = training_function(tiny_config("vse", run, *overrides, "resume_from=latest"))
    assert result.state.step == 4
    assert [r["step"] for r in rows(run)] == [1, 2, 3, 4]  # each step logged once
    out = capsys.readouterr().out
    assert "resume_from=latest: no complete checkpoint in" in out
    assert "starting at step 0 (the 3 metric rows of the earlier run dropped)" in out
