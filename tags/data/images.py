"""Raw images: where they come from, decoding in DataLoader workers, bad-image policy.

Sources (all give :class:`ImageRecord`s, one per image, in caption-group order):

- a caption file's groups (Karpathy JSON ``filename``, JSONL ``filename``) under an image
  root: :func:`records_from_groups`. A file name is looked up as ``ROOT/filename`` and
  then ``ROOT/*/filename``, so COCO's ``train2014/`` + ``val2014/`` layout and the flat
  Flickr30K ``flickr30k-images/`` layout both work with the dataset's root. A name that
  leaves the root (absolute, or with a ``..`` part: :func:`tags.core.paths.leaves_root`) is refused unless
  the user allows it (``--allow-outside-root``, ``data.allow_outside_root``); with ``confine``
  (``--confine-to-root``, ``data.confine_to_root``, for untrusted data) so is a file that a
  symlink inside the root takes out of it;
- an HF ``datasets`` dataset with an ``Image`` column: :func:`records_from_hf_dataset`
  (images stay in the dataset and are decoded lazily).

Decoding and preprocessing (the backend's own processor) run in DataLoader workers:
:func:`decode_images` returns a :class:`PixelImages` set. A missing or unreadable image is
named in an :class:`ImageProblem`; ``on_bad_image="error"`` stops with all of them listed,
``"skip"`` drops those images (and the caller drops their captions).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from tags.core.errors import UserError
from tags.core.paths import (
    confine_conflict_message,
    escapes_root,
    escapes_root_message,
    leaves_root,
    outside_root_message,
)
from tags.data.dataset import ImageTextDataset

BAD_IMAGE_POLICIES = ("error", "skip")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


class ImageError(UserError, ValueError):
    """Images that could not be read (the message names each one)."""


@dataclass(frozen=True)
class ImageProblem:
    index: int
    image_id: Any
    where: str
    reason: str

    def __str__(self) -> str:
        return f"image {self.image_id!r} ({self.where}): {self.reason}"


@dataclass
class ImageRecord:
    """One image: a file ``path``, or a ``loader`` returning a PIL image (HF datasets)."""

    image_id: Any
    path: Path | None = None
    loader: Callable[[], Any] | None = None
    where: str = ""

    def describe(self) -> str:
        return self.where or (str(self.path) if self.path is not None else "<in memory>")


def check_inside_root(name: str, root: str | Path, allow_outside_root: bool = False) -> None:
    """Raise :class:`ImageError` (naming the file and the flag) for a name that leaves
    ``root``, unless ``allow_outside_root``."""
    if leaves_root(name) and not allow_outside_root:
        raise ImageError(outside_root_message(name, root))


class ImageResolver:
    """``ROOT/name``, else ``ROOT/<subdir>/name`` (one level, listed once). A name that
    leaves the root raises :class:`ImageError` unless ``allow_outside_root``; with
    ``confine``, so does a file whose real path (symlinks resolved) is outside the root."""

    def __init__(self, root: str | Path, allow_outside_root: bool = False, confine: bool = False):
        self.root = Path(root)
        if not self.root.is_dir():
            raise ImageError(f"image directory not found: {self.root}")
        if allow_outside_root and confine:
            raise ImageError(confine_conflict_message())
        self.allow_outside_root = allow_outside_root
        self.real_root = self.root.resolve() if confine else None
        self._subdirs: list[Path] | None = None

    def __call__(self, name: str) -> Path:
        check_inside_root(name, self.root, self.allow_outside_root)
        found = self._find(name)
        if self.real_root is not None:
            real = escapes_root(found, self.real_root)
            if real is not None:
                raise ImageError(escapes_root_message(name, real, self.root))
        return found

    def _find(self, name: str) -> Path:
        direct = Path(name) if Path(name).is_absolute() else self.root / name
        if direct.is_file():
            return direct
        if self._subdirs is None:
            self._subdirs = sorted(p for p in self.root.iterdir() if p.is_dir())
        for sub in self._subdirs:
            if (sub / name).is_file():
                return sub / name
        return direct  # reported as missing when decoded


def records_from_groups(
    groups: Sequence[Any],
    image_root: str | Path,
    allow_outside_root: bool = False,
    confine: bool = False,
) -> list[ImageRecord]:
    """One record per caption group; the group's ``filename`` (or its id) under the root
    (:class:`ImageError` for a name outside it, unless ``allow_outside_root``; with
    ``confine`` for a file a symlink takes out of it)."""
    resolve = ImageResolver(image_root, allow_outside_root, confine)
    records = []
    for group in groups:
        name = getattr(group, "filename", None) or str(group.image_id)
        records.append(ImageRecord(group.image_id, resolve(name)))
    return records


def records_from_directory(image_root: str | Path) -> list[ImageRecord]:
    """Every image file directly under (or one level below) a directory, sorted."""
    root = Path(image_root)
    if not root.is_dir():
        raise ImageError(f"image directory not found: {root}")
    files = sorted(
        p
        for p in [*root.iterdir(), *(q for d in root.iterdir() if d.is_dir() for q in d.iterdir())]
        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
    )
    if not files:
        raise ImageError(f"{root}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    return [ImageRecord(str(p.relative_to(root)), p) for p in files]


def records_from_hf_dataset(
    dataset: Any, image_column: str = "image", id_column: str | None = None
) -> list[ImageRecord]:
    """Records of an HF ``datasets.Dataset`` whose ``image_column`` is an ``Image`` feature."""
    if image_column not in dataset.column_names:
        raise ImageError(
            f"dataset has no {image_column!r} column; columns: {', '.join(dataset.column_names)}"
        )
    ids = dataset[id_column] if id_column else list(range(len(dataset)))

    def loader(n: int) -> Callable[[], Any]:
        return lambda: dataset[n][image_column]

    return [
        ImageRecord(ids[n], loader=loader(n), where=f"dataset row {n}") for n in range(len(dataset))
    ]


def open_image(record: ImageRecord) -> Any:
    """The record's image as an RGB PIL image (raises ``OSError``/``ValueError`` if unreadable)."""
    from PIL import Image

    if record.loader is not None:
        image = record.loader()
        if isinstance(image, dict) and ("bytes" in image or "path" in image):
            import io

            data = image.get("bytes")
            image = Image.open(io.BytesIO(data) if data else image["path"])
    else:
        if record.path is None or not record.path.is_file():
            raise FileNotFoundError("file not found")
        image = Image.open(record.path)
    if not isinstance(image, Image.Image):
        raise ValueError(f"not an image ({type(image).__name__})")
    image.load()
    return image.convert("RGB")


