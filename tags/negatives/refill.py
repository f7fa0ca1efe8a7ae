"""Refilling masked copies into candidate captions.

Two refillers share the :class:`Refiller` interface:

- :class:`MLMRefiller`: one masked-LM forward per masked copy, then ``num_samples`` refills
  drawn from ``softmax(logits / temperature)`` at the masked positions only. Forwards are
  batched across captions and copies; every row is padded to a multiple of ``pad_to`` tokens
  so a caption's logits do not depend on its batch neighbours (sharding and resuming leave
  the output unchanged).
- :class:`VocabularyRefiller`: typed substitution from the corpus's scene-graph vocabulary;
  needs no weights.

Randomness comes from each job's ``seed`` only.
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby
from typing import Any, Protocol, runtime_checkable

import torch

from tags.backends.masked_lm import bucket_length
from tags.core.edits import fix_articles, make_edit
from tags.core.errors import NonFiniteError
from tags.core.regions import Regions
from tags.core.types import Candidate, Edit, apply_edits
from tags.negatives.agreement import follow_pronouns
from tags.negatives.masking import MaskedCopy, TokenView
from tags.negatives.vocabulary import SceneGraphVocabulary, draw


@runtime_checkable
class MaskedLM(Protocol):
    """A masked language model seen by the refiller.

    ``logits_at`` returns ``[num_masked, vocab]`` logits, one row per ``True`` entry of
    ``masked_positions`` in row-major order; ``images`` (one :class:`Regions` per row) is
    given only when :attr:`conditions_on_image` is true.
    """

    mask_token_id: int
    pad_token_id: int
    conditions_on_image: bool

    def logits_at(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        masked_positions: torch.Tensor,
        images: Sequence[Regions] | None = None,
    ) -> torch.Tensor: ...


@dataclass
class RefillJob:
    """One caption to refill: its masked copies, its RNG seed and (optionally) its image."""

    text: str
    view: TokenView
    copies: list[MaskedCopy]
    seed: int
    image: Regions | None = None


class Refiller(Protocol):
    """Turns masked copies into candidates; also defines the token view used for masking."""

    conditions_on_image: bool

    def tokenize(self, text: str) -> TokenView: ...

    def refill(self, jobs: Sequence[RefillJob]) -> list[list[Candidate]]: ...


def sample_refills(
    logits: torch.Tensor,
    num_samples: int,
    temperature: float = 1.5,
    generator: torch.Generator | None = None,
    banned_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """Draw ``num_samples`` token ids per row from ``softmax(logits / temperature)``.

    Args:
        logits: ``[num_masked, vocab]`` logits at the masked positions.
        banned_ids: ids never drawn (special and unused tokens).

    Returns:
        ``[num_masked, num_samples]`` ids, sampled with replacement.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    scores = logits.detach().float().cpu() / temperature
    if banned_ids is not None and banned_ids.numel():
        scores[:, banned_ids] = float("-inf")
    probs = torch.softmax(scores, dim=-1)
    if torch.isnan(probs).any():  # a NaN or +inf logit, or a row of nothing drawable
        raise NonFiniteError(
            "the masked LM's logits are not finite (NaN or inf): its weights have diverged"
        )
    return torch.multinomial(probs, num_samples, replacement=True, generator=generator)


class PieceDecoder:
    """Word pieces -> text, with the checks of the word-piece debris filter.

    Understands WordPiece (``##`` continuations), SentencePiece (``▁`` word starts) and
    byte-level BPE (``Ġ`` word starts). A tokenizer whose every id is banned (special or
    unused) raises ``ValueError`` naming its directory.
    """

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.pieces = [""] * (max(vocab.values()) + 1)
        for piece, index in vocab.items():
            self.pieces[index] = piece
        if any(p.startswith("##") for p in vocab):
            self.scheme = "wordpiece"
        elif any(p.startswith("▁") for p in vocab):
            self.scheme = "sentencepiece"
        else:
            self.scheme = "bpe"
        special = set(tokenizer.all_special_ids)
        special.update(
            i for p, i in vocab.items() if p.startswith("[unused") or p.startswith("<unused")
        )
        if not set(vocab.values()) - special:  # else every refill dies in torch.multinomial
            where = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
            raise ValueError(
                f"{where}: the tokenizer has no token a refill may draw (all {len(vocab)} "
                "vocabulary ids are special or unused); it is degenerate or mis-built, rebuild "
                "it from a real vocabulary (vocab.txt / tokenizer.json)"
            )
        self.banned_ids = torch.tensor(sorted(special), dtype=torch.long)
        # per id: may it start a word / appear at all in a whole-word refill?
        self._starts_word = [not self.is_continuation(p) for p in self.pieces]
        self._word_like = [any(c.isalnum() for c in p) for p in self.pieces]
        for i in special:
            self._word_like[i] = False
        self.decode = lru_cache(maxsize=1 << 16)(self._decode)

    def is_continuation(self, piece: str) -> bool:
        if self.scheme == "wordpiece":
            return piece.startswith("##")
        marker = "▁" if self.scheme == "sentencepiece" else "Ġ"
        return not piece.startswith(marker)

    def _decode(self, ids: tuple[int, ...]) -> tuple[str, bool]:
        """``(text, whole_words)`` for the pieces filling one masked segment."""
        text = self.tokenizer.convert_tokens_to_string([self.pieces[i] for i in ids])
        ok = self._starts_word[ids[0]] and all(self._word_like[i] for i in ids)
        return " ".join(text.split()), ok


