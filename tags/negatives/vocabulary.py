"""The corpus's own scene-graph vocabulary, for typed substitution without model weights.

Every object, attribute and relation surface form found in the corpus is counted in a pool
keyed by its type and a coarse grammatical *form*, so substitutes fit the sentence: plural
objects replace plural objects, numbers replace numbers, colours colours, ``-ing`` relations
``-ing`` relations, and a relation written in two pieces ("running ... in front of") is
replaced by another two-piece relation. Sampling is frequency-weighted.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from parsers import SceneGraph
from tags.core.io import InputError
from tags.negatives.lexicon import ATTRIBUTE_CLASSES
from tags.negatives.masking import trim_units
from tags.negatives.scenes import SceneCounts
from tags.negatives.store import StoreError, is_store, open_store, write_store

Surface = tuple[str, ...]

#: The ``kind`` in the header of a vocabulary's counts store.
STORE_KIND = "tags vocabulary"
#: The layout of the planner's index in a store (:meth:`SceneCounts.index_tables`); a
#: store without it (or of another) has its index built per process, as before.
INDEX_FORMAT = 1
_SCENE_FIELDS = SceneCounts._FIELDS

_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")

#: Number words and colours of the unconstrained refill's pools (the planner's attribute
#: classes, plus the vaguer words those pools also hold).
NUMBER_WORDS = ATTRIBUTE_CLASSES["number"] | {"some", "couple", "dozen"}
COLOURS = ATTRIBUTE_CLASSES["colour"] | {"dark", "light", "bright", "multicolored", "colorful"}
IRREGULAR_PLURALS = frozenset(
    [
        "men",
        "women",
        "people",
        "children",
        "feet",
        "teeth",
        "mice",
        "geese",
        "police",
        "cattle",
        "sheep",
        "deer",
        "fish",
    ]
)


#: Object surfaces that are not things one can see (pronouns, indefinites): never substitutes.
NON_OBJECTS = frozenset(
    {"it", "him", "her", "them", "he", "she", "they", "you", "me", "us", "one", "something"}
    | {"someone", "somebody", "anything", "anyone", "everything", "everyone", "nothing"}
)


def normalize(text: str) -> str:
    """Lower-cased, whitespace-collapsed surface text."""
    return " ".join(text.lower().split())


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (punctuation dropped)."""
    return _WORD_RE.findall(text.lower())


def is_plural(text: str) -> bool:
    """Heuristic grammatical number of a noun phrase head (its last word)."""
    tokens = words(text)
    if not tokens:
        return False
    last = tokens[-1]
    if last in IRREGULAR_PLURALS or last.endswith(("men", "people")):
        return True
    return len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is"))


def unit_form(unit_type: str, surface: Surface) -> str:
    """The pool a unit's surface belongs to, e.g. ``object:plural`` or ``relation:2:ing``."""
    text = " ".join(surface)
    first = (words(text) or [""])[0]
    if unit_type == "object":
        return "object:plural" if is_plural(text) else "object:singular"
    if unit_type == "attribute":
        if first.isdigit() or first in NUMBER_WORDS:
            return "attribute:number"
        return "attribute:colour" if first in COLOURS else "attribute:other"
    if unit_type == "relation":
        shape = "ing" if first.endswith("ing") else "s" if first.endswith("s") else "base"
        return f"relation:{len(surface)}:{shape}"
    return unit_type


@dataclass
class _Pool:
    items: list[Surface]
    cumulative: list[int]

    @classmethod
    def from_counts(cls, counts: Counter) -> _Pool:
        items = sorted(counts, key=lambda s: (-counts[s], s))
        return cls(items, list(accumulate(counts[s] for s in items)))

    def sample(self, rng: random.Random) -> Surface:
        return self.items[bisect.bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]


def draw(pool: _Pool | None, normal: Surface, rng: random.Random, tries: int = 8) -> Surface | None:
    """A surface from ``pool`` other than ``normal`` with as many pieces (``None`` if none)."""
    if pool is None:
        return None
    for _ in range(tries):
        surface = pool.sample(rng)
        if surface != normal and len(surface) == len(normal):
            return surface
    return None


