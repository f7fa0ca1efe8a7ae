"""TAGS and TAGS-DC on the headroom testbed: negatives the model being trained writes itself.

``headroom.py --negatives istm`` (TAGS) and ``--negatives tags-dc`` (TAGS-DC) follow the
paper's dynamic generator on the testbed's word-level vocabulary:

- **Masking**: the scene-graph units of the positive caption (each mention's size, colour and
  shape, the relation phrase), taken whole, one unit per masked copy, every unit of the
  caption a copy (at most :data:`MAX_COPIES`). The units are read from the caption's
  structure (the benchmark's own :class:`~tags.benchmark.captions.Claim`, the gold scene graph
  of a caption of its grammar).
- **Refill**: one image-conditioned MLM forward per masked copy through the shared backbone
  (the model being trained), ``--refills`` samples per copy from ``softmax(logits / tau)``
  (:func:`tags.negatives.refill.sample_refills`, special tokens banned); an article before a
  refilled word is made to agree with it.
- **Filters**: :func:`tags.negatives.filters.filter_candidates` (identical, debris: a
  punctuation refill, duplicate, and the paper's false-negative rule against the scene's other
  captions: 4 more true captions of the scene, as a benchmark image has 5).
- **Selection**: the candidate the current model scores highest by ITM (top-1: every method of
  the testbed adds one negative per caption), trained with the testbed's binary ITM loss.
- **Losses**: ``istm`` adds ``--mlm-weight`` x the MLM loss of the positives with one random unit
  masked (image-conditioned); ``tags-dc`` adds ``--dc-weight`` x (WoD + WoC) on the chosen
  negatives: per token, "equals the positive's token" and the positive's token.

Nothing here sees whether a negative is true of its scene; :class:`SelfNegativeStats` counts
it afterwards (the false negatives that got through) and the unit type of each chosen one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tags.benchmark.captions import Claim, sample_claims
from tags.benchmark.scenes import Scene
from tags.benchmark.truth import caption_truth, normalize
from tags.core.types import Candidate, Edit
from tags.negatives.filters import filter_candidates

#: masked copies per caption at most (the paper's K)
MAX_COPIES = 20
#: chosen negatives of the last step kept in a run's record
SHOWN = 16
#: the testbed's self-negative methods
SELF_METHODS: tuple[str, ...] = ("istm", "tags-dc")
_PUNCTUATION = (",", ":")


def caption_words(text: str) -> list[str]:
    """The words of a caption as the testbed tokenizes it (``,`` and ``:`` apart)."""
    return normalize(text).replace(",", " ,").replace(":", " :").split()


def join_words(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The caption text of ``words`` and each word's character span in it."""
    text, spans = "", []
    for w in words:
        if text and w not in _PUNCTUATION:
            text += " "
        spans.append((len(text), len(text) + len(w)))
        text += w
    return text, spans


def caption_units(claim: Claim) -> list[tuple[str, list[int]]]:
    """The scene-graph units of ``claim``'s caption: ``(type, word positions)`` for each
    mention's size and colour (``attribute``) and shape (``object``), and the relation
    phrase (``relation``), in caption order."""
    words = caption_words(claim.text)
    units: list[tuple[str, list[int]]] = []
    cursor = 0

    def find(seq: list[str], start: int) -> int:
        for i in range(start, len(words) - len(seq) + 1):
            if words[i : i + len(seq)] == seq:
                return i
        raise ValueError(f"{seq} not found in {words}")

    for k, mention in enumerate(claim.mentions):
        if k == 1 and claim.relation is not None:
            rel = claim.relation.split()
            at = find(rel, cursor)
            units.append(("relation", list(range(at, at + len(rel)))))
            cursor = at + len(rel)
        seq = caption_words(mention.text)
        at = find(seq, cursor)
        for offset, word in enumerate(seq[1:], start=1):  # seq[0] is the article
            kind = "object" if word == mention.shape else "attribute"
            units.append((kind, [at + offset]))
        cursor = at + len(seq)
    return units


def other_captions(scene: Scene, claim: Claim, generator_seed: int, count: int = 5) -> list[str]:
    """Up to ``count - 1`` more true captions of ``scene`` (the image's other annotations)."""
    for n in range(count, 1, -1):
        rng = np.random.default_rng([generator_seed, scene.image_id, 1])
        try:
            claims = sample_claims(scene, rng, n)
        except RuntimeError:  # fewer distinct true captions than asked
            continue
        return [c.text for c in claims if c.text != claim.text][: count - 1]
    return []


