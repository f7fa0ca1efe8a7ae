"""scripts/benchmarks/negative_quality.py: the text-only judge, per-corpus figures, skip
reasons (a tiny random causal LM stands in for SmolLM2; nothing is downloaded)."""

from __future__ import annotations

import json
import math
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from research.hf_tiny import make_causal_lm

from tags.core.types import Caption, Edit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # the research package the drivers share
from research import controls, quality  # noqa: E402


@pytest.fixture(scope="module")
def script():
    """The measures of scripts/benchmarks/negative_quality.py (scripts/research/quality.py)."""
    return quality


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory) -> Path:
    return make_causal_lm(tmp_path_factory.mktemp("judge"))


class LengthLM:
    """A fake judge: a text's mean token NLL is its number of words."""

    name = "length"

    def mean_nll(self, texts):
        return [float(len(t.split())) for t in texts]


def _pick(positive: str, negative: str, type_: str = "object", operation: str = "replace"):
    edit = Edit(type_, "a", "b", 0, 1, operation)
    return SimpleNamespace(positive=positive, negative=negative, edits=[edit])


def test_judge_counts_pairs_whose_positive_reads_likelier(script):
    picks = [
        _pick("a dog", "a dog runs"),  # positive likelier (1 word fewer): counts
        _pick("a dog runs", "a dog"),  # negative likelier
        _pick("a cat", "a cow", "attribute"),  # a tie is not a win for the positive
        _pick("one", "one two three"),  # counts
    ]
    found = script.judge_pairs(LengthLM(), picks)
    assert found["pairs"] == 4
    assert found["text_only_accuracy"] == pytest.approx(0.5)
    ratios = [math.e, math.exp(-1), 1.0, math.exp(2)]  # exp(NLL(neg) - NLL(pos))
    assert found["ppl_ratio_mean"] == pytest.approx(sum(ratios) / 4)
    assert found["ppl_ratio_geomean"] == pytest.approx(math.exp(0.5))
    assert found["by_kind"] == {"attribute/replace": [0.0, 1], "object/replace": [0.667, 3]}


def test_judge_loads_a_local_causal_lm_and_scores_with_it(script, tiny_lm_dir):
    judge = script.load_judge(str(tiny_lm_dir))
    same = [_pick("a dog on the grass", "a dog on the grass")] * 3
    found = script.judge_pairs(judge, same)
    assert found["text_only_accuracy"] == 0.0  # equal NLLs: never "the positive reads better"
    assert found["ppl_ratio_mean"] == pytest.approx(1.0)
    differ = script.judge_pairs(judge, [_pick("a dog on the grass", "grass the on dog a a")])
    direct = judge.mean_nll(["a dog on the grass", "grass the on dog a a"])
    assert differ["ppl_ratio_mean"] == pytest.approx(math.exp(direct[1] - direct[0]), rel=1e-5)


def test_judge_path_that_is_not_a_model_exits_with_one_line(script, tmp_path):
    with pytest.raises(SystemExit, match="the judge: no causal LM"):
        script.load_judge(str(tmp_path / "missing"))


def test_a_swap_is_one_operation(script):
    swap = SimpleNamespace(
        edits=[
            Edit("attribute", "red", "blue", 2, 5, "swap"),
            Edit("attribute", "blue", "red", 10, 14, "swap"),
        ]
    )
    two = SimpleNamespace(
        edits=[Edit("object", "dog", "cat", 2, 5), Edit("object", "ball", "bat", 10, 14)]
    )
    one = SimpleNamespace(edits=[Edit("object", "dog", "cat", 2, 5)])
    assert [script.operations_of(r) for r in (swap, two, one)] == [1, 2, 1]


def test_skip_reasons_count_captions_without_a_negative(script):
    caption = Caption(0, 0, "x")
    results = [
        SimpleNamespace(records=[], skipped="no_parse", caption=caption),
        SimpleNamespace(records=[], skipped="no_parse", caption=caption),
        SimpleNamespace(records=[], skipped=None, caption=caption),
        SimpleNamespace(records=[object()], skipped=None, caption=caption),
    ]
    assert script.skip_reasons(results) == {"no_parse": 2, "no_negative": 1}


