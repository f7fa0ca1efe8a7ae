"""A resume restores every state file of its checkpoint or refuses in one line naming it
(Accelerate's weights, optimizer and random states, ``tags_state.pt``, the phase models the
run will load); ``--allow-inexact-resume`` goes on without the optimizer or random states,
naming them in a warning."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from _training_utils import tiny_config

from tags.cli import main as cli_main
from tags.training import ConfigError, checkpoint_dirs, training_function
from tags.training.config import to_dict

OVERRIDES = ("model.dropout=0.1", "save_every=1")


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """A vse run stopped at step 2 of 4 (complete checkpoints at steps 1 and 2)."""
    run = tmp_path_factory.mktemp("stopped") / "run"
    training_function(tiny_config("vse", run, *OVERRIDES, "max_steps=2"))
    return run


def copy_of(stopped: Path, tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "run"
    shutil.copytree(stopped, run)
    return run, checkpoint_dirs(run)[-1]


def damage(path: Path, how: str) -> None:
    if how == "missing":
        path.unlink()
    elif how == "cut":
        path.write_bytes(path.read_bytes()[:100])
    else:  # the same size, 16 bytes in the middle changed
        data = bytearray(path.read_bytes())
        middle = len(data) // 2
        data[middle : middle + 16] = bytes(255 - b for b in data[middle : middle + 16])
        path.write_bytes(bytes(data))


def files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def resume(run: Path, *more: str):
    return training_function(tiny_config("vse", run, *OVERRIDES, "resume_from=latest", *more))


def test_the_complete_marker_lists_every_file_of_the_checkpoint(stopped):
    from tags.training.checkpoint import read_manifest

    checkpoint = checkpoint_dirs(stopped)[-1]
    assert (checkpoint / "COMPLETE").read_text().splitlines()[0] == "2"
    listed, problems = read_manifest(checkpoint / "COMPLETE")
    assert not problems
    names = {p.name for p in checkpoint.iterdir()} - {"COMPLETE"}
    assert set(listed) == names >= {"model.safetensors", "optimizer.bin", "tags_state.pt"}
    assert listed["random_states_0.pkl"][0] == (checkpoint / "random_states_0.pkl").stat().st_size


@pytest.mark.parametrize(
    ("name", "how", "inexact"),
    [
        ("random_states_0.pkl", "cut", True),  # Accelerate skipped it silently
        ("random_states_0.pkl", "flip", True),  # loads, but other states
        ("optimizer.bin", "cut", True),  # Accelerate: an UnpicklingError traceback
        ("optimizer.bin", "missing", True),
        ("model.safetensors", "flip", False),  # loads, but other weights
        ("tags_state.pt", "cut", False),
    ],
)
def test_a_damaged_or_missing_state_file_is_refused_naming_it(
    stopped, tmp_path, name, how, inexact
):
    run, checkpoint = copy_of(stopped, tmp_path)
    damage(checkpoint / name, how)
    before = files(run)
    with pytest.raises(ConfigError) as err:
        resume(run)
    message = str(err.value)
    assert "\n" not in message and f"{checkpoint / name} is " in message
    earlier = checkpoint_dirs(run)[0]
    assert f"resume from an earlier checkpoint (resume_from={earlier})" in message
    assert ("--allow-inexact-resume" in message) == inexact
    assert files(run) == before  # refused before anything was written
    if not inexact:  # nothing to continue: refused even when an inexact resume is allowed
        with pytest.raises(ConfigError, match=name):
            resume(run, "allow_inexact_resume=true")


@pytest.mark.parametrize("name", ["random_states_0.pkl", "optimizer.bin"])
def test_an_older_checkpoint_without_a_file_list_is_read_to_check_it(stopped, tmp_path, name):
    run, checkpoint = copy_of(stopped, tmp_path)
    (checkpoint / "COMPLETE").write_text("2\n")  # as older versions wrote it
    damage(checkpoint / name, "cut")
    with pytest.raises(ConfigError, match=rf"{name} is unreadable: .*--allow-inexact-resume"):
        resume(run)


def test_allow_inexact_resume_goes_on_and_names_what_was_not_restored(stopped, tmp_path, capsys):
    run, checkpoint = copy_of(stopped, tmp_path)
    damage(checkpoint / "random_states_0.pkl", "cut")
    damage(checkpoint / "optimizer.bin", "missing")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(to_dict(tiny_config("vse", run, *OVERRIDES))))
    argv = ["train", "--config", str(config), "resume_from=latest"]
    assert cli_main(argv) == 2
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("tags train:")]
    assert len(errors) == 1 and "optimizer.bin is missing" in errors[0]
    assert "also: random_states_0.pkl" in errors[0]
    assert cli_main([*argv, "--allow-inexact-resume"]) == 0
    err = capsys.readouterr().err
    warning = next(line for line in err.splitlines() if line.startswith("warning:"))
    assert "inexactly" in warning and "optimizer.bin is missing" in warning
    assert "random_states_0.pkl is not the file saved" in warning
    assert len(checkpoint_dirs(run)) == 2 and checkpoint_dirs(run)[-1].name.endswith("4")


def test_the_random_states_in_force_are_compared_with_the_file():
    from tags.training.checkpoint import rng_differs

    states = {
        "random_state": random.getstate(),
        "numpy_random_seed": np.random.get_state(),
        "torch_manual_seed": torch.get_rng_state(),
    }
    assert rng_differs(states, torch.device("cpu")) == []
    random.random(), np.random.rand(), torch.rand(1)
    assert rng_differs(states, torch.device("cpu")) == ["python", "numpy", "torch"]


def test_a_resume_needs_the_phase_models_it_will_load(tmp_path):
    phases = (
        "phases=[{name: a, steps: 2, lr: 1.0e-3}, {name: b, steps: 2, lr: 1.0e-3, init: initial}]"
    )
    run = tmp_path / "run"
    training_function(tiny_config("vse", run, phases, "max_steps=1"))
    shutil.rmtree(run / "phases" / "-1_initial")  # phase b restarts from it
    with pytest.raises(ConfigError, match=r"-1_initial is missing \(phase 1 starts from it\)"):
        training_function(tiny_config("vse", run, phases, "resume_from=latest"))
