"""Pruning corpus counts: drop the rare combinations that make the counts grow with the corpus.

The counts of single things (object, attribute and relation surfaces, words, verbs, the
per-image totals) grow slowly with the corpus; the counts of *combinations* (word pairs,
(subject, predicate, object) triples, objects seen together, the names of one image's
captions) grow almost as fast as the corpus itself, and most of their entries are seen once
(on Flickr30K test, 67 % of the object pairs across the captions of one image). Pruning drops
the combinations seen fewer than ``min_count`` times from the tables named (by default every
combination table, :data:`PRUNABLE`), keeping the single-thing counts whole, so substitutes'
surfaces and every denominator stay the same.

Pruning changes what the planner decides (an entry seen once is weak evidence, but evidence);
``docs/generate.md`` gives its measured effect. ``tags counts prune`` applies it to a counts
file; generation from the pruned file (``--vocab``) then needs less memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tags.negatives.scenes import SceneCounts
from tags.negatives.vocabulary import SceneGraphVocabulary

#: The combination tables of :class:`SceneCounts` that pruning may thin.
#: Word pairs (``bigrams``) are not among them: the bigram model's smoothing needs every
#: pair of a word it has seen.
PRUNABLE: tuple[str, ...] = (
    "triples",
    "subject_predicate",
    "predicate_object",
    "attribute_object",
    "cooccurrence",
    "verb_object",
    "codescription",
    "verb_codescription",
)


def check_tables(tables: Iterable[str]) -> tuple[str, ...]:
    """``tables`` as a tuple; ``ValueError`` naming any that is not in :data:`PRUNABLE`."""
    tables = tuple(tables)
    unknown = [t for t in tables if t not in PRUNABLE]
    if unknown or not tables:
        raise ValueError(
            f"cannot prune {', '.join(unknown) or 'no table'}: choose among {', '.join(PRUNABLE)}"
        )
    return tables


def prune_counts(
    vocabulary: SceneGraphVocabulary, min_count: int, tables: Iterable[str] = PRUNABLE
) -> tuple[SceneGraphVocabulary, dict[str, tuple[int, int]]]:
    """A copy of ``vocabulary`` whose ``tables`` keep only entries seen ``min_count`` times
    or more, and per table (entries before, entries kept). ``min_count`` 1 keeps everything.
    The input is not changed."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    tables = check_tables(tables)
    scenes = SceneCounts()
    kept: dict[str, tuple[int, int]] = {}
    for name in SceneCounts._FIELDS:
        counter: Counter = getattr(vocabulary.scenes, name)
        if name in tables:
            pruned = Counter({k: c for k, c in counter.items() if c >= min_count})
            kept[name] = (len(counter), len(pruned))
        else:
            pruned = Counter(counter)
        setattr(scenes, name, pruned)
    out = SceneGraphVocabulary(min_count=vocabulary.min_count, min_pool=vocabulary.min_pool)
    out.counts = {key: Counter(counter) for key, counter in vocabulary.counts.items()}
    out.scenes = scenes
    return out, kept


__all__ = ["PRUNABLE", "check_tables", "prune_counts"]