_DECODERS: OrderedDict[int, PieceDecoder] = OrderedDict()


def piece_decoder(tokenizer: Any) -> PieceDecoder:
    """The :class:`PieceDecoder` of ``tokenizer``, built once per tokenizer object (a scan
    of the whole vocabulary; the training recipe makes a refiller every step). The last
    four are kept."""
    decoder = _DECODERS.get(id(tokenizer))
    if decoder is None or decoder.tokenizer is not tokenizer:
        decoder = _DECODERS[id(tokenizer)] = PieceDecoder(tokenizer)
        while len(_DECODERS) > 4:
            _DECODERS.popitem(last=False)
    _DECODERS.move_to_end(id(tokenizer))
    return decoder


class MLMRefiller:
    """Refill masked copies with a masked LM (image-conditioned when it supports it).

    Args:
        mlm: the model (see :class:`MaskedLM`); ``tokenizer`` its fast tokenizer.
        num_samples: refills ``L`` drawn per masked copy.
        temperature: softmax temperature (paper: 1.5).
        batch_size: masked copies per forward.
        pad_to: rows are padded to a multiple of this many tokens.
        max_length: tokenizer truncation length.
    """

    def __init__(
        self,
        mlm: MaskedLM,
        tokenizer: Any,
        *,
        num_samples: int = 20,
        temperature: float = 1.5,
        batch_size: int = 128,
        pad_to: int = 16,
        max_length: int = 512,
    ):
        self.mlm = mlm
        self.tokenizer = tokenizer
        self.num_samples = num_samples
        self.temperature = temperature
        self.batch_size = batch_size
        self.pad_to = pad_to
        self.max_length = max_length
        self.decoder = piece_decoder(tokenizer)
        self._pieces: dict[str, tuple[int, ...]] = {}

    @property
    def conditions_on_image(self) -> bool:
        return bool(self.mlm.conditions_on_image)

    def tokenize(self, text: str) -> TokenView:
        encoding = self.tokenizer(
            text, return_offsets_mapping=True, truncation=True, max_length=self.max_length
        )
        return TokenView.from_encoding(encoding)

    def _forward(
        self, rows: list[tuple[int, int]], jobs: Sequence[RefillJob], length: int
    ) -> tuple[torch.Tensor, list[int]]:
        """Logits at the masked positions of rows of one padded length, and each row's count."""
        input_ids = torch.full((len(rows), length), self.mlm.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(rows), length), dtype=torch.long)
        masked = torch.zeros((len(rows), length), dtype=torch.bool)
        for r, (j, k) in enumerate(rows):
            ids = jobs[j].view.ids
            input_ids[r, : len(ids)] = torch.tensor(ids)
            attention[r, : len(ids)] = 1
            positions = jobs[j].copies[k].positions
            masked[r, positions] = True
        input_ids[masked] = self.mlm.mask_token_id
        images = [jobs[j].image for j, _ in rows] if self.conditions_on_image else None
        with torch.no_grad():
            logits = self.mlm.logits_at(input_ids, attention, masked, images)
        return logits, masked.sum(dim=1).tolist()

    def refill(self, jobs: Sequence[RefillJob]) -> list[list[Candidate]]:
        buckets: dict[int, list[tuple[int, int]]] = {}
        for j, job in enumerate(jobs):
            if job.view.ids is None:
                raise ValueError("MLMRefiller needs token views made by its own tokenize()")
            length = bucket_length(len(job.view.ids), self.pad_to)
            buckets.setdefault(length, []).extend((j, k) for k in range(len(job.copies)))
        pending: dict[int, list[tuple[torch.Tensor, list[int]]]] = {}
        samples: dict[int, list[list[list[int]]]] = {}
        for length in sorted(buckets):
            rows = buckets[length]
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start : start + self.batch_size]
                logits, counts = self._forward(chunk, jobs, length)
                offset = 0
                for j, members in groupby(zip(chunk, counts), key=lambda x: x[0][0]):
                    sizes = [n for _, n in members]
                    part = logits.narrow(0, offset, sum(sizes))  # a view: no copy
                    offset += sum(sizes)
                    pending.setdefault(j, []).append((part, sizes))
                    if sum(len(s) for _, s in pending[j]) == len(jobs[j].copies):
                        samples[j] = self._sample(jobs[j], pending.pop(j))
        return [self._candidates(job, samples.get(j, [])) for j, job in enumerate(jobs)]

    def _sample(
        self, job: RefillJob, parts: list[tuple[torch.Tensor, list[int]]]
    ) -> list[list[list[int]]]:
        """All refills of one caption in a single draw from its own generator."""
        generator = torch.Generator().manual_seed(job.seed % (1 << 63))
        logits = parts[0][0] if len(parts) == 1 else torch.cat([p for p, _ in parts])
        sizes = [n for _, s in parts for n in s]
        if _constrained(job):
            return self._sample_choices(job, logits.split(sizes), generator)
        ids = sample_refills(
            logits, self.num_samples, self.temperature, generator, self.decoder.banned_ids
        )
        return [rows.tolist() for rows in ids.split(sizes)]

    def _piece_ids(self, text: str) -> tuple[int, ...]:
        ids = self._pieces.get(text)
        if ids is None:
            ids = self._pieces[text] = tuple(
                self.tokenizer(text, add_special_tokens=False)["input_ids"]
            )
        return ids

    def choice_scores(self, copy: MaskedCopy, logits: torch.Tensor) -> list[torch.Tensor]:
        """Per unit of ``copy``: the MLM's score of each planned substitute, the mean
        log-probability (at ``temperature``) of its word pieces at the masked positions,
        summed over the unit's segments (pieces beyond the masked length are not scored)."""
        logp = torch.log_softmax(logits.detach().float().cpu() / self.temperature, dim=-1)
        row_of = {p: r for r, p in enumerate(copy.positions)}
        out = []
        for unit in copy.units:
            scores = []
            for choice in unit.choices:
                total = 0.0
                for segment, text in zip(unit.segments, choice.surface):
                    ids = self._piece_ids(text)
                    n = min(len(ids), len(segment.positions))
                    rows = [row_of[p] for p in segment.positions[:n]]
                    total += float(logp[rows, list(ids[:n])].mean()) if n else -1e4
                scores.append(total)
            out.append(torch.tensor(scores))
        return out

    def _sample_choices(
        self, job: RefillJob, logits: Sequence[torch.Tensor], generator: torch.Generator
    ) -> list[list[list[int]]]:
        """Choice indices ``[copy][unit][sample]`` drawn from the MLM's choice scores."""
        out = []
        for copy, rows in zip(job.copies, logits):
            draws = []
            for scores in self.choice_scores(copy, rows):
                probs = torch.softmax(scores, dim=0)
                draws.append(
                    torch.multinomial(probs, self.num_samples, True, generator=generator).tolist()
                )
            out.append(draws)
        return out

    def _candidates(self, job: RefillJob, samples: list[list[list[int]]]) -> list[Candidate]:
        if _constrained(job):
            return _choice_candidates(job, samples, self.num_samples)
        out: list[Candidate] = []
        for copy, rows in zip(job.copies, samples):
            row_of = {p: r for r, p in enumerate(copy.positions)}
            segments = copy.segments
            for sample in range(self.num_samples):
                edits: list[Edit] = []
                debris = False
                for unit_type, segment in segments:
                    ids = tuple(rows[row_of[p]][sample] for p in segment.positions)
                    text, whole_words = self.decoder.decode(ids)
                    debris = debris or not whole_words
                    edit = make_edit(unit_type, job.text, segment.start, segment.end, text)
                    if edit is not None:
                        edits.append(edit)
                edits = follow_pronouns(job.text, fix_articles(job.text, edits))
                out.append(Candidate(apply_edits(job.text, edits), tuple(edits), debris))
        return out


