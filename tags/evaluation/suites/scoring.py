"""Scoring (image, caption) pairs of a suite: the scorer interface and the backend scorer.

A scorer is any callable ``scorer(images, captions) -> [n]`` scores of row-aligned pairs
(``images[k]`` is an :class:`~.base.ImageRef`); higher means "matches". Tests use fixed
scorers; :class:`BackendScorer` scores with any :class:`~tags.backends.VLBackend`:

- ``cross``: the backend's pair logit (``score_pairs``: TagsModel / BLIP ITM). Pairs are
  taken image by image, ``batch_size`` pairs per forward; each distinct image is loaded
  once and sent once per forward (``row_images``). A backend without a cross-encoder
  (CLIP, SigLIP) scores like ``dual``.
- ``dual``: ``encode_image`` x ``encode_text`` (``backend.similarity``), each distinct image
  and caption encoded once.

Two-stage scoring (dual shortlist, cross rerank) is done per item by
:func:`tags.evaluation.suites.evaluate.evaluate_suite` with two scorers.

Images come from an :class:`ImageSource`: raw files under a root (cropped to the item's box
when it has one) for pixel backends, per-image ``.npz`` region features for TagsModel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from tags.evaluation.suites.base import ImageRef

SCORER_MODES = ("cross", "dual")
CROP_NOTE = "region features describe the whole image: ARO's crop boxes are not applied"


class PairScorer(Protocol):
    def __call__(self, images: Sequence[ImageRef], captions: Sequence[str]) -> Sequence[float]:
        """Scores of the row-aligned pairs ``(images[k], captions[k])``."""
        ...


class ImageSource(Protocol):
    notes: list[str]

    def load(self, ref: ImageRef) -> Any:
        """The backend's per-image item (``collate_images`` input) of ``ref``."""
        ...


class PixelSource:
    """Raw image files under ``root`` (``ROOT/name``, ``ROOT/*/name``, a missing suffix
    tried as ``.png``/``.jpg``/...), cropped to the ref's box, through ``preprocess``; a name
    outside the root is refused unless ``allow_outside_root``; with ``confine_to_root`` so is
    a file that a symlink takes out of it."""

    def __init__(
        self,
        root: str | Path,
        preprocess: Callable[[list[Any]], dict[str, Any]],
        allow_outside_root: bool = False,
        confine_to_root: bool = False,
    ):
        from tags.data.images import ImageResolver

        self.resolve = ImageResolver(root, allow_outside_root, confine_to_root)
        self.preprocess = preprocess
        self.notes: list[str] = []

    def path(self, name: str) -> Path:
        from tags.data.images import IMAGE_SUFFIXES

        found = self.resolve(name)
        if not found.is_file() and not Path(name).suffix:
            for suffix in IMAGE_SUFFIXES:
                candidate = self.resolve(name + suffix)
                if candidate.is_file():
                    return candidate
        return found

    def open(self, ref: ImageRef) -> Any:
        """The (cropped) RGB PIL image of ``ref``; :class:`~tags.data.images.ImageError`
        names a missing or unreadable file."""
        from tags.data.images import ImageError, ImageRecord, open_image

        record = ImageRecord(ref.key if ref.key is not None else ref.name, self.path(ref.name))
        try:
            image = open_image(record)
        except (OSError, ValueError, SyntaxError) as err:
            raise ImageError(f"image {ref.name!r} ({record.describe()}): {err}") from None
        if ref.box is not None:
            x, y, w, h = ref.box
            image = image.crop((x, y, x + w, y + h))
        return image

    def load(self, ref: ImageRef) -> torch.Tensor:
        return self.preprocess([self.open(ref)])["pixel_values"][0]


class RegionSource:
    """Per-image region features (``{key}.npz`` or ``{file stem}.npz``, or a precomp array
    by key) as ``(features, boxes)`` tensors."""

    def __init__(self, features: str | Path):
        from tags.core.regions import open_regions

        self.store = open_regions(features)
        self.notes: list[str] = []

    def load(self, ref: ImageRef) -> tuple[torch.Tensor, torch.Tensor]:
        if ref.box is not None and CROP_NOTE not in self.notes:
            self.notes.append(CROP_NOTE)
        key = ref.key if ref.key is not None else Path(ref.name).stem
        regions = self.store.get(key, ref.name)
        return torch.from_numpy(regions.features).float(), torch.from_numpy(regions.boxes).float()


class _Images(Dataset):
    def __init__(self, source: ImageSource, refs: list[ImageRef]):
        self.source, self.refs = source, refs

    def __len__(self) -> int:
        return len(self.refs)

    def __getitem__(self, n: int) -> Any:
        return self.source.load(self.refs[n])


def _as_is(item: Any) -> Any:
    return item


def _items(source: ImageSource, refs: list[ImageRef], num_workers: int):
    """Each ref's item, in order, loaded in DataLoader workers."""
    loader = DataLoader(
        _Images(source, refs), batch_size=None, num_workers=num_workers, collate_fn=_as_is
    )
    yield from loader


