"""The generation pipeline: parse -> mask -> refill -> filter -> select -> label.

:class:`NegativeGenerator` consumes a stream of :class:`~.types.ImageGroup` and yields one
:class:`CaptionResult` per caption, in input order, holding that caption's kept negatives.
It works in batches of captions, so memory does not grow with the corpus. All randomness
of a caption comes from :func:`caption_seed` (run seed + caption id): the output of a
caption does not depend on which other captions are processed with it, which makes
sharded and resumed runs equal to a single uninterrupted one.
"""

from __future__ import annotations

import gc
import hashlib
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from parsers.forking import fork_map
from tags.core.edits import unit_edits
from tags.core.regions import RegionStore
from tags.core.types import Caption, Edit, ImageGroup
from tags.negatives.config import GenerationConfig
from tags.negatives.filters import FILTER_NAMES, filter_candidates
from tags.negatives.labels import IGNORE_INDEX, token_labels
from tags.negatives.masking import TokenView, UnitMasker, WordMasker, trim_units
from tags.negatives.refill import Refiller, RefillJob
from tags.negatives.selection import PairScorer, score_groups, select


@lru_cache(maxsize=1)
def default_parser() -> Any:
    """The default :class:`parsers.SceneGraphParser`, loaded once per process."""
    from parsers import SceneGraphParser

    return SceneGraphParser()


def caption_seed(seed: int, caption_id: Any) -> int:
    """A 63-bit seed for one caption, stable across runs, processes and platforms."""
    digest = hashlib.blake2b(f"{seed}:{caption_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


@dataclass
class GenerationStats:
    """Counters of one run (they add up across shards with :meth:`merge`)."""

    images: int = 0
    captions: int = 0
    skipped: int = 0
    empty: int = 0
    truncated: int = 0
    fallback: int = 0
    candidates: int = 0
    negatives: int = 0
    without_negatives: int = 0
    without_units: int = 0
    labelled: int = 0
    length_changed: int = 0
    removed: Counter = field(default_factory=Counter)
    edits: Counter = field(default_factory=Counter)
    operations: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def merge(self, other: GenerationStats) -> None:
        for name, value in vars(other).items():
            if isinstance(value, Counter):
                getattr(self, name).update(value)
            else:
                setattr(self, name, getattr(self, name) + value)

    def summary(self) -> str:
        """A few human-readable lines."""
        done = max(self.captions, 1)
        rate = self.captions / self.seconds if self.seconds else 0.0
        names = (*FILTER_NAMES, *sorted(set(self.removed) - set(FILTER_NAMES)))
        removed = ", ".join(f"{n} {self.removed.get(n, 0)}" for n in names)
        edits = ", ".join(f"{k} {v}" for k, v in sorted(self.edits.items())) or "none"
        operations = ", ".join(f"{k} {v}" for k, v in sorted(self.operations.items()))
        return "\n".join(
            [
                f"captions: {self.captions} processed ({self.images} images), "
                f"{self.skipped} already done, {self.empty} empty skipped, "
                f"{self.truncated} truncated, {self.fallback} without units (word masking), "
                f"{self.without_units} without an editable unit",
                f"candidates: {self.candidates}; removed by filters: {removed}",
                f"negatives: {self.negatives} ({self.negatives / done:.1f} per caption; "
                f"{self.without_negatives} captions without any)"
                + (
                    f"; WoD/WoC labels for {self.labelled}, {self.length_changed} of them with "
                    "an edit that changes the word-piece count"
                    if self.labelled
                    else ""
                ),
                f"edits by type: {edits}" + (f"; by operation: {operations}" if operations else ""),
                f"time: {self.seconds:.1f}s ({rate:.1f} captions/s)",
            ]
        )


@dataclass
class NegativeRecord:
    """One kept negative, as written to the output."""

    image_id: Any
    caption_id: Any
    positive: str
    negative: str
    edits: tuple[Edit, ...]
    negative_index: int
    num_negatives: int
    score: float | None = None
    input_ids: list[int] | None = None
    wod_labels: list[int] | None = None
    woc_labels: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "image_id": self.image_id,
            "caption_id": self.caption_id,
            "positive": self.positive,
            "negative": self.negative,
            "edits": [e.to_dict() for e in self.edits],
            "negative_index": self.negative_index,
            "num_negatives": self.num_negatives,
        }
        if self.score is not None:
            data["score"] = self.score
        if self.input_ids is not None:
            data["input_ids"] = self.input_ids
            data["wod_labels"] = self.wod_labels
            data["woc_labels"] = self.woc_labels
        return data


