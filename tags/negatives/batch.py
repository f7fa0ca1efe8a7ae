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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from tags.negatives.columns import (
    LABEL_COLUMNS,
    RECORD_COLUMNS,
    caption_items,
    from_lists,
    groups_of,
    to_lists,
)
from tags.negatives.io import InputError

#: Captions per pass through the generator inside one call (no effect on the output).
_CHUNK = 256


@dataclass(frozen=True)
class BatchSettings:
    """The weight-free settings of ``tags generate``; defaults are its defaults.

    Attributes mirror the options: ``preset`` (``minimal`` or ``multi-unit``: the values of
    ``max_edits``, ``swaps`` and the preset's other switches that are left ``None`` come from
    ``tags generate``'s own preset table), ``num_copies`` (``--k``), ``num_samples``
    (``--l``), ``top_m``, ``max_edits``, ``swaps`` (``--no-swaps``: False), ``adds``
    (``--no-adds``: False), ``role_swaps``,
    ``unconstrained``, ``masking``, ``mask_ratio``, ``max_tokens``, ``seed``,
    ``background`` (``"factual"``, a counts file, or ``None`` for none), ``noun_classes``
    (``{class: [noun, ...]}``, as the ``--noun-classes`` file holds) and ``tokenizer`` (a
    tokenizer directory: records carry WoD/WoC labels).
    """

    preset: str = "minimal"
    num_copies: int = 20
    num_samples: int = 20
    top_m: int = 31
    max_edits: int | None = None
    swaps: bool | None = None
    adds: bool | None = None
    role_swaps: bool = False
    unconstrained: bool = False
    masking: str = "unit"
    mask_ratio: float = 0.15
    max_tokens: int = 64
    seed: int = 0
    background: str | None = "factual"
    noun_classes: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    tokenizer: str | None = None

    def __post_init__(self) -> None:
        classes = self.noun_classes
        if isinstance(classes, Mapping):  # hashable, so settings can key the engine cache
            classes = tuple((str(k), tuple(v)) for k, v in sorted(classes.items()))
            object.__setattr__(self, "noun_classes", classes)
        if self.background is not None and str(self.background).lower() == "none":
            object.__setattr__(self, "background", None)

    def resolved(self) -> dict[str, Any]:
        """The preset's values with the settings given here over them, as ``tags generate``
        fills its options from ``--preset`` (``max_edits``, ``swaps``, ...)."""
        from tags.negatives.presets import PRESETS

        if self.preset not in PRESETS:
            raise InputError(f"preset {self.preset!r}: choose from {', '.join(sorted(PRESETS))}")
        values = dict(PRESETS[self.preset])
        if values.get("unconstrained"):
            raise InputError(
                f"preset {self.preset!r} refills with a masked LM, which the weight-free batch "
                "function does not run; use tags generate --model/--mlm"
            )
        for key in ("max_edits", "swaps", "adds"):
            if getattr(self, key) is not None:
                values[key] = getattr(self, key)
        values["unconstrained"] = self.unconstrained
        return values


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


def build_generator(vocabulary: Any, settings: BatchSettings) -> Any:
    """The :class:`~tags.negatives.pipeline.NegativeGenerator` ``tags generate`` builds for
    the weight-free refill with these settings, over ``vocabulary``'s counts."""
    from tags.negatives.background import with_background
    from tags.negatives.pipeline import GenerationConfig, NegativeGenerator, default_parser
    from tags.negatives.planner import EditPlanner
    from tags.negatives.refill import VocabularyRefiller

    values = settings.resolved()
    switches = {f.name for f in fields(GenerationConfig)} - {"batch_size"}
    if values.get("adds") and "adds" not in switches:
        raise InputError("adds: this version of tags has no add edits")
    config = GenerationConfig(
        num_copies=settings.num_copies,
        num_samples=settings.num_samples,
        top_m=settings.top_m,
        mask_ratio=settings.mask_ratio,
        role_swaps=settings.role_swaps,
        masking=settings.masking,
        max_tokens=settings.max_tokens,
        batch_size=_CHUNK,
        seed=settings.seed,
        **{k: v for k, v in values.items() if k in switches},  # max_edits, swaps, ...
    )
    planner = None
    if not values["unconstrained"] and settings.masking == "unit":
        try:
            scenes = with_background(vocabulary.scenes, settings.background)
        except ValueError as err:
            raise InputError(f"background: {err}") from None
        classes = dict(settings.noun_classes) if settings.noun_classes else None
        planner = EditPlanner(scenes, noun_classes=classes)
    tokenizer = None
    if settings.tokenizer:
        from tags.negatives.models import load_tokenizer

        tokenizer = load_tokenizer(settings.tokenizer)
    return NegativeGenerator(
        VocabularyRefiller(vocabulary, num_samples=settings.num_samples),
        config,
        parser=default_parser(),
        planner=planner,
        label_tokenizer=tokenizer,
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
        **settings: :class:`BatchSettings` fields (or ``settings=BatchSettings(...)``).

    Example::

        fn = GenerateBatch("corpus.vocab.json", seed=0)
        negatives = dataset.map(fn, batched=True, num_proc=8, remove_columns=dataset.column_names)
    """

    def __init__(self, counts: Any, settings: BatchSettings | None = None, **options: Any):
        if settings is not None and options:
            raise TypeError("pass settings= or keyword settings, not both")
        self.settings = settings or BatchSettings(**options)
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
                entry = [os.getpid(), build_generator(_load(path), self.settings)]
                if len(_ENGINES) >= 2:
                    _ENGINES.clear()
                _ENGINES[key] = entry
            return _fresh_in_this_process(entry)
        if self._generator is None:
            counts = self.counts
            if _is_object_ref(counts):
                import ray

                counts = ray.get(counts)
            self._generator = [os.getpid(), build_generator(counts, self.settings)]
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


__all__ = ["BatchSettings", "GenerateBatch", "build_generator"]
