"""Captions left without a negative, with the reason counted where the refusal happened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _data import FLICKR_CAPTIONS

from tags.cli import main
from tags.negatives import Caption, GenerationConfig, ImageGroup, NegativeGenerator
from tags.negatives.planner import EditPlanner, Trace
from tags.negatives.refill import VocabularyRefiller
from tags.negatives.vocabulary import SceneGraphVocabulary

CORPUS = [
    "a dog sitting on a bench",
    "a cat sitting on a bench",
    "a horse standing on the grass",
    "a dog standing on the grass",
    "a man holding a cup",
    "a woman holding a cup",
    "a person near a tree",
]


@pytest.fixture(scope="module")
def generator(parser) -> NegativeGenerator:
    vocab = SceneGraphVocabulary().update(parser.parse_batch(CORPUS * 2))
    return NegativeGenerator(
        VocabularyRefiller(vocab),
        GenerationConfig(max_edits=1, swaps=False),
        parser=parser,
        planner=EditPlanner(vocab.scenes, min_count=2),
        explain_skipped=True,
    )


def reasons(generator, groups: list[list[str]]) -> dict[str, str | None]:
    images = [
        ImageGroup(i, [Caption(i, f"{i}.{j}", t) for j, t in enumerate(texts)])
        for i, texts in enumerate(groups)
    ]
    return {r.caption.text: r.skipped for r in generator.generate(images)}


def test_each_skipped_caption_has_the_reason_where_it_was_refused(generator):
    found = reasons(
        generator,
        [
            [" "],
            ["it is ."],
            ["a person near a tree"],
            # "cat" is the only substitute of "dog", and the image's other caption says it
            ["a dog sitting on a bench", "a cat sitting on a bench"],
            ["a man holding a cup"],
        ],
    )
    assert found[" "] == "empty"
    assert found["it is ."] == "no_parse"
    # "person" is refused as a whole (generic), "tree" has no substitute of its kind
    assert found["a person near a tree"].startswith(("no_editable_unit:", "all_candidates"))
    assert found["a dog sitting on a bench"] == "all_candidates_refused:false_negative"
    assert found["a man holding a cup"] is None  # it has negatives: no reason


def test_the_trace_counts_unit_and_candidate_refusals(parser, generator):
    planner = generator.planner
    trace = planner.explain(parser.parse("a person near a tree"))
    assert trace.units["object:generic_noun"] == 1
    assert planner.trace is None  # counting stops after the explanation
    assert Trace().reason() is None
    assert (
        Trace(units={"object:generic_noun": 2}).reason() == "no_editable_unit:object:generic_noun"
    )
    both = Trace(units={"a": 5}, candidates={"b": 1, "c": 2})
    assert both.reason() == "all_candidates_refused:c"  # substitutes were weighed: theirs


def test_report_skipped_lists_every_caption_without_a_negative(tmp_path):
    captions = tmp_path / "caps.txt"
    lines = FLICKR_CAPTIONS.read_text().splitlines()[:30]
    captions.write_text("\n".join(lines) + "\n")
    out, report = tmp_path / "neg.jsonl", tmp_path / "skipped.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out), "--no-progress"]
    assert main([*args, "--report-skipped", str(report), "--num-workers", "1"]) == 0
    covered = {json.loads(line)["caption_id"] for line in out.read_text().splitlines()}
    rows = [json.loads(line) for line in report.read_text().splitlines()]
    assert {r["caption_id"] for r in rows} == set(range(30)) - covered
    assert rows and all(set(r) == {"image_id", "caption_id", "caption", "reason"} for r in rows)
    # "balance": every negative of the caption was dropped by the balance (on by default)
    prefixes = ("no_parse", "no_editable_unit:", "all_candidates_refused:", "empty", "balance")
    assert all(r["reason"].startswith(prefixes) for r in rows)
    assert any(r["reason"] == "balance" for r in rows)  # this sample has two
    assert all(r["caption"] == " ".join(lines[r["caption_id"]].split()) for r in rows)
    # the report does not change the negatives
    plain = tmp_path / "plain.jsonl"
    assert (
        main(["generate", "--captions", str(captions), "--out", str(plain), "--no-progress"]) == 0
    )
    assert plain.read_text() == out.read_text()


def test_skip_report_resumes_without_repeating_captions(tmp_path):
    from tags.negatives.pipeline import CaptionResult
    from tags.negatives.skipped import SkipReport

    path = Path(tmp_path / "r.jsonl")
    results = [CaptionResult(Caption(0, i, f"c{i}"), [], "no_parse") for i in range(3)]
    with SkipReport(path) as report:
        for result in results[:2]:
            report.write(result)
    with SkipReport(path, resume=True) as report:
        for result in results:
            report.write(result)
    assert [json.loads(line)["caption_id"] for line in path.read_text().splitlines()] == [0, 1, 2]


def test_explaining_plans_again_even_right_after_a_plan(parser, generator):
    planner = generator.planner
    graph = parser.parse("a person near a tree")
    planner.plan(graph)  # the object choices of this graph are cached now
    assert planner.explain(graph).units["object:generic_noun"] == 1
