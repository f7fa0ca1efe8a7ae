"""A tiny raw-image corpus for the HF-backend training tests (and their two-process run)."""

from __future__ import annotations

import json
from pathlib import Path

from research.hf_tiny import render_images

CAPTIONS = [
    "a red dog runs on the grass",
    "two cats sit near a table",
    "a man holding a ball",
    "a blue car on the street",
]
SWAPS = {"dog": "cat", "cats": "dogs", "man": "woman", "car": "bus"}


def write_corpus(root: Path, images_per_caption: int = 1) -> tuple[Path, Path, Path]:
    """Karpathy JSON (train split, flat image folder) + a `tags generate`-style JSONL."""
    image_dir = root / "images"
    image_dir.mkdir(parents=True)
    images, negatives, sentid = [], [], 0
    for k, image in enumerate(render_images(len(CAPTIONS), seed=3)):
        image.save(image_dir / f"{k}.png")
        sentences = []
        for _ in range(images_per_caption):
            caption = CAPTIONS[k]
            sentences.append({"raw": caption, "sentid": sentid})
            word = next(w for w in SWAPS if w in caption.split())
            negatives.append(
                {
                    "caption_id": sentid,
                    "positive": caption,
                    "negative": caption.replace(word, SWAPS[word]),
                    "edits": [],
                }
            )
            sentid += 1
        images.append(
            {"imgid": k, "split": "train", "filename": f"{k}.png", "sentences": sentences}
        )
    captions = root / "dataset.json"
    captions.write_text(json.dumps({"images": images}), encoding="utf-8")
    neg = root / "negatives.jsonl"
    neg.write_text("".join(json.dumps(r) + "\n" for r in negatives), encoding="utf-8")
    return captions, image_dir, neg
