"""Damaged model folders and side inputs are one-line refusals (exit 2, no traceback) naming
the folder or option and the file: every model load goes through the checked loader of
``tags.core.checkpoints`` (TagsModel, BLIP, CLIP, ``--mlm``, ``--baseline``, tokenizers);
JSON Lines side inputs through ``tags.core.io.json_lines``; a precomp caption file whose
line count is not a multiple of 5, edits outside their caption and benchmark images too
small to draw a shape are refused instead of silently used."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from research.hf_tiny import make_blip, make_clip, make_tags, render_images

#: bytes that are not UTF-8 from the first line on
NOT_UTF8 = b"\xff\xfe\x00\x81 not text\n" * 4


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A tiny TagsModel (``tags``), BLIP and CLIP, their damaged copies, region features,
    images and caption files."""
    root = tmp_path_factory.mktemp("damaged")
    make_tags(root / "tags")
    make_blip(root / "blip")
    make_clip(root / "clip")
    for name in ("tags", "blip", "clip"):  # weights cut in the middle
        shutil.copytree(root / name, root / f"{name}_cut")
        weights = root / f"{name}_cut" / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    edit_config(root / "tags", root / "tags_size", hidden_size=64)
    edit_config(root / "clip", root / "clip_size", projection_dim=24)
    shutil.copytree(root / "tags", root / "tags_json")
    (root / "tags_json" / "config.json").write_text('{"model_type": "tags", ')
    (root / "feats").mkdir()
    for i in range(2):
        np.savez(root / "feats" / f"{i}.npz", features=np.ones((3, 8), np.float32),
                 boxes=np.array([[0, 0, 10, 10]] * 3, np.float32), width=20, height=20)  # fmt: skip
    (root / "imgs").mkdir()
    for i, image in enumerate(render_images(2, seed=3)):
        image.save(root / "imgs" / f"{i}.png")
    (root / "caps.txt").write_text("a red dog runs on the grass\n" * 10)
    rows = [{"image_id": i // 5, "caption": "a red dog runs", "filename": f"{i // 5}.png"}
            for i in range(10)]  # fmt: skip
    (root / "caps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pair = {"filename": "0.png", "positive": "a red dog", "negative": "a blue dog"}
    (root / "pairs.jsonl").write_text(json.dumps(pair) + "\n")
    return root


def edit_config(source: Path, target: Path, **values: object) -> None:
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config.update(values)
    (target / "config.json").write_text(json.dumps(config))


def one_line(result, *words: str) -> str:
    """The one error line of a run that must exit 2; it holds every one of ``words``."""
    lines = [x for x in result.stderr.splitlines() if x.startswith(("error:", "tags "))]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


# ---------------------------------------------------------------------- model folders
def _cut_runs(root: Path, out: Path) -> dict[str, tuple[list[str], str]]:
    """Command lines that load a model with cut weights, and that folder."""
    imgs = ["--images", str(root / "imgs")]
    pairs = ["--suite", f"pairs={root / 'pairs.jsonl'}"]
    return {
        "generate --model": (["generate", "--captions", root / "caps.txt", "--out",
                              out / "neg.jsonl", "--model", root / "tags_cut"], "tags_cut"),
        "evaluate TagsModel": (["evaluate", "--model", root / "tags_cut", *pairs, "--features",
                                root / "feats"], "tags_cut"),
        "evaluate BLIP": (["evaluate", "--model", root / "blip_cut", "--captions",
                           root / "caps.jsonl", *imgs], "blip_cut"),
        "evaluate CLIP": (["evaluate", "--model", root / "clip_cut", "--captions",
                           root / "caps.jsonl", *imgs], "clip_cut"),
        "explain --model": (["explain", "--model", root / "tags_cut", "--caption", "a dog",
                             "--features", root / "feats", "--image-id", "0"], "tags_cut"),
        "report --baseline": (["report", "--model", root / "clip", "--baseline",
                               root / "clip_cut", *pairs, *imgs, "--out", out / "report"],
                              "clip_cut"),
    }  # fmt: skip


@pytest.mark.parametrize(
    "case",
    ["generate --model", "evaluate TagsModel", "evaluate BLIP", "evaluate CLIP",
     "explain --model", "report --baseline"],
)  # fmt: skip
def test_cut_weights_are_one_line_naming_the_folder_and_file(root, tmp_path, cli, case):
    argv, folder = _cut_runs(root, tmp_path)[case]
    line = one_line(cli(*argv), str(root / folder), "model.safetensors", "damaged or incomplete")
    assert "save_pretrained" in line
    assert not (tmp_path / "neg.jsonl").exists() and not (tmp_path / "report").exists()


@pytest.mark.parametrize("family", ["clip", "tags"])
def test_a_config_whose_sizes_do_not_match_the_weights_is_one_line(root, cli, family):
    if family == "clip":
        argv = ["--captions", root / "caps.jsonl", "--images", root / "imgs"]
        example = "e.g. text_projection.weight: [16, 32] in the weights, [24, 32] by config.json"
    else:
        argv = ["--captions", root / "caps.txt", "--features", root / "feats"]
        example = "e.g. embeddings.LayerNorm.bias: [32] in the weights, [64] by config.json"
    result = cli("evaluate", "--model", root / f"{family}_size", *argv)
    one_line(result, f"{family}_size", "config.json does not match the weights in "
             "model.safetensors", example)  # fmt: skip
    assert "MISMATCH" not in result.stderr  # transformers' load report is not printed


def test_a_config_that_is_not_json_is_named(root, tmp_path, cli):
    result = cli("generate", "--captions", root / "caps.txt", "--out", tmp_path / "neg.jsonl",
                 "--model", root / "tags_json")  # fmt: skip
    one_line(result, str(root / "tags_json"), "config.json is not valid JSON")
    result = cli("evaluate", "--model", root / "tags_json", "--captions", root / "caps.txt",
                 "--features", root / "feats")  # fmt: skip
    line = one_line(result, f"--model {root / 'tags_json'}", "config.json is not valid JSON")
    assert "model_type None" not in line


def test_mlm_given_a_tags_model_folder_says_use_model(root, tmp_path, cli):
    result = cli("generate", "--captions", root / "caps.txt", "--out", tmp_path / "neg.jsonl",
                 "--mlm", root / "tags")  # fmt: skip
    line = one_line(result, str(root / "tags"), "TagsModel folder", "--model")
    assert "pip install" not in line


def test_a_damaged_tokenizer_file_is_named(root, tmp_path, cli):
    shutil.copytree(root / "tags", tmp_path / "tok")
    text = (tmp_path / "tok" / "tokenizer.json").read_text()
    (tmp_path / "tok" / "tokenizer.json").write_text(text[: len(text) // 3])
    result = cli("evaluate", "--model", root / "tags", "--tokenizer", tmp_path / "tok",
                 "--suite", f"pairs={root / 'pairs.jsonl'}", "--features", root / "feats")  # fmt: skip
    one_line(result, f"--tokenizer {tmp_path / 'tok'}", "tokenizer.json is not JSON")


@pytest.mark.parametrize("command", ["parse", "eval-parser"])
def test_a_spacy_model_that_is_not_installed_is_one_line(root, cli, command):
    factual = Path(__file__).parent / "data" / "factual_dev_sample.csv"
    source = root / "caps.txt" if command == "parse" else factual
    result = cli(command, source, "--model", "no_such_model")
    one_line(result, "--model no_such_model", "not installed", "pip install")


def test_the_load_report_is_held_back_only_when_the_load_fails(root):
    """On success transformers' report is logged as before; on a size mismatch it is summed
    up in the error instead."""
    from tags.core.checkpoints import REPORT_LOGGER, load_model_dir
    from tags.core.errors import CheckpointError

    logger = logging.getLogger(REPORT_LOGGER)
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.WARNING)  # warnings shown (the tiny models' helpers hide them)
    try:

        def fine() -> int:
            logger.warning("LOAD REPORT: some keys missing")
            return 7

        assert load_model_dir(root / "tags", fine) == 7
        assert seen == ["LOAD REPORT: some keys missing"]

        def mismatched() -> None:
            logger.warning(
                "LOAD REPORT\nw.weight | MISMATCH | Reinit due to size mismatch - "
                "ckpt: torch.Size([2, 3]) vs model:torch.Size([4, 3])"
            )
            raise RuntimeError("You set `ignore_mismatched_sizes` to `False`, thus raising")

        with pytest.raises(CheckpointError, match=r"w\.weight: \[2, 3\] in the weights"):
            load_model_dir(root / "tags", mismatched)
        assert len(seen) == 1  # the failed load's report was not logged
        logger.setLevel(logging.ERROR)  # warnings hidden: still hidden, still summed up
        assert load_model_dir(root / "tags", fine) == 7 and len(seen) == 1
        with pytest.raises(CheckpointError, match=r"w\.weight: \[2, 3\] in the weights"):
            load_model_dir(root / "tags", mismatched)
        assert len(seen) == 1 and logger.level == logging.ERROR
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# ---------------------------------------------------------------------- side inputs
def test_export_captions_that_are_not_utf8_name_the_option(root, tmp_path, cli):
    negatives = tmp_path / "neg.jsonl"
    record = {"image_id": 0, "caption_id": 0, "positive": "a red dog runs",
              "negative": "a blue dog runs", "edits": [], "negative_index": 0,
              "num_negatives": 1}  # fmt: skip
    negatives.write_text(json.dumps(record) + "\n")
    for name in ("caps.json", "caps.jsonl"):
        (tmp_path / name).write_bytes(NOT_UTF8)
        result = cli("export", negatives, "--format", "negclip", "--captions",
                     tmp_path / name, "--out", tmp_path / "n.tsv")  # fmt: skip
        line = one_line(result, f"--captions {tmp_path / name}", "not UTF-8")
        assert "codec" not in line
    assert not (tmp_path / "n.tsv").exists()


@pytest.mark.parametrize("suite", ["shapes", "pairs"])
def test_a_suite_file_that_is_not_utf8_is_named_with_its_line(root, tmp_path, cli, suite):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(NOT_UTF8)
    argv = ["--model", root / "clip", "--suite", f"{suite}={bad}", "--images", root / "imgs"]
    one_line(cli("evaluate", *argv), f"{bad}:1", "not UTF-8")
    one_line(cli("report", *argv, "--out", tmp_path / "report"), f"{bad}:1", "not UTF-8")


def test_shapes_pairs_that_are_not_pairs_are_named(root, tmp_path, cli):
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"image_id": 0, "caption": "a red circle"}\n')
    result = cli("evaluate", "--model", root / "clip", "--suite", f"shapes={bad}",
                 "--images", root / "imgs")  # fmt: skip
    one_line(result, f"{bad}:1", "not a minimal pair")


def test_explain_pairs_that_are_not_utf8_are_named(root, tmp_path, cli):
    bad = tmp_path / "pairs.jsonl"
    bad.write_bytes(NOT_UTF8)
    result = cli("explain", "--model", root / "tags", "--pairs", bad, "--features",
                 root / "feats")  # fmt: skip
    one_line(result, f"--pairs {bad}:1", "not UTF-8")


def test_make_benchmark_names_a_corrupt_manifest_and_keeps_it(tmp_path, cli):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "manifest.json").write_bytes(NOT_UTF8)
    argv = ["make-benchmark", out, "--train", "2", "--val", "0", "--test", "2",
            "--featurizer", "random", "--image-size", "64", "--crop-size", "32"]  # fmt: skip
    one_line(cli(*argv), str(out / "manifest.json"), "not UTF-8", "--overwrite")
    (out / "manifest.json").write_text("[1, 2]")
    one_line(cli(*argv), str(out / "manifest.json"), "not a tags benchmark manifest")
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]  # nothing written


