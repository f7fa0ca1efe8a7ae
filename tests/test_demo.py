"""``tags demo``: the end-to-end tiny run, the plot helper and the report writer."""

import json
import math
import subprocess
import sys

import pytest
from PIL import Image

from tags.demo.budget import BUDGETS
from tags.demo.report import results_table, write_report
from tags.evaluation.plots import line_plot

METHODS = ("pretrained", "hardest", "tags-dc")
RECALLS = ("i2t_r1", "i2t_r5", "i2t_r10", "t2i_r1", "t2i_r5", "t2i_r10")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """``python -m tags.cli demo --world shapes --budget tiny`` (about 20 s; its tests are
    marked slow)."""
    out = tmp_path_factory.mktemp("demo")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tags.cli",
            "demo",
            "--world",
            "shapes",
            "--budget",
            "tiny",
            "--out",
            str(out),
        ],
        capture_output=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    (out / "_stderr.txt").write_bytes(proc.stderr)
    return out


@pytest.mark.slow
def test_tiny_demo_prints_no_library_noise(tiny_run):
    """Accelerate's "Removed shared tensor" note on the mlm/woc decoders (tied by design)
    is filtered in the demo's training workers as in ``tags train``, and no transformers
    warning reaches the user (a model of type "tags" read as an unknown type, tensor-parallel
    "not sharded" notes)."""
    stderr = (tiny_run / "_stderr.txt").read_text(errors="replace")
    assert "train" in stderr and "Removed shared tensor" not in stderr
    assert "[transformers]" not in stderr


@pytest.mark.slow
def test_tiny_demo_writes_a_report_with_both_methods(tiny_run):
    report = (tiny_run / "report.md").read_text()
    rows = [line for line in report.splitlines() for m in METHODS if line.startswith(f"| {m} |")]
    assert len(rows) == 3
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")][1:]
        assert len(cells) == 11
        assert all(math.isfinite(float(c)) for c in cells)
    assert "## Training budget" in report and "| steps | 3 |" in report
    assert "->" in report  # at least one generated negative with its edit


@pytest.mark.slow
def test_tiny_demo_plots_are_valid_pngs(tiny_run):
    pngs = sorted(tiny_run.glob("*.png"))
    assert {p.name for p in pngs} >= {"loss.png", "hardness.png"}
    for path in pngs:
        with Image.open(path) as image:
            image.verify()
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size == (640, 360)
            assert len(image.getcolors(1 << 16) or []) > 2  # more than background + axes


@pytest.mark.slow
def test_tiny_demo_metrics_are_in_range(tiny_run):
    results = json.loads((tiny_run / "results.json").read_text())
    assert set(results["methods"]) == set(METHODS)
    assert results["budget"]["name"] == "tiny"
    for result in results["methods"].values():
        retrieval = result["retrieval"]
        recalls = [retrieval[k] for k in RECALLS]
        assert all(0.0 <= v <= 100.0 for v in recalls)
        assert retrieval["i2t_r1"] <= retrieval["i2t_r5"] <= retrieval["i2t_r10"]
        assert retrieval["t2i_r1"] <= retrieval["t2i_r5"] <= retrieval["t2i_r10"]
        assert retrieval["rsum"] == pytest.approx(sum(recalls))
        pairs = result["minimal_pairs"]
        assert {"overall", "attribute", "object"} <= set(pairs)
        assert all(0.0 <= v <= 1.0 for v in pairs.values())
        assert result["n_test_images"] == BUDGETS["tiny"].test_images
    assert results["timings_s"]["total"] > 0
    assert results["samples"] and results["samples"][0]["positive"]


@pytest.mark.slow
def test_tiny_demo_fine_tunes_the_shared_pretrained_model(tiny_run):
    pretrained = tiny_run / "runs" / "pretrained" / "model"
    for method in ("hardest", "tags-dc"):
        config = (tiny_run / "runs" / method / "config.yaml").read_text()
        assert "source: tags" in config and str(pretrained) in config


@pytest.mark.slow
def test_tiny_demo_rerun_reuses_finished_runs(tiny_run, capfd):
    """A second run with the same arguments (in this process; the first ran as ``python -m
    tags.cli``) reuses every finished run (nothing lost after a crash) and reports the same
    numbers."""
    from tags.cli import main

    before = json.loads((tiny_run / "results.json").read_text())
    stamps = {p: p.stat().st_mtime_ns for p in (tiny_run / "runs").glob("*/metrics.jsonl")}
    code = main(["demo", "--world", "shapes", "--budget", "tiny", "--out", str(tiny_run)])
    assert code == 0, capfd.readouterr().err[-3000:]
    after = json.loads((tiny_run / "results.json").read_text())
    assert len(stamps) == 3
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing retrained
    for method in METHODS:
        assert after["methods"][method]["retrieval"] == before["methods"][method]["retrieval"]
        assert (
            after["methods"][method]["minimal_pairs"] == before["methods"][method]["minimal_pairs"]
        )


@pytest.mark.slow
def test_tiny_demo_builds_the_budgets_benchmark(tiny_run):
    manifest = json.loads((tiny_run / "data" / "manifest.json").read_text())
    budget = BUDGETS["tiny"]
    assert manifest["config"]["train"] == budget.train_images
    assert manifest["config"]["test"] == budget.test_images
    assert manifest["counts"]["minimal_pairs"] > 0


