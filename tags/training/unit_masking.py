"""L_MLM on scene-graph-masked copies (TAGS-DC Algorithm 1, line 5), beside BERT masking.

The paper computes the MLM loss on the copies it masks for refilling: whole scene-graph units
(objects, attributes, relations), about ``ratio`` of the tokens, at least one unit. This
module masks the positives the same way (``tags_dc.mlm_masking: unit``): parse the caption,
map each unit's character spans to the training tokenizer's tokens, draw units in a seeded
random order until the budget is reached, replace every chosen token with ``[MASK]`` and
label it with the original id. Rows without any unit fall back to BERT masking.

The negatives engine draws its own copies (seeded per caption); these are drawn with the same
procedure and ratio, not taken from the engine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from tags.training.losses import IGNORE_INDEX

Span = tuple[int, int]


def unit_positions(
    units: Sequence[tuple[str, tuple[Span, ...]]], offsets: Sequence[Span]
) -> list[list[int]]:
    """Token positions of every unit (tokens whose character span overlaps one of the unit's
    spans; special tokens, whose span is empty, never); empty and repeated units dropped."""
    out: list[list[int]] = []
    for _, spans in units:
        positions = sorted(
            i
            for i, (s, e) in enumerate(offsets)
            if e > s and any(s < end and e > start for start, end in spans)
        )
        if positions and positions not in out:
            out.append(positions)
    return out


def choose_units(candidates: Sequence[Sequence[int]], budget: int, rng: random.Random) -> list[int]:
    """Non-overlapping units in random order up to ``budget`` tokens (the first one always)."""
    order = list(range(len(candidates)))
    rng.shuffle(order)
    chosen: set[int] = set()
    for i in order:
        unit = set(candidates[i])
        if unit & chosen or (chosen and len(chosen) + len(unit) > budget):
            continue
        chosen |= unit
        if len(chosen) >= budget:
            break
    return sorted(chosen)


class UnitMLMMasker:
    """Scene-graph unit masking of tokenized positives (see the module docstring)."""

    def __init__(self, tokenizer: Any, ratio: float = 0.15, parser: Any = None) -> None:
        self.tokenizer = tokenizer
        self.ratio = ratio
        self._parser = parser
        self._units: dict[str, list[tuple[str, tuple[Span, ...]]]] = {}

    @property
    def parser(self) -> Any:
        if self._parser is None:
            from parsers import SceneGraphParser

            self._parser = SceneGraphParser()
        return self._parser

    def units(self, text: str) -> list[tuple[str, tuple[Span, ...]]]:
        if text not in self._units:
            if len(self._units) > 200_000:  # a bound for huge corpora
                self._units.clear()
            self._units[text] = list(self.parser.parse(text).units())
        return self._units[text]

    def positions(self, text: str, max_length: int, seed: int) -> list[int]:
        """Token positions (in ``tokenizer(text, truncation, max_length)``) to mask."""
        enc = self.tokenizer(
            text, truncation=True, max_length=max_length, return_offsets_mapping=True
        )
        offsets = [(int(s), int(e)) for s, e in enc["offset_mapping"]]
        candidates = unit_positions(self.units(text), offsets)
        if not candidates:
            return []
        content = sum(1 for s, e in offsets if e > s)
        budget = max(1, round(self.ratio * content))
        return choose_units(candidates, budget, random.Random(seed))

    def __call__(
        self,
        input_ids: torch.Tensor,
        texts: Sequence[str],
        seeds: Sequence[int],
        max_length: int,
        mask_token_id: int,
    ) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """``(masked ids, labels, rows without units)``: every chosen token becomes
        ``[MASK]`` and is labelled with its id; other labels are ``IGNORE_INDEX``."""
        masked = input_ids.clone()
        labels = torch.full_like(input_ids, IGNORE_INDEX)
        empty: list[int] = []
        for row, (text, seed) in enumerate(zip(texts, seeds)):
            positions = self.positions(text, max_length, seed)
            positions = [p for p in positions if p < input_ids.shape[1]]
            if not positions:
                empty.append(row)
                continue
            index = torch.tensor(positions, device=input_ids.device)
            labels[row, index] = input_ids[row, index]
            masked[row, index] = mask_token_id
        return masked, labels, empty


__all__ = ["UnitMLMMasker", "choose_units", "unit_positions"]
