"""Fixed synthetic negative pools from a ``tags generate`` JSONL (the static setting)."""

from __future__ import annotations

import json
from pathlib import Path

from tags.negatives.types import Edit


class NegativePools:
    """``caption_id -> [(negative, edits), ...]`` in file order (best first when the file was
    written with top-m selection). Keys are compared as strings, so ``3`` and ``"3"`` match."""

    def __init__(
        self,
        pools: dict[str, list[tuple[str, tuple[Edit, ...]]]],
        positives: dict[str, str] | None = None,
    ) -> None:
        self.pools = pools
        self.positives = positives or {}

    @classmethod
    def from_jsonl(cls, path: str | Path) -> NegativePools:
        pools: dict[str, list[tuple[str, tuple[Edit, ...]]]] = {}
        positives: dict[str, str] = {}
        with open(path, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    edits = tuple(Edit.from_dict(e) for e in rec.get("edits", []))
                    key = str(rec["caption_id"])
                    pools.setdefault(key, []).append((rec["negative"], edits))
                    positives[key] = rec["positive"]
                except (json.JSONDecodeError, KeyError, TypeError) as err:
                    raise ValueError(
                        f"{path}:{line_no}: not a `tags generate` record ({err})"
                    ) from err
        return cls(pools, positives)

    def __len__(self) -> int:
        return len(self.pools)

    def positive(self, caption_id: object, default: str) -> str:
        """The positive text the edits refer to (``tags generate`` normalises whitespace)."""
        return self.positives.get(str(caption_id), default)

    def get(
        self, caption_id: object, limit: int | None = None
    ) -> list[tuple[str, tuple[Edit, ...]]]:
        pool = self.pools.get(str(caption_id), [])
        return pool[:limit] if limit is not None else list(pool)


__all__ = ["NegativePools"]
