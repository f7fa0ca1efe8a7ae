"""Truth audit of a training step's synthetic negatives (``tags_dc.synthetic.truth_audit``).

On the shapes benchmark every training image's scene is known, so each negative can be
judged (:class:`tags.benchmark.oracle.TruthOracle`): the share that is actually true of its
image (a false negative the caption filter missed) and the share that is ungrammatical. Given
the negatives' edits, it also logs their type mix (``synthetic/type_{object,attribute,
relation}``: the share of negatives whose edits touch that unit type), to set beside the
oracle negatives' equal thirds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


class TruthAudit:
    """``audit(dense_image_indices, texts_per_row)`` -> ``synthetic/*_share`` metrics.

    Args:
        oracle: a :class:`~tags.benchmark.oracle.TruthOracle`.
        image_ids: the benchmark image id of each dense image index of the dataset.
    """

    def __init__(self, oracle: Any, image_ids: Sequence[Any]) -> None:
        self.oracle = oracle
        self.image_ids = list(image_ids)

    def __call__(
        self,
        images: Sequence[int],
        texts: Sequence[Sequence[str]],
        edits: Sequence[Sequence[Sequence[Any]]] | None = None,
    ) -> dict[str, torch.Tensor]:
        shares = self.oracle.shares([self.image_ids[int(i)] for i in images], texts)
        out = {
            "synthetic/true_share": torch.tensor(shares["true"]),
            "synthetic/ungrammatical_share": torch.tensor(shares["ungrammatical"]),
            "synthetic/audited": torch.tensor(shares["n"]),
        }
        if edits is not None:
            out |= {f"synthetic/type_{k}": torch.tensor(v) for k, v in type_mix(edits).items()}
        return out


UNIT_TYPES = ("object", "attribute", "relation")


def type_mix(edits: Sequence[Sequence[Sequence[Any]]]) -> dict[str, float]:
    """Per unit type, the share of negatives (``edits[caption][negative]``: their
    :class:`~tags.core.types.Edit` s) with an edit of that type (0 without negatives)."""
    negatives = [{e.type for e in row} for caption in edits for row in caption]
    n = max(len(negatives), 1)
    return {t: sum(t in types for types in negatives) / n for t in UNIT_TYPES}


def truth_audit(path: str | None, dataset: Any) -> TruthAudit | None:
    """The audit of ``dataset``'s images against the scenes at ``path`` (``None``: off)."""
    if not path:
        return None
    from tags.benchmark.oracle import TruthOracle

    return TruthAudit(TruthOracle.from_path(path), [g.image_id for g in dataset.groups])


__all__ = ["TruthAudit", "truth_audit", "type_mix"]
