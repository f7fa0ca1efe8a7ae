"""SugarCrepe grouped as in its paper (REPLACE / SWAP / ADD with group means) and paired
bootstrap intervals on ``tags report`` deltas."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from research.hf_tiny import make_clip, render_images

from tags.cli import main
from tags.evaluation.bootstrap import paired_bootstrap
from tags.evaluation.metrics import rank_metrics
from tags.evaluation.suites.base import ImageRef, Suite, SuiteItem
from tags.evaluation.suites.evaluate import summarize
from tags.evaluation.suites.report import compare, format_suite, markdown_table
from tags.evaluation.suites.sugarcrepe import GROUPS, SUBSETS


def paired(n: int, p_model: float, p_base: float, seed: int = 1):
    rng = np.random.default_rng(seed)
    return (rng.random(n) < p_model).astype(float), (rng.random(n) < p_base).astype(float)


@pytest.mark.parametrize("n", [100, 400, 1600])
def test_the_interval_contains_the_delta(n):
    model, base = paired(n, 0.7, 0.6)
    low, high = paired_bootstrap([(model, base)])
    delta = 100 * (model.mean() - base.mean())
    assert low < delta < high


def test_the_interval_narrows_with_more_items_and_is_reproducible():
    widths = []
    for n in (100, 400, 1600):
        low, high = paired_bootstrap([paired(n, 0.7, 0.6)])
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[0] > 3 * widths[2]  # ~ 1/sqrt(n): 16x the items, a quarter of the width
    data = [paired(300, 0.7, 0.6)]
    assert paired_bootstrap(data) == paired_bootstrap(data)  # the fixed seed
    assert paired_bootstrap(data, seed=1) != paired_bootstrap(data)


def test_pairing_and_sum():
    same = np.arange(50) % 2
    assert paired_bootstrap([(same, same)]) == (0.0, 0.0)  # identical models: no spread
    a, b = paired(200, 0.8, 0.5), paired(300, 0.5, 0.4, seed=2)
    low, high = paired_bootstrap([a, b], combine="sum")
    delta = 100 * sum(x.mean() - y.mean() for x, y in (a, b))
    assert low < delta < high
    with pytest.raises(ValueError):
        paired_bootstrap([(np.ones(3), np.ones(4))])


def sugar_suite(counts: dict[str, int]) -> Suite:
    items = [
        SuiteItem((ImageRef(f"{s}{k}.jpg"),), ("pos", f"neg {s} {k}"), s, f"{s}{k}")
        for s, n in counts.items()
        for k in range(n)
    ]
    return Suite("sugarcrepe", "options", items)


def result_of(suite: Suite, right: np.ndarray) -> dict:
    matrices = [np.array([[1.0, 0.0]]) if r else np.array([[0.0, 1.0]]) for r in right]
    out = summarize(suite, matrices).to_dict()
    out["name"] = "sugarcrepe"
    return out


COUNTS = {"replace_obj": 30, "replace_att": 20, "replace_rel": 10, "swap_obj": 8,
          "swap_att": 12, "add_obj": 25, "add_att": 15}  # fmt: skip


def test_sugarcrepe_groups_as_in_the_paper():
    assert set(GROUPS) == {"REPLACE", "SWAP", "ADD"}
    assert sorted(s for g in GROUPS.values() for s in g) == sorted(SUBSETS)
    suite = sugar_suite(COUNTS)
    right = np.random.default_rng(0).random(len(suite.items)) < 0.6
    result = result_of(suite, right)
    groups, subsets = result["groups"], result["subsets"]
    for name, members in GROUPS.items():
        assert groups[name]["n"] == sum(COUNTS[s] for s in members)
        mean = np.mean([subsets[s]["accuracy"] for s in members])  # unweighted, as the paper
        assert groups[name]["accuracy"] == pytest.approx(mean)
    assert sum(g["n"] for g in groups.values()) == result["n_items"] == len(right)
    table = format_suite(result).splitlines()
    order = [line.split()[0] for line in table[2:]]
    assert order[:4] == ["REPLACE", "replace_obj", "replace_att", "replace_rel"]
    assert order[4:7] == ["SWAP", "swap_obj", "swap_att"]
    assert order[7:10] == ["ADD", "add_obj", "add_att"]
    assert "REPLACE (mean)" in table[2] and table[3].startswith("  replace_obj")


def test_report_rows_carry_intervals_that_contain_their_deltas():
    suite = sugar_suite(COUNTS)
    rng = np.random.default_rng(3)
    before = result_of(suite, rng.random(len(suite.items)) < 0.5)
    after = result_of(suite, rng.random(len(suite.items)) < 0.7)
    ranks = {"i2t": rng.integers(0, 20, 40).tolist(), "t2i": rng.integers(0, 40, 200).tolist()}
    better = {"i2t": (np.array(ranks["i2t"]) // 2).tolist(), "t2i": ranks["t2i"]}

    def report(result, r):
        metrics = rank_metrics(np.array(r["i2t"]), "i2t") | rank_metrics(np.array(r["t2i"]), "t2i")
        metrics["rsum"] = sum(metrics[f"{d}_r{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
        return {"retrieval": metrics, "retrieval_ranks": r, "suites": {"sugarcrepe": result}}

    rows = compare(report(after, better), report(before, ranks), resamples=500)
    by = {(r["section"], r["metric"]): r for r in rows}
    for key in [("sugarcrepe", "accuracy"), ("sugarcrepe", "REPLACE (mean)"),
                ("sugarcrepe", "add_att"), ("retrieval", "rsum"), ("retrieval", "i2t_r5")]:  # fmt: skip
        row = by[key]
        assert row["ci"][0] <= row["delta"] <= row["ci"][1], row
    assert by[("sugarcrepe", "macro")]["ci"] is None
    order = [r["metric"] for r in rows if r["section"] == "sugarcrepe"]
    assert order == ["accuracy", "macro", "REPLACE (mean)", "replace_obj", "replace_att",
                     "replace_rel", "SWAP (mean)", "swap_obj", "swap_att", "ADD (mean)",
                     "add_obj", "add_att"]  # fmt: skip
    assert by[("retrieval", "t2i_r1")]["ci"] == [0.0, 0.0]  # same t2i ranks: no difference
    assert "Δ 95% CI" in markdown_table(rows)
    assert all(r["ci"] is None for r in compare(report(after, better), report(before, ranks)))


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_tags_report_prints_groups_and_intervals(tmp_path, capsys, one_thread):
    images = tmp_path / "images"
    images.mkdir()
    for k, image in enumerate(render_images(4)):
        image.save(images / f"{k}.jpg")
    sugar = tmp_path / "sugar"
    sugar.mkdir()
    for s in ("replace_obj", "swap_att", "add_obj"):
        (sugar / f"{s}.json").write_text(json.dumps({
            str(k): {"filename": f"{k}.jpg", "caption": f"a red dog {k}",
                     "negative_caption": f"a {s} cat {k}"} for k in range(4)
        }))  # fmt: skip
    start, tuned = make_clip(tmp_path / "start", seed=0), make_clip(tmp_path / "tuned", seed=1)
    argv = ["report", "--model", str(tuned), "--baseline", str(start), "--images", str(images)]
    argv += ["--suite", f"sugarcrepe={sugar}", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "r"), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert "REPLACE (mean)" in out and "SWAP (mean)" in out and "ADD (mean)" in out
    md = (tmp_path / "r" / "report.md").read_text()
    assert "Δ 95% CI" in md and "paired bootstrap over the items" in md and "200 resamples" in md
    assert "- sugarcrepe: subsets not found" in md and "sugarcrepe: sugarcrepe:" not in md
    saved = json.loads((tmp_path / "r" / "report.json").read_text())
    row = next(r for r in saved["rows"] if r["metric"] == "accuracy")
    assert row["ci"][0] <= row["delta"] <= row["ci"][1]
    assert "outcomes" not in json.dumps(saved["reports"])  # per-item values stay in memory
    assert main([*argv, "--out", str(tmp_path / "q"), "--bootstrap", "0"]) == 0
    assert "Δ 95% CI" not in (tmp_path / "q" / "report.md").read_text()
