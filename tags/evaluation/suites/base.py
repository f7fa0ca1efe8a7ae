"""What a suite reader produces: test items of images x captions, and the suite registry.

Two tasks cover the published benchmarks:

- ``options``: one image, several captions, the first one true (SugarCrepe, ARO, the shapes
  minimal pairs, any positive/negative JSONL). An item is right when the true caption
  scores **strictly** above every other option (ties count as failures).
- ``group``: Winoground's two images x two captions, caption ``k`` true of image ``k``;
  text, image and group scores.

Readers register with :func:`register_suite` (like timm's ``@register_model``) and share one
interface: ``reader(path) -> Suite``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASKS = ("options", "group")


class SuiteError(ValueError):
    """A suite file that cannot be read (the message names the file and the problem)."""


@dataclass(frozen=True)
class ImageRef:
    """An image of a test item.

    Attributes:
        name: file name under the suite's image root, or an absolute path.
        box: optional crop ``(x, y, w, h)`` in pixels (ARO's VG-Relation / VG-Attribution).
        key: optional region-feature key (an image id); else the file name's stem.
    """

    name: str
    box: tuple[float, float, float, float] | None = None
    key: Any = None


@dataclass(frozen=True)
class SuiteItem:
    """One test: ``images`` x ``captions`` scored pairwise.

    ``options``: one image, ``captions[0]`` true. ``group``: two images, ``captions[k]``
    true of ``images[k]``. ``subset`` is the per-type table row (file, relation, tag).
    """

    images: tuple[ImageRef, ...]
    captions: tuple[str, ...]
    subset: str
    id: str = ""


@dataclass
class Suite:
    """Items of one benchmark, plus where its images are when the reader knows.

    Attributes:
        macro_min_count: subsets with fewer items stay out of the macro mean (ARO's
            VG-Attribution uses 25); they are still listed and counted in ``overall``.
    """

    name: str
    task: str
    items: list[SuiteItem]
    image_root: Path | None = None
    features: Path | None = None
    notes: list[str] = field(default_factory=list)
    macro_min_count: int = 1

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if not self.items:
            raise SuiteError(f"suite {self.name!r}: no test items")
        need = 2 if self.task == "group" else 1
        for item in self.items:
            if len(item.images) != need or len(item.captions) < 2:
                raise SuiteError(
                    f"suite {self.name!r} item {item.id!r}: a {self.task} item needs {need} "
                    f"image(s) and >= 2 captions, got {len(item.images)} and {len(item.captions)}"
                )

    @property
    def num_pairs(self) -> int:
        """(image, caption) pairs to score."""
        return sum(len(i.images) * len(i.captions) for i in self.items)


Reader = Callable[[Path], Suite]
_SUITES: dict[str, tuple[Reader, str]] = {}


def register_suite(name: str, description: str) -> Callable[[Reader], Reader]:
    """Decorator: ``reader(path) -> Suite`` serves ``--suite name=PATH``."""

    def wrap(reader: Reader) -> Reader:
        if name in _SUITES and _SUITES[name][0] is not reader:
            raise ValueError(f"suite {name!r} is already registered")
        _SUITES[name] = (reader, description)
        return reader

    return wrap


@dataclass(frozen=True)
class SuiteSpec:
    """``NAME=PATH`` from the command line (``PATH`` defaults per suite where one exists)."""

    name: str
    path: Path

    @classmethod
    def parse_many(cls, values: list[str]) -> list[SuiteSpec]:
        """``["a=x,b=y", "c=z"]`` -> three specs (repeatable flag, comma lists)."""
        specs = []
        for value in values:
            for part in filter(None, (p.strip() for p in value.split(","))):
                name, sep, path = part.partition("=")
                if not sep or not path:
                    raise SuiteError(f"--suite {part!r}: expected NAME=PATH (e.g. sugarcrepe=DIR)")
                specs.append(cls(name.strip(), Path(path)))
        return specs


__all__ = [
    "TASKS",
    "ImageRef",
    "Reader",
    "Suite",
    "SuiteError",
    "SuiteItem",
    "SuiteSpec",
    "register_suite",
]
