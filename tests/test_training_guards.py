"""Nothing silent, nothing lost: non-finite numbers and losses, one run per output_dir,
inputs checked before anything is written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import yaml
from _training_utils import state_dict_close, tiny_config

from tags.cli import main as cli_main
from tags.core.lock import OutputLock
from tags.modeling import TagsModel
from tags.training import ConfigError, checkpoint_dirs, training_function
from tags.training.config import to_dict
from tags.training.loop import NonFiniteLossError
from tags.training.recipes.vse import VSERecipe
from tags.training.rundir import LOCK_FILE


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("value", ["nan", ".nan", "inf", "-.inf"])
def test_non_finite_numbers_are_refused(tmp_path, value):
    with pytest.raises(ConfigError, match=r"phases\.0\.lr: .* is not a finite number"):
        tiny_config("vse", tmp_path, f"phases.0.lr={value}")
    with pytest.raises(ConfigError, match=r"vse\.miner\.kwargs\.margin: .* not a finite"):
        tiny_config("vse", tmp_path, f"vse.miner.kwargs={{margin: {value}}}")


@pytest.fixture
def nan_at(monkeypatch):
    """Make the vse loss NaN at the given 0-based optimizer steps."""
    bad: set[int] = set()
    original = VSERecipe.training_step

    def step(self, module, batch, ctx):
        out = original(self, module, batch, ctx)
        if ctx.step in bad:
            out.loss = out.loss * float("nan")
        return out

    monkeypatch.setattr(VSERecipe, "training_step", step)
    return bad


def test_a_non_finite_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, nan_at):
    nan_at.add(3)  # the 4th step
    run = tmp_path / "run"
    cfg = tiny_config("vse", run, "phases.0.steps=6", "save_every=2")
    with pytest.raises(NonFiniteLossError, match=r"non-finite loss at step 4 \(phase 0 'main'"):
        training_function(cfg)
    assert [d.name for d in checkpoint_dirs(run)] == ["step_00000002"]
    assert not (run / "model").exists()
    assert [r["step"] for r in metrics(run)] == [1, 2, 3]
    assert all(r["loss/total"] is not None for r in metrics(run))
    # the CLI: a message naming the step and a non-zero exit code, no traceback
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(to_dict(tiny_config("vse", tmp_path / "cli", "save_every=2"))))
    assert cli_main(["train", "--config", str(path)]) == 3
    assert checkpoint_dirs(tmp_path / "cli")[-1].name == "step_00000002"


def test_bounded_skipping_of_non_finite_steps(tmp_path, nan_at):
    nan_at.add(3)
    three = training_function(tiny_config("vse", tmp_path / "a", "phases.0.steps=6", "max_steps=3"))
    skipped = training_function(
        tiny_config(
            "vse", tmp_path / "b", "phases.0.steps=6", "max_steps=4", "max_nonfinite_steps=1"
        )
    )
    assert skipped.state.step == 4 and skipped.state.skipped == 1
    state_dict_close(three.model, skipped.model, atol=0.0)  # step 4 changed nothing
    assert "loss/total" not in metrics(tmp_path / "b")[3]
    nan_at.add(4)
    with pytest.raises(NonFiniteLossError, match="step 5"):  # the second one is too many
        training_function(
            tiny_config("vse", tmp_path / "c", "phases.0.steps=6", "max_nonfinite_steps=1")
        )


def test_an_output_dir_holding_another_run_is_refused(tmp_path):
    run = tmp_path / "run"
    training_function(tiny_config("vse", run, "phases.0.steps=2"))
    before = {p.name: p.read_bytes() for p in (run / "config.yaml", run / "metrics.jsonl")}
    with pytest.raises(ConfigError, match=r"holds another run \(config.yaml, metrics.jsonl"):
        training_function(tiny_config("vse", run, "phases.0.steps=3", "seed=1"))
    after = {p.name: p.read_bytes() for p in (run / "config.yaml", run / "metrics.jsonl")}
    assert after == before  # nothing appended, nothing overwritten
    for override, named in (
        ("seed=1", "seed 0 -> 1"),
        ("batch_size=4", "batch_size 8 -> 4"),
        ("phases.0.lr=0.5", "phase lr [0.001] -> [0.5]"),
    ):
        with pytest.raises(ConfigError, match=f"settings differ .*{re.escape(named)}"):
            training_function(tiny_config("vse", run, "resume_from=latest", override))


def test_an_output_dir_in_use_is_refused(tmp_path):
    run = tmp_path / "run"
    with OutputLock(run / LOCK_FILE):
        with pytest.raises(ConfigError, match="in use by another run"):
            training_function(tiny_config("vse", run, "phases.0.steps=1"))
        assert not (run / "config.yaml").exists()
    training_function(tiny_config("vse", run, "phases.0.steps=1"))  # free again
    assert not (run / LOCK_FILE).exists()


def test_missing_inputs_are_named_before_anything_is_written(tmp_path, capsys):
    run = tmp_path / "run"
    cfg = tiny_config("vse", run, f"data.captions={tmp_path / 'nope.txt'}", "data.format=precomp")
    with pytest.raises(ConfigError, match=r"data\.captions: .*nope\.txt not found"):
        training_function(cfg)
    assert not run.exists()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(to_dict(cfg)))
    assert cli_main(["train", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "nope.txt not found" in err and "Traceback" not in err
    assert not run.exists()


def test_inconsistent_data_is_refused_and_leaves_no_directory(tmp_path, capsys):
    from tags.data import write_synthetic_dataset

    paths = write_synthetic_dataset(tmp_path / "data", num_images=3)
    lines = paths["captions"].read_text().splitlines()
    paths["captions"].write_text("\n".join(lines[:-1]) + "\n")  # one caption line lost
    run = tmp_path / "run"
    cfg = tiny_config(
        "vse", run, f"data.captions={paths['captions']}", f"data.features={paths['features']}",
        "data.format=precomp", "batch_size=2",
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"data: .*14 caption lines, but .* holds 3 image rows"):
        training_function(cfg)
    assert not run.exists()


def test_resume_drops_metric_rows_logged_after_the_checkpoint(tmp_path):
    run = tmp_path / "run"
    training_function(tiny_config("vse", run, "phases.0.steps=4", "max_steps=2"))
    with open(run / "metrics.jsonl", "a") as handle:  # a crash after step 3 was logged
        handle.write(json.dumps({"step": 3, "loss/total": 1.0}) + "\n")
    training_function(tiny_config("vse", run, "phases.0.steps=4", "resume_from=latest"))
    assert [r["step"] for r in metrics(run)] == [1, 2, 3, 4]
    assert metrics(run)[2]["loss/total"] != 1.0
    assert torch.isfinite(
        torch.cat([p.flatten() for p in TagsModel.from_pretrained(run / "model").parameters()])
    ).all()


def test_unusable_weights_from_the_last_step_stop_the_run_before_saving(tmp_path, capsys):
    """Issue "every bad input": ``phases.0.lr=1e37 phases.0.steps=1`` printed "done", exit 0,
    and saved a model whose outputs are NaN (the loss of the only step was finite)."""
    run = tmp_path / "run"
    cfg = tiny_config("vse", run, "phases.0.lr=1e37", "phases.0.steps=1")
    with pytest.raises(NonFiniteLossError, match=r"non-finite weights after step 1 \(phase 0"):
        training_function(cfg)
    assert not (run / "model").exists() and not checkpoint_dirs(run)
    assert not (run / "phases").exists()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(to_dict(tiny_config("vse", tmp_path / "cli"))))
    assert cli_main(["train", "--config", str(path), "phases.0.lr=1e37", "phases.0.steps=1"]) == 3
    captured = capsys.readouterr()
    assert "non-finite weights after step 1" in captured.err and "Traceback" not in captured.err
    assert "done" not in captured.out


def test_a_diverged_mlm_stops_tags_dc_with_the_step_named(tmp_path, capsys):
    """Issue "every bad input": tags-dc with an exploding lr died inside ``torch.multinomial``
    (the synthetic sampler's NaN logits) with a traceback instead of the non-finite stop."""
    run = tmp_path / "run"
    cfg = tiny_config("tags-dc", run, "phases.0.lr=1e37", "phases.0.steps=3")
    with pytest.raises(NonFiniteLossError, match=r"logits are not finite .* at step \d"):
        training_function(cfg)
    assert not (run / "model").exists()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(to_dict(tiny_config("tags-dc", tmp_path / "cli"))))
    argv = ["train", "--config", str(path), "phases.0.lr=1e37", "phases.0.steps=3"]
    assert cli_main(argv) == 3
    err = capsys.readouterr().err
    assert "logits are not finite" in err and "Traceback" not in err


def test_the_refill_sampler_names_non_finite_logits():
    from tags.core.errors import NonFiniteError
    from tags.negatives.refill import sample_refills

    logits = torch.zeros(2, 5)
    assert sample_refills(logits, 3, temperature=1.0).shape == (2, 3)
    logits[1, 2] = float("nan")
    with pytest.raises(NonFiniteError, match="not finite"):
        sample_refills(logits, 3, temperature=1.0)