@dataclass
class SceneGraphVocabulary:
    """Counts of unit surfaces by form; build with :meth:`update`, then :meth:`sample`.

    Args:
        min_count: surfaces seen fewer times are left out of the pools (parse noise).
        min_pool: a form pool smaller than this falls back to the type's whole pool.
    """

    min_count: int = 1
    min_pool: int = 5
    counts: dict[str, Counter] = field(default_factory=dict)
    #: Surfaces and combinations the corpus attests (for plausible minimal edits).
    scenes: SceneCounts = field(default_factory=SceneCounts)
    _pools: dict[str, _Pool | None] | None = field(default=None, init=False, repr=False)

    # ---------------------------------------------------------------- building
    def add(self, unit_type: str, surface: Surface, count: int = 1) -> None:
        surface = tuple(normalize(s) for s in surface)
        if not surface or not all(surface):
            return
        if unit_type == "object" and surface[0] in NON_OBJECTS:
            return
        for key in dict.fromkeys((unit_form(unit_type, surface), unit_type)):
            self.counts.setdefault(key, Counter())[surface] += count
        self._pools = None

    def add_graph(self, graph: SceneGraph) -> None:
        """Count the units of one parsed caption (and its words, for word masking)."""
        self.scenes.add_graph(graph)
        for unit_type, spans in trim_units(graph.units(), graph.caption):
            self.add(unit_type, tuple(graph.caption[s:e] for s, e in spans))
        for word in words(graph.caption):
            if word.isalpha():
                self.add("word", (word,))

    def update(self, graphs: Iterable[SceneGraph]) -> SceneGraphVocabulary:
        for graph in graphs:
            self.add_graph(graph)
        return self

    def update_groups(self, groups: Iterable[Sequence[SceneGraph]]) -> SceneGraphVocabulary:
        """Count image groups: every caption as :meth:`update` does, and which objects the
        captions of one image name across captions (:meth:`SceneCounts.add_group`)."""
        for graphs in groups:
            self.update(graphs)
            self.scenes.add_group(graphs)
        return self

    def __len__(self) -> int:
        return sum(len(self.counts.get(t, ())) for t in ("object", "attribute", "relation"))

    # ---------------------------------------------------------------- sampling
    def _pool(self, key: str) -> _Pool | None:
        """The sampling pool of one form or type, built on its first use (a process builds
        only the pools it draws from)."""
        if self._pools is None:
            self._pools = {}
        try:
            return self._pools[key]
        except KeyError:
            pass
        counts = self.counts.get(key)
        kept = Counter({s: c for s, c in counts.items() if c >= self.min_count}) if counts else None
        found = self._pools[key] = _Pool.from_counts(kept) if kept else None
        return found

    def pool_for(self, unit_type: str, original: Surface) -> tuple[_Pool | None, Surface]:
        """The pool substitutes of ``original`` come from, and its normalised surface."""
        normal = tuple(normalize(s) for s in original)
        pool = self._pool(unit_form(unit_type, normal))
        if pool is None or len(pool.items) < self.min_pool:
            pool = self._pool(unit_type)
        return pool, normal

    def sample(
        self, unit_type: str, original: Surface, rng: random.Random, tries: int = 8
    ) -> Surface | None:
        """A frequency-weighted substitute of the same type and form, different from
        ``original`` (case-insensitive); ``None`` when the pools offer none."""
        return draw(*self.pool_for(unit_type, original), rng, tries)

    # ---------------------------------------------------------------- storage
    def to_dict(self) -> dict:
        """The JSON mapping :meth:`save` writes (sorted: the same counts give the same
        mapping whatever order they were counted in); :meth:`from_dict` reads it."""
        return {
            "min_count": self.min_count,
            "min_pool": self.min_pool,
            "counts": {
                key: [[list(s), c] for s, c in sorted(counter.items(), key=lambda x: (-x[1], x[0]))]
                for key, counter in sorted(self.counts.items())
            },
            "scenes": self.scenes.to_dict(),
        }

    def save(self, path: str | Path) -> None:
        data = self.to_dict()
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        try:  # a temporary file + os.replace: a kill or a full disk never leaves half a file
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def save_store(self, path: str | Path, facts: bool = True) -> int:
        """Write these counts as a memory-mapped store (:mod:`tags.negatives.store`), every
        table in its present iteration order (a vocabulary read from a JSON file: the
        file's order, so generation from either gives the same negatives); its size in
        bytes. :meth:`load` and ``tags generate --vocab`` read it. The planner's index of
        the counts (:meth:`~tags.negatives.scenes.SceneCounts.index_tables`) is written
        too, grouped, so each process reads it from the mapped file. With ``facts`` (and
        WordNet installed) the store also keeps WordNet's answers for the corpus's object
        names (:func:`~tags.negatives.wordnet.word_facts`), so the planner of each process
        reads them from the mapped file instead of building WordNet synsets for them."""
        tables = {f"counts/{key}": counter for key, counter in self.counts.items()}
        tables.update({f"scenes/{name}": getattr(self.scenes, name) for name in _SCENE_FIELDS})
        meta = {"kind": STORE_KIND, "min_count": self.min_count, "min_pool": self.min_pool}
        if all(isinstance(getattr(self.scenes, name), Counter) for name in _SCENE_FIELDS):
            tables.update(self.scenes.index_tables())  # the planner's index, grouped
            meta["index"] = INDEX_FORMAT
        if facts:
            from tags.negatives.scenes import fact_words
            from tags.negatives.wordnet import WordNet, fingerprint, word_facts, wordnet

            service = wordnet()
            if isinstance(service, WordNet):
                packed, categories, lexnames = word_facts(service, fact_words(self.scenes))
                tables["wordnet/facts"] = packed
                tables["wordnet/categories"] = categories
                tables["wordnet/lexnames"] = lexnames
                meta["wordnet"] = fingerprint(service)
        return write_store(path, tables, meta)

    @classmethod
    def from_store(cls, path: str | Path) -> SceneGraphVocabulary:
        """The vocabulary of a store :meth:`save_store` wrote, its tables mapped read-only
        (:class:`~tags.negatives.store.CountsTable`: shared by every process that opens
        it); :class:`~tags.negatives.store.StoreError` naming the file otherwise."""
        meta, tables = open_store(path)
        if meta.get("kind") != STORE_KIND:
            raise StoreError(f"{path}: a counts store of another kind ({meta.get('kind')!r})")
        vocab = cls(min_count=int(meta["min_count"]), min_pool=int(meta["min_pool"]))
        for name, table in tables.items():
            kind, _, key = name.partition("/")
            if kind == "counts":
                vocab.counts[key] = table  # type: ignore[assignment]
            elif kind == "scenes" and key in _SCENE_FIELDS:
                setattr(vocab.scenes, key, table)
        if meta.get("index") == INDEX_FORMAT:
            from tags.negatives.scenes import INDEX_FLAT, INDEX_GROUPS
            from tags.negatives.store import GroupedTable

            stored: dict[str, Any] = {
                name: GroupedTable(tables[f"index/{name}"], tables[f"index/{name}/groups"])
                for name in INDEX_GROUPS
            }
            stored.update({name: tables[f"index/{name}"] for name in INDEX_FLAT})
            vocab.scenes.stored_index = stored
        if meta.get("wordnet") and "wordnet/facts" in tables:
            from tags.negatives.scenes import WordFacts

            def names(table: Any) -> tuple[str, ...]:  # numbered from 1, in that order
                return tuple(key for key, _ in sorted(table.items(), key=lambda kv: kv[1]))

            vocab.scenes.facts = WordFacts(
                tables["wordnet/facts"],
                names(tables["wordnet/categories"]),
                names(tables["wordnet/lexnames"]),
                str(meta["wordnet"]),
            )
        return vocab

    @classmethod
    def load(cls, path: str | Path) -> SceneGraphVocabulary:
        """A vocabulary :meth:`save` wrote; anything else is an
        :class:`~tags.core.io.InputError` naming the file (:func:`read_vocabulary`
        tells a file cut short apart)."""
        found = read_vocabulary(path)
        if found is None:
            raise InputError(f"{path}: not valid JSON (cut short?): not a tags vocabulary")
        return found

    @classmethod
    def from_dict(cls, data: dict, where: str = "vocabulary") -> SceneGraphVocabulary:
        """The vocabulary of :meth:`save`'s mapping (``InputError`` naming ``where``)."""
        try:
            vocab = cls(
                min_count=int(data.get("min_count", 1)), min_pool=int(data.get("min_pool", 5))
            )
            for key, items in data["counts"].items():
                vocab.counts[str(key)] = Counter({tuple(s): int(c) for s, c in items})
            vocab.scenes = SceneCounts.from_dict(data.get("scenes", {}))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"{where}: not a tags vocabulary JSON ({type(err).__name__}: {err}); pass the "
                "file tags generate saved (--vocab), or a new path to build one there"
            ) from None
        return vocab


def read_vocabulary(path: str | Path) -> SceneGraphVocabulary | None:
    """The vocabulary saved at ``path``; ``None`` when the file is not JSON at all (cut
    short by a kill or a full disk before writes were atomic: rebuild it); a JSON file of
    another schema, or a file that no vocabulary starts like (not a JSON object: binary, some
    other text), is an :class:`~tags.core.io.InputError` naming it (never rebuilt over). A
    counts store (:meth:`SceneGraphVocabulary.save_store`) is opened as one."""
    if is_store(path):
        return SceneGraphVocabulary.from_store(path)
    raw = Path(path).read_bytes()
    if not raw.lstrip().startswith(b"{"):
        raise InputError(
            f"{path}: not a tags vocabulary JSON (it does not start with a JSON object); pass "
            "a vocabulary that tags generate saved, or a path that does not exist yet"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):  # JSONDecodeError is a ValueError
        return None
    return SceneGraphVocabulary.from_dict(data, str(path))


__all__ = [
    "SceneGraphVocabulary",
    "draw",
    "is_plural",
    "normalize",
    "read_vocabulary",
    "unit_form",
    "words",
]
