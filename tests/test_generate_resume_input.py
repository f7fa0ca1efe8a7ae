"""``tags generate --resume`` checks its input: a content fingerprint in ``*.meta.json``
(a changed captions file is refused unless ``--resume-changed-input``) and unique caption
ids (a Karpathy file with a repeated ``sentid`` duplicated records on resume)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _data import FLICKR_CAPTIONS

from tags.cli import main

# generation itself, unbalanced (the balance of a whole run: tests/test_balance.py)
FAST = ["--k", "5", "--l", "5", "--top-m", "8", "--no-progress", "--no-balance"]
LINES = FLICKR_CAPTIONS.read_text().splitlines()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path]:
    """(captions, output) of an uninterrupted run on 30 captions."""
    root = tmp_path_factory.mktemp("run")
    captions = root / "caps.txt"
    captions.write_text("\n".join(LINES[:30]) + "\n")
    out = root / "neg.jsonl"
    assert main(["generate", "--captions", str(captions), "--out", str(out), *FAST]) == 0
    return captions, out


def interrupted(run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A copy of the run cut after its first half of records (+ meta and vocabulary)."""
    captions, out = run
    for suffix in (".meta.json", ".vocab.json"):
        shutil.copy(out.with_name(out.name + suffix), tmp_path)
    kept = out.read_bytes()[: len(out.read_bytes()) // 2].rsplit(b"\n", 1)[0] + b"\n"
    cut = tmp_path / out.name
    cut.write_bytes(kept)
    mine = tmp_path / captions.name
    shutil.copy(captions, mine)
    return mine, cut, kept


def argv(captions: Path, out: Path, *more: str) -> list[str]:
    return ["generate", "--captions", str(captions), "--out", str(out), *FAST, "--resume", *more]


def test_the_meta_file_records_the_input_fingerprint(run):
    import hashlib

    captions, out = run
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    data = captions.read_bytes()
    assert meta["input"] == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


@pytest.mark.parametrize("change", ["grown", "same_size"])
def test_a_resume_on_a_changed_input_is_refused(run, tmp_path, capsys, change):
    captions, out, kept = interrupted(run, tmp_path)
    text = captions.read_text()
    if change == "grown":
        captions.write_text(text + "\n".join(LINES[30:35]) + "\n")
    else:  # one letter changed: same size, other content
        captions.write_text(text.replace("a", "e", 1))
    capsys.readouterr()
    assert main(argv(captions, out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"--captions {captions} changed since the interrupted run" in err
    assert "--resume-changed-input" in err
    assert ("bytes" if change == "grown" else "same size") in err
    assert out.read_bytes() == kept  # nothing cut, nothing added


def test_resume_changed_input_keeps_the_records_and_goes_on(run, tmp_path, capsys):
    captions, out, kept = interrupted(run, tmp_path)
    vocab = out.with_name(out.name + ".vocab.json").read_bytes()
    captions.write_text(captions.read_text() + "\n".join(LINES[30:35]) + "\n")
    capsys.readouterr()
    assert main(argv(captions, out, "--resume-changed-input")) == 0
    err = capsys.readouterr().err
    assert "warning: --resume-changed-input" in err
    data = out.read_bytes()
    assert data.startswith(kept) and len(data) > len(kept)
    ids = [json.loads(line)["caption_id"] for line in data.splitlines()]
    assert ids == sorted(ids) and max(ids) >= 30  # the new captions too, each once
    assert out.with_name(out.name + ".vocab.json").read_bytes() == vocab  # the run's own
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert meta["input"]["bytes"] == captions.stat().st_size  # the new input from now on
    assert main(argv(captions, out)) == 0  # so a later resume takes it without the flag


def test_resume_changed_input_refuses_a_kept_caption_that_changed(run, tmp_path, capsys):
    captions, out, kept = interrupted(run, tmp_path)
    first = json.loads(kept.splitlines()[0])
    lines = captions.read_text().splitlines()
    lines[first["caption_id"]] = "a completely different caption about a cat"
    captions.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(argv(captions, out, "--resume-changed-input")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"caption {first['caption_id']} is now" in err, err
    assert out.read_bytes() == kept


def test_resume_changed_input_needs_resume(run, tmp_path, capsys):
    captions, _ = run
    out = tmp_path / "o.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out), "--resume-changed-input"]
    assert main(args) == 2
    assert "--resume-changed-input goes with --resume" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_meta_file_from_before_the_fingerprint_still_resumes(run, tmp_path):
    captions, out, _ = interrupted(run, tmp_path)
    meta = out.with_name(out.name + ".meta.json")
    saved = json.loads(meta.read_text())
    del saved["input"], saved["background"], saved["noun_classes"]
    saved["captions"] = str(captions)  # without a fingerprint the path is compared
    meta.write_text(json.dumps(saved))
    assert main(argv(captions, out)) == 0
    assert out.read_bytes() == run[1].read_bytes()


def karpathy(path: Path, sentids: list[list[int]]) -> Path:
    images = [
        {
            "split": "test",
            "imgid": i,
            "filename": f"{i}.jpg",
            "sentences": [{"raw": LINES[s], "sentid": s} for s in ids],
        }
        for i, ids in enumerate(sentids)
    ]
    path.write_text(json.dumps({"images": images}))
    return path


def test_a_repeated_caption_id_is_refused_naming_it(tmp_path, capsys):
    """A Karpathy file whose ``sentid`` repeats: a resume after that id restarted at its
    first occurrence and wrote the records between the two again."""
    data = tmp_path / "data"
    data.mkdir()
    captions = karpathy(data / "dataset.json", [[0, 1, 2], [3, 4, 1], [5, 6, 7]])
    out = tmp_path / "out" / "neg.jsonl"
    capsys.readouterr()
    assert main(["generate", "--captions", str(captions), "--out", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{captions}: caption id 1 appears twice (images[0] and images[1])" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_unique_karpathy_ids_resume_without_duplicates(tmp_path):
    captions = karpathy(tmp_path / "dataset.json", [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]])
    whole = tmp_path / "whole.jsonl"
    assert main(["generate", "--captions", str(captions), "--out", str(whole), *FAST]) == 0
    out = tmp_path / "cut.jsonl"
    shutil.copy(whole.with_name(whole.name + ".meta.json"), out.with_name(out.name + ".meta.json"))
    data = whole.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    assert main(argv(captions, out)) == 0
    assert out.read_bytes() == data
