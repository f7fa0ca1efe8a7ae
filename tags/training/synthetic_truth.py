"""Truth audit of a training step's synthetic negatives (``tags_dc.synthetic.truth_audit``).

On the shapes benchmark every training image's scene is known, so each negative can be
judged (:class:`tags.benchmark.oracle.TruthOracle`): the share that is actually true of its
image (a false negative the caption filter missed) and the share that is ungrammatical.
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
        self, images: Sequence[int], texts: Sequence[Sequence[str]]
    ) -> dict[str, torch.Tensor]:
        shares = self.oracle.shares([self.image_ids[int(i)] for i in images], texts)
        return {
            "synthetic/true_share": torch.tensor(shares["true"]),
            "synthetic/ungrammatical_share": torch.tensor(shares["ungrammatical"]),
            "synthetic/audited": torch.tensor(shares["n"]),
        }


def truth_audit(path: str | None, dataset: Any) -> TruthAudit | None:
    """The audit of ``dataset``'s images against the scenes at ``path`` (``None``: off)."""
    if not path:
        return None
    from tags.benchmark.oracle import TruthOracle

    return TruthAudit(TruthOracle.from_path(path), [g.image_id for g in dataset.groups])


__all__ = ["TruthAudit", "truth_audit"]