# ---------------------------------------------------------------------- silent cases
def test_generate_refuses_a_precomp_file_of_7_lines(root, tmp_path, cli):
    captions = tmp_path / "caps.txt"
    captions.write_text("a red dog runs on the grass\n" * 7)
    out = tmp_path / "neg.jsonl"
    result = cli("generate", "--captions", captions, "--out", out, "--no-progress")
    one_line(result, str(captions), "7 lines is not a multiple of 5")
    assert not out.exists()


def test_generate_format_lines_reads_one_image_per_line(tmp_path, cli):
    from tags.core.io import read_captions

    captions = tmp_path / "caps.txt"
    texts = [f"a {c} dog runs on the grass next to a {d} cat" for c, d in
             zip(["red", "brown", "black", "white", "small", "large", "young"],
                 ["grey", "black", "small", "big", "orange", "white", "old"])]  # fmt: skip
    captions.write_text("\n".join(texts) + "\n")
    groups = list(read_captions(captions, "lines"))
    assert [g.image_id for g in groups] == list(range(7))
    assert [[c.caption_id for c in g.captions] for g in groups] == [[i] for i in range(7)]
    out = tmp_path / "neg.jsonl"
    result = cli("generate", "--captions", captions, "--format", "lines", "--out", out,
                 "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and all(r["image_id"] == r["caption_id"] for r in records)
    assert {r["positive"] for r in records} <= set(texts)


def test_negatives_whose_edit_lies_outside_the_caption_are_refused(root, tmp_path, cli):
    negatives = tmp_path / "neg.jsonl"
    edit = {"type": "attribute", "original": "red", "replacement": "blue", "start": 1000,
            "end": 1003, "operation": "replace"}  # fmt: skip
    good = {
        "image_id": 0,
        "caption_id": 0,
        "positive": "a red dog",
        "negative": "a blue dog",
        "edits": [{**edit, "start": 2, "end": 5}],
        "negative_index": 0,
        "num_negatives": 1,
    }
    negatives.write_text(json.dumps(good) + "\n" + json.dumps({**good, "edits": [edit]}) + "\n")
    result = cli("explain", "--model", root / "tags", "--negatives", negatives, "--features",
                 root / "feats")  # fmt: skip
    one_line(result, f"{negatives}:2", "offsets 1000..1003 lie outside the positive caption")
    result = cli("export", negatives, "--format", "json", "--out", tmp_path / "n.jsonl")
    one_line(result, f"{negatives}:2", "outside the positive caption")


def test_training_negatives_whose_edit_does_not_fit_are_refused(tmp_path):
    from tags.data.negatives import read_negative_rows

    path = tmp_path / "neg.jsonl"
    record = {"image_id": 0, "caption_id": 0, "positive": "a red dog", "negative": "a big dog",
              "edits": [{"type": "attribute", "original": "blue", "replacement": "big",
                         "start": 2, "end": 5}]}  # fmt: skip
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match=r"neg\.jsonl:1: .*holds 'red' at 2\.\.5"):
        list(read_negative_rows(path, "tags-jsonl"))