@dataclass
class CaptionResult:
    """The negatives of one input caption (possibly none). ``skipped``: why a caption got no
    negative, when the generator was asked (``explain_skipped``): ``empty``, ``no_parse``
    (no object, attribute or relation), ``no_editable_unit:<rule>`` (every unit refused as
    a whole, e.g. ``object:generic_noun``), ``all_candidates_refused:<rule>`` (the planner
    rule, e.g. ``object:unattested_role``, or the filter, e.g. ``false_negative``, that
    refused most candidates) or ``no_candidate``."""

    caption: Caption
    records: list[NegativeRecord]
    skipped: str | None = None


@dataclass
class _Work:
    caption: Caption
    group: ImageGroup
    text: str
    view: TokenView
    seed: int


def _truncate(text: str, view: TokenView, max_tokens: int) -> str:
    """Cut ``text`` before the word holding its ``max_tokens + 1``-th token."""
    first_over = view.content[max_tokens]
    word = view.words[first_over]
    start = min(view.offsets[i][0] for i in view.content if view.words[i] == word)
    if start == 0:  # one giant word: cut inside it
        start = view.offsets[first_over][0]
    return text[:start].rstrip()


class NegativeGenerator:
    """TAGS-DC negative generation over a stream of image groups. Build one with
    :func:`~tags.negatives.factory.create_generator` (it assembles the refill, parser and
    edit planner a :class:`GenerationConfig` asks for).

    Args:
        refiller: :class:`~.refill.MLMRefiller` or :class:`~.refill.VocabularyRefiller`.
        config: :class:`GenerationConfig`.
        parser: a :class:`parsers.SceneGraphParser` (needed for ``masking="unit"``).
        scorer: ITM scorer for top-m selection (needs ``regions``); else seeded sampling.
        regions: region features by image, for image-conditioned refills and scoring.
        label_tokenizer: when given, records carry ``input_ids``/``wod_labels``/``woc_labels``.
        planner: an :class:`~.planner.EditPlanner`: units are edited only into its planned
            substitutes (grammatical, plausible, false), and swaps are added; without it,
            refills are unconstrained (the original TAGS-DC engine).
        processes: worker processes (forked) that run whole batches through the pipeline;
            results come back in input order and are the same as with one process. For the
            weight-free refill only (no model, no scorer).
        plausibility: an optional :class:`~.plausibility.PlausibilityFilter`: candidates a
            causal LM finds far less likely than their caption are dropped (counted as
            ``removed["implausible"]``), one LM pass per batch.
        explain_skipped: give every caption left without a negative its reason
            (:attr:`CaptionResult.skipped`), counted where the refusals happen: the planner
            plans such a caption again with a :class:`~tags.negatives.planner.Trace`.
    """

    def __init__(
        self,
        refiller: Refiller,
        config: GenerationConfig | None = None,
        *,
        parser: Any = None,
        scorer: PairScorer | None = None,
        regions: RegionStore | None = None,
        label_tokenizer: Any = None,
        planner: Any = None,
        processes: int = 1,
        plausibility: Any = None,
        explain_skipped: bool = False,
    ):
        self.refiller = refiller
        self.config = config or GenerationConfig()
        if self.config.masking == "unit" and parser is None:
            raise ValueError("unit masking needs a scene-graph parser")
        self.parser = parser
        self.scorer = scorer
        self.regions = regions
        self.label_tokenizer = label_tokenizer
        self.planner = planner
        self.plausibility = plausibility
        self.explain_skipped = explain_skipped
        weights = scorer is not None or plausibility is not None
        if processes > 1 and (weights or getattr(refiller, "mlm", None) is not None):
            raise ValueError("worker processes serve the weight-free refill only")
        self.processes = max(1, processes)
        self.unit_masker = UnitMasker(
            self.config.mask_ratio, self.config.max_edits, self.config.balance_types
        )
        self.word_masker = WordMasker(self.config.mask_ratio)
        self.stats = GenerationStats()
        self._additions: Any = None

    @property
    def additions(self) -> Any:
        """The add operator over the planner (``None`` without a planner or adds)."""
        if self._additions is None and self.planner is not None and self.config.adds:
            from tags.negatives.additions import Additions

            self._additions = Additions(self.planner)
        return self._additions

    @property
    def switches(self) -> frozenset[str]:
        """The operator switches the config turns on (``swaps``, ``role_swaps``, ``adds``)."""
        config = self.config
        flags = {"swaps": config.swaps, "role_swaps": config.role_swaps, "adds": config.adds}
        return frozenset(name for name, on in flags.items() if on)

    @property
    def needs_regions(self) -> bool:
        return self.regions is not None and (
            self.scorer is not None or self.refiller.conditions_on_image
        )

    def generate(
        self, groups: Iterable[ImageGroup], resume_after: Any = None
    ) -> Iterator[CaptionResult]:
        """Yield one result per caption, in order.

        Args:
            resume_after: a caption id; it and every caption before it are skipped (they
                still serve as "other captions" of their image for the false-negative rule).
        """
        batches = self._batches(groups, resume_after)
        if self.planner is not None:
            self.planner.prepare(self.switches)
        with long_lived_frozen():
            if self.processes == 1:
                for batch in batches:
                    yield from self._run(batch)
                return
            global _WORKER
            _WORKER = self
            # at most 2 batches in flight per worker: flat memory
            for results, stats in fork_map(
                _worker_run, batches, self.processes, initializer=_worker_init
            ):
                stats.seconds /= self.processes  # workers run side by side
                self.stats.merge(stats)
                yield from results

    def generate_for(self, items: Iterable[tuple[Caption, ImageGroup]]) -> Iterator[CaptionResult]:
        """Yield one result per ``(caption, group)`` item, in order: negatives of chosen
        captions only, each with its image's group (whose other captions serve the
        false-negative rule). Items run in batches of ``config.batch_size``: one parse, one
        MLM pass and one scoring pass per batch (the training recipe's per-step batch)."""
        batch: list[tuple[Caption, ImageGroup]] = []
        seen: set[int] = set()
        for caption, group in items:
            if id(group) not in seen:
                seen.add(id(group))
                self.stats.images += 1
            batch.append((caption, group))
            if len(batch) >= self.config.batch_size:
                yield from self._run(batch)
                batch = []
        if batch:
            yield from self._run(batch)

    def _batches(
        self, groups: Iterable[ImageGroup], resume_after: Any
    ) -> Iterator[list[tuple[Caption, ImageGroup]]]:
        skipping = resume_after is not None
        batch: list[tuple[Caption, ImageGroup]] = []
        for group in groups:
            self.stats.images += 1
            for caption in group.captions:
                if skipping:
                    self.stats.skipped += 1
                    skipping = caption.caption_id != resume_after
                    continue
                batch.append((caption, group))
            if len(batch) >= self.config.batch_size:
                yield batch
                batch = []
        if batch:
            yield batch
        if skipping:
            raise ValueError(
                f"cannot resume: caption {resume_after!r} of the existing output is not in the "
                "input (different captions file or split?)"
            )

    # ------------------------------------------------------------------ stages
    def _prepare(self, caption: Caption, group: ImageGroup) -> _Work | None:
        text = " ".join(caption.text.split())
        if not text:
            self.stats.empty += 1
            return None
        view = self.refiller.tokenize(text)
        if len(view.content) > self.config.max_tokens:
            text = _truncate(text, view, self.config.max_tokens)
            view = self.refiller.tokenize(text)
            self.stats.truncated += 1
        seed = caption_seed(self.config.seed, caption.caption_id)
        return _Work(caption, group, text, view, seed)

    def _run(self, batch: list[tuple[Caption, ImageGroup]]) -> Iterator[CaptionResult]:
        start = time.perf_counter()
        prepared = [self._prepare(caption, group) for caption, group in batch]
        work = [w for w in prepared if w is not None]
        graphs: list[Any] = [None] * len(work)
        if self.config.masking == "unit" and work:
            graphs = self.parser.parse_batch([w.text for w in work])
        jobs: list[RefillJob] = []
        swaps: list[list[Any]] = []  # the candidate operators' negatives (swaps, adds)
        contexts: list[Any] = []  # each caption's analysis, for the fallback additions
        images: dict[Any, Any] = {}  # one feature load per image and batch
        for w, graph in zip(work, graphs):
            rng = random.Random(w.seed)
            copies = []
            swaps.append([])
            contexts.append(None)
            if graph is not None and self.planner is not None:
                plan = self.planner.propose(graph, self.switches)
                copies = self.unit_masker.mask(plan.units, w.view, self.config.num_copies, rng)
                swaps[-1], contexts[-1] = plan.candidates, plan.context
                if not copies and not swaps[-1]:
                    self.stats.without_units += 1
            elif graph is not None:
                units = trim_units(graph.units(), w.text)
                copies = self.unit_masker.mask(units, w.view, self.config.num_copies, rng)
            if not copies and (self.planner is None or graph is None):
                if graph is not None:
                    self.stats.fallback += 1
                copies = self.word_masker.mask(w.text, w.view, self.config.num_copies, rng)
            image = None
            if self.needs_regions:
                key = w.group.image_id
                if key not in images:
                    images[key] = self.regions.get(key, w.group.filename)
                image = images[key]
            jobs.append(RefillJob(w.text, w.view, copies, rng.getrandbits(63), image))
        candidates = self.refiller.refill(jobs) if jobs else []
        candidates = [found + extra for found, extra in zip(candidates, swaps)]
        removals = [Counter() for _ in work]
        kept = [self._keep(w, found, r) for w, found, r in zip(work, candidates, removals)]
        if self.planner is not None and self.config.adds:  # nothing survived: the next adds
            for i, context in enumerate(contexts):
                if kept[i] or context is None:
                    continue
                extra = self.planner.fallback(context, self.switches)
                if extra:
                    candidates[i] = candidates[i] + extra
                    kept[i] = self._keep(work[i], extra, removals[i], again=True)
        if self.plausibility is not None and any(kept):  # one LM pass per batch
            plausible = self.plausibility.keep_many([(w.text, f) for w, f in zip(work, kept)])
            self.stats.removed["implausible"] += sum(map(len, kept)) - sum(map(len, plausible))
            for removed, before, after in zip(removals, kept, plausible):
                removed["implausible"] += len(before) - len(after)
            kept = plausible
        scores: list[list[float] | None] = [None] * len(work)
        scored = [i for i, job in enumerate(jobs) if kept[i] and job.image is not None]
        if self.scorer is not None and scored:  # one batched scoring pass per batch
            groups = [([c.text for c in kept[i]], jobs[i].image) for i in scored]
            for i, values in zip(scored, score_groups(self.scorer, groups)):
                scores[i] = values
        finished = [self._finish(*args) for args in zip(work, jobs, kept, scores)]
        reasons: list[str | None] = [None] * len(work)
        if self.explain_skipped:
            for i, records in enumerate(finished):
                if not records:
                    reasons[i] = self._skip_reason(graphs[i], candidates[i], removals[i])
        self.stats.seconds += time.perf_counter() - start
        done = iter(zip(finished, reasons))
        for (caption, _), w in zip(batch, prepared):
            if w is None:
                yield CaptionResult(caption, [], "empty" if self.explain_skipped else None)
            else:
                yield CaptionResult(caption, *next(done))

    def _skip_reason(self, graph: Any, candidates: list, removed: Counter) -> str:
        """Why a caption got no negative, from where its candidates were refused: the
        filters (a candidate was made), else the planner's refusals (its trace)."""
        if candidates:
            rule = min(removed.items(), key=lambda kv: (-kv[1], kv[0]))[0] if removed else None
            return f"all_candidates_refused:{rule}" if rule else "no_candidate"
        if graph is not None and not graph.units():
            return "no_parse"
        if graph is not None and self.planner is not None:
            return self.planner.explain(graph).reason() or "no_editable_unit"
        return "no_candidate"

    def _keep(
        self, w: _Work, candidates: list, removed: Counter | None = None, again: bool = False
    ) -> list:
        """The candidates that pass the filters (false negatives, duplicates, debris);
        ``removed`` counts this caption's removals by filter; ``again``: more candidates of
        a caption already counted."""
        self.stats.captions += 0 if again else 1
        self.stats.candidates += len(candidates)
        others = [c.text for c in w.group.captions if c.caption_id != w.caption.caption_id]
        removed = Counter() if removed is None else removed
        kept = filter_candidates(w.text, candidates, others, removed, self.config.kinds)
        self.stats.removed.update(removed)
        return kept

    def _finish(
        self, w: _Work, job: RefillJob, kept: list, scores: list[float] | None
    ) -> list[NegativeRecord]:
        rng = random.Random(job.seed ^ 0x5E1EC7)
        chosen = select(  # scored in _run
            kept, self.config.top_m, rng, scores=scores, stratify_types=self.config.stratify_types
        )
        if not chosen:
            self.stats.without_negatives += 1
        records = []
        for index, (candidate, score) in enumerate(chosen):
            record = NegativeRecord(
                w.caption.image_id,
                w.caption.caption_id,
                w.text,
                candidate.text,
                candidate.edits,
                index,
                len(chosen),
                score,
            )
            if self.label_tokenizer is not None:
                labels = token_labels(w.text, candidate.text, candidate.edits, self.label_tokenizer)
                record.input_ids = labels.input_ids
                record.wod_labels = labels.wod_labels
                record.woc_labels = labels.woc_labels
                self.stats.labelled += 1
                if any(
                    x == 0 and y == IGNORE_INDEX
                    for x, y in zip(labels.wod_labels, labels.woc_labels)
                ):
                    self.stats.length_changed += 1
            self.stats.negatives += 1
            units = unit_edits(candidate.edits)
            self.stats.edits.update(e.type for e in units)
            self.stats.operations.update({e.operation for e in units})
            records.append(record)
        return records


