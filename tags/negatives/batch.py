"""The engine-neutral batch function: caption rows in, negative rows out.

:class:`GenerateBatch` runs the weight-free generation of ``tags generate`` (the edit planner
with the corpus's counts plus a background, typed substitution from the corpus vocabulary,
swaps; no ``--model``/``--mlm``/``--plausibility-lm``) over one batch of a data engine's
batched map: Hugging Face ``datasets`` (``Dataset.map(fn, batched=True, num_proc=N)``), Ray
Data (``ds.map_batches(...)``) or a plain loop. Its contract:

- **picklable**: it holds plain settings and the counts (a file path, a loaded
  :class:`~tags.negatives.vocabulary.SceneGraphVocabulary` or a Ray object reference); the
  parser, WordNet and the planner are built on the first call in each process (once per
  process for a path: every instance with the same file and settings shares them);
- **columns in, columns out**: input rows as in :mod:`tags.negatives.columns` (image rows
  or caption rows), output rows the JSON Lines records of ``tags generate``, one per
  negative, in input order, in the batch's own layout (mapping, pandas or pyarrow);
- **deterministic and batch-independent**: a caption's negatives come from the run seed and
  its caption id (:func:`~tags.negatives.pipeline.caption_seed`) and its image's other
  captions, never from the other rows of the batch or the batch size, so they equal the
  records ``tags generate`` writes for it with the same counts and settings.

The counts are the vocabulary file of the whole corpus (``tags generate``'s
``OUT.vocab.json``, or the merged counting pass of :mod:`tags.negatives.counts`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tags.core.io import InputError
from tags.negatives.columns import (
    LABEL_COLUMNS,
    RECORD_COLUMNS,
    caption_items,
    from_lists,
    groups_of,
    to_lists,
)
from tags.negatives.config import PRESET_FIELDS, PRESETS, GenerationConfig

#: Captions per pass through the generator inside one call (no effect on the output).
_CHUNK = 256


def _batch_config(preset: str, **options: Any) -> GenerationConfig:
    """``tags generate``'s config for these options: the preset's instance with the options
    given over it (:data:`~tags.negatives.config.PRESET_FIELDS` left ``None`` come from the
    preset: ``max_edits``, ``swaps``, ``adds``, ``unconstrained``);
    a preset that refills with a masked LM is refused."""
    if preset not in PRESETS:
        raise InputError(f"preset {preset!r}: choose from {', '.join(sorted(PRESETS))}")
    if PRESETS[preset].unconstrained:
        raise InputError(
            f"preset {preset!r} refills with a masked LM, which the weight-free batch "
            "function does not run; use tags generate --model/--mlm"
        )
    given = {k: v for k, v in options.items() if not (v is None and k in PRESET_FIELDS)}
    return GenerationConfig.from_preset(preset, **{"batch_size": _CHUNK, **given})


@dataclass(frozen=True)
class BatchSettings:
    """The weight-free settings of ``tags generate``: its :class:`GenerationConfig` and
    the label tokenizer.

    Build them from the options with :meth:`of` (``GenerateBatch(counts, **options)`` does):
    ``preset`` (``minimal`` or ``multi-unit``) and any :class:`GenerationConfig` field over
    it, as ``tags generate``'s options (``num_copies``: ``--k``, ``num_samples``: ``--l``,
    ``swaps=False``: ``--no-swaps``, ``background``: ``"factual"``, a counts file or
    ``None``, ``noun_classes``: the mapping the ``--noun-classes`` file holds...), and
    ``tokenizer`` (a tokenizer directory: records carry WoD/WoC labels).
    """

    generation: GenerationConfig = field(default_factory=lambda: _batch_config("minimal"))
    tokenizer: str | None = None

    @classmethod
    def of(
        cls, preset: str = "minimal", tokenizer: str | None = None, **options: Any
    ) -> BatchSettings:
        """Settings from ``tags generate``'s options (see the class docstring)."""
        return cls(_batch_config(preset, **options), tokenizer)


#: (counts file, mtime, size, settings) -> (process id, generator): one engine per process.
_ENGINES: dict[tuple, list] = {}


def _fresh_in_this_process(entry: list) -> Any:
    """The generator of a cache entry; after a fork, WordNet gets its own file handles."""
    if entry[0] != os.getpid():
        from tags.negatives.wordnet import wordnet

        if wordnet.cache_info().currsize:
            wordnet().after_fork()
        entry[0] = os.getpid()
    return entry[1]


