"""TAGS and TAGS-DC on the testbed: negatives the model being trained writes itself.

``istm`` (TAGS) and ``tags-dc`` (TAGS-DC) follow the paper's dynamic generator on the
testbed's word-level vocabulary:

- **Masking**: the scene-graph units of the positive caption (each mention's size, colour and
  shape, the relation phrase), taken whole, one unit per masked copy, every unit of the
  caption a copy (at most :data:`MAX_COPIES`; ``copies`` draws fewer units per caption and
  step, a cheaper generator). The units are read from the caption's
  structure (the benchmark's own :class:`~tags.benchmark.captions.Claim`, the gold scene graph
  of a caption of its grammar).
- **Refill**: one image-conditioned MLM forward per masked copy through the shared backbone
  (the model being trained), ``refills`` samples per copy. ``refill="free"`` (the paper):
  from ``softmax(logits / tau)`` over the vocabulary
  (:func:`tags.negatives.refill.sample_refills`, special tokens banned); ``"typed"`` (as
  the project's generator refills planned substitutes): from the MLM's scores of the words
  of the unit's class only (a shape for a shape, a colour for a colour, a relation phrase of
  the same length for a relation), each scored by its mean log-probability at ``tau``. An
  article before a refilled word is made to agree with it.
- **Filters**: :func:`tags.negatives.filters.filter_candidates` (identical, debris: a
  punctuation refill, duplicate, and the paper's false-negative rule against the scene's other
  captions: 4 more true captions of the scene, as a benchmark image has 5).
- **Selection**: ``istm_loss="row"``: the candidate the current model scores highest by ITM
  (top-1: every method of the testbed adds one negative per caption), trained with the
  testbed's binary ITM loss; ``"triplet"`` (the paper's L_ISTM): the ``top_m`` highest-scored
  candidates, ``istm_weight`` x the mean hinge (margin :data:`ISTM_MARGIN`) of the positive's
  sigmoid ITM score over them, and no ITM row.
- **Losses**: ``istm`` adds ``mlm_weight`` x the MLM loss of the positives with one random unit
  masked (image-conditioned); ``tags-dc`` adds ``dc_weight`` x (WoD + WoC) on the chosen
  (top-1) negatives from step ``dc_start`` (the paper's NSG -> NSGDC phases): per token,
  "equals the positive's token" and the positive's token.

Nothing here sees whether a negative is true of its scene; :class:`SelfNegativeStats` counts
it afterwards (the false negatives that got through) and the unit type of each chosen one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from tags.benchmark.captions import Claim, sample_claims
from tags.benchmark.scenes import RELATIONS, Scene
from tags.benchmark.truth import caption_truth, parse_claim
from tags.core.types import Candidate, Edit
from tags.negatives.filters import filter_candidates
from tags.testbed.inputs import autocast, inference_rows, inputs_of, itm_logits, length_chunks
from tags.testbed.vocab import (
    MASK_ID,
    SPECIAL,
    VOCAB,
    WORD_CLASSES,
    WORD_ID,
    caption_words,
    join_words,
    tokenize,
)
from tags.testbed.world import TRAIN_SEED_BASE, Batch

#: masked copies per caption at most (the paper's K)
MAX_COPIES = 20
#: chosen negatives of the last step kept in a run's record
SHOWN = 16
#: the testbed's self-negative methods
SELF_METHODS: tuple[str, ...] = ("istm", "tags-dc")
#: the margin of the paper's L_ISTM (``istm_loss="triplet"``)
ISTM_MARGIN = 0.2
_PUNCTUATION = (",", ":")


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


class SelfNegativeConfig(Protocol):
    """The settings the self-negative generator reads (a :class:`~tags.testbed.TestbedConfig`)."""

    negatives: str
    seed: int
    refill: str
    refills: int
    temperature: float
    copies: int
    mlm_weight: float
    dc_weight: float
    dc_start: int
    istm_loss: str
    top_m: int
    istm_weight: float
    bf16: bool


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
    """A chosen negative of one positive: its word ids (aligned with the positive's), the
    type of the unit it refilled and its place by score among the positive's (0: the best)."""

    row: int
    ids: list[int]
    unit: str
    text: str
    rank: int = 0


def refill_candidates(
    positive_ids: list[int],
    units: Sequence[tuple[str, list[int]]],
    sampled: Sequence[np.ndarray | Sequence[Sequence[int]]],
    vocab: Sequence[str],
) -> list[tuple[Candidate, list[int], str]]:
    """Candidates of one caption: for unit ``u``, ``sampled[u]`` is its refills, a
    ``[positions, L]`` id array (one word per masked position) or ``L`` id sequences (a
    typed relation refill may be longer or shorter than the unit). Returns ``(candidate,
    ids, unit type)``; the refill replaces the unit's words in place, and an article before
    it is made to agree."""
    word_id = {w: i for i, w in enumerate(vocab)}
    words = [vocab[i] for i in positive_ids[1:-1]]
    positive, spans = join_words(words)
    out = []
    for (kind, positions), draws in zip(units, sampled, strict=True):
        first, last = positions[0], positions[-1]
        if isinstance(draws, np.ndarray):
            draws = draws.T.tolist()
        for draw in draws:
            refill = [vocab[int(token)] for token in draw]
            new = [*words[:first], *refill, *words[last + 1 :]]
            end = first + len(refill) - 1
            if first > 0 and new[first - 1] in ("a", "an") and new[first] not in _PUNCTUATION:
                new[first - 1] = "an" if new[first][0] in "aeiou" else "a"
            start = first - 1 if first > 0 and new[first - 1] != words[first - 1] else first
            text = join_words(new)[0]
            edit = Edit(
                kind,
                positive[spans[start][0] : spans[last][1]],
                join_words(new[start : end + 1])[0],
                spans[start][0],
                spans[last][1],
            )
            debris = any(w in _PUNCTUATION for w in refill)
            candidate = Candidate(text, (edit,) if text != positive else (), debris)
            new_ids = [positive_ids[0], *(word_id[w] for w in new), positive_ids[-1]]
            out.append((candidate, new_ids, kind))
    return out


def choose_negatives(
    positives: Sequence[list[int]],
    units: Sequence[Sequence[tuple[str, list[int]]]],
    sampled: Sequence[Sequence[np.ndarray | Sequence[Sequence[int]]]],
    others: Sequence[Sequence[str]],
    score: Callable[[list[tuple[int, list[int]]]], np.ndarray],
    vocab: Sequence[str],
    stats: SelfNegativeStats,
    top_m: int = 1,
) -> list[Refilled]:
    """Filter each caption's refills and keep the ``top_m`` (default: the one) ``score`` (the
    current model's ITM on ``(row, ids)`` pairs) ranks highest, by row, best first."""
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
    by_row: dict[int, list[int]] = {}
    for k in sorted(range(len(kept)), key=lambda k: -scores[k]):  # stable: ties keep order
        by_row.setdefault(kept[k][0], []).append(k)
    return [
        Refilled(row, kept[k][1], kept[k][2], kept[k][3], rank)
        for row, ks in sorted(by_row.items())
        for rank, k in enumerate(ks[:top_m])
    ]


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


def _masked_copies(positives: Sequence[list[int]], units, pick=None):
    """Each caption's masked copies: ``(row, ids with the unit masked, masked positions)``;
    one copy per unit, or only unit ``pick[row]``."""
    copies = []
    for row, (ids, caption_units_) in enumerate(zip(positives, units, strict=True)):
        chosen = caption_units_ if pick is None else [caption_units_[pick[row]]]
        for _, positions in chosen:
            masked = list(ids)
            for p in positions:
                masked[p + 1] = MASK_ID  # + 1: [CLS]
            copies.append((row, masked, [p + 1 for p in positions]))
    return copies


def _mlm_inputs(copies, batch: Batch, device):
    inputs = inputs_of([ids for _, ids, _ in copies], [row for row, _, _ in copies], batch, device)
    masked = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
    for k, (_, _, positions) in enumerate(copies):
        masked[k, positions] = True
    return inputs, masked


def _refill_logits(model, copies, batch: Batch, device) -> torch.Tensor:
    """The MLM logits of the masked copies' masked positions, in copy order (the order one
    forward over all copies gives), scored :func:`inference_rows` copies a forward in
    :func:`length_chunks`."""
    pieces: list[torch.Tensor | None] = [None] * len(copies)
    for part in length_chunks([ids for _, ids, _ in copies], inference_rows(device)):
        inputs, masked = _mlm_inputs([copies[k] for k in part], batch, device)
        logits = model.encode(**inputs, heads="mlm", masked=masked).mlm_logits
        for k, piece in zip(part, logits.split([len(copies[k][2]) for k in part]), strict=True):
            pieces[k] = piece
    return torch.cat(pieces)


def refill_units(
    units: Sequence[Sequence[tuple[str, list[int]]]], copies: int, seed: int, step: int
) -> list[list[tuple[str, list[int]]]]:
    """The units each caption has masked this step: all of them (``copies`` 0, the paper), or
    ``copies`` of them drawn at random (deterministic in ``(seed, step)``), in caption order."""
    if not copies:
        return [list(u) for u in units]
    rng = np.random.default_rng([TRAIN_SEED_BASE + seed, step, 13])
    out = []
    for u in units:
        keep = sorted(rng.choice(len(u), size=min(copies, len(u)), replace=False).tolist())
        out.append([u[k] for k in keep])
    return out


def unit_choices(original: Sequence[int]) -> list[list[int]]:
    """The typed refills of one masked unit (its words' ids ``original``) as id sequences,
    the original among them (the filters drop it): the words of its class for a shape,
    colour or size, every relation phrase for a relation."""
    if len(original) == 1:
        word = VOCAB[original[0]]
        for words in WORD_CLASSES:
            if word in words:
                return [[WORD_ID[w]] for w in words]
    return [[WORD_ID[w] for w in r.split()] for r in RELATIONS]


def typed_refills(
    logits: torch.Tensor, copies, positives: Sequence[list[int]], refills: int,
    temperature: float, generator: torch.Generator,
) -> list[list[list[int]]]:  # fmt: skip
    """``refill="typed"``: per masked copy, ``refills`` draws among :func:`unit_choices`
    (id sequences), each choice scored as the project's constrained refill scores planned
    substitutes: the mean log-probability (at ``temperature``) of its words at the masked
    positions (words beyond the masked length are not scored)."""
    logp = torch.log_softmax(logits.detach().float().cpu() / temperature, dim=-1)
    out = []
    k = 0
    for row, _, positions in copies:
        n = len(positions)
        choices = unit_choices([positives[row][p] for p in positions])
        if n == 1 and all(len(c) == 1 for c in choices):  # one word: one gather
            scores = logp[k, [c[0] for c in choices]]
        else:
            scores = torch.tensor(
                [float(logp[k : k + min(n, len(c)), c[:n]].diagonal().mean()) for c in choices]
            )
        picks = torch.multinomial(scores.softmax(0), refills, True, generator=generator)
        out.append([choices[j] for j in picks.tolist()])
        k += n
    return out


def self_negatives(
    model, batch: Batch, config: SelfNegativeConfig, step: int, stats: SelfNegativeStats, device
):
    """``istm`` / ``tags-dc``: every positive's units (or ``config.copies`` of them) masked
    one per copy, refilled by the model's own MLM head (image-conditioned, ``config.refills``
    samples at ``config.temperature``), filtered, and the candidate the model scores highest
    added as a negative row (kind ``self-<unit>``; ``istm_loss="triplet"``: no row, the
    ``top_m`` best kept for :func:`istm_triplet`). Returns the batch, the chosen negatives (by
    row, best first), the positives' ids and every positive's units."""
    from tags.negatives.refill import sample_refills

    S = len(batch.scenes)
    claims = [parse_claim(t) for t in batch.texts[:S]]
    units = [caption_units(c)[:MAX_COPIES] for c in claims]
    masked_units = refill_units(units, config.copies, config.seed, step)
    positives = [tokenize(t) for t in batch.texts[:S]]
    others = [
        other_captions(batch.scenes[i], claims[i], TRAIN_SEED_BASE + config.seed) for i in range(S)
    ]
    copies = _masked_copies(positives, masked_units)
    generator = torch.Generator().manual_seed(int(config.seed) * 1_000_003 + step)
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device, config.bf16):
        logits = _refill_logits(model, copies, batch, device)
        sampled: list[list] = [[] for _ in range(S)]
        if config.refill == "typed":
            typed = typed_refills(
                logits, copies, positives, config.refills, config.temperature, generator
            )
            for (row, _, _), draws in zip(copies, typed, strict=True):
                sampled[row].append(draws)
        else:
            drawn = sample_refills(
                logits, config.refills, config.temperature, generator, torch.arange(len(SPECIAL))
            ).numpy()
            k = 0
            for row, _, positions in copies:
                sampled[row].append(drawn[k : k + len(positions)])
                k += len(positions)

        def score(rows: list[tuple[int, list[int]]]) -> np.ndarray:
            ids, scenes = [ids for _, ids in rows], [r for r, _ in rows]
            return itm_logits(model, ids, scenes, batch, device).numpy()

        triplet = config.istm_loss == "triplet"
        top_m = config.top_m if triplet else 1
        chosen = choose_negatives(
            positives, masked_units, sampled, others, score, VOCAB, stats, top_m
        )
    model.train(was_training)
    best = [r for r in chosen if r.rank == 0]
    record_truth(best, batch.scenes, stats, batch.texts[:S])
    texts, scene_index = list(batch.texts), list(batch.scene_index)
    targets, kinds = list(batch.targets), list(batch.kinds)
    for r in [] if triplet else best:
        texts.append(r.text)
        scene_index.append(r.row), targets.append(0.0), kinds.append(f"self-{r.unit}")
    batch = replace(batch, texts=texts, scene_index=scene_index, targets=targets, kinds=kinds)
    return batch, chosen, positives, units


