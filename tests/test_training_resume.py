"""Exact resumption (both recipes), the NSG -> NSGDC phase switch, run outputs, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from _training_utils import SwapNouns, state_dict_close, tiny_config

from tags.cli import main as cli_main
from tags.modeling import TagsModel
from tags.training import ConfigError, checkpoint_dirs, load_config, training_function
from tags.training.config import to_dict
from tags.training.state import load_custom_states


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def custom_state(checkpoint: Path, index: int) -> dict:
    return load_custom_states(checkpoint)[index]


def test_vse_resume_with_fne_queue_and_dropout(tmp_path):
    overrides = (
        "phases.0.steps=6",
        "vse.miner.name=fne",
        "vse.miner.kwargs={min_count: 0}",
        "vse.queue_size=20",  # wraps around within the run
        "model.dropout=0.1",  # resumed RNG must replay the same dropout masks
        "batch_size=4",
    )
    straight = training_function(tiny_config("vse", tmp_path / "a", *overrides))
    half = training_function(tiny_config("vse", tmp_path / "b", *overrides, "max_steps=3"))
    assert half.state.step == 3
    # max_steps leaves a usable model (the weights at step 3), overwritten by the resumed run
    early = type(half.model).from_pretrained(tmp_path / "b" / "model")
    state_dict_close(half.model, early, atol=0.0)
    resumed = training_function(
        tiny_config("vse", tmp_path / "b", *overrides, "resume_from=latest")
    )
    assert resumed.state.step == straight.state.step == 6
    state_dict_close(straight.model, resumed.model, atol=1e-6)
    state_dict_close(resumed.model, type(half.model).from_pretrained(tmp_path / "b" / "model"), 0.0)
    # losses after the resume point and the checkpointed objects are the same
    a, b = metrics(tmp_path / "a"), metrics(tmp_path / "b")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5, 6]
    for ra, rb in zip(a[3:], b[3:]):
        assert ra["loss/total"] == pytest.approx(rb["loss/total"], abs=1e-6)
    ca, cb = checkpoint_dirs(tmp_path / "a")[-1], checkpoint_dirs(tmp_path / "b")[-1]
    # registered: 0 scheduler, 1 train state, 2 miner (FNE stats), 3 momentum, 4 queue
    assert custom_state(cb, 1) == {
        "step": 6, "epoch": 0, "batch_in_epoch": 6, "phase": 0, "skipped": 0,
        "best": float("-inf"), "best_step": 0, "stale": 0,  # no evaluation in this run
    }  # fmt: skip
    for index in (2, 4):
        sa, sb = custom_state(ca, index), custom_state(cb, index)
        for key in sa:
            assert torch.allclose(sa[key].double(), sb[key].double(), atol=1e-6), key
    queue = custom_state(cb, 4)
    assert int(queue["filled"]) == 20 and int(queue["ptr"]) == (6 * 4) % 20


def test_tags_dc_resume_mid_phase_two_with_the_engine(tmp_path):
    overrides = (
        "phases=[{name: nsg, steps: 2, lr: 1.0e-3}, {name: nsgdc, steps: 2, lr: 5.0e-4,"
        " weights: {wod: 1.0e-2, woc: 1.0e-2}}]",
    )
    straight = training_function(tiny_config("tags-dc", tmp_path / "a", *overrides))
    training_function(tiny_config("tags-dc", tmp_path / "b", *overrides, "max_steps=3"))
    resumed = training_function(
        tiny_config("tags-dc", tmp_path / "b", *overrides, "resume_from=latest")
    )
    assert resumed.state.phase == 1 and resumed.state.step == 4
    state_dict_close(straight.model, resumed.model, atol=1e-6)
    last_a, last_b = metrics(tmp_path / "a")[-1], metrics(tmp_path / "b")[-1]
    for key in ("loss/itm", "loss/mlm", "loss/istm", "loss/wod", "loss/woc"):
        assert last_a[key] == pytest.approx(last_b[key], abs=1e-6)
    assert last_a["loss/wod"] > 0 and last_a["synthetic/per_caption"] > 0


def test_phase_switch_loads_phase_one_checkpoint(tmp_path):
    phases = (
        "phases=[{name: nsg, steps: 2, lr: 1.0e-3}, {name: nsgdc, steps: 1, lr: 0.0,"
        " weights: {wod: 1.0, woc: 1.0}}]"
    )
    run = tmp_path / "run"
    source = SwapNouns()
    # the loaded weights as they are: no WoC start from the MLM head (tested on its own)
    phases = (phases, "tags_dc.woc_init=random")
    training_function(tiny_config("tags-dc", run, *phases, "max_steps=2"), source=source)
    assert source.calls == 2
    saved = run / "phases" / "0_nsg"
    # edit phase 1's saved weights on disk: phase 2 must start from exactly these
    model = TagsModel.from_pretrained(saved)
    with torch.no_grad():
        model.itm_head.classifier.bias.add_(0.5)
    model.save_pretrained(saved)
    result = training_function(
        tiny_config("tags-dc", run, *phases, "resume_from=latest"), source=source
    )
    state_dict_close(result.model, model, atol=0.0)  # lr 0 in phase 2: weights unchanged
    rows = metrics(run)
    assert [r["phase"] for r in rows] == [0, 0, 1]
    assert rows[0]["loss/wod"] == 0.0 and rows[0]["loss/woc"] == 0.0  # NSG
    assert rows[2]["loss/wod"] > 0 and rows[2]["loss/woc"] > 0  # NSGDC
    assert all(r["synthetic/per_caption"] == 2.0 for r in rows)


def test_cli_run_saves_config_metrics_and_model(tmp_path):
    cfg = tiny_config("vse", tmp_path / "run", "phases.0.steps=2", "log_every=2")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(to_dict(cfg)))
    assert cli_main(["train", "--config", str(path), "vse.miner.name=selhn"]) == 0
    saved = load_config(tmp_path / "run" / "config.yaml")
    assert saved.vse.miner.name == "selhn" and to_dict(saved)["phases"] == to_dict(cfg)["phases"]
    rows = metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == [2]
    for key in ("lr", "loss/total", "i2t/hardness", "t2i/selhn_all_share", "loss/triplet_i2t"):
        assert key in rows[0]
    model = TagsModel.from_pretrained(tmp_path / "run" / "model")
    assert model.config.hidden_size == 32
    assert (tmp_path / "run" / "model" / "tokenizer.json").is_file()


def test_gradient_accumulation_counts_optimizer_steps(tmp_path):
    cfg = tiny_config(
        "vse", tmp_path / "run", "batch_size=4", "gradient_accumulation_steps=2",
        "phases.0.steps=2", "optim.max_grad_norm=0.5",
    )  # fmt: skip
    result = training_function(cfg)
    assert (result.state.step, result.state.batch_in_epoch) == (2, 4)
    assert [r["step"] for r in metrics(tmp_path / "run")] == [1, 2]
    assert [d.name for d in checkpoint_dirs(tmp_path / "run")] == ["step_00000002"]


def test_vse_resume_is_exact_across_epoch_boundaries(tmp_path):
    """40 pairs / batch 8 = 5 batches an epoch: stop inside epoch 1, again inside epoch 2."""
    overrides = ("phases.0.steps=13", "model.dropout=0.1", "vse.miner.name=selhn")
    straight = training_function(tiny_config("vse", tmp_path / "a", *overrides))
    training_function(tiny_config("vse", tmp_path / "b", *overrides, "max_steps=7"))
    again = "resume_from=latest"
    mid = training_function(tiny_config("vse", tmp_path / "b", *overrides, again, "max_steps=11"))
    assert (mid.state.epoch, mid.state.batch_in_epoch) == (2, 1)
    resumed = training_function(tiny_config("vse", tmp_path / "b", *overrides, again))
    assert resumed.state.step == straight.state.step == 13
    a, b = metrics(tmp_path / "a"), metrics(tmp_path / "b")
    assert [r["step"] for r in b] == list(range(1, 14))
    assert [r["epoch"] for r in b] == [0] * 5 + [1] * 5 + [2] * 3
    for ra, rb in zip(a, b):
        assert ra["loss/total"] == pytest.approx(rb["loss/total"], abs=1e-6), ra["step"]
    state_dict_close(straight.model, resumed.model, atol=1e-6)


AOQ_ROUNDS = (
    "vse.aoq={h: 10}",
    "phases=[{name: round1, steps: 2, lr: 1.0e-2},"
    " {name: round2, steps: 3, lr: 1.0e-2, miner: aoq, init: initial}]",
)
FNE_PHASE = (  # round 1 trains far enough for FNE's statistics to fill in round 2
    "vse.miner={name: fne, kwargs: {min_count: 0}}",
    "phases=[{name: round1, steps: 6, lr: 3.0e-2, miner: hardest},"
    " {name: round2, steps: 4, lr: 1.0e-2, miner: fne, init: continue}]",
)


@pytest.mark.parametrize(
    ("overrides", "stop", "key"),
    [(AOQ_ROUNDS, 3, "i2t/weight"), (FNE_PHASE, 8, "fne/pos_count")],
    ids=["aoq", "fne"],
)
def test_vse_resume_inside_a_phase_with_a_miner_override(tmp_path, overrides, stop, key):
    """Stopped inside round 2 and resumed: round 2 keeps its miner (and FNE its state)."""
    straight = training_function(tiny_config("vse", tmp_path / "a", *overrides))
    training_function(tiny_config("vse", tmp_path / "b", *overrides, f"max_steps={stop}"))
    resumed = training_function(
        tiny_config("vse", tmp_path / "b", *overrides, "resume_from=latest")
    )
    a, b = metrics(tmp_path / "a"), metrics(tmp_path / "b")
    first = 2 if key == "i2t/weight" else 6  # round 1's length
    assert [r["step"] for r in b] == [r["step"] for r in a]
    assert all(key in r for r in b[first:]) and all(key not in r for r in b[:first])
    assert [r.get(key) for r in a] == pytest.approx([r.get(key) for r in b], abs=1e-6)
    if key == "fne/pos_count":
        assert b[stop][key] > 0 and b[stop]["i2t/fne_sampled_share"] > 0  # sampled branch
    for ra, rb in zip(a, b):
        assert ra["loss/total"] == pytest.approx(rb["loss/total"], abs=1e-6), ra["step"]
    state_dict_close(straight.model, resumed.model, atol=1e-6)


def test_resume_inside_aoq_round_two_without_its_ranking_is_refused(tmp_path):
    run = tmp_path / "run"
    training_function(tiny_config("vse", run, *AOQ_ROUNDS, "max_steps=3"))
    ranking = run / "phases" / "1_round2" / "aoq_offline_negatives.pt"
    ranking.unlink()  # ranked with round 1's model: it cannot be rebuilt from round 2's
    with pytest.raises(ConfigError, match=r"needs its offline negatives.*is missing"):
        training_function(tiny_config("vse", run, *AOQ_ROUNDS, "resume_from=latest"))


class _RunsCode:
    """A pickle whose loading creates ``marker``: what a crafted checkpoint could run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("layout", ["tags_state", "legacy_accelerate"])