def test_make_benchmark_refuses_images_too_small_for_a_shape(tmp_path, cli):
    from tags.benchmark.config import MIN_IMAGE_SIZE

    result = cli("make-benchmark", tmp_path / "b", "--image-size", "8", "--featurizer", "random")
    one_line(result, "image_size 8", f">= {MIN_IMAGE_SIZE}", "0.96 pixels")
    assert not (tmp_path / "b").exists()


def test_a_clean_load_prints_no_library_noise(root):
    """A fresh process that loads a saved TagsModel's tokenizer and weights the way the CLI
    does prints no warning: "tags" is known to AutoConfig before AutoTokenizer reads the
    folder, and transformers' tensor-parallel "layers were not sharded" notes (a model
    without a plan) are dropped."""
    code = (
        "import sys\n"
        "from tags.backends.masked_lm import load_tokenizer\n"
        "from tags.core.checkpoints import load_model_dir\n"
        "load_tokenizer(sys.argv[1])\n"
        "from tags.modeling import TagsModel\n"
        "load_model_dir(sys.argv[1], lambda: TagsModel.from_pretrained(sys.argv[1]))\n"
        "print('loaded')\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    run = subprocess.run(
        [sys.executable, "-c", code, str(root / "tags")], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0 and run.stdout.strip() == "loaded", run.stderr[-2000:]
    assert "not sharded" not in run.stderr and "instantiate a model of type" not in run.stderr
