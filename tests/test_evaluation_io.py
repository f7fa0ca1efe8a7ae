"""Evaluation sets from files (Karpathy / precomp / JSON Lines; .npz / .npy) and datasets."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import BertTokenizer

from tags.evaluation.io import WHOLE_IMAGE_NOTE, from_dataset, load_retrieval_split

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog", "man", "on", "the", "beach"]


@pytest.fixture(scope="module")
def tokenizer() -> BertTokenizer:
    return BertTokenizer(vocab={w: i for i, w in enumerate(TOKENS)})


def test_karpathy_split_with_npz_by_filename_or_id(tmp_path, tokenizer):
    images = [
        {"split": "train", "filename": "t.jpg", "imgid": 0, "sentences": [{"raw": "x"}]},
        {"split": "test", "filename": "b.jpg", "imgid": 11, "sentences": [{"raw": "a dog"}]},
        {
            "split": "test",
            "filename": "c.jpg",
            "imgid": 12,
            "sentences": [{"raw": f"a man on the beach {i}"} for i in range(7)],
        },
    ]
    path = tmp_path / "dataset_coco.json"
    path.write_text(json.dumps({"images": images}))
    feats = tmp_path / "feats"
    feats.mkdir()
    pixel = np.array([[10, 20, 110, 70], [0, 0, 200.1, 100]], dtype="f4")  # overshoot
    np.savez(feats / "b.npz", features=np.ones((2, 3), "f4"), boxes=pixel, image_w=200, image_h=100)
    np.savez(feats / "12.npz", features=np.full((3, 3), 2, "f4"), boxes=np.full((3, 4), 0.5))
    imgs, texts, notes = load_retrieval_split(path, feats, tokenizer, split="test")
    assert notes == [] and imgs.ids == [11, 12]
    assert imgs.mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    torch.testing.assert_close(
        imgs.boxes[0, 0], torch.tensor([0.05, 0.2, 0.55, 0.7, 0.5, 0.5, 0.25])
    )
    torch.testing.assert_close(imgs.boxes[0, 1], torch.tensor([0.0, 0, 1, 1, 1, 1, 1]))
    assert imgs.features[1].eq(2).all() and imgs.features[0, 2].eq(0).all()
    assert texts.txt2img.tolist() == [0] + [1] * 7
    assert texts.captions[0] == "a dog"
    assert texts.input_ids[0, :4].tolist() == [2, 5, 6, 3]  # [CLS] a dog [SEP]
    (feats / "12.npz").unlink()
    with pytest.raises(FileNotFoundError, match=r"12\.npz"):
        load_retrieval_split(path, feats, tokenizer)


def test_jsonl_captions_of_one_image_need_not_be_adjacent(tmp_path, tokenizer):
    lines = [("b", "a dog"), ("a", "a man"), ("b", "the dog")]
    path = tmp_path / "caps.jsonl"
    path.write_text("".join(json.dumps({"image_id": i, "caption": c}) + "\n" for i, c in lines))
    feats = tmp_path / "feats"
    feats.mkdir()
    for name in "ab":
        np.savez(feats / f"{name}.npz", features=np.ones((1, 3), "f4"), boxes=np.ones((1, 4)))
    imgs, texts, _ = load_retrieval_split(path, feats, tokenizer)
    assert imgs.ids == ["b", "a"]  # one gallery entry per image
    assert texts.captions == ["a dog", "the dog", "a man"] and texts.txt2img.tolist() == [0, 0, 1]


def test_precomp_data_directory_whole_image_boxes_and_row_checks(tmp_path, tokenizer):
    (tmp_path / "test_caps.txt").write_text("".join(f"a dog {i}\n" for i in range(10)))
    per_image = np.arange(2 * 3 * 4, dtype="f4").reshape(2, 3, 4)
    np.save(tmp_path / "test_ims.npy", per_image)
    imgs, texts, notes = load_retrieval_split(tmp_path, tmp_path, tokenizer)
    assert notes == [WHOLE_IMAGE_NOTE]
    np.testing.assert_array_equal(imgs.features.numpy(), per_image)
    assert imgs.boxes[1, 2].tolist() == [0, 0, 1, 1, 1, 1, 1]
    assert texts.txt2img.tolist() == [0] * 5 + [1] * 5
    one, one_texts, _ = load_retrieval_split(tmp_path, tmp_path, tokenizer, limit_images=1)
    assert len(one) == 1 and len(one_texts) == 5
    np.save(tmp_path / "test_ims.npy", np.repeat(per_image, 5, axis=0))  # a row per caption
    with pytest.raises(ValueError, match="one row per image"):
        load_retrieval_split(tmp_path, tmp_path, tokenizer)


def test_from_dataset_equals_reading_the_files(tmp_path, tokenizer):
    from tags.core.regions import open_regions
    from tags.data import ImageTextDataset, load_image_groups, write_synthetic_dataset

    paths = write_synthetic_dataset(tmp_path, num_images=3, layout="karpathy", split="test")
    dataset = ImageTextDataset(
        load_image_groups(paths["captions"], split="test"),
        open_regions(paths["features"]),
        tokenizer,
        max_text_len=12,
    )
    images, texts = from_dataset(dataset)
    ref_images, ref_texts, _ = load_retrieval_split(
        paths["captions"], paths["features"], tokenizer, max_length=12
    )
    for name in ("features", "boxes", "mask"):
        torch.testing.assert_close(getattr(images, name), getattr(ref_images, name))
    for name in ("input_ids", "attention_mask", "txt2img"):
        assert torch.equal(getattr(texts, name), getattr(ref_texts, name)), name
    assert texts.txt2img.tolist() == [0] * 5 + [1] * 5 + [2] * 5
