"""Masking: which word pieces of a positive caption get refilled.

Two maskers share one output type, :class:`MaskedCopy`:

- :class:`UnitMasker` (TAGS-DC): scene-graph units (objects, attributes, relations) taken
  whole, about ``ratio`` of the caption's tokens, at least one unit per copy;
- :class:`WordMasker` (ablation baseline): random whole words, about ``ratio`` of the tokens.

Units are mapped from character spans to tokens through the tokenizer's offsets and widened to
whole words, so every masked segment covers complete words.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from parsers import char_span_to_token_indices

CharSpan = tuple[int, int]

_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


@dataclass(frozen=True)
class TokenView:
    """A caption's tokens as character offsets and word indices.

    ``offsets[i]`` is token ``i``'s ``(start, end)`` in the caption (``(0, 0)`` for special
    tokens); ``words[i]`` its word index (``None`` for special tokens); ``ids`` the vocabulary
    ids when the view comes from a model tokenizer.
    """

    offsets: tuple[CharSpan, ...]
    words: tuple[int | None, ...]
    ids: tuple[int, ...] | None = None

    @classmethod
    def from_text(cls, text: str) -> TokenView:
        """Tokenize without a model: words and single punctuation marks."""
        offsets = tuple(m.span() for m in _WORD_RE.finditer(text))
        return cls(offsets, tuple(range(len(offsets))))

    @classmethod
    def from_encoding(cls, encoding) -> TokenView:
        """From one fast-tokenizer result made with ``return_offsets_mapping=True``."""
        ids = tuple(int(i) for i in encoding["input_ids"])
        offsets = tuple((int(s), int(e)) for s, e in encoding["offset_mapping"])
        words = tuple(encoding.word_ids())
        return cls(offsets, words, ids)

    @property
    def content(self) -> list[int]:
        """Indices of the caption's own tokens (special tokens left out)."""
        return [i for i, w in enumerate(self.words) if w is not None]

    def word_tokens(self) -> dict[int, list[int]]:
        """Token indices of every word, by word index."""
        out: dict[int, list[int]] = {}
        for i, w in enumerate(self.words):
            if w is not None:
                out.setdefault(w, []).append(i)
        return out


@dataclass(frozen=True)
class MaskedSegment:
    """Contiguous masked tokens and the caption characters they cover."""

    positions: tuple[int, ...]
    start: int
    end: int


@dataclass(frozen=True)
class MaskedUnit:
    """One masked unit: its type, its segments (a relation may have several) and, when the
    unit was planned (:class:`~tags.negatives.planner.PlannedUnit`), the substitutes a refill
    may use (one surface per segment)."""

    type: str
    segments: tuple[MaskedSegment, ...]
    choices: tuple | None = None
    prior: float = 1.0

    @property
    def positions(self) -> set[int]:
        return {p for s in self.segments for p in s.positions}


@dataclass(frozen=True)
class MaskedCopy:
    """One masked version of a caption: the units chosen, in caption order."""

    units: tuple[MaskedUnit, ...]

    @property
    def positions(self) -> list[int]:
        return sorted(p for u in self.units for p in u.positions)

    @property
    def segments(self) -> list[tuple[str, MaskedSegment]]:
        """``(type, segment)`` pairs in caption order."""
        pairs = [(u.type, s) for u in self.units for s in u.segments]
        return sorted(pairs, key=lambda pair: pair[1].start)


def _segments(positions: Sequence[int], view: TokenView) -> tuple[MaskedSegment, ...]:
    """Split sorted token positions into contiguous runs with their character extents."""
    runs: list[list[int]] = []
    for p in sorted(positions):
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return tuple(
        MaskedSegment(tuple(r), view.offsets[r[0]][0], view.offsets[r[-1]][1]) for r in runs
    )


def _whole_words(indices: Sequence[int], view: TokenView, words: dict[int, list[int]]) -> set[int]:
    out: set[int] = set()
    for i in indices:
        w = view.words[i]
        if w is not None:
            out.update(words[w])
    return out


def trim_units(
    units: Sequence[tuple[str, tuple[CharSpan, ...]]], text: str
) -> list[tuple[str, tuple[CharSpan, ...]]]:
    """Shrink unit spans to start and end on a letter or digit ("-white" -> "white")."""
    out = []
    for unit_type, spans in units:
        trimmed = []
        for start, end in spans:
            while start < end and not text[start].isalnum():
                start += 1
            while end > start and not text[end - 1].isalnum():
                end -= 1
            if start < end:
                trimmed.append((start, end))
        if trimmed:
            out.append((unit_type, tuple(trimmed)))
    return out


def token_budget(view: TokenView, ratio: float) -> int:
    """Tokens to mask per copy: ``round(ratio * caption tokens)``, at least 1."""
    return max(1, round(ratio * len(view.content)))