class PixelDataset(Dataset):
    """Decodes and preprocesses one record per item (runs in DataLoader workers)."""

    def __init__(self, records: Sequence[ImageRecord], preprocess: Callable[[list[Any]], Any]):
        self.records = list(records)
        self.preprocess = preprocess

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, n: int) -> tuple[int, torch.Tensor | None, str | None]:
        try:
            image = open_image(self.records[n])
            pixels = self.preprocess([image])["pixel_values"][0]
        except (OSError, ValueError, SyntaxError) as err:  # PIL raises all three
            return n, None, str(err) or type(err).__name__
        return n, pixels, None


def collate_pixels(items: list[tuple[int, torch.Tensor | None, str | None]]) -> dict[str, Any]:
    good = [(n, p) for n, p, _ in items if p is not None]
    return {
        "index": torch.tensor([n for n, _ in good], dtype=torch.long),
        "pixel_values": torch.stack([p for _, p in good]) if good else None,
        "failed": [(n, e) for n, p, e in items if p is None],
    }


@dataclass
class PixelImages:
    """``N`` preprocessed images (``pixel_values`` ``[N, 3, H, W]``) for evaluation."""

    pixel_values: torch.Tensor
    ids: list[Any] | None = None

    def __len__(self) -> int:
        return self.pixel_values.shape[0]

    def select(self, index: Any) -> PixelImages:
        if isinstance(index, slice):
            return PixelImages(
                self.pixel_values[index], None if self.ids is None else self.ids[index]
            )
        i = torch.as_tensor(np.asarray(index, dtype=np.int64))
        ids = None if self.ids is None else [self.ids[k] for k in i.tolist()]
        return PixelImages(self.pixel_values[i], ids)

    def batch(self, index: torch.Tensor, device: torch.device | str) -> dict[str, torch.Tensor]:
        return {"pixel_values": self.pixel_values[index].to(device)}


