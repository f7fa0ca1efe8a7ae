"""A compact, memory-mapped counts store: every worker of a machine shares one copy.

Corpus counts held as Python ``Counter`` objects cost each generation process about ten
times their JSON size, and forked workers copy the pages they read (reference counts). A
store holds each table as flat arrays in one file, mapped read-only (``mmap``): opening it
reads only its header (start-up does not grow with the counts), and the pages are shared by
every process through the page cache.

File layout (all integers little-endian, sections 8-byte aligned)::

    b"TAGSCNT1" | header length (uint64) | header (UTF-8 JSON) | padding | sections

The header names the file's total size (a file cut short is refused, naming it) and, per
table, its entry count and the offset, byte length and item type of its sections:

- ``keys``: every key as JSON (``json.dumps``: a tuple as a list), each followed by ``,``,
  in the table's iteration order (the order of the ``Counter`` it was written from);
- ``offsets``: where each key starts in ``keys`` (``n + 1`` entries);
- ``counts``: the count of each key, in the same order;
- ``hashes``: the 64-bit BLAKE2b hashes of the keys' JSON, sorted, and ``slots``: the
  position of each sorted hash's key. A lookup hashes the key, bisects ``hashes`` and
  compares the stored key's bytes (a missing key is never mistaken for a present one).
  Two keys of one table with the same hash are refused when writing.

:class:`CountsTable` is a read-only mapping over one table that behaves like the
``Counter`` it was written from (``get``, ``[]`` giving 0 for a missing key, ``in``,
iteration in the same order, ``items``, ``values``, ``len``). :class:`SummedCounts` is the
sum of two count mappings as ``Counter.update`` would make it (the same values and the same
iteration order), without copying either.

Imports: :mod:`tags.core.io` (the one-line :class:`~tags.core.io.InputError`) and the
standard library (``numpy`` when writing).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import sys
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Mapping
from itertools import chain
from pathlib import Path
from typing import Any

from tags.core.io import InputError

MAGIC = b"TAGSCNT1"
FORMAT = 1
#: Keys decoded at a time when a table is iterated.
_CHUNK = 4096
#: The most lookups a table remembers (key -> position) before it starts afresh: lookups
#: repeat (the same names, pairs and words), and a hit skips the hash and the bisection.
_MEMO_SIZE = 1 << 13
_SECTIONS = ("keys", "offsets", "counts", "hashes", "slots")


def encode_key(key: Any) -> bytes:
    """The bytes a key is stored and hashed as: its JSON (a tuple as a list)."""
    return json.dumps(key).encode()


def key_hash(data: bytes) -> int:
    """The stable 64-bit hash of an encoded key (BLAKE2b, not Python's salted ``hash``)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _as_key(value: Any) -> Any:
    """A decoded key as it was written: lists back to tuples, strings interned (the names
    repeated across keys are one object in what the caller builds from them)."""
    kind = type(value)
    if kind is str:
        return _intern(value)
    if kind is not list:
        return value
    return tuple(
        [_intern(v) if type(v) is str else _as_key(v) if type(v) is list else v for v in value]
    )


_intern = sys.intern


class StoreError(InputError):
    """A counts store that cannot be read (not a store, cut short, another format)."""


# ---------------------------------------------------------------------- writing
def _int_code(largest: int) -> str:
    return "I" if largest < 1 << 32 else "Q"


def _table_sections(name: str, table: Mapping) -> dict[str, tuple[str, bytes]]:
    """The sections of one table: {section: (item type, bytes)}; ``ValueError`` for a hash
    collision or a negative count."""
    import numpy as np

    encoded = [encode_key(key) for key in table]
    counts = [int(c) for c in table.values()]
    if counts and min(counts) < 0:
        raise ValueError(f"table {name}: negative counts cannot be stored")
    keys = b"".join(e + b"," for e in encoded)
    offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
    np.cumsum([len(e) + 1 for e in encoded], out=offsets[1:])
    hashes = np.fromiter((key_hash(e) for e in encoded), dtype=np.uint64, count=len(encoded))
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    if same.size:
        a, b = order[same[0]], order[same[0] + 1]
        raise ValueError(
            f"table {name}: keys {encoded[a].decode()} and {encoded[b].decode()} share the "
            f"hash {int(ordered[same[0]]):#018x}; the store cannot hold both"
        )
    width = {"I": np.uint32, "Q": np.uint64}
    offset_code = _int_code(int(offsets[-1]))
    count_code = _int_code(max(counts, default=0))
    slot_code = _int_code(len(encoded))
    return {
        "keys": ("B", keys),
        "offsets": (offset_code, offsets.astype(width[offset_code]).tobytes()),
        "counts": (count_code, np.asarray(counts, dtype=width[count_code]).tobytes()),
        "hashes": ("Q", ordered.astype("<u8").tobytes()),
        "slots": (slot_code, order.astype(width[slot_code]).tobytes()),
    }


def write_store(path: str | Path, tables: Mapping[str, Mapping], meta: dict | None = None) -> int:
    """Write ``tables`` (name -> a count mapping: keys of strings, numbers, booleans and
    tuples of them; non-negative integer counts) to a store at ``path``, atomically (a
    temporary file, then ``os.replace``); its size in bytes. ``meta``: JSON-able settings
    kept in the header (:func:`open_store` returns them)."""
    sections = {name: _table_sections(name, table) for name, table in tables.items()}
    header: dict[str, Any] = {"format": FORMAT, "meta": meta or {}, "tables": {}}
    layout: list[bytes] = []
    cursor = 0  # sections' offsets count from the first section (after the header)
    for name, parts in sections.items():
        entry: dict[str, Any] = {"n": len(tables[name])}
        for section, (code, data) in parts.items():
            entry[section] = [code, len(data), cursor]
            layout.append(data)
            cursor = _align(cursor + len(data))
        header["tables"][name] = entry
    header["data"] = cursor
    text = json.dumps(header, ensure_ascii=False).encode()
    start = _align(len(MAGIC) + 8 + len(text))
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(MAGIC + len(text).to_bytes(8, "little") + text)
            out.write(b"\0" * (start - out.tell()))
            for data in layout:
                out.write(data)
                out.write(b"\0" * (_align(out.tell()) - out.tell()))
            if out.tell() != start + cursor:
                raise AssertionError("store size differs from its header")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return start + cursor


def _align(n: int) -> int:
    return (n + 7) // 8 * 8


# ---------------------------------------------------------------------- reading
def is_store(path: str | Path) -> bool:
    """Whether ``path`` is a file starting like a counts store."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def open_store(path: str | Path) -> tuple[dict, dict[str, CountsTable]]:
    """The ``meta`` and the tables (name -> :class:`CountsTable`) of the store at ``path``,
    mapped read-only: only the header is read now. :class:`StoreError` (one line naming
    the file) for a file that is not a store, is cut short or is of another format."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(len(MAGIC) + 8)
            if head[: len(MAGIC)] != MAGIC:
                raise StoreError(f"{path}: not a tags counts store (wrong magic bytes)")
            length = int.from_bytes(head[len(MAGIC) :], "little") if len(head) == 16 else -1
            text = handle.read(length) if 0 < length <= size else b""
            header = json.loads(text.decode("utf-8"))
            if header.get("format") != FORMAT:
                raise StoreError(
                    f"{path}: counts store format {header.get('format')!r}, this tags reads "
                    f"{FORMAT}; rewrite it with tags counts store"
                )
            base = _align(len(MAGIC) + 8 + length)
            if size != base + header["data"]:
                raise StoreError(
                    f"{path}: counts store cut short ({size} bytes, its header says "
                    f"{base + header['data']}); rewrite it with tags counts store"
                )
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        if isinstance(err, StoreError):
            raise
        raise StoreError(
            f"{path}: counts store header unreadable ({type(err).__name__}); rewrite it "
            "with tags counts store"
        ) from None
    except OSError as err:
        raise StoreError(f"{path}: cannot read the counts store ({err.strerror})") from None
    view = memoryview(mapped)
    try:
        tables = {
            name: CountsTable(view[base:], name, entry, path)
            for name, entry in header["tables"].items()
        }
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise StoreError(
            f"{path}: counts store tables unreadable ({type(err).__name__}: {err}); rewrite it "
            "with tags counts store"
        ) from None
    return header.get("meta", {}), tables


class CounterOps:
    """``Counter``'s arithmetic and helpers for a read-only count mapping (the result is a
    new ``Counter``, as ``Counter``'s own are: the same keys, counts and order)."""

    def counter(self) -> Counter:
        """A ``Counter`` copy (the same keys, counts and order)."""
        return Counter(dict(self.items()))  # type: ignore[attr-defined]

    def __add__(self, other: Any) -> Counter:
        return self.counter() + _as_counter(other)

    def __radd__(self, other: Any) -> Counter:
        return _as_counter(other) + self.counter()

    def __sub__(self, other: Any) -> Counter:
        return self.counter() - _as_counter(other)

    def __rsub__(self, other: Any) -> Counter:
        return _as_counter(other) - self.counter()

    def __or__(self, other: Any) -> Counter:
        return self.counter() | _as_counter(other)

    def __ror__(self, other: Any) -> Counter:
        return _as_counter(other) | self.counter()

    def __and__(self, other: Any) -> Counter:
        return self.counter() & _as_counter(other)

    def __rand__(self, other: Any) -> Counter:
        return _as_counter(other) & self.counter()

    def most_common(self, n: int | None = None) -> list[tuple[Any, int]]:
        return self.counter().most_common(n)

    def total(self) -> int:
        return sum(self.values())  # type: ignore[attr-defined]


def _as_counter(value: Any) -> Any:
    return value.counter() if isinstance(value, CounterOps) else value


class CountsTable(CounterOps, Mapping):
    """One table of a counts store: a read-only mapping that reads like a ``Counter``
    (a missing key's ``[]`` is 0; iteration in the order it was written)."""

    def __init__(self, view: memoryview, name: str, entry: dict, path: Path):
        self.name, self.path, self._n = name, path, int(entry["n"])
        parts = {}
        for section in _SECTIONS:
            code, length, start = entry[section]
            raw = view[start : start + length]
            parts[section] = raw if code == "B" else raw.cast(code)
        self._keys, self._offsets, self._counts = parts["keys"], parts["offsets"], parts["counts"]
        self._hashes, self._slots = parts["hashes"], parts["slots"]
        self._memo: dict[Any, int] = {}
        n = self._n
        if not (len(self._offsets) == n + 1 and len(self._counts) == len(self._hashes) == n):
            raise ValueError(f"table {name}: section lengths differ from its {n} entries")

    def __reduce__(self) -> tuple:  # a worker started by pickling reopens the file
        return _reopen, (str(self.path), self.name)

    def _find(self, key: Any) -> int:
        memo = self._memo
        try:
            return memo[key]
        except KeyError:
            pass
        except TypeError:  # unhashable: never a key
            return -1
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        found = memo[key] = self._search(key)
        return found

    def _search(self, key: Any) -> int:
        try:
            data = encode_key(key)
        except TypeError:
            return -1
        value = key_hash(data)
        i = bisect_left(self._hashes, value)
        if i < self._n and self._hashes[i] == value:
            j = self._slots[i]
            if self._keys[self._offsets[j] : self._offsets[j + 1] - 1] == data:
                return j
        return -1

    def find_many(self, keys: list) -> list[int]:
        """The position of each of ``keys`` (-1: missing), searched together (no memo)."""
        import numpy as np

        encoded = [encode_key(k) for k in keys]
        wanted = np.fromiter((key_hash(e) for e in encoded), dtype=np.uint64, count=len(keys))
        hashes = np.frombuffer(self._hashes, dtype=np.uint64)
        at = np.minimum(np.searchsorted(hashes, wanted), max(self._n - 1, 0))
        out = [-1] * len(keys)
        if not self._n:
            return out
        for i in np.flatnonzero(hashes[at] == wanted).tolist():
            j = self._slots[int(at[i])]
            if self._keys[self._offsets[j] : self._offsets[j + 1] - 1] == encoded[i]:
                out[i] = j
        return out

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            j = self._memo[key]
        except (KeyError, TypeError):
            j = self._find(key)
        return default if j < 0 else self._counts[j]

    def __getitem__(self, key: Any) -> int:
        j = self._find(key)
        return 0 if j < 0 else self._counts[j]

    def __contains__(self, key: object) -> bool:
        return self._find(key) >= 0

    def __len__(self) -> int:
        return self._n

    def keys_between(self, start: int, stop: int) -> list:
        """The keys at positions ``start`` to ``stop`` (excluded), decoded in one go."""
        if stop <= start:
            return []
        text = bytes(self._keys[self._offsets[start] : self._offsets[stop] - 1])
        return [_as_key(k) for k in json.loads(b"[" + text + b"]")]

    def count_at(self, position: int) -> int:
        """The count of the key at ``position``."""
        return self._counts[position]

    def _chunks(self) -> Iterator[tuple[int, list]]:
        for start in range(0, self._n, _CHUNK):
            yield start, self.keys_between(start, min(start + _CHUNK, self._n))

    def __iter__(self) -> Iterator[Any]:
        for _, keys in self._chunks():
            yield from keys

    def items(self) -> Iterator[tuple[Any, int]]:  # type: ignore[override]
        counts = self._counts
        for start, keys in self._chunks():
            yield from zip(keys, counts[start : start + len(keys)].tolist())

    def values(self) -> list[int]:  # type: ignore[override]
        return self._counts.tolist()

    def __repr__(self) -> str:
        return f"CountsTable({self.name!r}, {self._n} entries, {self.path})"


def _reopen(path: str, name: str) -> CountsTable:
    return open_store(path)[1][name]


class GroupedTable(Mapping):
    """A table of counts by group, ``{group: {key: count}}``, read from a store without
    building a Python value per group: ``entries`` holds every ``(group, key)`` pair, a
    group's pairs next to each other and in the inner mapping's order, and ``groups`` each
    group's first position and length (``start << 32 | length``), in the outer mapping's
    order. ``table[group]`` and ``get`` give a :class:`GroupView` (``[]`` of a missing group:
    an empty one, as a ``defaultdict(Counter)`` reads). A group is decoded whole on its
    first use (one slice of the keys' bytes) and remembered, up to :data:`_GROUP_MEMO` keys
    in all (then it starts afresh): a bound on each process's memory, whatever the size of
    the corpus."""

    def __init__(self, entries: CountsTable, groups: CountsTable):
        self.entries, self.groups = entries, groups
        self._decoded: dict[Any, list] = {}
        self._held = 0

    def _span(self, group: Any) -> tuple[int, int] | None:
        packed = self.groups.get(group)
        if packed is None:
            return None
        return packed >> 32, packed & 0xFFFFFFFF

    def get(self, group: Any, default: Any = None) -> Any:
        span = self._span(group)
        return default if span is None else GroupView(self, group, *span)

    def __getitem__(self, group: Any) -> GroupView:
        span = self._span(group)
        return GroupView(self, group, *(span or (0, 0)))

    def __contains__(self, group: object) -> bool:
        return group in self.groups

    def __len__(self) -> int:
        return len(self.groups)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.groups)

    def items(self) -> Iterator[tuple[Any, GroupView]]:  # type: ignore[override]
        for group, packed in self.groups.items():
            yield group, GroupView(self, group, packed >> 32, packed & 0xFFFFFFFF)

    def positions(self, group: Any, start: int, length: int) -> dict[Any, int]:
        """One group's inner keys, in order, each with its position in ``entries``
        (decoded once and remembered: lookups in the group then hash no bytes)."""
        found = self._decoded.get(group)
        if found is None:
            keys = self.entries.keys_between(start, start + length)
            found = {key: start + i for i, (_, key) in enumerate(keys)}
            if self._held + length > _GROUP_MEMO:
                self._decoded.clear()
                self._held = 0
            if length <= _GROUP_MEMO:
                self._decoded[group] = found
                self._held += length
        return found

    def __reduce__(self) -> tuple:
        return GroupedTable, (self.entries, self.groups)


