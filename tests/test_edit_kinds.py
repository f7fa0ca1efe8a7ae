"""``tags generate --kinds``: edit kinds read from a negative's edits, the ``other_kind``
filter, the config's check, and the command end to end (with resume)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from _data import FLICKR_CAPTIONS

from tags.cli import main
from tags.core.edits import AGREE
from tags.core.types import Candidate, Edit, apply_edits
from tags.negatives.config import GenerationConfig
from tags.negatives.edit_kinds import EDIT_KINDS, edit_kind, kinds_of, parse_kinds
from tags.negatives.filters import FILTER_NAMES, filter_candidates

FAST = ["--k", "5", "--l", "5", "--top-m", "8", "--no-progress", "--no-balance"]


def edit(kind: str, original: str, replacement: str, operation: str = "replace") -> Edit:
    return Edit(kind, original, replacement, 0, len(original), operation)


@pytest.mark.parametrize(
    ("one", "expected"),
    [
        (edit("attribute", "red", "blue"), "attribute"),
        (edit("attribute", "a dog", "two dogs"), "attribute"),  # pluralize is a count
        (edit("object", "man", "woman"), "person"),
        (edit("object", "A man", "A woman"), "person"),  # the article widened in
        (edit("object", "children", "women"), "person"),
        (edit("object", "man", "dog"), "object"),  # a person made a thing is not a person edit
        (edit("object", "dog", "cat"), "object"),
        (edit("relation", "on", "under", "flip"), "relation"),
        (edit("object", "dog", "cat", "swap"), "swap"),
        (edit("attribute", "", "red ", "add"), "add"),
    ],
)
def test_the_kind_of_an_edit(one, expected):
    assert edit_kind(one) == expected
    assert edit_kind(one.to_dict()) == expected  # records hold dicts
    assert expected in EDIT_KINDS


def test_pronouns_that_follow_are_not_a_kind():
    edits = [edit("object", "man", "woman"), edit("object", "his", "her", AGREE)]
    assert kinds_of(edits) == {"person"}


def test_kinds_are_checked_and_normalised():
    assert parse_kinds("person, attribute,person") == ("attribute", "person")
    with pytest.raises(ValueError, match="unknown kind 'colour': choose from attribute"):
        parse_kinds("attribute,colour")
    with pytest.raises(ValueError, match="no kind given"):
        parse_kinds(" , ")
    config = GenerationConfig(kinds=["person", "attribute"])
    assert config.kinds == ("attribute", "person") and hash(config)
    with pytest.raises(ValueError, match="unknown kind"):
        GenerationConfig(kinds=("colours",))
    # a kind the settings turn off is refused by the config itself (every engine builds one)
    with pytest.raises(ValueError, match="add edits are off"):
        GenerationConfig(kinds=("add",), adds=False)
    with pytest.raises(ValueError, match="swap edits are off"):
        GenerationConfig.from_preset("multi-unit", kinds=("swap", "attribute"))
    assert GenerationConfig(kinds=("add",), adds=True).kinds == ("add",)


def test_the_filter_drops_other_kinds_and_counts_them():
    positive = "a man riding a red bike"
    person = Candidate("a woman riding a red bike", (Edit("object", "man", "woman", 2, 5),))
    colour = Candidate("a man riding a blue bike", (Edit("attribute", "red", "blue", 15, 18),))
    thing = Candidate("a man riding a red horse", (Edit("object", "bike", "horse", 19, 23),))
    for candidate in (person, colour, thing):
        assert apply_edits(positive, candidate.edits) == candidate.text
    removed: Counter = Counter()
    kept = filter_candidates(
        positive, [person, colour, thing], [], removed, ("attribute", "person")
    )
    assert kept == [person, colour] and removed == Counter(other_kind=1)
    assert filter_candidates(positive, [person, colour, thing], []) == [person, colour, thing]
    assert "other_kind" in FILTER_NAMES


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "test_caps.txt"
    path.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:40]) + "\n")
    return path


def test_generate_keeps_only_the_kinds_asked_for(corpus, tmp_path, capsys):
    every = tmp_path / "all.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(every), *FAST]) == 0
    some = tmp_path / "some.jsonl"
    args = ["generate", "--captions", str(corpus), "--out", str(some), *FAST]
    assert main([*args, "--kinds", "attribute,person"]) == 0
    records = [json.loads(line) for line in some.read_text().splitlines()]
    found = Counter(k for r in records for k in kinds_of(r["edits"]))
    assert found and set(found) <= {"attribute", "person"}
    all_kinds = {
        k for line in every.read_text().splitlines() for k in kinds_of(json.loads(line)["edits"])
    }
    assert all_kinds - {"attribute", "person"}  # the corpus has other kinds to drop
    # the kept negatives are the full run's of those kinds, caption by caption
    kept = {(r["caption_id"], r["negative"]) for r in records}
    full = {
        (r["caption_id"], r["negative"])
        for r in map(json.loads, every.read_text().splitlines())
        if kinds_of(r["edits"]) <= {"attribute", "person"}
    }
    assert kept <= full
    meta = json.loads(some.with_name(some.name + ".meta.json").read_text())
    assert meta["kinds"] == ["attribute", "person"]
    # resuming with other kinds is refused; with the same ones it finishes the same bytes
    data = some.read_bytes()
    some.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    assert main([*args, "--resume", "--kinds", "attribute"]) == 2
    assert "kinds" in capsys.readouterr().err
    assert main([*args, "--resume", "--kinds", "person,attribute"]) == 0
    assert some.read_bytes() == data


def test_an_unknown_kind_is_refused_by_the_command(corpus, tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    with pytest.raises(SystemExit) as stop:
        main(["generate", "--captions", str(corpus), "--out", str(out), "--kinds", "colour"])
    assert stop.value.code == 2
    assert "unknown kind 'colour'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--kinds", "add,attribute"], "pass --adds"), (["--kinds", "swap", "--no-swaps"], "swap")],
)
def test_a_kind_the_run_turns_off_is_refused(corpus, tmp_path, capsys, options, named):
    out = tmp_path / "x.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *options]) == 2
    err = capsys.readouterr().err
    assert "edits are off in this run" in err and named in err
    assert not out.exists()


def test_a_run_from_before_kinds_resumes_as_all_kinds(corpus, tmp_path):
    out = tmp_path / "negatives.jsonl"
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST]
    assert main(args) == 0
    meta_path = out.with_name(out.name + ".meta.json")
    meta = json.loads(meta_path.read_text())
    assert meta.pop("kinds") is None
    meta_path.write_text(json.dumps(meta))
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    assert main([*args, "--resume"]) == 0
    assert out.read_bytes() == data
