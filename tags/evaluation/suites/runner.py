"""One model on a list of suites (and optionally retrieval): what ``tags evaluate --suite``
and ``tags report`` run.

Images of a suite are looked up, first to last: ``--suite-images LABEL=ROOT``, the folder
the reader found beside the suite file (Winoground's ``images/``, ARO's ``images/``, the
shapes benchmark's ``images/`` / ``features/``), the global ``--images`` / ``--features``.
Region-feature backends (TagsModel) read ``.npz`` features, pixel backends raw images.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tags.evaluation.suites.base import Suite, SuiteError, SuiteSpec
from tags.evaluation.suites.evaluate import SuiteResult, evaluate_suite, text_only_result
from tags.evaluation.suites.readers import read_suite
from tags.evaluation.suites.report import format_suite
from tags.evaluation.suites.scoring import BackendScorer, ImageSource, PixelSource, RegionSource

SUITE_MODES = ("cross", "dual", "two-stage")


@dataclass
class SuiteOptions:
    """Image sources and scoring settings shared by every suite of a run."""

    images: Path | None = None
    features: Path | None = None
    suite_images: dict[str, Path] = field(default_factory=dict)
    mode: str = "cross"
    topk: int = 1
    batch_size: int = 256
    max_length: int | None = None
    num_workers: int = 0
    use_logits: bool = True
    #: progress bars: None a bar on a terminal (lines elsewhere), True always a bar, False none
    progress: bool | None = None
    allow_outside_root: bool = False  # image names that leave the image root
    confine_to_root: bool = False  # files that a symlink inside the root leads out of it
    #: a text-only model's ``score(caption)`` scored beside the model (``--text-baseline``)
    text_score: Callable[[str], float] | None = None


def labels(specs: Sequence[SuiteSpec]) -> list[str]:
    """A report label per spec: the suite name, or ``name:file stem`` when repeated."""
    names = [s.name for s in specs]
    out = [s.name if names.count(s.name) == 1 else f"{s.name}:{s.path.stem}" for s in specs]
    if len(set(out)) != len(out):
        raise SuiteError(f"--suite: the same suite file twice ({', '.join(out)})")
    return out


def parse_roots(values: Sequence[str]) -> dict[str, Path]:
    """``["LABEL=ROOT", ...]`` (comma lists allowed) -> ``{label: root}``."""
    return {s.name: s.path for s in SuiteSpec.parse_many(list(values))}


def make_source(backend: Any, suite: Suite, label: str, options: SuiteOptions) -> ImageSource:
    """Region features for region backends, raw images under a root for pixel backends."""
    if backend.image_kind == "regions":
        features = options.suite_images.get(label) or suite.features or options.features
        if features is None:
            raise SuiteError(
                f"suite {label}: a {backend.name} model reads region features; give --features "
                f"DIR (one .npz per image, named by image id or file stem)"
            )
        return RegionSource(features)
    root = options.suite_images.get(label) or suite.image_root or options.images
    if root is None:
        raise SuiteError(f"suite {label}: no image folder; give --images ROOT or --suite-images")
    return PixelSource(
        root, backend.image_inputs, options.allow_outside_root, options.confine_to_root
    )


def _progress_fn(label: str, enabled: bool | None) -> tuple[Callable[[int, int], None], Callable]:
    from tags.core.progress import progress

    bar: Any = None

    def tick(done: int, total: int) -> None:
        nonlocal bar
        if bar is None or done < bar.n or total != bar.total:  # a new pass (two-stage)
            if bar is not None:
                bar.close()
            bar = progress(
                total,
                f"{label}: distinct pairs",
                " pairs",
                disable=enabled is False,
                force=enabled is True,
            )
        bar.update(done - bar.n)

    def close() -> None:
        if bar is not None:
            bar.close()

    return tick, close


def run_suite(backend: Any, spec: SuiteSpec, label: str, options: SuiteOptions) -> SuiteResult:
    """Read, score and summarize one suite; ``seconds`` holds the read and score times."""
    if options.mode not in SUITE_MODES:
        raise ValueError(f"mode must be one of {SUITE_MODES}, got {options.mode!r}")
    start = time.perf_counter()
    suite = read_suite(spec.name, spec.path)
    read = time.perf_counter() - start
    source = make_source(backend, suite, label, options)
    tick, close = _progress_fn(label, options.progress)

    def scorer(mode: str) -> BackendScorer:
        return BackendScorer(
            backend,
            source,
            mode,
            batch_size=options.batch_size,
            max_length=options.max_length,
            num_workers=options.num_workers,
            use_logits=options.use_logits,
            progress=tick,
        )

    two_stage = options.mode == "two-stage"
    start = time.perf_counter()
    try:
        result = evaluate_suite(
            suite,
            scorer("cross" if two_stage else options.mode),
            first_stage=scorer("dual") if two_stage else None,
            topk=options.topk,
        )
    finally:
        close()
    result.seconds = {"read": read, "score": time.perf_counter() - start}
    result.name = label
    if options.text_score is not None:
        result.text_only = text_only_result(suite, options.text_score)
        if result.text_only is None:
            result.notes.append("text-only baseline: not defined for a two-image suite")
    result.notes += source.notes
    if options.mode != "dual" and not backend.supports("itm"):
        result.notes.append(f"the {backend.name} backend has no cross-encoder: scored as dual")
    return result


def run_suites(
    backend: Any,
    specs: Sequence[SuiteSpec],
    options: SuiteOptions,
    log: Callable[[str], Any] = print,
) -> dict[str, dict[str, Any]]:
    """``{label: SuiteResult dict}`` of every spec, each table logged as it finishes."""
    results = {}
    for label, spec in zip(labels(specs), specs):
        result = run_suite(backend, spec, label, options).to_dict()
        log(format_suite(result))
        for note in result["notes"]:
            log(f"note: {note}")
        results[label] = result
    return results


__all__ = [
    "SUITE_MODES",
    "SuiteOptions",
    "labels",
    "make_source",
    "parse_roots",
    "run_suite",
    "run_suites",
]