@dataclass
class Discrimination:
    """WoD / WoC targets over a pass's rows (``[N, T]``, its padded inputs): ``mask`` the
    real tokens of the chosen negatives of their positive's length (a relation refill of
    another length has no token-by-token truth), ``truth`` the positive's token there,
    ``same`` whether the negative's token equals it."""

    mask: torch.Tensor
    truth: torch.Tensor
    same: torch.Tensor


def discrimination(
    rows: Sequence[tuple[int, Refilled]], positives, input_ids, attention_mask
) -> Discrimination | None:
    """The :class:`Discrimination` of inputs whose row ``i`` is the chosen negative ``r`` for
    each ``(i, r)`` of ``rows``; ``None`` when none is aligned with its positive."""
    truth = torch.zeros_like(input_ids)
    mask = torch.zeros_like(attention_mask, dtype=torch.bool)
    for i, r in rows:
        if len(r.ids) == len(positives[r.row]):
            truth[i, : len(r.ids)] = torch.as_tensor(positives[r.row])
            mask[i] = attention_mask[i].bool()
    if not mask.any():
        return None
    return Discrimination(mask, truth, (input_ids == truth).long())


@dataclass
class WordTerms:
    """The WoD and WoC logits of the chosen negatives' aligned tokens and their targets
    (``same``: the token equals the positive's; ``truth``: the positive's token)."""

    wod_logits: torch.Tensor
    same: torch.Tensor
    woc_logits: torch.Tensor
    truth: torch.Tensor

    @classmethod
    def cat(cls, parts: Sequence[WordTerms]) -> WordTerms | None:
        """The terms of several passes as one (``None`` when there are none)."""
        if not parts:
            return None
        names = [f.name for f in fields(cls)]
        return cls(*(torch.cat([getattr(p, name) for p in parts]) for name in names))

    def loss(self) -> torch.Tensor:
        """WoD + WoC: the mean cross-entropy of each over the tokens."""
        wod = F.cross_entropy(self.wod_logits.float(), self.same)
        return wod + F.cross_entropy(self.woc_logits.float(), self.truth)