def test_a_crafted_checkpoint_state_is_refused_never_unpickled(tmp_path, layout):
    """Issue "every bad input": ``resume_from`` must not unpickle code from a checkpoint
    (Accelerate's ``custom_checkpoint_N.pkl`` are loaded with ``weights_only=False``)."""
    run, marker = tmp_path / "run", tmp_path / "code_ran"
    overrides = ("phases.0.steps=4", "vse.miner.name=selhn")
    training_function(tiny_config("vse", run, *overrides, "max_steps=2"))
    checkpoint = checkpoint_dirs(run)[-1]
    if layout == "tags_state":
        torch.save(_RunsCode(marker), checkpoint / "tags_state.pt")
    else:  # an older checkpoint's per-object files (scheduler, train state, miner)
        (checkpoint / "tags_state.pt").unlink(missing_ok=True)
        for index in range(3):
            torch.save(_RunsCode(marker), checkpoint / f"custom_checkpoint_{index}.pkl")
    # an older version's marker (or a crafted one): no list of the files to check them against
    (checkpoint / "COMPLETE").write_text("2\n")
    config = tiny_config("vse", run, *overrides, f"resume_from={checkpoint}")
    with pytest.raises(ConfigError, match=r"not a tags checkpoint state.*refused"):
        training_function(config)
    assert not marker.exists()


def test_an_older_checkpoint_of_plain_states_still_resumes_exactly(tmp_path):
    """A checkpoint written with ``register_for_checkpointing`` (``custom_checkpoint_N.pkl``
    holding plain state dicts) is read with ``weights_only=True`` and resumes exactly."""
    overrides = ("phases.0.steps=4", "model.dropout=0.1", "vse.miner.name=selhn")
    straight = training_function(tiny_config("vse", tmp_path / "a", *overrides))
    training_function(tiny_config("vse", tmp_path / "b", *overrides, "max_steps=2"))
    checkpoint = checkpoint_dirs(tmp_path / "b")[-1]
    for index, state in enumerate(load_custom_states(checkpoint)):
        torch.save(state, checkpoint / f"custom_checkpoint_{index}.pkl")
    (checkpoint / "tags_state.pt").unlink()
    (checkpoint / "COMPLETE").write_text("2\n")  # an older version's marker: no file list
    resumed = training_function(
        tiny_config("vse", tmp_path / "b", *overrides, "resume_from=latest")
    )
    assert resumed.state.step == 4
    state_dict_close(straight.model, resumed.model, atol=1e-6)
