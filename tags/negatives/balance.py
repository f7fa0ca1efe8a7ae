"""Dataset-level balance: no word tells a negative from its caption.

A (caption, negative) pair differs only where it was edited, so what a text-only model can
learn from a set of pairs is which edited words are more often false than true: "below"
when every "on top of" became "below", "woman" when most captions say "man", "pink" after
"man in a". :func:`balance_records` drops negatives until, within each kind of edit (object,
attribute, relation...), every edited word is the false word (in a negative) at most
``ratio`` times as often as it is the true word (in its caption), plus ``slack``, and the
other way round; the same holds for the word together with the word after it ("pink shirt")
and with the word before it ("a woman"). Swaps (the same words exchanged) and additions are
neutral and kept.

The drop is greedy and deterministic: the most unbalanced key first, and for it first the
negatives of captions that keep another negative, then those whose other words are
unbalanced the same way, then the later ones. A repair pass then gives back a negative to
captions left without one, in caption order, where the bounds allow it, or allow it once a
negative of a caption that keeps another is dropped in its place (:func:`_repair`). The
result depends only on the records, so a resumed run and the concatenation of shard outputs
give the same balanced set as one run. A balanced set is balanced again unchanged.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tags.core.edits import unit_edits

#: A word may be the false word this many times as often as the true word (and back) ...
RATIO = 1.25
#: ... plus this many times: a word a corpus offers on one side only may appear 3 times.
SLACK = 3.0

_WORD = re.compile(r"\w+")
Key = tuple[str, str]  # (kind, words)


def edit_sides(record: dict[str, Any]) -> list[tuple[Key, Key]]:
    """The (true key, false key) pairs a negative record adds to the balance: per replaced
    unit, its words, the words with the next word, and with the previous word."""
    caption = record["positive"]
    sides = []
    for edit in unit_edits(record.get("edits") or ()):
        original = str(edit.get("original", "")).lower().strip()
        replacement = str(edit.get("replacement", "")).lower().strip()
        if edit.get("operation") in ("swap", "add") or not original or not replacement:
            continue
        kind = str(edit.get("type", ""))
        after = _WORD.findall(caption[edit["end"] :].lower())[:1] or ["</s>"]
        before = _WORD.findall(caption[: edit["start"]].lower())[-1:] or ["<s>"]
        sides.append(((kind, original), (kind, replacement)))
        sides.append(
            ((kind + ">", f"{original} {after[0]}"), (kind + ">", f"{replacement} {after[0]}"))
        )
        sides.append(
            ((kind + "<", f"{before[0]} {original}"), (kind + "<", f"{before[0]} {replacement}"))
        )
    return sides


class _Keys:
    """Keys as small integers (a large output repeats a few thousand words)."""

    def __init__(self) -> None:
        self.ids: dict[Key, int] = {}

    def sides(self, record: dict[str, Any]) -> tuple[int, ...]:
        """The record's (true, false) keys, flat: ``(t0, f0, t1, f1, ...)``."""
        ids = self.ids
        return tuple(ids.setdefault(key, len(ids)) for pair in edit_sides(record) for key in pair)


class _Sides(Sequence):
    """The records' flat (true, false) key ids in two integer arrays (about 30 bytes a
    record, where a tuple each took about 100): ``sides[i]`` is record ``i``'s tuple."""

    def __init__(self) -> None:
        self.keys = array("i")
        self.starts = array("q", [0])

    def append(self, flat: tuple[int, ...]) -> None:
        self.keys.extend(flat)
        self.starts.append(len(self.keys))

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, i: int) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(self.keys[self.starts[i] : self.starts[i + 1]])


def balance_records(
    records: Iterable[dict[str, Any]], ratio: float = RATIO, slack: float = SLACK
) -> list[bool]:
    """Which records to keep (a mask in input order) so that the set is balanced; one pass
    over ``records`` (a list, a generator, a ``datasets.Dataset``)."""
    sides, owners = _scan(records)
    return balance_mask(sides, owners, ratio, slack)


def _scan(records: Iterable[dict[str, Any]]) -> tuple[_Sides, array]:
    """Each record's flat (true, false) key ids and its caption's number (first seen: 0)."""
    keys = _Keys()
    sides = _Sides()
    owners = array("i")
    captions: dict[str, int] = {}
    for record in records:
        sides.append(keys.sides(record))
        owners.append(captions.setdefault(str(record.get("caption_id")), len(captions)))
    return sides, owners


