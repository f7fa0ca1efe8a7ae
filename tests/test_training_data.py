"""Training data: corpora + region features, collation, sampler, negative pools."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tags.backends.masked_lm import load_tokenizer
from tags.data import (
    EpochSampler,
    NegativePools,
    PairCollator,
    build_dataset,
    load_image_groups,
    write_synthetic_dataset,
)
from tags.modeling import tiny_mlm_path


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(tiny_mlm_path())


def data_config(paths, fmt="auto", **kw):
    values = dict(
        captions=str(paths["captions"]),
        features=str(paths["features"]),
        format=fmt,
        split="train",
        max_text_len=12,
        max_regions=None,
        limit_images=None,
    )
    values.update(kw)
    return SimpleNamespace(**values)


def test_karpathy_with_npz_regions(tmp_path, tokenizer):
    paths = write_synthetic_dataset(
        tmp_path,
        num_images=3,
        captions_per_image=2,
        num_regions=4,
        feature_size=6,
        layout="karpathy",
    )
    ds = build_dataset(data_config(paths, max_regions=3), tokenizer)
    assert len(ds) == 6 and ds.num_images == 3 and ds.feature_size == 6
    item = ds[3]
    assert item["image_index"] == 1 and item["caption_id"] == 3  # sentid
    assert item["features"].shape == (3, 6) and item["boxes"].shape == (3, 7)
    assert item["boxes"].min() >= 0 and item["boxes"].max() <= 1  # pixel boxes normalised
    raw = np.load(paths["features"] / "1.npz")
    assert np.allclose(item["boxes"][0, :4].numpy(), raw["boxes"][0] / [640, 480, 640, 480])
    assert ds.other_captions(3) == [ds.text(2)]
    assert ds.image_of.tolist() == [0, 0, 1, 1, 2, 2]
    assert item["input_ids"][0] == tokenizer.cls_token_id and len(item["input_ids"]) <= 12


def test_precomp_has_whole_image_boxes(tmp_path, tokenizer):
    paths = write_synthetic_dataset(tmp_path, num_images=2, num_regions=3, feature_size=5)
    ds = build_dataset(data_config(paths), tokenizer)
    assert len(ds) == 10 and ds[7]["image_index"] == 1 and ds[7]["caption_id"] == 7
    assert torch.equal(ds[0]["boxes"], torch.tensor([[0, 0, 1, 1, 1, 1, 1.0]] * 3))
    ims = np.load(paths["features"])
    assert torch.allclose(ds[7]["features"], torch.from_numpy(ims[1]))


def test_precomp_line_count_must_be_five_per_image_row(tmp_path, tokenizer):
    paths = write_synthetic_dataset(tmp_path, num_images=3, num_regions=3, feature_size=5)
    lines = paths["captions"].read_text().splitlines()
    paths["captions"].write_text("\n".join(lines[:10]) + "\n")  # a whole image dropped
    with pytest.raises(ValueError, match=r"10 caption lines, but .* holds 3 image rows"):
        build_dataset(data_config(paths), tokenizer)
    paths["captions"].write_text("\n".join(lines[1:]) + "\n")  # one line dropped
    with pytest.raises(ValueError, match=r"14 caption lines, but .* holds 3 image rows"):
        build_dataset(data_config(paths), tokenizer)
    with pytest.raises(ValueError, match="14 lines is not a multiple of 5"):
        load_image_groups(paths["captions"], "precomp")  # without the array


def test_karpathy_split_that_does_not_exist(tmp_path, tokenizer):
    paths = write_synthetic_dataset(tmp_path, num_images=2, captions_per_image=2, layout="karpathy")
    with pytest.raises(ValueError, match=r"no captions in split 'tset' \(splits present: train\)"):
        build_dataset(data_config(paths, split="tset"), tokenizer)


def test_collator_pads_text_and_regions(tmp_path, tokenizer):
    paths = write_synthetic_dataset(
        tmp_path,
        num_images=2,
        captions_per_image=1,
        num_regions=4,
        feature_size=5,
        layout="karpathy",
    )
    ds = build_dataset(data_config(paths), tokenizer)
    items = [ds[0], ds[1]]
    items[1]["features"], items[1]["boxes"] = items[1]["features"][:2], items[1]["boxes"][:2]
    items[1]["input_ids"] = items[1]["input_ids"][:3]
    batch = PairCollator(tokenizer.pad_token_id)(items)
    n0 = len(items[0]["input_ids"])
    assert batch["input_ids"].shape == (2, n0)
    assert batch["attention_mask"][1].tolist() == [1, 1, 1] + [0] * (n0 - 3)
    assert batch["region_features"].shape == (2, 4, 5)
    assert batch["region_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    assert batch["image_ids"].tolist() == [0, 1] and batch["index"].tolist() == [0, 1]
    assert batch["texts"] == [ds.text(0), ds.text(1)]


def test_epoch_sampler_is_a_seeded_permutation():
    s = EpochSampler(10, seed=3)
    first = list(s)
    assert sorted(first) == list(range(10)) and list(s) == first
    s.set_epoch(1)
    assert list(s) != first and sorted(s) == list(range(10))
    assert list(EpochSampler(10, seed=3)) == first


def test_negative_pools_from_jsonl(tmp_path):
    path = tmp_path / "n.jsonl"
    rows = [
        {
            "image_id": 0,
            "caption_id": 1,
            "positive": "a dog",
            "negative": n,
            "edits": [
                {"type": "object", "original": "dog", "replacement": n[2:], "start": 2, "end": 5}
            ],
        }
        for n in ("a cat", "a cow")
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pools = NegativePools.from_jsonl(path)
    assert [n for n, _ in pools.get("1")] == ["a cat", "a cow"]
    assert [n for n, _ in pools.get(1, limit=1)] == ["a cat"]
    assert pools.get(2) == [] and pools.positive(1, "x") == "a dog"
    assert pools.get(1)[0][1][0].replacement == "cat"
    path.write_text('{"caption_id": 1}\n')
    with pytest.raises(ValueError, match=r"n\.jsonl:1"):
        NegativePools.from_jsonl(path)


def test_karpathy_captions_with_precomp_rows_use_the_split_position(tmp_path, tokenizer):
    # Karpathy image ids are global (30000+ for the test split); precomp rows follow the
    # split's image order, so the dataset must index rows by position, not by id.
    images = [
        {
            "imgid": 30000 + i,
            "filename": f"{i}.jpg",
            "split": "test",
            "sentences": [{"raw": f"a dog number {i}", "sentid": 10 * i}],
        }
        for i in range(3)
    ]
    (tmp_path / "karpathy.json").write_text(json.dumps({"images": images}))
    rows = np.stack([np.full((2, 4), float(i), np.float32) for i in range(3)])
    np.save(tmp_path / "test_ims.npy", rows)
    paths = {"captions": tmp_path / "karpathy.json", "features": tmp_path / "test_ims.npy"}
    ds = build_dataset(data_config(paths, fmt="karpathy", split="test"), tokenizer)
    assert ds.num_images == 3
    for i in range(3):
        feats, boxes = ds.image(i)
        assert torch.all(feats == float(i))
        assert boxes.shape == (2, 7)