@dataclass
class DecodeStats:
    images: int = 0
    seconds: float = 0.0
    problems: list[ImageProblem] = field(default_factory=list)

    @property
    def images_per_second(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else float("inf")


def check_policy(on_bad_image: str) -> None:
    if on_bad_image not in BAD_IMAGE_POLICIES:
        raise ValueError(f"on_bad_image must be one of {BAD_IMAGE_POLICIES}, got {on_bad_image!r}")


def decode_images(
    records: Sequence[ImageRecord],
    preprocess: Callable[[list[Any]], Any],
    *,
    on_bad_image: str = "error",
    batch_size: int = 64,
    num_workers: int = 0,
) -> tuple[PixelImages, list[int], DecodeStats]:
    """Decode and preprocess every record.

    Args:
        preprocess: ``images -> {"pixel_values": [B, 3, H, W]}`` (a backend's
            ``image_inputs``).
        on_bad_image: ``"error"``: raise :class:`ImageError` listing every bad image;
            ``"skip"``: leave them out.

    Returns:
        ``(images, kept, stats)``: ``kept`` are the positions in ``records`` of the rows of
        ``images``; ``stats.problems`` names the skipped ones.
    """
    check_policy(on_bad_image)
    if not records:
        raise ImageError("no images to decode")
    loader = DataLoader(
        PixelDataset(records, preprocess),
        batch_size=batch_size,
        num_workers=num_workers,
        collate_fn=collate_pixels,
    )
    start = time.perf_counter()
    chunks, kept, problems = [], [], []
    for batch in loader:
        for n, reason in batch["failed"]:
            rec = records[n]
            problems.append(ImageProblem(n, rec.image_id, rec.describe(), reason))
        if batch["pixel_values"] is not None:
            chunks.append(batch["pixel_values"])
            kept.extend(batch["index"].tolist())
    stats = DecodeStats(len(kept), time.perf_counter() - start, problems)
    apply_policy(problems, len(records), on_bad_image)
    if not kept:
        raise ImageError(f"none of the {len(records)} images could be read")
    images = PixelImages(torch.cat(chunks), [records[n].image_id for n in kept])
    return images, kept, stats


class RawImageStore:
    """A region-store look-alike for the negative engine: ``get(image_id, filename)`` is the
    image's preprocessed pixels (``filename`` under the root, else the id), or an
    :class:`ImageError` naming the file (or a name outside the root, unless
    ``allow_outside_root``; with ``confine``, a file a symlink takes out of the root)."""

    def __init__(
        self,
        root: str | Path,
        preprocess: Callable[[list[Any]], Any],
        allow_outside_root: bool = False,
        confine: bool = False,
    ) -> None:
        self.resolve = ImageResolver(root, allow_outside_root, confine)
        self.preprocess = preprocess

    def check_names(self, groups: Iterable[Any]) -> None:
        """Resolve every group's file name (or id) without opening a file: a name outside
        the root (or, confined, a symlink out of it) is refused before anything is read."""
        for group in groups:
            self.resolve(getattr(group, "filename", None) or str(group.image_id))

    def get(self, image_id: Any, filename: str | None = None, position: int | None = None) -> Any:
        record = ImageRecord(image_id, self.resolve(filename or str(image_id)))
        try:
            return self.preprocess([open_image(record)])["pixel_values"][0]
        except (OSError, ValueError, SyntaxError) as err:
            raise ImageError(f"image {image_id!r} ({record.describe()}): {err}") from err


def check_images(records: Sequence[ImageRecord]) -> list[ImageProblem]:
    """Cheap pass over image files (exists, PIL can identify and verify the header)."""
    from PIL import Image

    problems = []
    for n, record in enumerate(records):
        if record.path is None:
            continue
        try:
            if not record.path.is_file():
                raise FileNotFoundError("file not found")
            with Image.open(record.path) as image:
                image.verify()
        except (OSError, ValueError, SyntaxError) as err:
            problems.append(ImageProblem(n, record.image_id, record.describe(), str(err)))
    return problems


def apply_policy(
    problems: list[ImageProblem], total: int, on_bad_image: str, what: str = "images"
) -> None:
    check_policy(on_bad_image)
    if problems and on_bad_image == "error":
        shown = "\n  ".join(str(p) for p in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise ImageError(
            f"{len(problems)} of {total} {what} could not be read "
            f"(on_bad_image skip leaves them out):\n  {shown}{more}"
        )


class PixelTextDataset(ImageTextDataset):
    """:class:`~tags.data.ImageTextDataset` on raw images: ``image(i)`` is the processor's
    ``[3, H, W]`` pixels of image ``i``, decoded when a DataLoader worker asks for it."""

    def __init__(
        self,
        groups: Sequence[Any],
        records: Sequence[ImageRecord],
        preprocess: Callable[[list[Any]], Any],
        tokenizer: Any,
        max_text_len: int = 40,
    ) -> None:
        super().__init__(groups, None, tokenizer, max_text_len)
        if len(records) != len(self.groups):
            raise ValueError(f"{len(records)} image records for {len(self.groups)} images")
        self.records = list(records)
        self.preprocess = preprocess

    @property
    def feature_size(self) -> None:
        return None

    def image(self, image_index: int) -> torch.Tensor:
        record = self.records[image_index]
        try:
            return self.preprocess([open_image(record)])["pixel_values"][0]
        except (OSError, ValueError, SyntaxError) as err:
            raise ImageError(f"image {record.image_id!r} ({record.describe()}): {err}") from err

    def __getitem__(self, index: int) -> dict[str, Any]:
        g_index, caption = self.pairs[index]
        return {
            "index": index,
            "image_index": g_index,
            "caption_id": caption.caption_id,
            "text": caption.text,
            "input_ids": self.tokens(index),
            "pixel_values": self.image(g_index),
        }


class PixelPairCollator:
    """Items of :class:`PixelTextDataset` -> ``input_ids``, ``attention_mask``,
    ``pixel_values`` ``[B, 3, H, W]``, ``image_ids``, ``index``, ``texts``, ``caption_ids``."""

    def __init__(self, pad_token_id: int = 0) -> None:
        self.pad_token_id = pad_token_id

    def __call__(self, items: Sequence[dict[str, Any]]) -> dict[str, Any]:
        from tags.data.collate import pad_text

        input_ids, attention = pad_text([it["input_ids"] for it in items], self.pad_token_id)
        return {
            "input_ids": input_ids,
            "attention_mask": attention,
            "pixel_values": torch.stack([it["pixel_values"] for it in items]),
            "image_ids": torch.tensor([it["image_index"] for it in items], dtype=torch.long),
            "index": torch.tensor([it["index"] for it in items], dtype=torch.long),
            "texts": [it["text"] for it in items],
            "caption_ids": [it["caption_id"] for it in items],
        }


def build_pixel_dataset(
    data_config: Any, backend: Any, on_bad_image: str = "skip", log: Callable[[str], Any] = print
) -> PixelTextDataset:
    """A :class:`PixelTextDataset` from a ``DataConfig`` (``captions`` + ``images`` root).

    Every image file is checked once up front; bad ones stop the run or are left out with
    their captions (each one named), per ``on_bad_image``.
    """
    from tags.data.captions import load_image_groups

    fmt = None if data_config.format == "auto" else data_config.format
    groups = load_image_groups(
        data_config.captions, fmt, data_config.split, data_config.limit_images
    )
    records = records_from_groups(
        groups,
        data_config.images,
        getattr(data_config, "allow_outside_root", False),
        getattr(data_config, "confine_to_root", False),
    )
    problems = check_images(records)
    apply_policy(problems, len(records), on_bad_image)
    if problems:
        for problem in problems:
            log(f"skipping {problem} and its captions")
        bad = {p.index for p in problems}
        groups = [g for n, g in enumerate(groups) if n not in bad]
        records = [r for n, r in enumerate(records) if n not in bad]
        if not groups:
            raise ImageError("no readable images left")
    return PixelTextDataset(
        groups, records, backend.image_inputs, backend.tokenizer, data_config.max_text_len
    )


__all__ = [
    "BAD_IMAGE_POLICIES",
    "DecodeStats",
    "ImageError",
    "ImageProblem",
    "ImageRecord",
    "ImageResolver",
    "PixelDataset",
    "PixelImages",
    "PixelPairCollator",
    "PixelTextDataset",
    "RawImageStore",
    "apply_policy",
    "build_pixel_dataset",
    "check_images",
    "check_inside_root",
    "collate_pixels",
    "decode_images",
    "open_image",
    "records_from_directory",
    "records_from_groups",
    "records_from_hf_dataset",
]
