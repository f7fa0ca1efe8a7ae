"""``--model`` takes a Hugging Face hub id: resolved from the local cache (offline), and a
one-line fetch hint when it is not there. The cache is a temporary folder laid out as the hub
lays it out (``models--org--name/snapshots/REV`` + ``refs/main``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from research.hf_tiny import make_clip, render_images

from tags.backends import load_backend
from tags.backends.hub import resolve_model
from tags.cli import build_parser, main
from tags.cli._model import typed_name

REPO, REV = "someorg/tiny-clip", "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf") / "hub"
    repo = root / f"models--{REPO.replace('/', '--')}"
    make_clip(repo / "snapshots" / REV)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(REV)
    return root


@pytest.fixture(autouse=True)
def offline(cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_cached_hub_id_resolves_to_its_snapshot(cache):
    snapshot = cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / REV
    assert resolve_model(REPO) == snapshot
    assert load_backend(REPO).name == "clip"
    for command in ("evaluate", "report", "explain"):
        extra = ["--out", "x"] if command == "report" else []
        args = build_parser().parse_args([command, "--model", REPO, *extra])
        assert Path(args.model) == snapshot and typed_name(args.model) == REPO
    args = build_parser().parse_args(["generate", "--captions", "c", "--out", "o", "--mlm", REPO])
    assert Path(args.mlm) == snapshot


def test_a_local_folder_wins_and_is_kept_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_clip(tmp_path / "someorg" / "tiny-clip")
    args = build_parser().parse_args(["evaluate", "--model", REPO])
    assert args.model == REPO and resolve_model(REPO) == Path(REPO)


def test_evaluate_with_a_hub_id_names_it_in_the_report(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for k, image in enumerate(render_images(2)):
        image.save(images / f"{k}.jpg")
    sugar = tmp_path / "sugar"
    sugar.mkdir()
    (sugar / "replace_obj.json").write_text(json.dumps({
        str(k): {"filename": f"{k}.jpg", "caption": "a red dog", "negative_caption": "a cat"}
        for k in range(2)
    }))  # fmt: skip
    out = tmp_path / "r.json"
    argv = ["evaluate", "--model", REPO, "--suite", f"sugarcrepe={sugar}", "--images", str(images)]
    assert main([*argv, "--device", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["model"] == REPO and report["backend"] == "clip"


@pytest.mark.parametrize("command", ["evaluate", "report", "explain"])
def test_an_uncached_hub_id_says_how_to_fetch_it(tmp_path, capsys, command):
    argv = [command, "--model", "someorg/absent"]
    out = ["--out", str(tmp_path / "o")]
    suite = tmp_path / "suite"  # exists: the suite paths are checked before the model
    suite.mkdir()
    extra = {"evaluate": ["--suite", f"shapes={suite}"], "report": ["--suite", f"shapes={suite}", *out],
             "explain": ["--caption", "a dog", "--features", "x", "--image-id", "1"]}  # fmt: skip
    assert main([*argv, *extra[command]]) in (1, 2)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "model directory not found: someorg/absent" in err[0]
    assert "`hf download someorg/absent`" in err[0] and str(tmp_path) not in err[0]


@pytest.mark.parametrize("option", ["--model", "--mlm"])
def test_generate_names_an_uncached_hub_id_before_any_work(tmp_path, capsys, option):
    captions = tmp_path / "caps.txt"
    captions.write_text("a red dog\n")
    out = tmp_path / "neg.jsonl"
    argv = ["generate", "--captions", str(captions), "--out", str(out), option, "org/absent"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{option}: model directory not found: org/absent" in err[0], err
    assert "`hf download org/absent`" in err[0] and not out.exists()