#: The most inner keys a :class:`GroupedTable` keeps decoded.
_GROUP_MEMO = 1 << 14
#: The most groups a :class:`SummedGroups` keeps summed (each remembers its background-only
#: keys and the lookups asked of it).
_SUMMED_MEMO = 1 << 10


class GroupView(CounterOps, Mapping):
    """One group of a :class:`GroupedTable`: a read-only mapping that reads like the
    ``Counter`` it was written from (a missing key's ``[]`` is 0; iteration in order)."""

    __slots__ = ("_group", "_grouped", "_length", "_start")

    def __init__(self, grouped: GroupedTable, group: Any, start: int, length: int):
        self._grouped, self._group, self._start, self._length = grouped, group, start, length

    def _positions(self) -> dict[Any, int]:
        return self._grouped.positions(self._group, self._start, self._length)

    def _position(self, key: Any) -> int | None:
        """Where ``key`` of this group is in the entries (``None``: not in it)."""
        if not self._length:
            return None
        if self._length > _GROUP_MEMO:  # too large to keep decoded: search the hashes
            j = self._grouped.entries._find((self._group, key))
            return j if self._start <= j < self._start + self._length else None
        return self._positions().get(key)

    def get(self, key: Any, default: Any = None) -> Any:
        decoded = self._grouped._decoded.get(self._group)  # the usual case, inlined
        try:
            j = decoded.get(key) if decoded is not None else self._position(key)
        except TypeError:  # unhashable: never a key
            return default
        return default if j is None else self._grouped.entries._counts[j]

    def __getitem__(self, key: Any) -> int:
        found = self.get(key)
        return 0 if found is None else found

    def __contains__(self, key: object) -> bool:
        decoded = self._grouped._decoded.get(self._group)
        try:
            return key in decoded if decoded is not None else self._position(key) is not None
        except TypeError:
            return False

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Any]:
        return iter(self._positions()) if self._length else iter(())

    def values(self) -> list[int]:  # type: ignore[override]
        counts = self._grouped.entries._counts
        return counts[self._start : self._start + self._length].tolist()

    def items(self) -> Iterator[tuple[Any, int]]:  # type: ignore[override]
        return zip(self, self.values())

    def __repr__(self) -> str:
        return f"GroupView({self._group!r}, {self._length} entries)"


