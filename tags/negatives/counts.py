"""The counting pass as map + merge: corpus counts per shard, summed into one file.

The edit planner and the vocabulary refill of ``tags generate`` need counts over the whole
corpus (its vocabulary pass: :class:`~tags.negatives.vocabulary.SceneGraphVocabulary`, scene
counts included). Counts add up, so any engine can compute them in parts:

- **map**: :func:`count_groups` over one shard of image groups, or :class:`CountBatch` over
  one batch of caption rows (:mod:`tags.negatives.columns`; one output row per batch, the
  partial counts as a JSON string), with whole images in one part;
- **merge**: :func:`merge_counts` sums the parts (files, JSON strings, mappings or
  vocabularies); :meth:`~tags.negatives.vocabulary.SceneGraphVocabulary.save` writes the
  file the generation workers load, identical byte for byte to the one a single pass writes
  (``tags generate``'s ``OUT.vocab.json``; usable there with ``--vocab``).
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tags.core.io import InputError
from tags.core.types import ImageGroup
from tags.negatives.columns import groups_of, to_lists
from tags.negatives.vocabulary import SceneGraphVocabulary

#: The column :class:`CountBatch` writes.
COUNTS_COLUMN = "counts"


def count_groups(
    groups: Iterable[ImageGroup],
    *,
    parser: Any = None,
    n_process: int = 1,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> SceneGraphVocabulary:
    """The counts of ``groups`` as ``tags generate``'s vocabulary pass makes them: every
    caption parsed (whitespace collapsed), counted, and each image's captions counted
    together; images without captions count nothing. ``progress`` wraps the stream of
    parses (e.g. a ``tqdm`` bar)."""
    if parser is None:
        from tags.negatives.pipeline import default_parser

        parser = default_parser()
    sizes: deque[int] = deque()  # captions per image, read ahead of the parses

    def texts() -> Iterator[str]:
        for group in groups:
            if group.captions:
                sizes.append(len(group.captions))
                yield from (" ".join(c.text.split()) for c in group.captions)

    def regrouped(graphs: Iterator[Any]) -> Iterator[list[Any]]:
        for first in graphs:
            yield [first, *itertools.islice(graphs, sizes.popleft() - 1)]

    graphs: Iterable[Any] = parser.pipe(texts(), n_process=n_process)
    if progress is not None:
        graphs = progress(graphs)
    return SceneGraphVocabulary().update_groups(regrouped(iter(graphs)))


def corpus_vocabulary(
    path: str | Path,
    groups: Callable[[], Iterable[ImageGroup]],
    *,
    reuse: bool,
    parser: Any = None,
    n_process: int = 1,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    warn: Callable[[str], None] | None = None,
) -> SceneGraphVocabulary:
    """The vocabulary of the whole corpus: read from ``path`` when ``reuse`` and it exists
    (another schema: :class:`~tags.core.io.InputError` naming the file), else counted over
    ``groups()`` (:func:`count_groups`) and saved to ``path``; a file cut short is counted
    again (``warn`` says so)."""
    from tags.negatives.vocabulary import read_vocabulary

    path = Path(path)
    if path.exists() and reuse:
        found = read_vocabulary(path)
        if found is not None:
            return found
        if warn is not None:
            warn(f"warning: vocabulary {path} is not valid JSON (cut short); rebuilding it")
    vocab = count_groups(groups(), parser=parser, n_process=n_process, progress=progress)
    vocab.save(path)
    return vocab


def _as_vocabulary(part: Any, index: int) -> SceneGraphVocabulary:
    if isinstance(part, SceneGraphVocabulary):
        return part
    if isinstance(part, (os.PathLike, Path)):
        return SceneGraphVocabulary.load(part)
    if isinstance(part, str):
        if part.lstrip().startswith("{"):
            try:
                part = json.loads(part)
            except ValueError as err:
                raise InputError(f"counts part {index}: not valid JSON ({err})") from None
        else:
            return SceneGraphVocabulary.load(part)
    if isinstance(part, Mapping):
        return SceneGraphVocabulary.from_dict(dict(part), f"counts part {index}")
    raise TypeError(f"counts part {index}: {type(part).__name__} is not a counts file or mapping")


def merge_counts(parts: Iterable[Any]) -> SceneGraphVocabulary:
    """The sum of counting-pass parts: vocabulary files (paths), JSON strings (the
    :class:`CountBatch` column), mappings or :class:`SceneGraphVocabulary` objects. The
    result does not depend on how the corpus was cut nor on the order of the parts."""
    total: SceneGraphVocabulary | None = None
    for index, part in enumerate(parts):
        vocab = _as_vocabulary(part, index)
        if total is None:
            total = SceneGraphVocabulary(min_count=vocab.min_count, min_pool=vocab.min_pool)
        elif (vocab.min_count, vocab.min_pool) != (total.min_count, total.min_pool):
            raise InputError(
                f"counts part {index}: min_count/min_pool {vocab.min_count}/{vocab.min_pool} "
                f"differ from the first part's {total.min_count}/{total.min_pool}"
            )
        for key, counter in vocab.counts.items():
            total.counts.setdefault(key, Counter()).update(counter)
        total.scenes.update(vocab.scenes)
    return total if total is not None else SceneGraphVocabulary()


class CountBatch:
    """The map step for a data engine: caption rows in (image or caption rows, whole
    images per row), one row out per batch holding the batch's counts as a JSON string
    (column :data:`COUNTS_COLUMN`), in the batch's layout. Picklable; the parser loads on
    the first call in each process. Sum the rows with :func:`merge_counts`."""

    def __call__(self, batch: Any) -> Any:
        columns, layout = to_lists(batch)
        vocab = count_groups(groups_of(columns))
        text = json.dumps(vocab.to_dict(), ensure_ascii=False)
        if layout == "mapping":
            return {COUNTS_COLUMN: [text]}
        if layout == "pandas":
            import pandas as pd

            return pd.DataFrame({COUNTS_COLUMN: [text]})
        import pyarrow as pa

        return pa.table({COUNTS_COLUMN: pa.array([text], pa.large_string())})


__all__ = ["COUNTS_COLUMN", "CountBatch", "corpus_vocabulary", "count_groups", "merge_counts"]