class _Holders:
    """For each key and side, the records that hold it, in record order (``holders[(key,
    False)]``: those whose caption has the key's words, ``True``: whose negative has
    them), as one integer array with offsets."""

    def __init__(self, sides: Sequence[tuple[int, ...]], keys: int) -> None:
        sizes = [0] * (2 * keys + 1)
        for i in range(len(sides)):
            flat = sides[i]
            for j, key in enumerate(flat):
                sizes[2 * key + (j & 1) + 1] += 1
        self.offsets = array("q", itertools.accumulate(sizes))
        self.ids = array("i", bytes(4 * self.offsets[-1]))
        fill = array("q", self.offsets)
        for i in range(len(sides)):
            for j, key in enumerate(sides[i]):
                node = 2 * key + (j & 1)
                self.ids[fill[node]] = i
                fill[node] += 1

    def __getitem__(self, node: tuple[int, bool]) -> array:
        at = 2 * node[0] + int(node[1])
        return self.ids[self.offsets[at] : self.offsets[at + 1]]


def balance_dataset(dataset: Any, ratio: float = RATIO, slack: float = SLACK) -> Any:
    """A Hugging Face ``datasets.Dataset`` of negative rows (the output of
    :class:`~tags.negatives.batch.GenerateBatch`, in input order) balanced as
    :func:`balance_records`: the rows it keeps, with ``negative_index`` and
    ``num_negatives`` counted again per caption."""
    needed = ["caption_id", "positive", "edits"]
    missing = [c for c in needed if c not in dataset.column_names]
    if missing:
        raise ValueError(f"not negative rows: no column {', '.join(missing)}")
    keep = balance_records(dataset.select_columns(needed), ratio, slack)
    kept = dataset.select([i for i, k in enumerate(keep) if k])
    numbers = renumbered({"caption_id": c} for c in kept["caption_id"])
    return (
        kept.remove_columns(
            [c for c in ("negative_index", "num_negatives") if c in kept.column_names]
        )
        .add_column("negative_index", [n["negative_index"] for n in numbers])
        .add_column("num_negatives", [n["num_negatives"] for n in numbers])
        .select_columns(dataset.column_names)
    )


def balance_mask(
    sides: Sequence[tuple[int, ...]],
    captions: Sequence[int],
    ratio: float = RATIO,
    slack: float = SLACK,
) -> list[bool]:
    """:func:`balance_records` on the records' flat (true, false) key ids and caption
    numbers: the mask of records to keep."""
    if ratio < 1 or slack < 0:
        raise ValueError(f"need ratio >= 1 and slack >= 0, got {ratio} and {slack}")
    keys = 1 + max((max(sides[i], default=-1) for i in range(len(sides))), default=-1)
    true, false = [0] * keys, [0] * keys
    for i in range(len(sides)):
        flat = sides[i]
        for t, f in zip(flat[::2], flat[1::2]):
            true[t] += 1
            false[f] += 1
    holders = _Holders(sides, keys)  # (key, false side) -> ids
    alive = [True] * len(sides)
    per_caption = Counter(captions)

    def excess(key: int) -> float:
        return max(false[key] - ratio * true[key] - slack, true[key] - ratio * false[key] - slack)

    def gain(i: int) -> int:  # how many of the record's other keys its removal helps
        flat = sides[i]
        return sum(
            (1 if true[t] > false[t] else -1) + (1 if false[f] > true[f] else -1)
            for t, f in zip(flat[::2], flat[1::2])
        )

    def priority(i: int) -> tuple[int, int, int]:  # negated: heapq pops the smallest
        return (-int(per_caption[captions[i]] > 1), -gain(i), i)

    changed = True
    while changed:
        changed = False
        for key in sorted((k for k in range(keys) if excess(k) > 0),
                          key=lambda k: (-excess(k), k)):  # fmt: skip
            over_false = false[key] > true[key]
            # a heap with lazy updates: a popped record whose priority fell since it was
            # pushed goes back in, so each drop takes the best record at that moment
            heap = [(priority(i), i) for i in holders[(key, over_false)] if alive[i]]
            heapq.heapify(heap)
            while heap and excess(key) > 0:
                stored, i = heapq.heappop(heap)
                now = priority(i)
                if now != stored and heap and now > heap[0][0]:
                    heapq.heappush(heap, (now, i))
                    continue
                alive[i] = False
                changed = True
                per_caption[captions[i]] -= 1
                flat = sides[i]
                for t, f in zip(flat[::2], flat[1::2]):
                    true[t] -= 1
                    false[f] -= 1
    _repair(sides, captions, alive, true, false, holders, per_caption, excess)
    return alive


#: How many negatives of other captions :func:`_repair` tries in place of one it gives back.
REPAIR_TRIES = 64


