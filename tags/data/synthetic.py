"""Random region features and template captions, for tests and smoke runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

_ADJ = ["red", "small", "old", "young", "black", "white", "tall", "happy"]
_NOUN = ["dog", "man", "woman", "child", "horse", "car", "bird", "cat"]
_VERB = ["runs on", "sits near", "stands by", "walks along", "looks at", "jumps over"]
_PLACE = ["the beach", "a street", "the grass", "a table", "the water", "a fence"]


def write_synthetic_dataset(
    root: str | Path,
    num_images: int = 8,
    captions_per_image: int = 5,
    num_regions: int = 4,
    feature_size: int = 16,
    layout: str = "precomp",
    split: str = "train",
    seed: int = 0,
) -> dict[str, Path]:
    """Write a small corpus; returns ``{"captions": ..., "features": ...}`` paths.

    ``layout="precomp"``: ``{split}_caps.txt`` (5 lines per image, so ``captions_per_image``
    must be 5) and ``{split}_ims.npy`` ``[N, R, D]``. ``layout="karpathy"``: a Karpathy JSON
    and a directory of ``{imgid}.npz`` (``features``, pixel ``boxes``, ``image_w``/``image_h``).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    captions = [
        [
            f"a {rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_VERB)} {rng.choice(_PLACE)}"
            for _ in range(captions_per_image)
        ]
        for _ in range(num_images)
    ]
    feats = rng.standard_normal((num_images, num_regions, feature_size)).astype(np.float32)
    if layout == "precomp":
        if captions_per_image != 5:
            raise ValueError("precomp captions come 5 per image")
        caps = root / f"{split}_caps.txt"
        caps.write_text("\n".join(c for group in captions for c in group) + "\n")
        ims = root / f"{split}_ims.npy"
        np.save(ims, feats)
        return {"captions": caps, "features": ims}
    if layout != "karpathy":
        raise ValueError(f"layout must be 'precomp' or 'karpathy', got {layout!r}")
    feat_dir = root / "features"
    feat_dir.mkdir(exist_ok=True)
    images, sentid = [], 0
    for i, group in enumerate(captions):
        w, h = 640.0, 480.0
        xy = rng.uniform(0, 1, (num_regions, 2, 2)).astype(np.float32)
        lo, hi = xy.min(axis=1), xy.max(axis=1)
        boxes = np.concatenate([lo, hi], axis=1) * np.array([w, h, w, h], dtype=np.float32)
        np.savez(feat_dir / f"{i}.npz", features=feats[i], boxes=boxes, image_w=w, image_h=h)
        sentences = [{"raw": c, "sentid": sentid + j} for j, c in enumerate(group)]
        sentid += len(group)
        images.append({"imgid": i, "filename": f"{i}.jpg", "split": split, "sentences": sentences})
    caps = root / "dataset_synthetic.json"
    caps.write_text(json.dumps({"images": images}))
    return {"captions": caps, "features": feat_dir}


__all__ = ["write_synthetic_dataset"]
