"""Raw image sources: Karpathy/JSONL file names under a root (flat or one level down), an HF
``datasets`` ``Image`` column; worker decoding equals in-process decoding; bad images."""

from __future__ import annotations

import pytest
import torch

from tags.data.images import (
    ImageError,
    ImageRecord,
    ImageResolver,
    decode_images,
    records_from_directory,
    records_from_hf_dataset,
)
from tests._hf_tiny import render_images


def preprocess(images):
    """A stand-in processor: 8x8 resize, [0, 1] floats."""
    return {
        "pixel_values": torch.stack(
            [
                torch.tensor(list(im.resize((8, 8)).getdata()), dtype=torch.float32)
                .reshape(8, 8, 3)
                .permute(2, 0, 1)
                / 255.0
                for im in images
            ]
        )
    }


def test_resolver_finds_files_flat_and_one_level_down(tmp_path):
    (tmp_path / "val2014").mkdir()
    a, b = render_images(2)
    a.save(tmp_path / "flat.png")
    b.save(tmp_path / "val2014" / "deep.png")
    resolve = ImageResolver(tmp_path)
    assert resolve("flat.png") == tmp_path / "flat.png"
    assert resolve("deep.png") == tmp_path / "val2014" / "deep.png"
    assert [r.image_id for r in records_from_directory(tmp_path)] == [
        "flat.png",
        "val2014/deep.png",
    ]
    with pytest.raises(ImageError, match="not found"):
        ImageResolver(tmp_path / "missing")


def test_workers_decode_like_the_main_process_and_bad_images_are_named(tmp_path):
    images = render_images(5, seed=2)
    records = []
    for k, image in enumerate(images):
        image.save(tmp_path / f"{k}.png")
        records.append(ImageRecord(k, tmp_path / f"{k}.png"))
    one, kept, _ = decode_images(records, preprocess, batch_size=2)
    two, kept2, _ = decode_images(records, preprocess, batch_size=2, num_workers=2)
    assert kept == kept2 == [0, 1, 2, 3, 4] and torch.equal(one.pixel_values, two.pixel_values)
    assert torch.equal(one.pixel_values[3], preprocess([images[3]])["pixel_values"][0])
    (tmp_path / "1.png").write_bytes(b"garbage")
    (tmp_path / "4.png").unlink()
    with pytest.raises(ImageError, match="2 of 5 images") as err:
        decode_images(records, preprocess)
    assert "1.png" in str(err.value) and "4.png" in str(err.value)
    pixels, kept, stats = decode_images(records, preprocess, on_bad_image="skip")
    assert kept == [0, 2, 3] and pixels.ids == [0, 2, 3]
    assert [p.image_id for p in stats.problems] == [1, 4]


def test_hf_datasets_image_column(tmp_path):
    datasets = pytest.importorskip("datasets")
    images = render_images(3, seed=4)
    paths = []
    for k, image in enumerate(images):
        image.save(tmp_path / f"{k}.png")
        paths.append(str(tmp_path / f"{k}.png"))
    ds = datasets.Dataset.from_dict({"image": paths, "name": ["a", "b", "c"]}).cast_column(
        "image", datasets.Image()
    )
    records = records_from_hf_dataset(ds, "image", id_column="name")
    pixels, kept, _ = decode_images(records, preprocess)
    assert pixels.ids == ["a", "b", "c"] and kept == [0, 1, 2]
    assert torch.equal(pixels.pixel_values[2], preprocess([images[2]])["pixel_values"][0])
    with pytest.raises(ImageError, match="no 'picture' column"):
        records_from_hf_dataset(ds, "picture")