def test_each_corpus_gets_its_judge_figures_and_skip_report(tiny_lm_dir, tmp_path, monkeypatch):
    corpus = tmp_path / "captions.txt"
    lines = [
        "a dog sitting on a bench",
        "a cat sitting on a bench",
        "a dog standing on the grass",
        "a cat standing on the grass",
        "a red car parked on the street",
        "a blue car parked on the street",
    ] * 3
    corpus.write_text("\n".join([*lines, "zzz"]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = [
        str(ROOT / "scripts" / "benchmarks" / "negative_quality.py"),
        "--rows",
        "minimal",
        "--num-workers",
        "1",
        "--background",
        "none",
        "--judge",
        str(tiny_lm_dir),
        "--report-skipped",
        "--corpus",
        f"tiny={corpus}",
        "--out",
        str(out),
    ]
    # the script as `python SCRIPT ARGV` runs it, in this process (no start-up)
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script prepends scripts/
    runpy.run_path(argv[0], run_name="__main__")
    report = json.loads((out / "report.json").read_text())
    row = report["corpora"]["tiny"]["rows"]["minimal"]
    assert row["captions"] == 19
    assert 0.0 <= row["text_only_accuracy"] <= 1.0 and row["pairs"] >= 1
    assert row["ppl_ratio_mean"] > 0 and row["ops_per_negative"] == pytest.approx(1.0)
    skipped = [json.loads(x) for x in (out / "skipped_tiny_minimal.jsonl").read_text().splitlines()]
    assert "zzz" in {s["caption"] for s in skipped}
    assert sum(row["skipped"].values()) == len(skipped) == round(row["without"] * 19)
    assert "generate minimal" in report["corpora"]["tiny"]["speed"]
    trained = row["trained"]  # the trained text-only check, as generated and balanced
    assert trained["plain"]["pairs"] == row["negatives"]
    assert 0.0 <= trained["plain"]["overall"] <= 1.0
    assert trained["balanced"]["pairs"] <= row["negatives"]
    assert trained["balanced_captions"] <= 19


def test_shortcut_figures_split_by_caption_and_kind(script):
    from research.quality import shortcut_figures

    rows = []
    for i in range(120):  # every negative says "below" where its caption says "above"
        rows.append({"caption_id": i, "positive": f"a thing {i % 7} above a box",
                     "negative": f"a thing {i % 7} below a box",
                     "edits": [{"type": "relation"}]})  # fmt: skip
    found = shortcut_figures(rows, min_pairs=100)
    assert found["pairs"] == 120 and found["overall"] > 0.95 and found["relation"] > 0.95
    assert "object" not in found  # fewer than min_pairs of that kind


def test_each_distinct_text_is_scored_once_per_judge(script):
    class Counting(LengthLM):
        def __init__(self):
            self.seen = []

        def mean_nll(self, texts):
            self.seen.extend(texts)
            return super().mean_nll(texts)

    judge = Counting()
    first = script.judge_pairs(judge, [_pick("a dog", "a dog runs"), _pick("a cat", "a dog")])
    again = script.judge_pairs(judge, [_pick("a dog", "a dog runs"), _pick("a cow", "a dog")])
    assert sorted(judge.seen) == ["a cat", "a cow", "a dog", "a dog runs"]
    assert first["text_only_accuracy"] == again["text_only_accuracy"] == 0.5


def test_blind_read_broken_controls_are_never_fair_captions():
    """Each kind of broken control leaves a caption no reader could pass: the last-word kind
    once wrote "sleeping", which made "workers ... are shoveling" a fair negative."""
    caption = "Three workers in bright vests are shoveling ."
    broken = [controls.broken_control(caption, kind) for kind in range(5)]
    assert all(b != caption for b in broken) and len(set(broken)) == 5
    assert broken[4] == "Three workers in bright vests are the of ."
    assert controls.broken_control("A man sleeps", 4) == "A man the of"


def test_blind_read_says_when_it_builds_fewer_controls(tmp_path):
    """A small negatives file leaves few other captions for the hidden controls: said."""
    rows = [
        {"caption_id": i, "positive": f"a dog number {i} runs on the grass",
         "negative": f"a cat number {i} runs on the grass",
         "edits": [{"type": "object", "original": "dog", "replacement": "cat", "start": 2,
                    "end": 5, "operation": "replace"}]}
        for i in range(53)
    ]  # fmt: skip
    negatives = tmp_path / "neg.jsonl"
    negatives.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = Path(__file__).resolve().parents[1] / "scripts" / "benchmarks" / "blind_read.py"
    done = subprocess.run(
        [sys.executable, str(script), "make", str(negatives), "--out", str(tmp_path / "read"),
         "--key", str(tmp_path / "key.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "only 3 hidden controls (3 broken, 0 still true" in done.stderr
    assert len(json.loads((tmp_path / "key.json").read_text())) == 53


def test_balanced_keeps_per_caption_the_records_the_default_balance_keeps():
    """``negative_quality.py --balance`` judges what ``tags generate`` writes by default."""
    from dataclasses import dataclass

    from test_balance import skewed_set

    from tags.negatives.balance import balance_records

    @dataclass
    class Record:
        row: dict

        def to_dict(self) -> dict:
            return self.row

    @dataclass
    class Result:
        caption: int
        records: list

    rows = skewed_set(5)
    results = [
        Result(cid, [Record(r) for r in rows if r["caption_id"] == cid])
        for cid in sorted({r["caption_id"] for r in rows})
    ]
    module = runpy.run_path(str(ROOT / "scripts" / "benchmarks" / "negative_quality.py"))
    kept = [rec.row for res in module["balanced"](results) for rec in res.records]
    assert kept == [r for r, k in zip(rows, balance_records(rows)) if k]
    assert len(kept) < len(rows)
