"""``tags demo`` on the binding testbed: the tiny end-to-end run, its report and its cache."""

import json
import math

import pytest
from PIL import Image

from tags.demo.binding import BINDING_BUDGETS, DEMO_METHODS, method_config
from tags.demo.binding_report import results_table, summarize, write_binding_report
from tags.testbed import TestbedConfig
from tags.testbed.tags_pool import TagsPool


@pytest.fixture(scope="module")
def tiny_binding(tmp_path_factory):
    """``tags demo --budget tiny`` in this process (one worker)."""
    from tags.cli import main

    out = tmp_path_factory.mktemp("binding")
    assert main(["demo", "--budget", "tiny", "--out", str(out), "--num-workers", "1"]) == 0
    return out


def test_the_report_compares_the_four_methods(tiny_binding):
    report = (tiny_binding / "report.md").read_text()
    assert "| method | MP | attribute | object | relation | role swap |" in report
    for name in ("plain", "oracle", "tags negatives", "TAGS-DC"):
        assert f"\n| {name} | " in report
    results = json.loads((tiny_binding / "results.json").read_text())
    assert list(results["methods"]) == list(DEMO_METHODS)
    for kind in ("relation", "role"):
        with Image.open(tiny_binding / f"curve_{kind}.png") as image:
            assert image.size == (640, 360)


def test_every_method_starts_from_the_same_weights_and_trains_its_budget(tiny_binding):
    budget = BINDING_BUDGETS["tiny"]
    methods = json.loads((tiny_binding / "results.json").read_text())["methods"]
    starts = {m: row["curve"][0] for m, row in methods.items()}
    assert all(s == starts["plain"] for s in starts.values()), starts
    for row in methods.values():
        assert row["steps"] == budget.steps
        assert [c["step"] for c in row["curve"]] == list(range(0, budget.steps + 1, 3))
        assert all(0.0 <= v <= 1.0 for k, v in row["accuracy"].items())


def test_each_method_adds_its_own_negatives(tiny_binding):
    runs = {m: json.loads((tiny_binding / "runs" / f"{m}.json").read_text()) for m in DEMO_METHODS}
    budget = BINDING_BUDGETS["tiny"]
    scenes = budget.steps * budget.batch_size
    assert runs["plain"]["shortcut"] == {"pairs": 0}  # nothing beyond another scene's caption
    assert runs["oracle"]["shortcut"]["pairs"] > scenes // 2
    pool = TagsPool.load(tiny_binding / "data" / "tags_negatives.jsonl")
    drawn = runs["tags"]["tags_pool"]["drawn"]
    assert sum(drawn.values()) == runs["tags"]["shortcut"]["pairs"] > 0
    assert set(drawn) <= {"attribute", "object", "relation", "swap"}
    assert len(pool.by_caption) > scenes // 2
    made = runs["tags-dc"]["self_negatives"]
    assert made["chosen"] == runs["tags-dc"]["shortcut"]["pairs"] > 0
    assert made["candidates"] >= made["chosen"]
    assert runs["tags-dc"]["config"]["refills"] == budget.refills
    assert runs["tags-dc"]["config"]["refill"] == "typed"
    assert "ungrammatical" not in made["chosen_truth"]  # typed refills stay in the grammar


def test_a_rerun_reuses_the_finished_runs_and_the_negatives(tiny_binding):
    from tags.cli import main

    files = [
        *(tiny_binding / "runs").glob("*.json"),
        tiny_binding / "data" / "tags_negatives.jsonl",
    ]
    stamps = {p: p.stat().st_mtime_ns for p in files}
    assert main(["demo", "--budget", "tiny", "--out", str(tiny_binding), "--num-workers", "1"]) == 0
    assert {p: p.stat().st_mtime_ns for p in files} == stamps


def test_binding_refuses_the_shapes_world_options(capsys):
    from tags.cli import main

    assert main(["demo", "--world", "binding", "--backend", "clip", "--budget", "tiny"]) == 2
    assert "--backend clip runs on --world shapes" in capsys.readouterr().err
    assert main(["demo", "--data", "x", "--budget", "tiny"]) == 2
    assert "--data applies to --world shapes" in capsys.readouterr().err


def _record(rel: float, role: float, method: str) -> dict:
    final = {"step": 10, "attribute": 0.95, "object": 0.9, "relation": rel, "role": role}
    final["overall"] = (0.95 + 0.9 + rel + role) / 4
    return {
        "final": final, "curve": [{**final, "step": 0}, final], "steps_done": 10,
        "seconds": 1.0, "eval_pairs": {"relation": 4}, "config": {"negatives": method},
    }  # fmt: skip


def test_the_summary_gives_each_method_its_gap_closed(tmp_path):
    records = {
        "plain": _record(0.5, 0.6, "plain"),
        "oracle": _record(0.9, 1.0, "oracle"),
        "tags": _record(0.8, 0.7, "tags"),
        "tags-dc": _record(0.5, 0.6, "tags-dc"),
    }
    results = summarize(records, BINDING_BUDGETS["small"].to_dict(), 0, {"total": 2.0})
    gaps = results["methods"]["tags"]["gap_closed"]
    assert math.isclose(gaps["relation"], 0.75) and math.isclose(gaps["role"], 0.25)
    assert results["methods"]["tags-dc"]["gap_closed"]["relation"] == 0.0
    table = "\n".join(results_table(results["methods"]))
    assert "| tags negatives | 83.8 | 95.0 | 90.0 | 80.0 | 70.0 | 0.75 | 0.25 |" in table
    report = write_binding_report(tmp_path, results).read_text()
    assert "tags negatives closes 0.75 of the relation gap and 0.25 of the role-swap gap" in report
    assert "refills every unit of a caption 4 times from the unit's word class" in report


def test_the_reading_says_when_there_is_no_headroom(tmp_path):
    records = {m: _record(0.5, 0.5, m) for m in DEMO_METHODS}
    results = summarize(records, BINDING_BUDGETS["tiny"].to_dict(), 0, {"total": 1.0})
    assert math.isnan(results["methods"]["tags"]["gap_closed"]["relation"])
    assert "no headroom" in write_binding_report(tmp_path, results).read_text()


def test_method_configs_differ_only_in_the_method():
    budget = BINDING_BUDGETS["small"]
    configs = {m: method_config(m, budget, 3, "neg.jsonl").to_dict() for m in DEMO_METHODS}
    for method, config in configs.items():
        assert config["negatives"] == method and config["seed"] == 3
        assert config["tags_negatives"] == ("neg.jsonl" if method == "tags" else None)
        rest = {k: v for k, v in config.items() if k not in ("negatives", "tags_negatives")}
        plain = {
            k: v for k, v in configs["plain"].items() if k not in ("negatives", "tags_negatives")
        }
        assert rest == plain


def test_a_testbed_config_refuses_bad_settings():
    with pytest.raises(ValueError, match="negatives 'bogus'"):
        TestbedConfig(negatives="bogus")
    with pytest.raises(ValueError, match="needs tags_negatives"):
        TestbedConfig(negatives="tags")
    with pytest.raises(ValueError, match="steps must be >= 1"):
        TestbedConfig(steps=0)
    config = TestbedConfig.from_mapping({"negatives": "oracle", "threads": 2, "kinds": ["role"]})
    assert config.kinds == ("role",) and config.extra == {"threads": 2}
    assert config.to_dict()["threads"] == 2 and config.name == "oracle"
