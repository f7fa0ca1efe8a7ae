"""Benchmark build: layout, determinism, the cache, the data path and the CLI."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

import tags.benchmark.build as build_module
from tags.benchmark.build import BenchmarkConfig, build_benchmark, cached_manifest
from tags.benchmark.minimal_pairs import read_pairs

TINY = BenchmarkConfig(train=8, val=2, test=2, featurizer="random", crop_size=32)


def _npz(path):
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    return build_benchmark(root, TINY, threads=1)


def test_layout_and_karpathy_json(built):
    paths = built.paths
    data = json.loads(paths.captions.read_text())
    images = data["images"]
    assert [im["imgid"] for im in images] == list(range(12))
    assert [im["split"] for im in images] == ["train"] * 8 + ["val"] * 2 + ["test"] * 2
    sentids = [s["sentid"] for im in images for s in im["sentences"]]
    assert sentids == list(range(60))
    assert all(len(im["sentences"]) == 5 for im in images)
    assert sorted(p.name for p in paths.features.iterdir()) == sorted(f"{i}.npz" for i in range(12))
    assert not (paths.root / "images").exists()  # PNGs only on request
    manifest = json.loads(paths.manifest.read_text())
    assert manifest["config"]["featurizer"] == "random" and manifest["counts"]["test"] == 2
    scenes = [json.loads(line) for line in paths.scenes.read_text().splitlines()]
    assert len(scenes) == 12 and scenes[3]["image_id"] == 3


def test_npz_regions(built):
    scenes = [json.loads(line) for line in built.paths.scenes.read_text().splitlines()]
    for record in scenes:
        arrays = _npz(built.paths.features / f"{record['image_id']}.npz")
        feats, boxes = arrays["features"], arrays["boxes"]
        assert feats.dtype == np.float32 and feats.shape == (
            len(record["scene"]["objects"]) + 1,
            256,
        )
        assert boxes.dtype == np.float32 and boxes.shape == (len(feats), 4)
        w, h = float(arrays["image_w"]), float(arrays["image_h"])
        assert (
            (boxes >= 0).all() and (boxes[:, [0, 2]] <= w).all() and (boxes[:, [1, 3]] <= h).all()
        )


def test_test_split_minimal_pairs(built):
    pairs = read_pairs(built.paths.pairs)
    assert pairs and {p.image_id for p in pairs} == {10, 11}
    captions = json.loads(built.paths.captions.read_text())["images"]
    true = {(im["imgid"], s["raw"]) for im in captions for s in im["sentences"]}
    for pair in pairs:
        assert (pair.image_id, pair.caption) in true and (pair.image_id, pair.negative) not in true


def test_same_seed_same_bytes_and_arrays(built, tmp_path):
    again = build_benchmark(tmp_path, TINY, threads=1)
    assert not again.reused
    for name in ("dataset_shapes.json", "scenes.jsonl", "test_minimal_pairs.jsonl"):
        assert (tmp_path / name).read_bytes() == (built.paths.root / name).read_bytes()
    for i in range(12):
        a, b = _npz(tmp_path / "features" / f"{i}.npz"), _npz(built.paths.features / f"{i}.npz")
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    other = build_benchmark(tmp_path / "other", BenchmarkConfig(**{**vars(TINY), "seed": 1}))
    assert other.paths.captions.read_bytes() != built.paths.captions.read_bytes()


def test_cache_reuses_and_invalidates(tmp_path, monkeypatch):
    calls = []
    make = build_module.make_featurizer

    def counting(*args, **kwargs):
        calls.append(args)
        return make(*args, **kwargs)

    monkeypatch.setattr(build_module, "make_featurizer", counting)
    first = build_benchmark(tmp_path, TINY)
    mtime = (tmp_path / "features" / "0.npz").stat().st_mtime_ns
    second = build_benchmark(tmp_path, TINY)
    assert not first.reused and second.reused and len(calls) == 1
    assert (tmp_path / "features" / "0.npz").stat().st_mtime_ns == mtime
    assert second.counts == first.counts
    # a tampered output no longer matches the manifest's content hash
    (tmp_path / "scenes.jsonl").write_text("tampered\n")
    assert cached_manifest(tmp_path, TINY) is None
    assert not build_benchmark(tmp_path, TINY).reused and len(calls) == 2
    # other arguments rebuild; force rebuilds
    bigger = BenchmarkConfig(**{**vars(TINY), "test": 3})
    assert not build_benchmark(tmp_path, bigger).reused and len(calls) == 3
    assert len(list((tmp_path / "features").iterdir())) == 13
    assert not build_benchmark(tmp_path, bigger, force=True).reused and len(calls) == 4


def test_refuses_a_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "features").mkdir()
    with pytest.raises(ValueError, match="not a benchmark directory"):
        build_benchmark(tmp_path, TINY)
    assert (tmp_path / "features").is_dir() and (tmp_path / "notes.txt").exists()


def test_build_dataset_reads_the_output(built):
    from tags.backends.masked_lm import load_tokenizer
    from tags.data import build_dataset
    from tags.modeling import tiny_mlm_path

    config = SimpleNamespace(
        captions=str(built.paths.captions),
        features=str(built.paths.features),
        format="auto",
        split="test",
        max_text_len=24,
        max_regions=None,
        limit_images=None,
    )
    ds = build_dataset(config, load_tokenizer(tiny_mlm_path()))
    assert ds.num_images == 2 and len(ds) == 10 and ds.feature_size == 256
    item = ds[0]
    assert item["boxes"].shape[1] == 7 and float(item["boxes"].max()) <= 1.0
    assert float(item["boxes"][-1, 6]) == pytest.approx(1.0)  # the whole-image region
    assert (
        ds.text(0)
        == json.loads(built.paths.captions.read_text())["images"][10]["sentences"][0]["raw"]
    )


def test_evaluation_loader_reads_the_output(built):
    from tags.backends.masked_lm import load_tokenizer
    from tags.evaluation.io import load_retrieval_split
    from tags.modeling import tiny_mlm_path

    images, texts, notes = load_retrieval_split(
        built.paths.captions, built.paths.features, load_tokenizer(tiny_mlm_path()), split="val"
    )
    assert len(images) == 2 and len(texts) == 10 and not notes


def test_cli_end_to_end(tmp_path, capsys):
    from tags.cli import main

    argv = [
        "make-benchmark",
        str(tmp_path),
        "--train",
        "3",
        "--val",
        "1",
        "--test",
        "2",
        "--crop-size",
        "32",
        "--save-images",
        "--threads",
        "1",
        "--quiet",
    ]
    assert main(argv) == 0
    assert "built in" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == [f"{i}.png" for i in range(6)]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"]["save_images"] is True and manifest["counts"]["captions"] == 30
    assert read_pairs(tmp_path / "test_minimal_pairs.jsonl")
    assert main(argv) == 0
    assert "reused" in capsys.readouterr().err
    assert main(["make-benchmark", str(tmp_path), "--min-objects", "1"]) == 2
