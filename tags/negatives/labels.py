"""Token-level training targets of a negative: word discrimination (WoD) and correction (WoC).

Both caption texts are tokenized by the training tokenizer and aligned through the edits:

- tokens outside every edit are the positive's own tokens: WoD 1, WoC = that token;
- inside an edit whose replacement has as many word pieces as the original, pieces are
  aligned one to one: WoD 1 where the piece equals the positive's, WoC = the positive's piece;
- inside an edit that changes the number of pieces there is no position-wise counterpart:
  WoD 0 and WoC ``ignore_index`` (the loss skips it);
- special tokens (``[CLS]``, ``[SEP]``): both ``ignore_index``.

``edited[i]`` marks the negative's tokens inside an edit (the refilled, i.e. masked,
positions): the official code's WoC (``forward_gd``) predicts only there.

Edits cover whole words, so the text between edits tokenizes identically in both captions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tags.core.types import Edit

IGNORE_INDEX = -100


@dataclass(frozen=True)
class TokenLabels:
    """Targets aligned with ``input_ids`` (the negative as the tokenizer encodes it)."""

    input_ids: list[int]
    wod_labels: list[int]
    woc_labels: list[int]
    edited: list[bool] = field(default_factory=list)


def _encode(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]], list[bool]]:
    enc = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    offsets = [(int(s), int(e)) for s, e in enc["offset_mapping"]]
    return list(enc["input_ids"]), offsets, [bool(x) for x in enc["special_tokens_mask"]]


def token_labels(
    positive: str, negative: str, edits: Sequence[Edit], tokenizer: Any
) -> TokenLabels:
    """WoD labels and WoC targets of ``negative`` against ``positive`` (see module doc)."""
    pos_ids, pos_offsets, _ = _encode(tokenizer, positive)
    neg_ids, neg_offsets, neg_special = _encode(tokenizer, negative)
    pos_at = {start: i for i, (start, end) in enumerate(pos_offsets) if end > start}

    # Edit regions in negative coordinates, and the shift back to positive coordinates.
    regions: list[tuple[int, int, Edit]] = []
    shift = 0
    for edit in sorted(edits, key=lambda e: e.start):
        start = edit.start + shift
        regions.append((start, start + len(edit.replacement), edit))
        shift += len(edit.replacement) - (edit.end - edit.start)

    def pos_tokens(edit: Edit) -> list[int]:
        return [
            i for i, (s, e) in enumerate(pos_offsets) if e > s and s < edit.end and e > edit.start
        ]

    wod = [IGNORE_INDEX] * len(neg_ids)
    woc = [IGNORE_INDEX] * len(neg_ids)
    inside: dict[int, list[int]] = {r: [] for r in range(len(regions))}
    for i, (s, e) in enumerate(neg_offsets):
        if neg_special[i] or e <= s:
            continue
        region = next((r for r, (a, b, _) in enumerate(regions) if s < b and e > a), None)
        if region is not None:
            inside[region].append(i)
            continue
        delta = sum(len(ed.replacement) - (ed.end - ed.start) for a, _, ed in regions if a + 0 < s)
        j = pos_at.get(s - delta)
        if j is None:  # not expected with whole-word edits; be safe
            wod[i] = 0
            continue
        wod[i] = int(neg_ids[i] == pos_ids[j])
        woc[i] = pos_ids[j]
    for r, (_, _, edit) in enumerate(regions):
        original = pos_tokens(edit)
        replaced = inside[r]
        if len(original) == len(replaced):
            for i, j in zip(replaced, original):
                wod[i] = int(neg_ids[i] == pos_ids[j])
                woc[i] = pos_ids[j]
        else:
            for i in replaced:
                wod[i] = 0
    edited = [False] * len(neg_ids)
    for positions in inside.values():
        for i in positions:
            edited[i] = True
    return TokenLabels(neg_ids, wod, woc, edited)


__all__ = ["IGNORE_INDEX", "TokenLabels", "token_labels"]