def _group(images: Sequence[ImageRef]) -> tuple[list[ImageRef], list[list[int]]]:
    """Distinct images (first-appearance order) and the pair rows of each."""
    rows: dict[ImageRef, list[int]] = {}
    for k, ref in enumerate(images):
        rows.setdefault(ref, []).append(k)
    return list(rows), list(rows.values())


class BackendScorer:
    """:class:`PairScorer` over a :class:`~tags.backends.VLBackend` (see the module doc).

    Args:
        use_logits: cross mode ranks by the pair logit (default), not the sigmoid score,
            which saturates into ties.
        progress: a callable ``(done_pairs, total_pairs)`` called after every forward.
    """

    def __init__(
        self,
        backend: Any,
        source: ImageSource,
        mode: str = "cross",
        *,
        batch_size: int = 256,
        max_length: int | None = None,
        num_workers: int = 0,
        use_logits: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        if mode not in SCORER_MODES:
            raise ValueError(f"mode must be one of {SCORER_MODES}, got {mode!r}")
        self.backend = backend
        self.source = source
        self.mode = mode if backend.supports("itm") else "dual"
        self.batch_size = max(1, batch_size)
        self.max_length = max_length
        self.num_workers = num_workers
        self.use_logits = use_logits
        self.progress = progress

    def _text(self, captions: Sequence[str]) -> dict[str, torch.Tensor]:
        tokens = self.backend.text_inputs(list(captions), self.max_length)
        return {k: v.to(self.backend.device) for k, v in tokens.items()}

    def _images(self, items: list[Any], rows: list[int]) -> dict[str, torch.Tensor]:
        batch = self.backend.row_images(items, rows)
        return {k: v.to(self.backend.device) for k, v in batch.items()}

    @torch.no_grad()
    def __call__(self, images: Sequence[ImageRef], captions: Sequence[str]) -> np.ndarray:
        model = self.backend.model
        was_training = model.training
        model.eval()
        try:
            if self.mode == "dual":
                return self._dual(images, captions)
            return self._cross(images, captions)
        finally:
            model.train(was_training)

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

    def _cross(self, images: Sequence[ImageRef], captions: Sequence[str]) -> np.ndarray:
        refs, rows_of = _group(images)
        out = np.empty(len(captions), dtype=np.float64)
        pending: list[tuple[Any, list[int]]] = []  # (image item, pair rows) of the next forward

        def flush() -> None:
            items = [item for item, _ in pending]
            rows = [r for _, rs in pending for r in rs]
            image_rows = [n for n, (_, rs) in enumerate(pending) for _ in rs]
            logits = self.backend.score_pairs(
                self._text([captions[r] for r in rows]), self._images(items, image_rows)
            )
            values = logits if self.use_logits else self.backend.pair_probability(logits)
            out[rows] = values.float().cpu().reshape(-1).numpy()
            pending.clear()
            nonlocal done
            done += len(rows)
            self._tick(done, len(captions))

        done = 0
        for item, rows in zip(_items(self.source, refs, self.num_workers), rows_of):
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start : start + self.batch_size]
                if sum(len(r) for _, r in pending) + len(chunk) > self.batch_size:
                    flush()
                pending.append((item, chunk))
        if pending:
            flush()
        return out

    def _dual(self, images: Sequence[ImageRef], captions: Sequence[str]) -> np.ndarray:
        refs, rows_of = _group(images)
        texts = list(dict.fromkeys(captions))
        text_row = {t: n for n, t in enumerate(texts)}
        text_emb = torch.cat(
            [
                self.backend.encode_text(self._text(texts[s : s + self.batch_size])).float()
                for s in range(0, len(texts), self.batch_size)
            ]
        )
        out = np.empty(len(captions), dtype=np.float64)
        pending: list[tuple[Any, list[int]]] = []

        def flush() -> None:
            items = [item for item, _ in pending]
            batch = {
                k: v.to(self.backend.device) for k, v in self.backend.collate_images(items).items()
            }
            image_emb = self.backend.encode_image(batch).float()
            for n, (_, rows) in enumerate(pending):
                cols = torch.tensor([text_row[captions[r]] for r in rows])
                sims = self.backend.similarity(image_emb[n : n + 1], text_emb[cols])
                out[rows] = sims.reshape(-1).cpu().numpy()
            nonlocal done
            done += sum(len(r) for _, r in pending)
            pending.clear()
            self._tick(done, len(captions))

        done = 0
        for item, rows in zip(_items(self.source, refs, self.num_workers), rows_of):
            pending.append((item, rows))
            if len(pending) >= self.batch_size:
                flush()
        if pending:
            flush()
        return out


__all__ = [
    "CROP_NOTE",
    "SCORER_MODES",
    "BackendScorer",
    "ImageSource",
    "PairScorer",
    "PixelSource",
    "RegionSource",
]