def _constrained(job: RefillJob) -> bool:
    """Whether every masked unit of the job carries planned substitutes."""
    return bool(job.copies) and all(u.choices for c in job.copies for u in c.units)


def _choice_candidates(
    job: RefillJob, draws: list[list[list[int]]], num_samples: int
) -> list[Candidate]:
    """Candidates from choice indices ``draws[copy][unit][sample]``."""
    out: list[Candidate] = []
    for copy, units in zip(job.copies, draws):
        totals = [sum(c.weight for c in unit.choices) or 1.0 for unit in copy.units]
        for sample in range(num_samples):
            edits: list[Edit] = []
            weight = 1.0
            for unit, picks, total in zip(copy.units, units, totals):
                if sample >= len(picks):
                    continue
                choice = unit.choices[picks[sample]]
                weight *= unit.prior * choice.weight / total
                for segment, text in zip(unit.segments, choice.surface):
                    edit = make_edit(unit.type, job.text, segment.start, segment.end, text)
                    if edit is not None:
                        edits.append(edit.with_operation(choice.operation))
            if edits:
                edits = follow_pronouns(job.text, fix_articles(job.text, edits))
                out.append(Candidate(apply_edits(job.text, edits), tuple(edits), weight=weight))
    return out


def weighted_order(weights: Sequence[float], count: int, rng: random.Random) -> list[int]:
    """``count`` distinct indices drawn without replacement, proportional to ``weights``
    (Efraimidis-Spirakis keys)."""
    keys = [
        (math.log(1.0 - rng.random()) / w if w > 0 else -math.inf, -i)
        for i, w in enumerate(weights)
    ]
    keys.sort(reverse=True)
    return [-i for _, i in keys[:count]]