@dataclass
class SelfNegativeStats:
    """What the refills gave: candidates, filter drops, the chosen negatives' unit types and
    their truth of the scene (``true`` = a false negative that reached training)."""

    candidates: int = 0
    removed: Counter = field(default_factory=Counter)
    chosen_unit: Counter = field(default_factory=Counter)
    chosen_truth: Counter = field(default_factory=Counter)
    captions_without: int = 0
    #: the last step's chosen negatives: ``(positive, negative, truth)``
    last: list[tuple[str, str, str]] = field(default_factory=list)

    def as_dict(self) -> dict:
        n = sum(self.chosen_truth.values())
        return {
            "candidates": self.candidates,
            "removed": dict(self.removed),
            "chosen": n,
            "chosen_unit": dict(self.chosen_unit),
            "chosen_truth": {k: round(v / max(n, 1), 4) for k, v in self.chosen_truth.items()},
            "captions_without": self.captions_without,
            "last_step": [
                {"positive": p, "negative": n, "truth": t} for p, n, t in self.last[:SHOWN]
            ],
        }


@dataclass
class Refilled:
    """The chosen negative of one positive: its word ids (aligned with the positive's) and
    the type of the unit it refilled."""

    row: int
    ids: list[int]
    unit: str
    text: str


def refill_candidates(
    positive_ids: list[int],
    units: Sequence[tuple[str, list[int]]],
    sampled: Sequence[np.ndarray],
    vocab: Sequence[str],
) -> list[tuple[Candidate, list[int], str]]:
    """Candidates of one caption: for unit ``u``, ``sampled[u]`` is ``[positions, L]`` ids.
    Returns ``(candidate, ids, unit type)``; the ids keep the positive's length (the refill
    replaces the unit's words in place; an article before it is made to agree)."""
    word_id = {w: i for i, w in enumerate(vocab)}
    words = [vocab[i] for i in positive_ids[1:-1]]
    positive, spans = join_words(words)
    out = []
    for (kind, positions), ids in zip(units, sampled, strict=True):
        first, last = positions[0], positions[-1]
        for draw in np.asarray(ids).T:
            new = list(words)
            for p, token in zip(positions, draw, strict=True):
                new[p] = vocab[int(token)]
            if first > 0 and new[first - 1] in ("a", "an") and new[first] not in _PUNCTUATION:
                new[first - 1] = "an" if new[first][0] in "aeiou" else "a"
            start = first - 1 if first > 0 and new[first - 1] != words[first - 1] else first
            text = join_words(new)[0]
            edit = Edit(
                kind,
                positive[spans[start][0] : spans[last][1]],
                join_words(new[start : last + 1])[0],
                spans[start][0],
                spans[last][1],
            )
            debris = any(new[p] in _PUNCTUATION for p in positions)
            candidate = Candidate(text, (edit,) if text != positive else (), debris)
            new_ids = [positive_ids[0], *(word_id[w] for w in new), positive_ids[-1]]
            out.append((candidate, new_ids, kind))
    return out


def choose_negatives(
    positives: Sequence[list[int]],
    units: Sequence[Sequence[tuple[str, list[int]]]],
    sampled: Sequence[Sequence[np.ndarray]],
    others: Sequence[Sequence[str]],
    score: Callable[[list[tuple[int, list[int]]]], np.ndarray],
    vocab: Sequence[str],
    stats: SelfNegativeStats,
) -> list[Refilled]:
    """Filter each caption's refills and keep the one ``score`` (the current model's ITM on
    ``(row, ids)`` pairs) ranks highest."""
    kept: list[tuple[int, list[int], str, str]] = []
    for row, (ids, caption_units_, draws, other) in enumerate(
        zip(positives, units, sampled, others, strict=True)
    ):
        candidates = refill_candidates(ids, caption_units_, draws, vocab)
        stats.candidates += len(candidates)
        positive = join_words([vocab[i] for i in ids[1:-1]])[0]
        survivors = filter_candidates(positive, [c for c, _, _ in candidates], other, stats.removed)
        by_text = {c.text: (new_ids, kind) for c, new_ids, kind in candidates}
        if not survivors:
            stats.captions_without += 1
        for c in survivors:
            new_ids, kind = by_text[c.text]
            kept.append((row, new_ids, kind, c.text))
    if not kept:
        return []
    scores = score([(row, new_ids) for row, new_ids, _, _ in kept])
    best: dict[int, int] = {}
    for k, (row, _, _, _) in enumerate(kept):
        if row not in best or scores[k] > scores[best[row]]:
            best[row] = k
    return [Refilled(row, kept[k][1], kept[k][2], kept[k][3]) for row, k in sorted(best.items())]


def record_truth(
    chosen: Sequence[Refilled],
    scenes: Sequence[Scene],
    stats: SelfNegativeStats,
    positives: Sequence[str] = (),
):
    """Count the chosen negatives' unit types and their truth of their scene; keep the
    step's pairs (``positives``: the batch's captions) as ``stats.last``."""
    stats.last = []
    for r in chosen:
        truth = caption_truth(r.text, scenes[r.row])
        stats.chosen_unit[r.unit] += 1
        stats.chosen_truth[truth] += 1
        if positives:
            stats.last.append((positives[r.row], r.text, truth))


__all__ = [
    "MAX_COPIES",
    "SELF_METHODS",
    "Refilled",
    "SelfNegativeStats",
    "caption_units",
    "caption_words",
    "choose_negatives",
    "join_words",
    "other_captions",
    "record_truth",
    "refill_candidates",
]