def grouped_sections(name: str, nested: Mapping[Any, Mapping]) -> dict[str, dict]:
    """The two tables a :class:`GroupedTable` reads ``nested`` (``{group: {key: count}}``)
    from: ``name`` (every ``(group, key)`` in order) and ``name + "/groups"``."""
    entries: dict[Any, int] = {}
    groups: dict[Any, int] = {}
    for group, inner in nested.items():
        start = len(entries)
        for key, count in inner.items():
            entries[(group, key)] = count
        groups[group] = start << 32 | (len(entries) - start)
    return {name: entries, f"{name}/groups": groups}


class SummedGroups(Mapping):
    """``first`` + ``second`` (mappings of groups of counts) as building one
    ``defaultdict(Counter)`` from both would hold them: a group of both is the
    :class:`SummedCounts` of its two parts; ``first``'s groups iterate first, then those
    only ``second`` has. A missing group's ``[]`` is an empty mapping."""

    def __init__(self, first: Mapping, second: Mapping):
        self.first, self.second = first, second
        self._summed: dict[Any, SummedCounts] = {}  # groups of both, the last few asked

    def get(self, group: Any, default: Any = None) -> Any:
        found = self._summed.get(group)
        if found is not None:
            return found
        a, b = self.first.get(group), self.second.get(group)
        if a is None:
            return default if b is None else b
        if b is None:
            return a
        if len(self._summed) >= _SUMMED_MEMO:
            self._summed.clear()
        found = self._summed[group] = SummedCounts(a, b)
        return found

    def __getitem__(self, group: Any) -> Any:
        return self.get(group, _EMPTY)

    def __contains__(self, group: object) -> bool:
        return group in self.first or group in self.second

    def __len__(self) -> int:
        return len(self.first) + sum(1 for g in self.second if g not in self.first)

    def __iter__(self) -> Iterator[Any]:
        yield from self.first
        yield from (g for g in self.second if g not in self.first)

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]
        for group in self:
            yield group, self.get(group)


