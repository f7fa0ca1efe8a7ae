"""Image region features for image-conditioned refilling and ITM scoring.

Two layouts are read:

- a directory of ``.npz`` files, one per image (UNITER layout): ``features`` ``[R, D]``,
  ``boxes`` ``[R, 4]`` pixel ``(x1, y1, x2, y2)`` with optional ``width``/``height`` (or
  ``image_w``/``image_h``), or boxes already normalised to [0, 1], or 7-d boxes;
- a SCAN precomp ``{split}_ims.npy`` ``[N, R, D]`` (memory-mapped; row = image id). It has no
  boxes: every region gets the whole-image box.

A file that cannot be read (truncated, not an array), or whose features are not floating
point, hold no region or hold a NaN/inf, raises :class:`FeaturesError` naming the file (and
row): checked when a file is opened (precomp: its header) and when an image is read.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tags.core.errors import UserError
from tags.core.paths import leaves_root

#: What to do about a bad features file (the end of every :class:`FeaturesError` about one).
REDO = "re-extract the region features of that image (or remove it from the captions)"


class FeaturesError(UserError, ValueError):
    """Region features that are missing or unusable (the message names the file)."""


class MissingFeaturesError(FeaturesError, FileNotFoundError):
    """No region features exist for an image."""


def check_features(features: np.ndarray, where: str) -> None:
    """Raise :class:`FeaturesError` unless ``features`` is a float ``[R, D]`` array with
    ``R, D >= 1`` and only finite values (``where`` names the file, and row)."""
    if not np.issubdtype(features.dtype, np.floating):
        raise FeaturesError(f"{where}: features are {features.dtype}, not floating point; {REDO}")
    if features.ndim != 2 or 0 in features.shape:
        raise FeaturesError(
            f"{where}: features of shape {features.shape}, expected [regions >= 1, dim >= 1]; "
            f"{REDO}"
        )
    if not np.isfinite(features).all():
        raise FeaturesError(f"{where}: features hold NaN or infinite values; {REDO}")


@dataclass(frozen=True)
class Regions:
    """One image's regions: ``features`` ``[R, D]`` and normalised 7-d ``boxes`` ``[R, 7]``."""

    features: np.ndarray
    boxes: np.ndarray


def expand_boxes(boxes: np.ndarray) -> np.ndarray:
    """``(x1, y1, x2, y2)`` in [0, 1] -> UNITER's ``(x1, y1, x2, y2, w, h, w*h)``."""
    if boxes.shape[-1] == 7:
        return boxes.astype(np.float32)
    w = boxes[:, 2] - boxes[:, 0]
    h = boxes[:, 3] - boxes[:, 1]
    return np.concatenate([boxes, w[:, None], h[:, None], (w * h)[:, None]], 1).astype(np.float32)


def whole_image_boxes(num_regions: int) -> np.ndarray:
    return np.tile(np.array([[0, 0, 1, 1, 1, 1, 1]], dtype=np.float32), (num_regions, 1))


class RegionStore(Protocol):
    def get(
        self, image_id: Any, filename: str | None = None, position: int | None = None
    ) -> Regions:
        """Regions of an image, found by id, file name, or (row stores) its position in
        the split."""
        ...