def _build(vocabulary: Any, settings: BatchSettings) -> Any:
    """The :class:`~tags.negatives.pipeline.NegativeGenerator` ``tags generate`` builds for
    the weight-free refill with these settings, over ``vocabulary``'s counts."""
    from tags.negatives.factory import create_generator, edit_planner

    config = settings.generation
    try:
        planner = edit_planner(config, vocabulary)
    except ValueError as err:
        raise InputError(f"background: {err}") from None
    tokenizer = None
    if settings.tokenizer:
        from tags.backends.masked_lm import load_tokenizer

        tokenizer = load_tokenizer(settings.tokenizer)
    return create_generator(
        config, vocabulary=vocabulary, planner=planner, label_tokenizer=tokenizer
    )


def _load(path: Path) -> Any:
    from tags.negatives.vocabulary import SceneGraphVocabulary

    if not path.is_file():
        raise InputError(
            f"counts {path}: not found; pass the vocabulary file of the whole corpus (tags "
            "generate's OUT.vocab.json or tags.negatives.counts.merge_counts' output)"
        )
    return SceneGraphVocabulary.load(path)


def _is_object_ref(value: Any) -> bool:
    return type(value).__name__ == "ObjectRef" and type(value).__module__.startswith("ray")


class GenerateBatch:
    """Hard negatives of a batch of caption rows (see the module docstring).

    Args:
        counts: the corpus counts: a vocabulary JSON path (loaded once per process), a
            :class:`~tags.negatives.vocabulary.SceneGraphVocabulary`, or a Ray
            ``ObjectRef`` of one (``ray.put``; fetched once per instance).
        **options: ``tags generate``'s settings (:meth:`BatchSettings.of`), or
            ``settings=BatchSettings(...)``.

    Example::

        fn = GenerateBatch("corpus.vocab.json", seed=0)
        negatives = dataset.map(fn, batched=True, num_proc=8, remove_columns=dataset.column_names)
    """

    def __init__(self, counts: Any, settings: BatchSettings | None = None, **options: Any):
        if settings is not None and options:
            raise TypeError("pass settings= or keyword settings, not both")
        self.settings = settings or BatchSettings.of(**options)
        if isinstance(counts, (str, os.PathLike)):
            counts = str(Path(counts).resolve())
        self.counts = counts
        self._generator: list | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The output columns."""
        return RECORD_COLUMNS + (LABEL_COLUMNS if self.settings.tokenizer else ())

    def generator(self) -> Any:
        """This process's :class:`~tags.negatives.pipeline.NegativeGenerator` (built on the
        first call; its ``stats`` count the captions this process has run)."""
        if isinstance(self.counts, str):
            path = Path(self.counts)
            stat = path.stat() if path.is_file() else None
            key = (self.counts, stat and stat.st_mtime_ns, stat and stat.st_size, self.settings)
            entry = _ENGINES.get(key)
            if entry is None:
                entry = [os.getpid(), _build(_load(path), self.settings)]
                if len(_ENGINES) >= 2:
                    _ENGINES.clear()
                _ENGINES[key] = entry
            return _fresh_in_this_process(entry)
        if self._generator is None:
            counts = self.counts
            if _is_object_ref(counts):
                import ray

                counts = ray.get(counts)
            self._generator = [os.getpid(), _build(counts, self.settings)]
        return _fresh_in_this_process(self._generator)

    def records(self, batch: Any) -> Iterable[dict[str, Any]]:
        """The records of a batch as ``tags generate`` writes them (one dict each)."""
        return self._records(to_lists(batch)[0])

    def _records(self, columns: dict[str, list]) -> Iterable[dict[str, Any]]:
        results = self.generator().generate_for(caption_items(groups_of(columns)))
        for result in results:
            for record in result.records:
                yield record.to_dict()

    def __call__(self, batch: Any) -> Any:
        """Negative rows of ``batch``, in its layout."""
        columns, layout = to_lists(batch)
        out: dict[str, list] = {name: [] for name in self.columns}
        for record in self._records(columns):
            for name, values in out.items():
                values.append(record[name])
        return from_lists(out, layout, like=batch if layout == "pyarrow" else None)

    def __getstate__(self) -> dict[str, Any]:
        # the counts file's size and time ride along, so a cache keyed by the pickled
        # function (datasets' map fingerprint) sees a rebuilt counts file as a change
        stamp = None
        if isinstance(self.counts, str) and Path(self.counts).is_file():
            stat = Path(self.counts).stat()
            stamp = (stat.st_size, stat.st_mtime_ns)
        return {"settings": self.settings, "counts": self.counts, "stamp": stamp}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.settings, self.counts = state["settings"], state["counts"]
        self._generator = None


__all__ = ["BatchSettings", "GenerateBatch"]