def _repair(
    sides: Sequence[tuple[int, ...]],
    captions: Sequence[int],
    alive: list[bool],
    true: list[int],
    false: list[int],
    holders: _Holders,
    per_caption: Counter,
    excess: Any,
) -> None:
    """Give a dropped negative back (in place) to each caption left without one, in caption
    order: its first negative whose return keeps every key within the bounds, else its first
    that does so once one kept negative of a caption keeping another is dropped instead (of
    the holders of its first key out of bounds, at most :data:`REPAIR_TRIES` tried)."""

    def move(i: int, step: int) -> None:
        flat = sides[i]
        for t, f in zip(flat[::2], flat[1::2]):
            true[t] += step
            false[f] += step
        alive[i] = step > 0
        per_caption[captions[i]] += step

    def out_of_bounds(i: int) -> list[tuple[int, bool]]:  # (key, its false side is over)
        return sorted((k, false[k] > true[k]) for k in set(sides[i]) if excess(k) > 0)

    def give_back(i: int) -> bool:
        move(i, +1)
        wrong = out_of_bounds(i)
        if not wrong:
            return True
        candidates = (j for j in holders[wrong[0]] if alive[j] and per_caption[captions[j]] > 1)
        for j in itertools.islice(candidates, REPAIR_TRIES):
            move(j, -1)
            if not out_of_bounds(i) and not out_of_bounds(j):
                return True
            move(j, +1)
        move(i, -1)
        return False

    lost: dict[int, list[int]] = {}
    for i, caption in enumerate(captions):
        if not per_caption[caption]:
            lost.setdefault(caption, []).append(i)
    for ids in lost.values():
        any(give_back(i) for i in ids)


def renumbered(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with ``negative_index`` / ``num_negatives`` counted again per caption."""
    records = list(records)
    totals = Counter(str(r.get("caption_id")) for r in records)
    seen: Counter = Counter()
    out = []
    for record in records:
        caption = str(record.get("caption_id"))
        out.append({**record, "negative_index": seen[caption], "num_negatives": totals[caption]})
        seen[caption] += 1
    return out


@dataclass
class BalanceStats:
    """What :func:`balance_file` kept."""

    negatives: int = 0
    kept: int = 0
    captions: int = 0
    captions_kept: int = 0
    #: the captions balancing left without a negative: ``(image_id, caption_id, caption)``
    emptied: list[tuple[Any, Any, str]] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"balance: kept {self.kept} of {self.negatives} negatives; captions with a negative "
            f"{self.captions} -> {self.captions_kept}"
        )


def balance_file(
    source: str | Path | Sequence[str | Path],
    out: str | Path,
    ratio: float = RATIO,
    slack: float = SLACK,
) -> BalanceStats:
    """Balance a ``tags generate`` output (JSON Lines), or several joined in the given order
    (the shards of one run), into ``out`` (may be the one ``source``: written through a
    temporary file, so a kill leaves either file whole). Two passes over the files; only the
    records' key ids stay in memory."""
    sources = [Path(source)] if isinstance(source, (str, Path)) else [Path(s) for s in source]
    out = Path(out)
    sides, owners = _scan(json.loads(line) for line in _lines(sources))
    keep = balance_mask(sides, owners, ratio, slack)
    del sides
    totals = Counter(o for o, k in zip(owners, keep) if k)
    seen: Counter = Counter()
    emptied: dict[int, tuple[Any, Any, str]] = {}
    tmp = out.with_name(f".{out.name}.balance.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as dest:
            for line, owner, kept in zip(_lines(sources), owners, keep):
                if not kept:
                    if not totals[owner] and owner not in emptied:
                        record = json.loads(line)
                        emptied[owner] = (
                            record.get("image_id"),
                            record.get("caption_id"),
                            record.get("positive"),
                        )
                    continue
                record = json.loads(line)
                record["negative_index"], record["num_negatives"] = seen[owner], totals[owner]
                seen[owner] += 1
                dest.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return BalanceStats(
        negatives=len(keep),
        kept=sum(keep),
        captions=len(set(owners)),
        captions_kept=len(totals),
        emptied=list(emptied.values()),
    )


def _lines(sources: Sequence[Path]) -> Iterable[str]:
    """The lines of ``sources``, one after the other."""
    for source in sources:
        with open(source, encoding="utf-8") as handle:
            yield from handle


__all__ = [
    "RATIO",
    "SLACK",
    "BalanceStats",
    "balance_dataset",
    "balance_file",
    "balance_mask",
    "balance_records",
    "edit_sides",
    "renumbered",
]
