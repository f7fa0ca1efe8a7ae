"""Progress bars of ``tags evaluate`` (retrieval, dual and cross; suites) and ``tags report``:
drawn with ``--progress``, none with ``--quiet``; the suite counter counts the distinct pairs
the summary line names."""

from __future__ import annotations

import json
import re

import pytest
import torch
from research.hf_tiny import make_clip, render_images

from tags.cli import main

CAPTIONS = [["a red dog", "a dog on grass"], ["two cats", "a cat near a table"], ["a ball"]]
TQDM = re.compile(r"\d+%\|")  # a drawn tqdm bar: "100%|█████|"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("progress")
    (root / "images").mkdir()
    images = []
    for k, image in enumerate(render_images(len(CAPTIONS))):
        image.save(root / "images" / f"{k}.jpg")
        sentences = [{"raw": c} for c in CAPTIONS[k]]
        images.append({"imgid": k, "split": "test", "filename": f"{k}.jpg", "sentences": sentences})
    (root / "caps.json").write_text(json.dumps({"images": images}))
    sugar = root / "sugar"
    sugar.mkdir()
    shared = {"filename": "0.jpg", "caption": "a red dog"}  # one positive, two negatives
    (sugar / "replace_att.json").write_text(json.dumps({
        "0": {**shared, "negative_caption": "a blue dog"},
        "1": {**shared, "negative_caption": "a green dog"},
    }))  # fmt: skip
    return {"root": root, "clip": make_clip(root / "clip"), "sugar": sugar}


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def retrieval(data, mode, *flags):
    argv = ["evaluate", "--model", str(data["clip"]), "--captions", str(data["root"] / "caps.json")]
    argv += ["--images", str(data["root"] / "images"), "--mode", mode, "--device=cpu", *flags]
    return main(argv)


@pytest.mark.parametrize(
    ("mode", "stages"),
    [("dual", ["encode images", "encode texts"]), ("cross", ["cross-encoder"])],
)
def test_evaluate_retrieval_draws_bars_with_progress_and_none_when_quiet(
    data, capsys, mode, stages
):
    assert retrieval(data, mode, "--progress") == 0
    err = capsys.readouterr().err
    for stage in stages:
        bar = [line for line in re.split(r"[\r\n]", err) if line.startswith(f"{stage}:")]
        assert bar and TQDM.search(bar[-1]), err
    assert "3/3" in err  # every image scored (the cross bar counts images, dual too)
    assert retrieval(data, mode, "--quiet") == 0
    err = capsys.readouterr().err
    assert not TQDM.search(err) and not any(s in err for s in stages), err


def test_without_a_terminal_no_bar_is_drawn(data, capsys):
    assert retrieval(data, "dual") == 0  # capsys: stderr is not a terminal
    assert not TQDM.search(capsys.readouterr().err)


def test_report_draws_bars_and_the_suite_counter_agrees(data, tmp_path, capsys):
    argv = ["report", "--model", str(data["clip"]), "--captions", str(data["root"] / "caps.json")]
    argv += ["--images", str(data["root"] / "images"), "--mode", "dual", "--device=cpu"]
    argv += ["--suite", f"sugarcrepe={data['sugar']}", "--suite-images"]
    argv += [f"sugarcrepe={data['root'] / 'images'}"]
    assert main([*argv, "--out", str(tmp_path / "a"), "--progress"]) == 0
    captured = capsys.readouterr()
    assert TQDM.search(captured.err) and "encode images:" in captured.err
    # 2 items of 2 captions = 4 pairs, 3 distinct (the shared positive is scored once)
    assert "sugarcrepe: 2 items, 4 pairs (3 distinct, each scored once)" in captured.out
    counter = [x for x in re.split(r"[\r\n]", captured.err) if "distinct pairs" in x][-1]
    assert "3/3" in counter, counter
    assert main([*argv, "--out", str(tmp_path / "b"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert not TQDM.search(err) and "distinct pairs" not in err and "encode" not in err, err