def test_line_plot_draws_pixels(tmp_path):
    path = line_plot(
        {"up": [(0, 0.0), (1, 1.0), (2, 2.0)], "flat": [(0, 1.0), (2, 1.0)]},
        tmp_path / "p.png",
        "title",
        size=(200, 120),
    )
    with Image.open(path) as image:
        rgb = image.convert("RGB")
    assert rgb.size == (200, 120)
    colors = {c for _, c in rgb.getcolors(1 << 16)}
    assert (31, 119, 180) in colors and (214, 39, 40) in colors  # both series drawn
    # the rising series goes from the bottom-left to the top-right of the plot area
    blue = [
        (x, y) for x in range(200) for y in range(120) if rgb.getpixel((x, y)) == (31, 119, 180)
    ]
    left = min(blue)
    right = max(blue)
    assert left[1] > right[1]


def test_line_plot_skips_non_finite_and_handles_empty(tmp_path):
    path = line_plot({"nan": [(0, float("nan")), (1, 2.0)], "none": []}, tmp_path / "q.png")
    with Image.open(path) as image:
        assert image.size == (640, 360)
    empty = line_plot({}, tmp_path / "e.png")
    assert empty.is_file()


def test_report_writer_table_and_files(tmp_path):
    methods = {
        "hardest": {
            "label": "baseline",
            "retrieval": {
                "i2t_r1": 10.0,
                "i2t_r5": 20.0,
                "i2t_r10": 30.0,
                "t2i_r1": 5.0,
                "t2i_r5": 15.0,
                "t2i_r10": 25.0,
                "rsum": 105.0,
            },
            "minimal_pairs": {"overall": 0.5, "attribute": 0.25, "object": 0.75},
        },
        "tags-dc": {"label": "ours", "retrieval": {"rsum": float("nan")}, "minimal_pairs": {}},
    }
    table = results_table(methods)
    assert (
        "| hardest | 10.0 | 20.0 | 30.0 | 5.0 | 15.0 | 25.0 | 105.0 | 50.0 | 25.0 | 75.0 | - |"
        in table
    )
    assert table.splitlines()[-1].startswith("| tags-dc | - |")
    metrics = {
        "hardest": [
            {"step": 1, "loss/total": 2.0, "itm_i2t/hardness": -0.1},
            {"step": 2, "loss/total": 1.0, "itm_i2t/hardness": 0.0},
        ]
    }
    payload = {
        "budget": {"name": "unit", "steps": 2},
        "seed": 3,
        "methods": methods,
        "timings_s": {"total": 1.5},
        "samples": [
            {
                "image_id": 7,
                "positive": "a red circle",
                "negatives": [
                    {
                        "text": "a blue circle",
                        "score": 0.4,
                        "edits": [
                            {
                                "type": "attribute",
                                "original": "red",
                                "replacement": "blue",
                                "start": 2,
                                "end": 5,
                            }
                        ],
                    }
                ],
            }
        ],
    }
    report = write_report(tmp_path, payload, metrics).read_text()
    assert "seed 3" in report and "| steps | 2 |" in report
    assert "attribute: 'red' -> 'blue'" in report
    assert "![loss](loss.png)" in report and "![hardness](hardness.png)" in report
    assert "selhn" not in report  # not logged, not drawn
    assert (tmp_path / "loss.png").is_file() and not (tmp_path / "selhn_share.png").exists()
    assert json.loads((tmp_path / "results.json").read_text())["seed"] == 3


@pytest.mark.slow
def test_oracle_rung_trains_on_scene_checked_negatives(tiny_run, tmp_path):
    from tags.benchmark.build import BenchmarkPaths
    from tags.demo.results import _method_task

    data = BenchmarkPaths.under(tiny_run / "data", False)
    pretrained = str(tiny_run / "runs" / "pretrained" / "model")
    result = _method_task(
        str(tmp_path), BUDGETS["tiny"], data, 0, "oracle", {"pretrained": pretrained}
    )
    assert (tmp_path / "seed0" / "oracle-balanced.jsonl").is_file()  # the build's sampler
    rows = [json.loads(x) for x in (tmp_path / "seed0" / "oracle" / "metrics.jsonl").open()]
    assert any(r.get("loss/istm", 0.0) > 0 for r in rows)  # the oracle pools reach L_ISTM
    assert 0.0 <= result["minimal_pairs"]["overall"] <= 1.0


def test_demo_refuses_zero_jobs(capsys):
    from tags.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--budget", "tiny", "--jobs", "0"])
    assert exit_.value.code == 2
    assert "argument --jobs" in capsys.readouterr().err


@pytest.mark.slow
def test_a_cached_run_made_under_other_defaults_is_not_reused(tiny_run):
    """``result.json`` records the config with every default filled in: a run made before a
    default changed (e.g. ``tags_dc.woc_init``) is not taken for one of today's."""
    from tags.demo.pipeline import _cached, resolved_config

    path = tiny_run / "runs" / "tags-dc" / "result.json"
    result = json.loads(path.read_text())
    assert result["resolved_config"] == resolved_config(result["config"])
    assert result["resolved_config"]["tags_dc"]["woc_init"] == "mlm"
    assert _cached(path, result["config"]) == result
    stale = tiny_run / "stale.json"
    old = json.loads(json.dumps(result))
    old["resolved_config"]["tags_dc"]["woc_init"] = "random"  # the default of before
    stale.write_text(json.dumps(old))
    assert _cached(stale, result["config"]) is None
    del old["resolved_config"]  # a run cached before defaults were recorded
    stale.write_text(json.dumps(old))
    assert _cached(stale, result["config"]) is None