def _choose(
    candidates: Sequence[MaskedUnit],
    budget: int,
    rng: random.Random,
    max_units: int | None = None,
    balance_types: bool = False,
) -> tuple[MaskedUnit, ...]:
    """Random non-overlapping units up to ``budget`` tokens (and at most ``max_units``
    units); the first is always taken. With ``balance_types`` the first unit's type is drawn
    uniformly among the caption's unit types (then a unit of that type), so a caption's one
    relation is masked as often as any of its several attributes."""
    order = list(range(len(candidates)))
    rng.shuffle(order)
    if balance_types:
        types = sorted({u.type for u in candidates})
        kind = types[rng.randrange(len(types))]
        first = next(i for i in order if candidates[i].type == kind)
        order.remove(first)
        order.insert(0, first)
    chosen: list[MaskedUnit] = []
    used: set[int] = set()
    for i in order:
        positions = candidates[i].positions
        if positions & used or (chosen and len(used) + len(positions) > budget):
            continue
        chosen.append(candidates[i])
        used |= positions
        if len(used) >= budget or (max_units is not None and len(chosen) >= max_units):
            break
    return tuple(sorted(chosen, key=lambda u: u.segments[0].start))


class UnitMasker:
    """Mask whole scene-graph units, about ``ratio`` of the tokens, at least one unit a copy.

    ``max_units`` caps the units of a copy. With ``max_units=1`` (minimal edits) there is
    one copy per unit (at most ``num_copies``, in a random order): a copy's refills already
    cover that unit's substitutes, so repeating it would only repeat them. ``balance_types``:
    each copy's first unit is of a type drawn uniformly (see :func:`_choose`).
    """

    def __init__(
        self, ratio: float = 0.15, max_units: int | None = None, balance_types: bool = False
    ):
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"mask ratio must be in (0, 1], got {ratio}")
        if max_units is not None and max_units < 1:
            raise ValueError(f"max_units must be at least 1, got {max_units}")
        self.ratio = ratio
        self.max_units = max_units
        self.balance_types = balance_types

    def units(
        self, units: Sequence[tuple[str, tuple[CharSpan, ...]]], view: TokenView
    ) -> list[MaskedUnit]:
        """Map ``SceneGraph.units()`` to token units; duplicates and empty units are dropped."""
        words = view.word_tokens()
        out: list[MaskedUnit] = []
        seen: set[tuple[int, ...]] = set()
        for unit in units:
            unit_type, spans = tuple(unit)
            segments: list[MaskedSegment] = []
            for span in spans:
                positions = _whole_words(
                    char_span_to_token_indices(span, view.offsets), view, words
                )
                segments.extend(_segments(sorted(positions), view))
            key = tuple(sorted({p for s in segments for p in s.positions}))
            if not key or key in seen:
                continue
            seen.add(key)
            choices = getattr(unit, "choices", None)
            if choices is None:  # pieces of one unit that touch become one segment
                out.append(MaskedUnit(unit_type, _segments(key, view)))
            elif len(segments) == len(spans):  # planned: one segment per span, as planned
                prior = getattr(unit, "prior", 1.0)
                out.append(MaskedUnit(unit_type, tuple(segments), tuple(choices), prior))
        return out

    def mask(
        self,
        units: Sequence[tuple[str, tuple[CharSpan, ...]]],
        view: TokenView,
        num_copies: int,
        rng: random.Random,
    ) -> list[MaskedCopy]:
        """``num_copies`` masked copies; an empty list when the caption has no usable unit."""
        candidates = self.units(units, view)
        if not candidates:
            return []
        if self.max_units == 1:
            order = list(candidates)
            rng.shuffle(order)
            return [MaskedCopy((u,)) for u in order[:num_copies]]
        budget = token_budget(view, self.ratio)
        return [
            MaskedCopy(_choose(candidates, budget, rng, self.max_units, self.balance_types))
            for _ in range(num_copies)
        ]


class WordMasker:
    """Mask random whole words (pure punctuation excluded), about ``ratio`` of the tokens."""

    def __init__(self, ratio: float = 0.15, unit_type: str = "word"):
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"mask ratio must be in (0, 1], got {ratio}")
        self.ratio = ratio
        self.unit_type = unit_type

    def mask(
        self, text: str, view: TokenView, num_copies: int, rng: random.Random
    ) -> list[MaskedCopy]:
        """``num_copies`` masked copies; an empty list when the caption has no word."""
        candidates = [
            MaskedUnit(self.unit_type, _segments(tokens, view))
            for tokens in view.word_tokens().values()
            if any(
                c.isalnum() for c in text[view.offsets[tokens[0]][0] : view.offsets[tokens[-1]][1]]
            )
        ]
        if not candidates:
            return []
        budget = token_budget(view, self.ratio)
        return [MaskedCopy(_choose(candidates, budget, rng)) for _ in range(num_copies)]


__all__ = [
    "MaskedCopy",
    "MaskedSegment",
    "MaskedUnit",
    "TokenView",
    "UnitMasker",
    "WordMasker",
    "token_budget",
    "trim_units",
]
