"""Readers, bad input, the resumable writer, shards and region features."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pytest

from tags.core.io import (
    ErrorPolicy,
    InputError,
    JsonlWriter,
    parse_shard,
    read_captions,
    scan_output,
    shard_bounds,
)
from tags.core.regions import (
    MissingFeaturesError,
    NpzRegions,
    PrecompRegions,
    open_regions,
)


def test_precomp_groups_five_lines_per_image(tmp_path):
    path = tmp_path / "test_caps.txt"
    path.write_text("".join(f"caption {i}\n" for i in range(12)))
    groups = list(read_captions(path))
    assert [g.image_id for g in groups] == [0, 1, 2]
    assert [c.caption_id for c in groups[1].captions] == [5, 6, 7, 8, 9]
    assert groups[2].captions[-1].text == "caption 11"


def test_jsonl_reader_names_corrupt_lines(tmp_path):
    path = tmp_path / "caps.jsonl"
    lines = [
        {"image_id": "a", "caption": "A dog ."},
        "{not json",
        {"image_id": "a", "caption": "A cat ."},
        {"caption": "no image"},
        {"image_id": "b", "caption": "A bird ."},
    ]
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    with pytest.raises(InputError, match=r"caps.jsonl:2: invalid JSON"):
        list(read_captions(path, on_error=ErrorPolicy("stop")))
    warnings: list[str] = []
    policy = ErrorPolicy("skip", warn=warnings.append)
    groups = list(read_captions(path, on_error=policy))
    assert policy.count == 2
    assert ":2:" in warnings[0] and ":4:" in warnings[1] and "image_id" in warnings[1]
    assert [(g.image_id, [c.caption_id for c in g.captions]) for g in groups] == [
        ("a", [0, 2]),
        ("b", [4]),
    ]


def test_karpathy_reader_split_and_ids(tmp_path):
    path = tmp_path / "dataset_flickr30k.json"
    data = {
        "images": [
            {"split": "train", "filename": "1.jpg", "imgid": 0, "sentences": [{"raw": "x", "sentid": 0}]},
            {"split": "test", "filename": "2.jpg", "imgid": 1, "sentences": [{"raw": "A dog .", "sentid": 1}, {"raw": "A pup .", "sentid": 2}]},
            {"split": "test", "filename": "3.jpg", "imgid": 2, "sentences": [{"sentid": 3}]},
        ]
    }  # fmt: skip
    path.write_text(json.dumps(data))
    policy = ErrorPolicy("skip")
    groups = list(read_captions(path, split="test", on_error=policy))
    assert [(g.image_id, g.filename) for g in groups] == [(1, "2.jpg"), (2, "3.jpg")]
    assert [c.caption_id for c in groups[0].captions] == [1, 2]
    assert policy.count == 1  # the sentence without 'raw'
    with pytest.raises(InputError, match=r"images\[2\]\.sentences\[0\]"):
        list(read_captions(path, split="test"))


def test_shards_are_contiguous_blocks_covering_everything():
    for total in (0, 1, 7, 10):
        for count in (1, 2, 3, 4):
            blocks = [shard_bounds(total, i, count) for i in range(count)]
            assert blocks[0][0] == 0 and blocks[-1][1] == total
            assert all(a[1] == b[0] for a, b in pairwise(blocks))
    assert parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "x", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def _records(caption_id, n):
    return [{"caption_id": caption_id, "negative_index": i, "num_negatives": n} for i in range(n)]


def test_scan_output_stops_after_last_complete_caption(tmp_path):
    path = tmp_path / "out.jsonl"
    with JsonlWriter(path) as writer:
        writer.open()
        writer.write(_records(0, 2))
        writer.write(_records(1, 3))
    complete = path.read_bytes()
    # a caption cut after one of its three records, then half a line
    partial = json.dumps(_records(2, 3)[0]) + "\n" + json.dumps(_records(2, 3)[1])[:10]
    path.write_bytes(complete + partial.encode())
    point = scan_output(path)
    assert (point.offset, point.records, point.last_caption_id) == (len(complete), 5, 1)
    assert point.dropped_bytes == len(partial.encode())
    writer = JsonlWriter(path)
    assert writer.open(resume=True).last_caption_id == 1
    writer.close()
    assert path.read_bytes() == complete


def test_npz_features_normalised_and_missing_is_an_error(tmp_path):
    np.savez(
        tmp_path / "7.npz",
        features=np.ones((3, 4), np.float32),
        boxes=np.array([[0, 0, 50, 100], [10, 10, 20, 20], [0, 0, 100, 200]], np.float32),
        width=100,
        height=200,
    )
    store = open_regions(tmp_path)
    assert isinstance(store, NpzRegions)
    regions = store.get(7)
    assert regions.features.shape == (3, 4) and regions.boxes.shape == (3, 7)
    np.testing.assert_allclose(regions.boxes[0], [0, 0, 0.5, 0.5, 0.5, 0.5, 0.25])
    with pytest.raises(MissingFeaturesError, match="image 8"):
        store.get(8)
    np.save(tmp_path / "test_ims.npy", np.zeros((2, 5, 4), np.float32))
    precomp = open_regions(tmp_path / "test_ims.npy")
    assert isinstance(precomp, PrecompRegions)
    assert precomp.get(1).boxes.shape == (5, 7)
    with pytest.raises(MissingFeaturesError, match="image 2"):
        precomp.get(2)
    with pytest.raises(MissingFeaturesError):
        open_regions(tmp_path / "nothing_here")


def test_pixel_boxes_overshooting_the_border_are_clipped(tmp_path):
    import numpy as np

    from tags.core.regions import NpzRegions

    np.savez(
        tmp_path / "3.npz",
        features=np.ones((2, 4), np.float32),
        boxes=np.array([[0, 0, 201, 100], [10, 20, 110, 80]], np.float32),
        width=200,
        height=100,
    )
    regions = NpzRegions(tmp_path).get(3)
    assert regions.boxes.shape == (2, 7)
    assert regions.boxes[0, :4].tolist() == [0.0, 0.0, 1.0, 1.0]
    np.testing.assert_allclose(regions.boxes[1, :4], [0.05, 0.2, 0.55, 0.8])
    np.testing.assert_allclose(regions.boxes[1, 6], 0.5 * 0.6, rtol=1e-6)
