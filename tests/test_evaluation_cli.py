"""``tags evaluate`` end to end on a tiny saved TagsModel with synthetic region features."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertTokenizer

from tags.cli import main
from tags.evaluation import (
    METRIC_KEYS,
    RetrievalImages,
    RetrievalTexts,
    kfold_metrics,
    retrieval_metrics,
    score_matrix_cross,
)
from tags.modeling import TagsConfig, TagsModel

FEATURE, N_IMAGES = 12, 6
WORDS = "a an the dog cat man woman child runs sits jumps on in near beach grass street red blue"
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split()]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run much faster single-threaded (no thread wake-ups on a busy CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("evaluate")
    torch.manual_seed(0)
    config = TagsConfig(
        vocab_size=len(TOKENS) + 3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=24,
        region_feature_size=FEATURE,
        max_regions=8,
        mask_token_id=4,
    )
    model = TagsModel(config).eval()
    with torch.no_grad():
        model.itm_head.classifier.weight.normal_(0.0, 10.0)
    model.save_pretrained(root / "model")
    BertTokenizer(vocab={w: i for i, w in enumerate(TOKENS)}).save_pretrained(root / "model")

    rng = np.random.default_rng(0)
    words = WORDS.split()
    lines = [" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(5 * N_IMAGES)]
    (root / "test_caps.txt").write_text("\n".join(lines) + "\n")
    npz = root / "npz"
    npz.mkdir()
    for i in range(N_IMAGES):
        regions = 2 + i % 4
        xy = rng.uniform(0, 300, size=(regions, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(5, 100, size=(regions, 2))], axis=1)
        np.savez(
            npz / f"{i}.npz",
            features=rng.normal(size=(regions, FEATURE)).astype("f4"),
            boxes=boxes.astype("f4"),
            image_w=400,
            image_h=400,
        )
    np.save(root / "test_ims.npy", rng.normal(size=(N_IMAGES, 3, FEATURE)).astype("f4"))
    return {"root": root, "model": root / "model", "caps": root / "test_caps.txt", "npz": npz}


def expected_cross_matrix(assets: dict[str, Path]) -> tuple[torch.Tensor, torch.Tensor]:
    """The same evaluation built by hand from the files, without the readers."""
    features, boxes = [], []
    for i in range(N_IMAGES):
        with np.load(assets["npz"] / f"{i}.npz") as data:
            features.append(data["features"])
            boxes.append(np.clip(data["boxes"] / 400.0, 0, 1))
    images = RetrievalImages.from_regions(features, boxes)
    tokenizer = BertTokenizer.from_pretrained(assets["model"])
    captions = assets["caps"].read_text().splitlines()
    texts = RetrievalTexts.from_captions(tokenizer, captions, np.repeat(range(N_IMAGES), 5), 24)
    model = TagsModel.from_pretrained(assets["model"]).eval()
    return score_matrix_cross(model, images, texts, batch_size=64), texts.txt2img


def run_cli(assets: dict[str, Path], name: str, *extra: str, features: str = "npz") -> dict:
    out = assets["root"] / f"{name}.json"
    argv = ["evaluate", "--model", str(assets["model"]), "--captions", str(assets["caps"])]
    argv += ["--features", str(assets.get(features, features))]
    argv += ["--out", str(out), "--device=cpu", *extra]
    assert main(argv) == 0
    return json.loads(out.read_text())


def test_cross_mode_matches_a_hand_built_evaluation(assets, capsys):
    report = run_cli(assets, "cross", "--batch-size", "7")
    sims, txt2img = expected_cross_matrix(assets)
    assert list(report["metrics"]) == list(METRIC_KEYS)
    assert report["metrics"] == pytest.approx(retrieval_metrics(sims, txt2img))
    assert report["n_images"] == N_IMAGES and report["n_texts"] == 5 * N_IMAGES
    assert report["protocol"] == "full" and report["mode"] == "cross" and report["topk"] is None
    assert report["num_processes"] == 1 and report["notes"] == []
    table = capsys.readouterr().out
    assert "RSum" in table and f"{report['metrics']['rsum']:.2f}" in table


def test_two_stage_with_large_k_and_coco_1k_folds(assets):
    cross = run_cli(assets, "cross_again")
    two_stage = run_cli(assets, "two", "--mode", "two-stage", "--topk", "100")
    assert two_stage["topk"] == 100
    assert two_stage["metrics"] == pytest.approx(cross["metrics"])
    with pytest.warns(UserWarning, match="expects 5000 images"):
        folds = run_cli(assets, "folds", "--protocol", "coco-1k", "--batch-size", "5")
    sims, txt2img = expected_cross_matrix(assets)
    assert len(folds["per_fold"]) == 5
    assert folds["metrics"] == pytest.approx(kfold_metrics(sims, txt2img, folds=5))


def test_dual_mode_precomp_npy_and_max_images(assets, capsys):
    report = run_cli(
        assets, "dual", "--mode", "dual", "--max-images", "4", features=str(assets["root"])
    )
    assert report["n_images"] == 4 and report["n_texts"] == 20
    assert any("whole-image box" in note for note in report["notes"])
    assert "whole-image box" in capsys.readouterr().out
    assert 0 <= report["metrics"]["rsum"] <= 600


def test_missing_features_fail_cleanly(assets, tmp_path, capsys):
    argv = ["evaluate", "--model", str(assets["model"]), "--captions", str(assets["caps"])]
    assert main([*argv, "--features", str(tmp_path), "--device=cpu"]) == 2
    assert "0.npz" in capsys.readouterr().err


def test_a_precomp_file_with_a_missing_line_is_refused(assets, tmp_path, capsys):
    lines = assets["caps"].read_text().splitlines()
    short = tmp_path / "test_caps.txt"
    short.write_text("\n".join(lines[:7] + lines[8:]) + "\n")  # one line gone: all shift
    argv = ["evaluate", "--model", str(assets["model"]), "--captions", str(short), "--device=cpu"]
    assert main([*argv, "--features", str(assets["root"] / "test_ims.npy")]) == 2
    err = capsys.readouterr().err
    assert f"{5 * N_IMAGES - 1} caption lines" in err and f"{N_IMAGES} image rows" in err
    assert main([*argv, "--features", str(assets["npz"])]) == 2  # no array: not 5 per image
    assert f"{5 * N_IMAGES - 1} lines is not a multiple of 5" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("missing", "not found"),
        ("file", "not a TagsModel directory (no config.json)"),
        ("bert", "model_type 'bert', not 'tags'"),
        ("no_tokenizer", "no tokenizer in"),
    ],
)
def test_evaluate_model_that_is_not_a_tags_model(assets, tmp_path, capsys, kind, message):
    import shutil

    target = tmp_path / "model"
    if kind == "file":
        target.write_bytes(b"\0" * 4)
    elif kind == "bert":
        target.mkdir()
        (target / "config.json").write_text('{"model_type": "bert"}')
    elif kind == "no_tokenizer":
        target.mkdir()
        for name in ("config.json", "model.safetensors"):
            shutil.copy(assets["model"] / name, target / name)
    argv = ["evaluate", "--model", str(target), "--captions", str(assets["caps"]), "--device=cpu"]
    assert main([*argv, "--features", str(assets["npz"])]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_truncated_model_and_the_wrong_feature_width_are_one_line(assets, tmp_path, capsys):
    """Issue "every bad input": a SafetensorError traceback, and a shape error deep in the
    model's forward."""
    import shutil

    cut = tmp_path / "model"
    shutil.copytree(assets["model"], cut)
    weights = cut / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    argv = ["evaluate", "--captions", str(assets["caps"]), "--device=cpu"]
    assert main([*argv, "--model", str(cut), "--features", str(assets["npz"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--model {cut}: cannot be read" in err, err
    wide = tmp_path / "test_ims.npy"
    np.save(wide, np.zeros((N_IMAGES, 3, FEATURE + 4), "f4"))
    assert main([*argv, "--model", str(assets["model"]), "--features", str(wide)]) == 2
    err = capsys.readouterr().err
    assert f"{FEATURE + 4}-d region features" in err and f"takes {FEATURE}-d" in err, err
    assert "Traceback" not in err


def test_an_unwritable_out_is_refused_before_evaluating(assets, tmp_path, capsys):
    """Before: the whole evaluation ran, then a traceback (IsADirectoryError /
    PermissionError) and no report."""
    argv = ["evaluate", "--model", str(assets["model"]), "--captions", str(assets["caps"])]
    argv += ["--features", str(assets["npz"]), "--device=cpu"]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {tmp_path}: a folder" in err, err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main([*argv, "--out", str(blocker / "sub" / "r.json")]) == 2
    assert "cannot write in" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--batch-size", "0", "must be >= 1"),
        ("--topk", "0", "must be >= 1"),
        ("--fusion", "nan", "must be a finite number"),
        ("--max-images", "-2", "must be >= 1"),
        ("--num-workers", "-1", "must be >= 0"),
    ],
)
def test_out_of_range_options_are_usage_errors(capsys, option, value, message):
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--model", "m", "--captions", "c", option, value])
    assert exit_.value.code == 2
    assert f"argument {option}: {message}" in capsys.readouterr().err