_WORKER: NegativeGenerator | None = None


#: While generating, a full collection runs once per this many middle-generation ones
#: (CPython's default is 10).
_FULL_COLLECTION_EVERY = 1000


@contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Keep the objects alive now (counts, indexes, the parser) out of the garbage collector
    while generating: its full collections would walk the hundreds of thousands of them again
    and again (about 10 % of planning time), and in forked workers touch, and so copy, the
    pages they share with the parent. They are handed back to it afterwards.

    Full collections are put off meanwhile (:data:`_FULL_COLLECTION_EVERY`): with the
    long-lived objects frozen, CPython counts the caches that fill while generating as the
    whole old generation and ran a full collection every few batches (7 % of a worker's
    time on Flickr30K), though they free almost nothing (about 1,500 objects a pass); the
    young generations are still collected as usual."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*thresholds[:2], max(thresholds[2], _FULL_COLLECTION_EVERY))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _worker_init() -> None:
    from tags.negatives.wordnet import wordnet

    if wordnet.cache_info().currsize:
        wordnet().after_fork()


def _worker_run(batch: list[tuple[Caption, ImageGroup]]) -> tuple[list, GenerationStats]:
    """One batch in a forked worker: its results and the statistics it added."""
    assert _WORKER is not None
    _WORKER.stats = GenerationStats()
    results = list(_WORKER._run(batch))
    return results, _WORKER.stats


__all__ = [
    "CaptionResult",
    "GenerationConfig",
    "GenerationStats",
    "NegativeGenerator",
    "NegativeRecord",
    "caption_seed",
    "default_parser",
]
