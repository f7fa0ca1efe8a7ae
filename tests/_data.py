"""Paths of the real-caption samples shipped in ``tests/data`` (see its README)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
#: Flickr30K test captions, SCAN precomp order, first 60 images x 5 captions.
FLICKR_CAPTIONS = DATA / "flickr30k_test_caps_sample.txt"
#: FACTUAL dev split, first 300 rows (caption + gold scene graph).
FACTUAL_DEV = DATA / "factual_dev_sample.csv"


def flickr_sample(folder: Path, n: int) -> Path:
    """The first ``n`` lines of the in-repo Flickr30K sample as ``folder/caps.txt``."""
    path = folder / "caps.txt"
    path.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:n]) + "\n")
    return path
