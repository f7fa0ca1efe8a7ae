"""Raw image sources: Karpathy/JSONL file names under a root (flat or one level down), an HF
``datasets`` ``Image`` column; worker decoding equals in-process decoding; bad images."""

from __future__ import annotations

import pytest
import torch
from research.hf_tiny import render_images

from tags.data.images import (
    ImageError,
    ImageRecord,
    ImageResolver,
    decode_images,
    records_from_directory,
    records_from_hf_dataset,
)


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


@pytest.fixture
def outside(tmp_path):
    """An image root and, beside it, an image a dataset's file name must not reach."""
    root, elsewhere = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    elsewhere.mkdir()
    render_images(1)[0].save(elsewhere / "x.png")
    return root, elsewhere / "x.png"


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "passwd"])
def test_file_names_outside_the_root_are_refused_unless_allowed(outside, kind):
    from tags.core.types import ImageGroup
    from tags.data.images import RawImageStore, records_from_groups

    root, target = outside
    name = {
        "dotdot": "../outside/x.png",
        "absolute": str(target),
        "passwd": "../../../../etc/passwd",
    }[kind]
    opened = []

    def spy(images):
        opened.append(images)
        return preprocess(images)

    with pytest.raises(ImageError, match=r"outside the image root.*--allow-outside-root") as err:
        ImageResolver(root)(name)
    assert repr(name) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ImageError, match="--allow-outside-root"):
        records_from_groups([ImageGroup(0, [], filename=name)], root)
    with pytest.raises(ImageError, match="--allow-outside-root"):
        RawImageStore(root, spy).get(0, name)
    assert not opened
    if kind != "passwd":  # the user's explicit choice: read as named
        assert ImageResolver(root, allow_outside_root=True)(name).resolve() == target.resolve()
        assert RawImageStore(root, spy, allow_outside_root=True).get(0, name).shape[0] == 3


def test_region_feature_names_never_leave_their_folder(tmp_path):
    """``NpzRegions`` looks ``{id}.npz`` / ``{filename}.npz`` up in its folder only."""
    import numpy as np

    from tags.core.regions import MissingFeaturesError, NpzRegions

    (tmp_path / "feats").mkdir()
    np.savez(tmp_path / "secret.npz", features=np.zeros((1, 2)), boxes=np.zeros((1, 4)))
    store = NpzRegions(tmp_path / "feats")
    with pytest.raises(MissingFeaturesError):
        store.get("../secret")
    with pytest.raises(MissingFeaturesError):
        store.get(0, str(tmp_path / "secret"))


@pytest.fixture
def linked(outside):
    """The root holds ``leak.png``, a symlink to the image beside it, ``coco/``, a symlinked
    folder beside it, ``in.png`` and ``alias.png``, a symlink to it (inside the root)."""
    root, target = outside
    render_images(1, seed=1)[0].save(root / "in.png")
    (root / "alias.png").symlink_to(root / "in.png")
    (root / "leak.png").symlink_to(target)
    (root / "coco").symlink_to(target.parent, target_is_directory=True)
    return root, target


@pytest.mark.parametrize("name", ["leak.png", "x.png", "coco/x.png"])
def test_confine_to_root_refuses_symlinks_that_leave_the_root(linked, name):
    from tags.core.types import ImageGroup
    from tags.data.images import RawImageStore, records_from_groups

    root, target = linked
    # by default the root's symlinks are followed (the user's own tree)
    assert ImageResolver(root)(name).resolve() == target.resolve()
    opened = []

    def spy(images):
        opened.append(images)
        return preprocess(images)

    with pytest.raises(ImageError, match=r"leads outside the image root.*--confine-to-root") as err:
        ImageResolver(root, confine=True)(name)
    assert repr(name) in str(err.value) and str(target.resolve()) in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ImageError, match="--confine-to-root"):
        records_from_groups([ImageGroup(0, [], filename=name)], root, confine=True)
    with pytest.raises(ImageError, match="--confine-to-root"):
        RawImageStore(root, spy, confine=True).get(0, name)
    assert not opened


def test_confine_to_root_keeps_what_stays_inside(linked, tmp_path):
    root, _ = linked
    resolve = ImageResolver(root, confine=True)
    assert resolve("in.png") == root / "in.png"
    assert resolve("alias.png") == root / "alias.png"  # a symlink inside the root
    assert resolve("missing.png") == root / "missing.png"  # reported when decoded
    (tmp_path / "via").symlink_to(root, target_is_directory=True)  # the root itself a link
    assert ImageResolver(tmp_path / "via", confine=True)("in.png") == tmp_path / "via" / "in.png"
    with pytest.raises(ImageError, match=r"--allow-outside-root .* and --confine-to-root"):
        ImageResolver(root, allow_outside_root=True, confine=True)