class NpzRegions:
    """``{image_id}.npz`` (or ``{filename stem}.npz``) files in one directory; a name that
    would leave it (absolute, or with ``..``) is not looked up."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def path(self, image_id: Any, filename: str | None = None) -> Path:
        names = [str(image_id)]
        if filename:
            names += [Path(filename).stem, filename]
        names = [n for n in names if not leaves_root(n)]
        for name in names:
            candidate = self.directory / f"{name}.npz"
            if candidate.is_file():
                return candidate
        looked = ", ".join(f"{n}.npz" for n in names)
        raise MissingFeaturesError(
            f"no region features for image {image_id!r}: looked for {looked} in {self.directory}"
        )

    def get(
        self, image_id: Any, filename: str | None = None, position: int | None = None
    ) -> Regions:
        path = self.path(image_id, filename)
        try:
            with np.load(path) as data:
                if "features" not in data or "boxes" not in data:
                    raise FeaturesError(
                        f"{path}: needs arrays 'features' [R, D] and 'boxes' [R, 4]; {REDO}"
                    )
                raw = np.asarray(data["features"])
                boxes = np.asarray(data["boxes"])
                width = _first(data, "width", "image_w", "image_width")
                height = _first(data, "height", "image_h", "image_height")
        except (OSError, EOFError, zipfile.BadZipFile, ValueError) as err:
            if isinstance(err, FeaturesError):
                raise
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise FeaturesError(f"{path}: not a readable .npz ({reason}); {REDO}") from None
        check_features(raw, str(path))
        features = raw.astype(np.float32, copy=False)
        if not np.issubdtype(boxes.dtype, np.number) or not np.isfinite(boxes).all():
            raise FeaturesError(f"{path}: boxes are not finite numbers; {REDO}")
        boxes = boxes.astype(np.float32, copy=False)
        if boxes.ndim != 2 or boxes.shape[0] != features.shape[0] or boxes.shape[1] not in (4, 7):
            raise FeaturesError(
                f"{path}: boxes {boxes.shape} do not match features {features.shape}; {REDO}"
            )
        if boxes.shape[1] == 4 and width is not None and height is not None:
            # pixel boxes: detectors may overshoot the border by a pixel or so
            boxes = np.clip(boxes / np.array([width, height, width, height], np.float32), 0, 1)
        boxes = np.clip(boxes, 0.0, 1.0) if boxes.max(initial=0.0) <= 1.0 + 1e-3 else boxes
        if boxes.max(initial=0.0) > 1.0:
            raise FeaturesError(
                f"{path}: pixel boxes need 'width' and 'height' to be normalised; {REDO}"
            )
        return Regions(features, expand_boxes(boxes))


def _first(data: Any, *names: str) -> float | None:
    for name in names:
        if name in data:
            return float(np.asarray(data[name]).reshape(-1)[0])
    return None


class PrecompRegions:
    """A SCAN ``{split}_ims.npy`` array ``[N, R, D]``: row ``i`` is the split's ``i``-th
    image. Callers that know an image's position in the split pass it (Karpathy image ids
    are global, not rows); otherwise the id is the row (precomp captions: line // 5)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.array = np.load(self.path, mmap_mode="r")
        except (OSError, EOFError, ValueError) as err:  # truncated, not an .npy, pickled
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise FeaturesError(
                f"{self.path}: not a readable .npy array ({reason}): the file is cut short or "
                "is not SCAN precomp features; write it again"
            ) from None
        if not isinstance(self.array, np.ndarray) or self.array.ndim != 3:
            shape = getattr(self.array, "shape", type(self.array).__name__)
            raise FeaturesError(f"{self.path}: expected [N, R, D] features, got {shape}")
        if not np.issubdtype(self.array.dtype, np.floating) or 0 in self.array.shape[1:]:
            raise FeaturesError(
                f"{self.path}: expected float [N, R >= 1, D >= 1] features, got "
                f"{self.array.dtype} {self.array.shape}; write the precomp array again"
            )

    def get(
        self, image_id: Any, filename: str | None = None, position: int | None = None
    ) -> Regions:
        try:
            index = int(image_id if position is None else position)
        except (TypeError, ValueError):
            index = -1
        if not 0 <= index < self.array.shape[0]:
            raise MissingFeaturesError(
                f"no region features for image {image_id!r}: {self.path} holds images "
                f"0..{self.array.shape[0] - 1}"
            )
        raw = np.asarray(self.array[index])
        check_features(raw, f"{self.path} row {index}")
        features = raw.astype(np.float32, copy=False)
        return Regions(features, whole_image_boxes(features.shape[0]))


class CachedRegions:
    """A :class:`RegionStore` that keeps what it read in memory, up to ``max_bytes``
    (least recently used first out): a training step reads the same images again and
    again (batch, retrieval pools, retrieved negatives), and an ``.npz`` read costs
    milliseconds. Callers must not write into the returned arrays."""

    def __init__(self, store: RegionStore, max_bytes: int = 1 << 30) -> None:
        from collections import OrderedDict

        self.store = store
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[Any, Regions] = OrderedDict()

    def get(
        self, image_id: Any, filename: str | None = None, position: int | None = None
    ) -> Regions:
        key = (image_id, filename, position)
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
            return found
        regions = self.store.get(image_id, filename, position=position)
        size = regions.features.nbytes + regions.boxes.nbytes
        if size <= self.max_bytes:
            self._items[key] = regions
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self.bytes -= old.features.nbytes + old.boxes.nbytes
        return regions


def open_regions(path: str | Path) -> RegionStore:
    """A directory of ``.npz`` files or a precomp ``.npy`` array."""
    path = Path(path)
    if path.is_dir():
        return NpzRegions(path)
    if path.suffix == ".npy" and path.is_file():
        return PrecompRegions(path)
    raise MissingFeaturesError(f"--features {path}: not a directory of .npz files nor a .npy file")


__all__ = [
    "CachedRegions",
    "FeaturesError",
    "MissingFeaturesError",
    "NpzRegions",
    "PrecompRegions",
    "RegionStore",
    "Regions",
    "check_features",
    "expand_boxes",
    "open_regions",
]
