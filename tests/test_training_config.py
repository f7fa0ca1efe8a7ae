"""Training configs: YAML loading, dotted overrides, errors, the shipped configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tags.cli import main as cli_main
from tags.training import ConfigError, TrainConfig, config_from_dict, load_config
from tags.training.config import parse_override, to_dict

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "scripts" / "configs").glob("*.yaml"))


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_yaml_and_overrides(tmp_path):
    path = write(
        tmp_path,
        {
            "recipe": "tags-dc",
            "phases": [{"name": "nsg", "steps": 10, "lr": "5e-5"}, {"name": "nsgdc", "steps": 3}],
            "tags_dc": {"synthetic": {"top_m": 23}},
        },
    )
    cfg = load_config(
        path,
        [
            "phases.1.lr=1e-5",
            "tags_dc.itm_miner.name=selhn",
            "tags_dc.itm_miner.kwargs.eps=0.05",
            "optim.betas=[0.9, 0.999]",
            "model.overrides.hidden_size=64",
            "max_steps=4",
            "resume_from=null",
        ],
    )
    assert isinstance(cfg, TrainConfig)
    assert cfg.phases[0].lr == 5e-5 and isinstance(cfg.phases[0].lr, float)  # "5e-5" string
    assert cfg.phases[1].lr == 1e-5
    assert cfg.tags_dc.synthetic.top_m == 23
    assert cfg.tags_dc.itm_miner.name == "selhn"
    assert cfg.tags_dc.itm_miner.kwargs == {"margin": 0.2, "eps": 0.05}
    assert cfg.optim.betas == [0.9, 0.999]
    assert cfg.model.overrides == {"hidden_size": 64}
    assert cfg.max_steps == 4 and cfg.resume_from is None
    assert cfg.total_steps == 13


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["optim.betaz=[0.9, 0.98]"], "unknown config key 'optim.betaz'"),
        (["nope=1"], "unknown config key 'nope'"),
        (["phases.3.lr=1.0"], "out of range"),
        (["batch_size=eight"], "batch_size: expected an integer"),
        (["cpu=3"], "cpu: expected true/false"),
        (["phases.0.lr=fast"], "phases.0.lr: expected a number"),
        (["recipe=clip"], "recipe: 'clip' is not one of"),
        (["vse.miner.name=nearest"], "vse.miner.name: 'nearest' is not one of"),
        (["phases.0.weights.itm=1.0"], "unknown loss term"),
        (["mixed_precision=fp8"], "mixed_precision"),
        (["batch_size"], "key.path=value"),
        (["vse.miner.name=ndgl"], "needs vse.reference_scores"),
        (["vse.miner.name=aoq"], "needs a first round"),
        (["recipe=tags-dc", "tags_dc.itm_miner.name=aoq"], "use it with the vse recipe"),
        (["recipe=tags-dc", "tags_dc.synthetic.source=fixed"], "needs data.negatives"),
    ],
)
def test_override_errors(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict({"recipe": "vse"}, overrides)


def test_unknown_key_in_yaml_names_valid_keys(tmp_path):
    path = write(tmp_path, {"recipe": "vse", "vse": {"queue": 10}})
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "vse.queue" in str(err.value) and "queue_size" in str(err.value)


def test_parse_override_uses_yaml_values():
    assert parse_override("a.b=1e-3") == (["a", "b"], "1e-3")  # YAML 1.1; float() handles it
    assert parse_override("a=[1, 2]") == (["a"], [1, 2])
    assert parse_override("a=true") == (["a"], True)


def test_mixed_precision_no_is_the_string_yaml_reads_as_false(tmp_path):
    """YAML 1.1 reads ``no`` as ``False``: ``mixed_precision=no`` (Accelerate's value) used
    to stop with "expected a string, got False", in an override and in a config file."""
    assert config_from_dict({"recipe": "vse"}, ["mixed_precision=no"]).mixed_precision == "no"
    path = write(tmp_path, {"recipe": "vse"})
    path.write_text(path.read_text() + "mixed_precision: no\n")
    assert load_config(path).mixed_precision == "no"
    with pytest.raises(ConfigError, match="mixed_precision"):
        config_from_dict({"recipe": "vse"}, ["mixed_precision=yes"])


def test_round_trip_of_resolved_config(tmp_path):
    cfg = config_from_dict({"recipe": "tags-dc"}, ["phases.0.steps=7"])
    again = config_from_dict(yaml.safe_load(yaml.safe_dump(to_dict(cfg))))
    assert to_dict(again) == to_dict(cfg)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_shipped_configs_validate(path):
    cfg = load_config(path)
    assert cfg.total_steps > 0


def test_cli_reports_config_errors(tmp_path, capsys):
    path = write(tmp_path, {"recipe": "vse"})
    assert cli_main(["train", "--config", str(path), "vse.momentm=0.9"]) == 2
    assert "unknown config key 'vse.momentm'" in capsys.readouterr().err
    assert cli_main(["train", "--config", str(path), "--print-config", "seed=5"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["seed"] == 5 and printed["recipe"] == "vse"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("optim.max_grad_norm=-1", r"optim.max_grad_norm must be > 0.*0 or null"),
        ("save_every=-1", r"save_every must be >= 0"),
        ("max_steps=-1", r"max_steps must be >= 0"),
        ("eval.every=-5", r"eval.every must be >= 0"),
        ("vse.queue_size=-8", r"vse.queue_size must be >= 0"),
        ("data.num_workers=-1", r"data.num_workers must be >= 0"),
        ("data.limit_images=-1", r"data.limit_images must be >= 1"),
        ("tags_dc.retrieval.num_negatives=-1", r"num_negatives must be >= 0"),
        ("optim.weight_decay=-0.1", r"optim.weight_decay must be >= 0"),
    ],
)
def test_negative_counts_and_grad_norms_are_refused(override, message):
    """Issue "every bad input": ``max_grad_norm=-1`` (meant as "off") flipped the clipped
    gradients and the loss climbed, exit 0."""
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"recipe": "vse"}, [override])


@pytest.mark.parametrize("off", ["0", "null"])
def test_grad_clipping_turns_off_with_zero_or_null(off):
    cfg = config_from_dict({"recipe": "vse"}, [f"optim.max_grad_norm={off}"])
    assert not cfg.optim.max_grad_norm


def test_cli_refuses_a_negative_grad_norm_in_one_line(tmp_path, capsys):
    path = write(tmp_path, {"recipe": "vse"})
    assert cli_main(["train", "--config", str(path), "optim.max_grad_norm=-1"]) == 2
    err = capsys.readouterr().err
    assert "clipping off" in err and "Traceback" not in err and err.count("\n") == 1
