"""``tags generate --preset`` values: :class:`~tags.negatives.config.GenerationConfig`
instances, filled in where the command line (or
:class:`~tags.negatives.batch.GenerateBatch`) leaves a setting (see
:meth:`~tags.negatives.config.GenerationConfig.from_preset`)."""

from __future__ import annotations

from tags.negatives.config import PRESETS

__all__ = ["PRESETS"]
