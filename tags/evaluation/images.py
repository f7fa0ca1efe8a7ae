"""Evaluation sets on raw images, for pixel backends (BLIP, CLIP, SigLIP).

The captions come from the same readers as everywhere else (:func:`load_groups`); each
image group's file is found under the image root (:func:`tags.data.images.records_from_groups`),
decoded and preprocessed by the backend's processor in DataLoader workers. With
``on_bad_image="skip"`` an unreadable image is left out together with its captions (and a
note names it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tags.evaluation.data import RetrievalTexts
from tags.evaluation.io import load_groups


def load_image_retrieval_split(
    captions: str | Path,
    image_root: str | Path,
    backend: Any,
    *,
    fmt: str | None = None,
    split: str = "test",
    max_length: int | None = None,
    limit_images: int | None = None,
    on_bad_image: str = "error",
    num_workers: int = 0,
    batch_size: int = 64,
    allow_outside_root: bool = False,
    confine_to_root: bool = False,
) -> tuple[Any, RetrievalTexts, list[str]]:
    """``(images, texts, notes)`` of one split: :class:`~tags.data.images.PixelImages` and
    the backend's tokenization of the captions. An image file name outside ``image_root``
    is refused unless ``allow_outside_root``; with ``confine_to_root`` so is a file that a
    symlink takes out of it."""
    from tags.data.images import decode_images, records_from_groups

    groups = load_groups(captions, fmt, split, limit_images)
    records = records_from_groups(groups, image_root, allow_outside_root, confine_to_root)
    images, kept, stats = decode_images(
        records,
        backend.image_inputs,
        on_bad_image=on_bad_image,
        batch_size=batch_size,
        num_workers=num_workers,
    )
    notes = [f"skipped {p} and its captions" for p in stats.problems]
    groups = [groups[n] for n in kept]
    captions_text = [c.text for g in groups for c in g.captions]
    txt2img = [n for n, g in enumerate(groups) for _ in g.captions]
    tokens = backend.text_inputs(captions_text, max_length)
    texts = RetrievalTexts(tokens["input_ids"], txt2img, tokens["attention_mask"], captions_text)
    return images, texts, notes


__all__ = ["load_image_retrieval_split"]