class VocabularyRefiller:
    """Typed substitution from a :class:`SceneGraphVocabulary` (no model weights).

    Each masked unit is replaced by a frequency-weighted surface of the same type and form;
    "a"/"an" before a replaced word is made to agree with it.
    """

    conditions_on_image = False

    def __init__(self, vocabulary: SceneGraphVocabulary, *, num_samples: int = 20):
        self.vocabulary = vocabulary
        self.num_samples = num_samples

    def tokenize(self, text: str) -> TokenView:
        return TokenView.from_text(text)

    def refill(self, jobs: Sequence[RefillJob]) -> list[list[Candidate]]:
        return [self._candidates(job) for job in jobs]

    def _candidates(self, job: RefillJob) -> list[Candidate]:
        rng = random.Random(job.seed)
        if _constrained(job):
            return _choice_candidates(job, self._draw_choices(job, rng), self.num_samples)
        out: list[Candidate] = []
        for copy in job.copies:
            pools = [
                self.vocabulary.pool_for(
                    u.type, tuple(job.text[s.start : s.end] for s in u.segments)
                )
                for u in copy.units
            ]
            for _ in range(self.num_samples):
                edits: list[Edit] = []
                for unit, (pool, normal) in zip(copy.units, pools):
                    substitute = draw(pool, normal, rng)
                    if substitute is None:
                        continue
                    for segment, text in zip(unit.segments, substitute):
                        edit = make_edit(unit.type, job.text, segment.start, segment.end, text)
                        if edit is not None:
                            edits.append(edit)
                edits = follow_pronouns(job.text, fix_articles(job.text, edits))
                out.append(Candidate(apply_edits(job.text, edits), tuple(edits)))
        return out

    def _draw_choices(self, job: RefillJob, rng: random.Random) -> list[list[list[int]]]:
        """By corpus weight: distinct substitutes for a one-unit copy, independent draws
        per unit otherwise."""
        draws = []
        for copy in job.copies:
            units = []
            for unit in copy.units:
                weights = [c.weight for c in unit.choices]
                if len(copy.units) == 1:
                    units.append(weighted_order(weights, self.num_samples, rng))
                else:
                    units.append(rng.choices(range(len(weights)), weights, k=self.num_samples))
            draws.append(units)
        return draws


__all__ = [
    "MLMRefiller",
    "MaskedLM",
    "PieceDecoder",
    "RefillJob",
    "Refiller",
    "VocabularyRefiller",
    "sample_refills",
    "weighted_order",
]