class _Empty(CounterOps, Mapping):
    """An empty count mapping (a missing group)."""

    def get(self, key: Any, default: Any = None) -> Any:
        return default

    def __getitem__(self, key: Any) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[Any]:
        return iter(())


_EMPTY = _Empty()


class SummedCounts(CounterOps, Mapping):
    """``first`` + ``second`` (count mappings) as a ``Counter`` updated with ``first``, then
    ``second``, would hold them: a key's value is the sum of its counts, and iteration gives
    ``first``'s keys in order, then those only ``second`` has, in its order. Neither is
    copied; a missing key's ``[]`` is 0."""

    def __init__(self, first: Mapping, second: Mapping):
        self.first, self.second = first, second
        self._only_second: list | None = None
        self._memo: dict[Any, int | None] = {}  # of lookups (bounded: _MEMO_SIZE)

    def _extra(self) -> list:
        if self._only_second is None:
            keys = list(self.second)
            find = getattr(self.first, "find_many", None)
            if find is not None:  # one vectorised search, not a lookup per key
                self._only_second = [k for k, j in zip(keys, find(keys)) if j < 0]
            else:
                first = self.first
                if isinstance(first, GroupView) and first._length <= _GROUP_MEMO:
                    first = first._positions()  # a dict of its keys: no call per key
                self._only_second = [k for k in keys if k not in first]
        return self._only_second

    def get(self, key: Any, default: Any = None) -> Any:
        memo = self._memo
        try:
            found = memo[key]
        except KeyError:
            a, b = self.first.get(key), self.second.get(key)
            found = None if a is None and b is None else (a or 0) + (b or 0)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[key] = found
        except TypeError:  # unhashable: never a key
            return default
        return default if found is None else found

    def __getitem__(self, key: Any) -> int:
        return self.get(key, 0)

    def __contains__(self, key: object) -> bool:
        try:
            found = self._memo[key]
        except (KeyError, TypeError):
            return key in self.first or key in self.second
        return found is not None

    def __len__(self) -> int:
        return len(self.first) + len(self._extra())

    def __iter__(self) -> Iterator[Any]:
        return chain(self.first, self._extra())

    def items(self) -> Iterator[tuple[Any, int]]:  # type: ignore[override]
        second = self.second
        for key, count in self.first.items():
            yield key, count + second.get(key, 0)
        for key in self._extra():
            yield key, second[key]

    def values(self) -> Iterator[int]:  # type: ignore[override]
        return (count for _, count in self.items())


__all__ = [
    "MAGIC",
    "CountsTable",
    "GroupView",
    "GroupedTable",
    "StoreError",
    "SummedCounts",
    "SummedGroups",
    "encode_key",
    "grouped_sections",
    "is_store",
    "key_hash",
    "open_store",
    "write_store",
]