def scored_with_words(model, inputs, rows: Sequence[tuple[int, Refilled]], positives):
    """The ITM logits of ``inputs`` and, where ``rows`` (``(input row, chosen negative)``)
    has a negative aligned with its positive, its :class:`WordTerms` read off the same pass
    (else ``None``)."""
    dc = (
        discrimination(rows, positives, inputs["input_ids"], inputs["attention_mask"])
        if rows
        else None
    )
    if dc is None:
        return model(**inputs), None
    logits, out = model.scored(**inputs, heads=("wod", "woc"), masked={"woc": dc.mask})
    return logits, WordTerms(out.wod_logits[dc.mask], dc.same[dc.mask], out.woc_logits,
                             dc.truth[dc.mask])  # fmt: skip


def self_negative_losses(
    model, batch: Batch, chosen, positives, units, config: SelfNegativeConfig, step: int, device,
    words: WordTerms | None = None,
):  # fmt: skip
    """``mlm_weight`` x the MLM loss of the positives, one random unit of each masked
    (image-conditioned); ``istm_loss="triplet"`` adds ``istm_weight`` x :func:`istm_triplet`;
    ``tags-dc`` adds, from step ``dc_start``, ``dc_weight`` x (WoD + WoC) on the best chosen
    negatives of the positive's length (per token: equals the positive's token; the
    positive's token): ``words``, read off the batch's ITM pass (:func:`scored_with_words`;
    in ``triplet`` mode a pass of their own)."""
    rng = np.random.default_rng([TRAIN_SEED_BASE + config.seed, step, 11])
    pick = [int(rng.integers(len(u))) for u in units]
    copies = _masked_copies(positives, units, pick)
    inputs, masked = _mlm_inputs(copies, batch, device)
    targets = torch.as_tensor(
        [positives[row][p] for row, _, positions in copies for p in positions], device=device
    )
    logits = model.encode(**inputs, heads="mlm", masked=masked).mlm_logits
    loss = config.mlm_weight * F.cross_entropy(logits.float(), targets)
    if config.istm_loss == "triplet" and chosen:
        loss = loss + config.istm_weight * istm_triplet(model, batch, chosen, positives, device)
    if config.negatives != "tags-dc" or step < config.dc_start:
        return loss
    if config.istm_loss == "triplet":  # the refills are no rows of the ITM pass: their own
        best = [r for r in chosen if r.rank == 0]
        if not best:
            return loss
        inputs = inputs_of([r.ids for r in best], [r.row for r in best], batch, device)
        words = scored_with_words(model, inputs, list(enumerate(best)), positives)[1]
    if words is None:
        return loss
    return loss + config.dc_weight * words.loss()


def istm_triplet(
    model, batch: Batch, chosen: Sequence[Refilled], positives: Sequence[list[int]], device,
    margin: float = ISTM_MARGIN,
) -> torch.Tensor:  # fmt: skip
    """The paper's L_ISTM: per positive, the mean hinge ``max(0, margin - s(positive) +
    s(negative))`` over its ``chosen`` negatives (``s``: the sigmoid of the ITM logit with the
    scene), averaged over the positives that have any."""
    rows = sorted({r.row for r in chosen})
    ids = [positives[row] for row in rows] + [r.ids for r in chosen]
    scores = torch.sigmoid(model(**inputs_of(ids, rows + [r.row for r in chosen], batch, device)))
    at = {row: k for k, row in enumerate(rows)}
    group = torch.as_tensor([at[r.row] for r in chosen], device=scores.device)
    hinge = (margin - scores[group] + scores[len(rows) :]).clamp(min=0)
    count = torch.bincount(group, minlength=len(rows)).to(hinge.dtype)
    return (hinge / count[group]).sum() / len(rows)
