"""Headroom gate of the shapes benchmark: can a training rung learn its relations?

    python scripts/research/headroom.py --negatives oracle --variant tags-bind --pool gate \
        --steps 600 --eval-every 50 --out oracle.json
    python scripts/research/headroom.py --gate --variant tags-bind --pool gate --steps 600 \
        --eval-every 50 --device cuda --workers 12 --sweep-seconds 240 --out gate/
    python scripts/research/headroom.py --sweep --steps 1500 --device cuda --workers 12 \
        --sweep-seconds 420 --out sweep/

Trains an image-text matcher with binary ITM on **fresh procedural scenes every step**
(the benchmark's own generator, captioner and truth: :mod:`tags.benchmark.scenes`,
:func:`~tags.benchmark.captions.sample_claims`, :func:`~tags.benchmark.captions.holds`,
:func:`~tags.benchmark.minimal_pairs.false_edits`, role swaps as
:func:`~tags.benchmark.minimal_pairs.role_swap_pairs` builds them), and scores a fixed
held-out set of 2-4 object scenes every ``--eval-every`` steps: per kind (attribute, object,
relation, role), the share of minimal pairs whose true caption gets the higher ITM logit. The
held-out pairs are drawn as the benchmark draws its test pairs (``balanced`` sampler, plus
every role swap that is false of its scene); its generator seed is never a training seed.

Perception is given (symbolic regions, what a pre-trained detector would bring): each object
is one region whose feature is the sum of the word embeddings of its true shape, colour and
size (tied to the text side: ``--embed tied``; ``free``: a one-hot through a linear layer),
with its true box. Composition is not given: which mention names which region, and which
role each plays, must be learned.

Models (``--variant``), all the project's :class:`~tags.modeling.TagsModel` (a word-level
vocabulary of the benchmark's grammar) whose ITM logit gets one added term:

- ``tags``: nothing added;
- ``tags-rel``: every ordered pair of region states after the encoder, with pairwise geometry
  features of the two boxes (offsets, clear gaps, vertical overlap, radii), is scored by an
  MLP that also reads the [CLS] state; pair scores pooled by logsumexp (an existential claim
  holds when some pair satisfies it);
- ``tags-bind``: the pair (i, j) scores how well region i matches the subject words and region
  j the object words (cosine of the tied word and region embeddings through one learned
  map, pooled over the tokens by learned per-role weights read from the encoder's text
  states: ``--pool softmax`` weights or ``gate``, independent sigmoid gates), plus an MLP of
  the relation words' pooled text state and the pair's geometry; logsumexp over pairs.
  Which tokens form the subject, the object and the relation is learned, never given.

Negatives (``--negatives``): ``plain``, per caption the caption of another scene of the batch
(checked false of this scene); ``oracle``, that plus one scene-checked single edit of a kind
drawn uniformly among ``--kinds`` (attribute, object, relation: one unit changed, false of the
scene; role: the two mentions exchanged, false of the scene). Within a kind, the edit is
drawn so that every word pair is used as often in both directions (online, as the
benchmark's ``balanced`` sampler), so no word prior is taught. ``tags``: plain's negative
plus one ``tags generate`` negative of the caption (``--tags-negatives``, made from the
``--write-captions`` file without any scene: :mod:`research.tags_pool`). ``mined``: instead of
the random other caption, the one of 8 other scenes' captions (false of the scene) that the
model being trained scores highest, chosen by a :mod:`tags.mining` miner (``--miner``); with
``--mined-loss triplet`` the miner's own loss over all 8 candidates' ITM scores instead (the
image-to-text direction of VSE++ ``hardest``, SelHN ``selhn``, FNE ``fne``; FNE's Gaussians
are read from the in-batch square of 16 scenes and reset every 100 steps). ``istm`` (TAGS)
and ``tags-dc`` (TAGS-DC): plain's negative plus the one of the model's own MLM refills of
the caption's scene-graph units that it scores highest, with the MLM loss (and WoD/WoC):
:mod:`research.self_negatives`. ``--rsum``: image-text retrieval over the held-out scenes and
their 5 captions each at the last step. ``--perception pixels``: regions are a frozen CNN's
features of each object's crop of the rendered scene (:mod:`research.pixels`; the GPU ladder:
``scripts/research/pixel_ladder.sh``).

``--curriculum N``: 2-object scenes for the first N steps, then 2-4. ``--gate``: oracle and
plain for seeds 0-2 of one configuration, the mean per kind at the end and at every evaluated
step, and the verdict (oracle >= 90 % on attribute, relation, role; plain <= 60 % on relation,
role). ``--sweep``: the grid :data:`SWEEP_GRID` (one seed). Both run one run after another,
each stopping at ``--steps`` or its share of ``--sweep-seconds``, and write a curve per run,
``summary.json`` (and ``gate.json``) under ``--out``. ``--workers N`` builds the batches in N
processes (for a GPU; the step order is kept). ``--methods`` adds methods to the gate (their
gap closed, (method - plain) / (oracle - plain), per kind); ``--judge FOLDER`` gives the same
verdict over single runs made side by side (``--label`` names a run's method);
``--shortcut N`` is the trained text-only check of the tags negatives training would draw.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tags.benchmark.captions import Claim, holds, sample_claims
from tags.benchmark.minimal_pairs import (
    MinimalPair,
    false_edits,
    role_swap_pairs,
    sample_minimal_pairs,
)
from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES, Scene, generate_scene
from tags.benchmark.truth import normalize, parse_claim

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from research.pixels import FrozenCNN, PixelCrops, pixel_features
from research.self_negatives import (
    MAX_COPIES,
    SELF_METHODS,
    SelfNegativeStats,
    caption_units,
    choose_negatives,
    other_captions,
    record_truth,
)
from research.tags_pool import TagsPool, drawn_shortcut, step_scenes, training_captions

KINDS: tuple[str, ...] = ("attribute", "object", "relation", "role")
#: generator seed of the held-out scenes (training uses ``TRAIN_SEED_BASE + seed``)
EVAL_SEED_BASE = 900_000
TRAIN_SEED_BASE = 100
SPECIAL = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")
_GRAMMAR = ["a", "an", "and", "there", "is", "shapes", "two", "three", "four", ",", ":"]
VOCAB: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *SPECIAL,
            *_GRAMMAR,
            *(w for r in RELATIONS for w in r.split()),
            *SHAPES,
            *COLORS,
            *SIZES,
        ]
    )
)
WORD_ID = {w: i for i, w in enumerate(VOCAB)}
MAX_REGIONS = 4
VARIANTS: tuple[str, ...] = ("tags", "tags-rel", "tags-bind")
#: ``--negatives``
METHOD_CHOICES: tuple[str, ...] = ("plain", "oracle", "tags", "mined", *SELF_METHODS)


def tokenize(text: str) -> list[int]:
    """``[CLS] words [SEP]`` ids of a caption of the benchmark's grammar."""
    words = normalize(text).replace(",", " ,").replace(":", " :").split()
    return [1, *(WORD_ID[w] for w in words), 2]


# ---------------------------------------------------------------------------- data


def scene_tensors(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    """Per object: the word ids of its shape, colour, size ``[R, 3]`` and its box
    ``(x1, y1, x2, y2)`` divided by the image side ``[R, 4]``."""
    labels = np.array(
        [[WORD_ID[o.shape], WORD_ID[o.color], WORD_ID[o.size]] for o in scene.objects]
    )
    boxes = np.array([o.box for o in scene.objects], np.float32) / np.float32(scene.width)
    return labels, np.clip(boxes, 0.0, 1.0)


def role_swap(claim: Claim) -> Claim | None:
    """The claim with its two mentions exchanged (``role_swap_pairs``'s edit), or ``None``."""
    if claim.relation is None or len(claim.mentions) != 2:
        return None
    return replace(claim, mentions=claim.mentions[::-1])


def edit_options(claim: Claim, scene: Scene, kinds: Sequence[str]) -> dict[str, list]:
    """Per kind, the false single edits ``(original, replacement, claim)`` of ``claim``."""
    options = {k: v for k, v in false_edits(claim, scene).items() if k in kinds and v}
    swapped = role_swap(claim)
    if (
        "role" in kinds
        and swapped is not None
        and swapped.text != claim.text
        and not holds(swapped, scene)
    ):
        a, b = claim.mentions
        options["role"] = [(a.text, b.text, swapped)]
    return options


@dataclass
class NegativeSampler:
    """Scene-checked single-edit negatives; within a kind, directions are balanced online
    (an edit ``a -> b`` is preferred while ``b -> a`` has been used more often)."""

    kinds: Sequence[str]
    debt: dict[str, Counter] = field(default_factory=dict)

    def draw(
        self, claim: Claim, scene: Scene, rng: np.random.Generator
    ) -> tuple[str, Claim] | None:
        options = edit_options(claim, scene, self.kinds)
        if not options:
            return None
        kind = sorted(options)[int(rng.integers(len(options)))]
        debt = self.debt.setdefault(kind, Counter())
        edits = options[kind]
        owed = [k for k, (old, new, _) in enumerate(edits) if debt[(old, new)] > 0]
        pool = owed or list(range(len(edits)))
        old, new, edited = edits[pool[int(rng.integers(len(pool)))]]
        debt[(old, new)] -= 1
        debt[(new, old)] += 1
        return kind, edited


@dataclass
class Batch:
    """Rows of (caption, scene index, target); ``kinds`` names each row's origin."""

    #: per region, the word ids of its shape, colour and size ``[S, 4, 3]``; with
    #: ``--perception pixels`` its crop ``[S, 4, c, c, 3]`` (uint8) as built, then its frozen
    #: CNN features ``[S, 4, dim]`` (float, on the device) once the training loop has them
    labels: np.ndarray
    boxes: np.ndarray  # [S, 4, 4]
    region_mask: np.ndarray  # [S, 4]
    texts: list[str]
    scene_index: list[int]
    targets: list[float]
    kinds: list[str]
    scenes: list[Scene] = field(default_factory=list)
    #: ``mined``: per scene, the other scenes' captions (false of it) the miner chooses from
    candidates: list[list[str]] = field(default_factory=list)


def stack_scenes(
    scenes: Sequence[Scene], featurize: Callable | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scene, its regions' labels (or ``featurize``'s crops or features), boxes, mask."""
    labels = np.zeros((len(scenes), MAX_REGIONS, 3), np.int64)
    boxes = np.zeros((len(scenes), MAX_REGIONS, 4), np.float32)
    mask = np.zeros((len(scenes), MAX_REGIONS), np.int64)
    for i, scene in enumerate(scenes):
        lab, box = scene_tensors(scene)
        labels[i, : len(lab)], boxes[i, : len(box)], mask[i, : len(lab)] = lab, box, 1
    if featurize is not None:
        labels = featurize(scenes)
    return labels, boxes, mask


def make_batch(
    step: int, seed: int, scenes_per_step: int, negatives: str, max_objects: int,
    sampler: NegativeSampler | TagsPool, featurize: Callable | None = None,
) -> Batch:  # fmt: skip
    """Step ``step``'s fresh scenes (one true caption each), their negatives and targets;
    deterministic in ``(seed, step)`` (and the sampler's running balance). ``negatives``:
    ``plain``, ``oracle`` (``sampler`` a :class:`NegativeSampler`) or ``tags`` (a
    :class:`~research.tags_pool.TagsPool`)."""
    rng = np.random.default_rng([TRAIN_SEED_BASE + seed, step, 7])
    drawn = step_scenes(step, TRAIN_SEED_BASE + seed, scenes_per_step, max_objects)
    scenes, claims = [s for s, _ in drawn], [c for _, c in drawn]
    texts = [c.text for c in claims]
    index, targets, kinds = (
        list(range(len(scenes))),
        [1.0] * len(scenes),
        ["positive"] * len(scenes),
    )
    shift = int(rng.integers(1, len(scenes))) if len(scenes) > 1 else 0
    if negatives == "mined":
        labels, boxes, mask = stack_scenes(scenes, featurize)
        candidates = [mining_candidates(i, claims, scenes, rng) for i in range(len(scenes))]
        return Batch(labels, boxes, mask, texts, index, targets, kinds, scenes, candidates)
    for i, scene in enumerate(scenes):
        for tries in range(len(scenes) - 1):  # another scene's caption, false of this one
            other = claims[(i + shift + tries) % len(scenes)]
            if (i + shift + tries) % len(scenes) != i and not holds(other, scene):
                texts.append(other.text)
                index.append(i), targets.append(0.0), kinds.append("random")
                break
        if negatives in ("oracle", "tags"):
            drawn = sampler.draw(claims[i], scene, rng)
            if drawn is not None:
                kind, negative = drawn
                texts.append(negative if isinstance(negative, str) else negative.text)
                index.append(i), targets.append(0.0), kinds.append(kind)
    labels, boxes, mask = stack_scenes(scenes, featurize)
    return Batch(labels, boxes, mask, texts, index, targets, kinds, scenes)


#: ``mined``: candidates per scene the miner chooses from (other scenes' captions)
MINING_CANDIDATES = 8


def mining_candidates(
    i: int, claims: Sequence[Claim], scenes: Sequence[Scene], rng: np.random.Generator
) -> list[str]:
    """Up to :data:`MINING_CANDIDATES` captions of other scenes of the batch, false of scene
    ``i``, drawn at random (what a retrieval miner would rank)."""
    others = [j for j in rng.permutation(len(scenes)) if j != i]
    picked = [claims[j].text for j in others if not holds(claims[j], scenes[i])]
    return picked[:MINING_CANDIDATES]


def mine(model, batch: Batch, miner, device, bf16: bool) -> Batch:
    """``batch`` with one negative per scene chosen by ``miner`` (a :mod:`tags.mining` miner
    that returns an ``index``) from the model's current ITM scores of its candidates: the
    cross-encoder's retrieved hard negative, trained with the same binary ITM loss."""
    import torch

    rows, width = candidate_rows(batch)
    if not rows or width == 0:
        return batch
    scored = replace(batch, texts=[t for t, _ in rows], scene_index=[i for _, i in rows])
    positives = range(len(batch.scenes))
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device, bf16):
        cand = model(**to_device(scored, None, device)).float().cpu()
        pos = model(**to_device(batch, positives, device)).float().cpu()
    model.train(was_training)
    scores, valid = candidate_matrix(batch, cand, width)
    index = miner(scores, pos, valid).index
    texts, scene_index = list(batch.texts), list(batch.scene_index)
    targets, kinds = list(batch.targets), list(batch.kinds)
    for i, j in enumerate(index.tolist()):
        if j >= 0:
            texts.append(batch.candidates[i][j])
            scene_index.append(i), targets.append(0.0), kinds.append("mined")
    return replace(batch, texts=texts, scene_index=scene_index, targets=targets, kinds=kinds)


def _masked_copies(positives: Sequence[list[int]], units, pick=None):
    """Each caption's masked copies: ``(row, ids with the unit masked, masked positions)``;
    one copy per unit, or only unit ``pick[row]``."""
    copies = []
    for row, (ids, caption_units_) in enumerate(zip(positives, units, strict=True)):
        chosen = caption_units_ if pick is None else [caption_units_[pick[row]]]
        for _, positions in chosen:
            masked = list(ids)
            for p in positions:
                masked[p + 1] = WORD_ID["[MASK]"]  # + 1: [CLS]
            copies.append((row, masked, [p + 1 for p in positions]))
    return copies


def _mlm_inputs(copies, batch: Batch, device):
    import torch

    inputs = inputs_of([ids for _, ids, _ in copies], [row for row, _, _ in copies], batch, device)
    masked = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
    for k, (_, _, positions) in enumerate(copies):
        masked[k, positions] = True
    return inputs, masked


def self_negatives(model, batch: Batch, args, step: int, stats: SelfNegativeStats, device):
    """``--negatives istm|tags-dc``: every positive's units masked one per copy, refilled by
    the model's own MLM head (image-conditioned, ``--refills`` samples at ``--temperature``),
    filtered, and the candidate the model scores highest added as a negative row (kind
    ``self-<unit>``). Returns the batch, the chosen negatives and the positives' ids."""
    import torch

    from tags.negatives.refill import sample_refills

    S = len(batch.scenes)
    claims = [parse_claim(t) for t in batch.texts[:S]]
    units = [caption_units(c)[:MAX_COPIES] for c in claims]
    positives = [tokenize(t) for t in batch.texts[:S]]
    others = [
        other_captions(batch.scenes[i], claims[i], TRAIN_SEED_BASE + args.seed) for i in range(S)
    ]
    copies = _masked_copies(positives, units)
    generator = torch.Generator().manual_seed(int(args.seed) * 1_000_003 + step)
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device, args.bf16):
        inputs, masked = _mlm_inputs(copies, batch, device)
        logits = model.encode(**inputs, heads="mlm", masked=masked).mlm_logits
        drawn = sample_refills(
            logits, args.refills, args.temperature, generator, torch.arange(len(SPECIAL))
        ).numpy()
        sampled: list[list[np.ndarray]] = [[] for _ in range(S)]
        k = 0
        for row, _, positions in copies:
            sampled[row].append(drawn[k : k + len(positions)])
            k += len(positions)

        def score(rows: list[tuple[int, list[int]]]) -> np.ndarray:
            out = []
            for start in range(0, len(rows), 1024):
                part = rows[start : start + 1024]
                x = inputs_of([ids for _, ids in part], [r for r, _ in part], batch, device)
                out.append(model(**x).float().cpu())
            return torch.cat(out).numpy()

        chosen = choose_negatives(positives, units, sampled, others, score, VOCAB, stats)
    model.train(was_training)
    record_truth(chosen, batch.scenes, stats, batch.texts[:S])
    texts, scene_index = list(batch.texts), list(batch.scene_index)
    targets, kinds = list(batch.targets), list(batch.kinds)
    for r in chosen:
        texts.append(r.text)
        scene_index.append(r.row), targets.append(0.0), kinds.append(f"self-{r.unit}")
    batch = replace(batch, texts=texts, scene_index=scene_index, targets=targets, kinds=kinds)
    return batch, chosen, positives, units


def self_negative_losses(model, batch: Batch, chosen, positives, units, args, step, device):
    """``--mlm-weight`` x the MLM loss of the positives, one random unit of each masked
    (image-conditioned); ``tags-dc`` adds ``--dc-weight`` x (WoD + WoC) on the chosen
    negatives (per token: equals the positive's token; the positive's token)."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng([TRAIN_SEED_BASE + args.seed, step, 11])
    pick = [int(rng.integers(len(u))) for u in units]
    copies = _masked_copies(positives, units, pick)
    inputs, masked = _mlm_inputs(copies, batch, device)
    targets = torch.as_tensor(
        [positives[row][p] for row, _, positions in copies for p in positions], device=device
    )
    logits = model.encode(**inputs, heads="mlm", masked=masked).mlm_logits
    loss = args.mlm_weight * F.cross_entropy(logits.float(), targets)
    if args.negatives != "tags-dc" or not chosen:
        return loss
    inputs = inputs_of([r.ids for r in chosen], [r.row for r in chosen], batch, device)
    real = inputs["attention_mask"].bool()
    out = model.encode(**inputs, heads=("wod", "woc"), masked={"woc": real})
    truth = torch.zeros_like(inputs["input_ids"])
    for k, r in enumerate(chosen):
        truth[k, : len(r.ids)] = torch.as_tensor(positives[r.row])
    same = (inputs["input_ids"] == truth).long()
    wod = F.cross_entropy(out.wod_logits[real].float(), same[real])
    woc = F.cross_entropy(out.woc_logits.float(), truth[real])
    return loss + args.dc_weight * (wod + woc)


def candidate_rows(batch: Batch) -> tuple[list[tuple[str, int]], int]:
    """``mined``: the candidates as ``(text, scene)`` rows and the widest scene's count."""
    rows = [(text, i) for i, texts in enumerate(batch.candidates) for text in texts]
    return rows, max((len(t) for t in batch.candidates), default=0)


def candidate_matrix(batch: Batch, flat, width: int):
    """The candidates' flat scores as ``[scenes, width]`` (0 where a scene has fewer; keeps
    the gradient) and the mask of real entries."""
    import torch

    index = torch.tensor(
        [i * width + j for i, texts in enumerate(batch.candidates) for j in range(len(texts))],
        device=flat.device,
    )
    scores = torch.zeros(len(batch.scenes) * width, dtype=flat.dtype, device=flat.device)
    scores = scores.index_put((index,), flat).reshape(len(batch.scenes), width)
    valid = torch.zeros(len(batch.scenes) * width, dtype=torch.bool, device=flat.device)
    valid[index] = True
    return scores, valid.reshape(len(batch.scenes), width)


def mined_triplet_loss(
    model, batch: Batch, positive_logits, miner, device, bf16: bool, branches: Counter | None = None
):
    """``--mined-loss triplet``: the miner's own per-anchor loss (margin 0.2) over the ITM
    scores (sigmoid of the logit, in [0, 1]) of each scene's candidates against its caption,
    with gradients: the image-to-text direction of the VSE++ / SelHN objective."""
    import torch

    rows, width = candidate_rows(batch)
    if not rows:
        return positive_logits.sum() * 0.0
    scored = replace(batch, texts=[t for t, _ in rows], scene_index=[i for _, i in rows])
    with autocast(device, bf16):
        cand = torch.sigmoid(model(**to_device(scored, None, device)).float())
    scores, valid = candidate_matrix(batch, cand, width)
    positive = torch.sigmoid(positive_logits[: len(batch.scenes)].float())
    out = miner(scores, positive, valid)
    if branches is not None and out.branch is not None:  # SelHN / FNE: which rule applied
        branches.update(out.branch.tolist())
    return out.loss.mean()


#: ``--miner fne``: scenes of the square in-batch matrix its statistics are read from
FNE_SQUARE = 16
#: ``--miner fne``: steps between resets of its statistics (the official code resets them
#: every epoch; fresh scenes have no epochs)
FNE_WINDOW = 100


def fne_observe(model, batch: Batch, miner, step: int, device, bf16: bool) -> None:
    """``--miner fne``: feed FNE's Gaussians the right anchors of the ITM scores (sigmoid) of
    the first :data:`FNE_SQUARE` scenes against their captions, as its official code does
    with the in-batch matrix; reset every :data:`FNE_WINDOW` steps."""
    import torch

    if (step - 1) % FNE_WINDOW == 0:
        miner.start_epoch()
    n = min(FNE_SQUARE, len(batch.scenes))
    texts = [batch.texts[j] for _ in range(n) for j in range(n)]
    scenes = [i for i in range(n) for _ in range(n)]
    square = replace(batch, texts=texts, scene_index=scenes)
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device, bf16):
        sims = torch.sigmoid(model(**to_device(square, None, device)).float()).reshape(n, n)
    model.train(was_training)
    miner.observe(sims.cpu(), list(range(n)))


@dataclass
class EvalSet:
    """Held-out scenes (2-4 objects) and their minimal and role pairs."""

    scenes: dict[int, Scene]
    pairs: list[MinimalPair]
    #: per scene, its captions (the retrieval split: ``--rsum``)
    captions: dict[int, list[str]] = field(default_factory=dict)
    #: ``--perception pixels``: the pixel features of scenes (see :func:`stack_scenes`)
    featurize: Callable | None = None
    _stacked: tuple | None = None

    def stacked(self) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """The scene ids in order and their stacked inputs (computed once)."""
        if self._stacked is None:
            ids = sorted(self.scenes)
            self._stacked = (ids, *stack_scenes([self.scenes[i] for i in ids], self.featurize))
        return self._stacked

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.type for p in self.pairs))


def eval_set(seed: int = 0, num_scenes: int = 200, captions: int = 5) -> EvalSet:
    """The fixed held-out set: scenes of generator seed ``EVAL_SEED_BASE + seed`` (never a
    training seed), 5 captions each as the builder samples them, the ``balanced`` minimal
    pairs of the split and every false role swap."""
    gen_seed = EVAL_SEED_BASE + seed
    items = []
    for image_id in range(num_scenes):
        scene = generate_scene(image_id, gen_seed, 192, 2, 4)
        items.append(
            (scene, sample_claims(scene, np.random.default_rng([gen_seed, image_id, 1]), captions))
        )
    pairs = sample_minimal_pairs(items, gen_seed, 1, "balanced")
    for scene, claims in items:
        pairs += role_swap_pairs(scene, claims)
    return EvalSet(
        {s.image_id: s for s, _ in items},
        pairs,
        {s.image_id: [c.text for c in claims] for s, claims in items},
    )


# ---------------------------------------------------------------------------- model


def geometry(boxes):
    """Pairwise geometry of ``[N, R, 4]`` boxes: ``[N, R, R, 10]`` features of (i, j)."""
    import torch

    x1, y1, x2, y2 = boxes.unbind(-1)
    cx, cy, r = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2
    i = (slice(None), slice(None), None)  # [N, R, 1]
    j = (slice(None), None, slice(None))  # [N, 1, R]
    min_r = torch.minimum(r[i], r[j]).clamp(min=1e-3)
    v_overlap = (torch.minimum(y2[i], y2[j]) - torch.maximum(y1[i], y1[j])) / (2 * min_r)
    feats = [
        10 * (cx[j] - cx[i]),
        10 * (cy[j] - cy[i]),
        10 * (x1[j] - x2[i]),  # clear gap, i left of j
        10 * (x1[i] - x2[j]),  # i right of j
        10 * (y1[j] - y2[i]),  # i above j
        10 * (y1[i] - y2[j]),  # i below j
        v_overlap,
        (cx[j] - cx[i]).abs() / min_r,
        10 * r[i].expand_as(min_r),
        10 * r[j].expand_as(min_r),
    ]
    return torch.stack(feats, -1)


def build_model(
    variant: str, hidden: int, layers: int, embed: str, pool: str = "softmax",
    heads: bool = False, pixels: str | None = None,
):  # fmt: skip
    """The testbed's matcher; ``heads``: with the MLM, WoD and WoC heads (TAGS, TAGS-DC);
    ``pixels``: regions are the features of this frozen CNN (``--perception pixels``)."""
    import torch
    from torch import nn

    from tags.modeling import TagsConfig, TagsModel

    cnn = FrozenCNN(pixels) if pixels else None
    region_dim = cnn.dim if cnn is not None else None

    class HeadroomModel(nn.Module):
        """TagsModel over ``[caption ; object regions]``, optionally with a pair block."""

        def __init__(self) -> None:
            super().__init__()
            config = TagsConfig(
                vocab_size=len(VOCAB), mask_token_id=3, hidden_size=hidden,
                num_hidden_layers=layers, num_attention_heads=4,
                intermediate_size=2 * hidden, max_position_embeddings=48,
                region_feature_size=region_dim or (hidden if embed == "tied" else len(VOCAB)),
                max_regions=MAX_REGIONS, initializer_range=0.02, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, use_mlm_head=heads, use_wod_head=heads,
                use_woc_head=heads,
            )  # fmt: skip
            self.tags = TagsModel(config)
            self.cnn = cnn
            if embed == "tied" and not region_dim:  # region feature = its words' embeddings
                with torch.no_grad():
                    self.tags.img_embeddings.img_linear.weight.copy_(torch.eye(hidden))
                    self.tags.img_embeddings.img_linear.bias.zero_()
            self.pairs = None
            if variant == "tags-bind":  # word-region match, learned role pooling
                self.match = nn.Linear(hidden, hidden, bias=False)
                with torch.no_grad():
                    self.match.weight.copy_(torch.eye(hidden))
                self.match_scale = nn.Parameter(torch.tensor(5.0))
                self.roles = nn.Linear(hidden, 3)  # subject, object, relation pooling
            if variant in ("tags-rel", "tags-bind"):
                self.pair_in = nn.ModuleDict(
                    {
                        k: nn.Linear(hidden if k != "geo" else 10, hidden)
                        for k in ("s", "o", "c", "geo")
                    }
                )
                self.pairs = nn.Sequential(
                    nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1)
                )

        def region_features(self, labels):
            if labels.is_floating_point():  # pixel features
                return labels
            if embed == "tied":
                return self.tags.embeddings.word_embeddings(labels).sum(-2)
            return torch.nn.functional.one_hot(labels, len(VOCAB)).sum(-2).float()

        def bound_pairs(self, input_ids, attention_mask, labels, out, geo):
            """Pair (i, j): how well region i matches the subject words, region j the
            object words (cosine of word and region embeddings, pooled over the tokens by a
            learned attention per role from the text states), plus an MLP of the relation
            words' pooled state and the pair's geometry. ``[N, R, R]``."""
            words = self.match(self.tags.embeddings.word_embeddings(input_ids))
            regions = self.match(self.tags.img_embeddings.img_linear(self.region_features(labels)))
            sim = torch.einsum(
                "ntd,nrd->ntr",
                torch.nn.functional.normalize(words, dim=-1),
                torch.nn.functional.normalize(regions, dim=-1),
            ).float()  # [N, T, R]
            text = out.text_hidden_state
            role_logits = (
                self.roles(text).float().masked_fill(~attention_mask.bool()[..., None], -1e4)
            )
            alpha = role_logits.softmax(1)  # [N, T, 3]
            gates = alpha if pool == "softmax" else torch.sigmoid(role_logits)
            subject = torch.einsum("nt,ntr->nr", gates[..., 0], sim)
            obj = torch.einsum("nt,ntr->nr", gates[..., 1], sim)
            relation = torch.einsum("nt,ntd->nd", alpha[..., 2].to(text.dtype), text)
            h = geo + self.pair_in["c"](relation)[:, None, None]
            match = self.match_scale * (subject[:, :, None] + obj[:, None, :])
            return match + self.pairs(h).squeeze(-1).float()

        def encode(self, input_ids, attention_mask, labels, boxes, region_mask, heads, masked=None):
            """The TagsModel's output with ``heads`` over the caption and its regions."""
            x1, y1, x2, y2 = boxes.unbind(-1)
            box7 = torch.stack([x1, y1, x2, y2, x2 - x1, y2 - y1, (x2 - x1) * (y2 - y1)], -1)
            return self.tags(
                input_ids=input_ids, attention_mask=attention_mask,
                region_features=self.region_features(labels), region_boxes=box7,
                region_mask=region_mask, heads=heads, masked_positions=masked,
            )  # fmt: skip

        def forward(self, input_ids, attention_mask, labels, boxes, region_mask):
            out = self.encode(input_ids, attention_mask, labels, boxes, region_mask, "itm")
            logit = out.itm_logits.reshape(-1).float()
            if self.pairs is None:
                return logit
            reg, cls = out.region_hidden_state, out.last_hidden_state[:, 0]
            p = self.pair_in
            geo = p["geo"](geometry(boxes).to(reg.dtype))
            if variant == "tags-bind":
                scores = self.bound_pairs(input_ids, attention_mask, labels, out, geo)
            else:
                h = (
                    p["s"](reg)[:, :, None]
                    + p["o"](reg)[:, None, :]
                    + geo
                    + p["c"](cls)[:, None, None]
                )
                scores = self.pairs(h).squeeze(-1).float()  # [N, R, R]
            m = region_mask.bool()
            valid = (
                m[:, :, None]
                & m[:, None, :]
                & ~torch.eye(m.shape[1], dtype=torch.bool, device=m.device)
            )
            return logit + scores.masked_fill(~valid, -1e4).flatten(1).logsumexp(-1)

    return HeadroomModel()


# ---------------------------------------------------------------------------- run


def to_device(batch: Batch, rows: Sequence[int] | None, device):
    """Model inputs of ``batch`` (all rows, or ``rows``) on ``device``."""
    rows = range(len(batch.texts)) if rows is None else rows
    return inputs_of(
        [tokenize(batch.texts[r]) for r in rows], [batch.scene_index[r] for r in rows], batch,
        device,
    )  # fmt: skip


def inputs_of(token_ids: Sequence[list[int]], scenes: Sequence[int], batch: Batch, device):
    """Model inputs of captions given as ids, each with its scene (an index into ``batch``)."""
    import torch

    from tags.modeling.padding import pad_text

    ids, attn = pad_text(list(token_ids))
    idx = torch.as_tensor(list(scenes))
    return dict(
        input_ids=ids.to(device), attention_mask=attn.to(device),
        labels=(labels := torch.as_tensor(batch.labels))[idx.to(labels.device)].to(device),
        boxes=torch.as_tensor(batch.boxes)[idx].to(device),
        region_mask=torch.as_tensor(batch.region_mask)[idx].to(device),
    )  # fmt: skip


def evaluate(model, data: EvalSet, device, bf16: bool, chunk: int = 1024) -> dict[str, float]:
    """Per kind (and ``overall``), the share of pairs whose caption scores above its negative."""
    import torch

    ids, labels, boxes, mask = data.stacked()
    pos = {i: k for k, i in enumerate(ids)}
    texts = [p.caption for p in data.pairs] + [p.negative for p in data.pairs]
    index = [pos[p.image_id] for p in data.pairs] * 2
    batch = Batch(labels, boxes, mask, texts, index, [0.0] * len(texts), [])
    logits = []
    was_training = model.training
    model.eval()
    with torch.inference_mode(), autocast(device, bf16):
        for start in range(0, len(texts), chunk):
            rows = range(start, min(start + chunk, len(texts)))
            logits.append(model(**to_device(batch, rows, device)).float().cpu())
    model.train(was_training)
    scores = torch.cat(logits).numpy()
    wins = scores[: len(data.pairs)] > scores[len(data.pairs) :]
    types = np.array([p.type for p in data.pairs])
    result = {"overall": float(wins.mean())}
    for kind in KINDS:
        if (types == kind).any():
            result[kind] = float(wins[types == kind].mean())
    return result


def retrieval(model, data: EvalSet, device, bf16: bool, chunk: int = 2048) -> dict[str, float]:
    """Image-text retrieval over the held-out scenes and their captions (every scene against
    every caption, by the ITM logit): i2t / t2i R@1/5/10 and RSum
    (:func:`tags.evaluation.metrics.retrieval_metrics`). A caption counts for its own scene
    only, also where it happens to be true of another."""
    import torch

    from tags.evaluation.metrics import retrieval_metrics

    ids, labels, boxes, mask = data.stacked()
    texts = [t for i in ids for t in data.captions[i]]
    txt2img = [k for k, i in enumerate(ids) for _ in data.captions[i]]
    rows = [(s, t) for s in range(len(ids)) for t in range(len(texts))]
    batch = Batch(labels, boxes, mask, [], [], [], [])
    tokens = [tokenize(t) for t in texts]
    logits = []
    was_training = model.training
    model.eval()
    with torch.inference_mode(), autocast(device, bf16):
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            x = inputs_of([tokens[t] for _, t in part], [s for s, _ in part], batch, device)
            logits.append(model(**x).float().cpu())
    model.train(was_training)
    sims = torch.cat(logits).reshape(len(ids), len(texts))
    metrics = retrieval_metrics(sims, torch.as_tensor(txt2img))
    return {k: round(v, 2) for k, v in metrics.items() if k == "rsum" or "_r" in k}


def autocast(device, bf16: bool):
    import contextlib

    import torch

    if bf16 and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def make_sampler(args) -> NegativeSampler | TagsPool:
    """The negatives' source of ``args``: the tags pool of ``--tags-negatives`` or the
    oracle's scene-checked edits."""
    if args.negatives == "tags":
        return TagsPool.load(args.tags_negatives)
    return NegativeSampler(args.kinds)


def make_miner(args):
    """``--negatives mined``: the :mod:`tags.mining` miner of ``--miner`` (else ``None``)."""
    if args.negatives != "mined":
        return None
    from tags.mining import get_miner

    return get_miner(args.miner)


def make_featurize(args) -> Callable | None:
    """``--perception pixels``: the scenes' object crops (:mod:`research.pixels`)."""
    if getattr(args, "perception", "symbolic") != "pixels":
        return None
    return PixelCrops(args.crop_size, MAX_REGIONS)


def batches(args, sampler: NegativeSampler | TagsPool, start: int = 1) -> Iterator[Batch]:
    """The training batches of ``args`` from step ``start``; with ``--workers`` built in
    worker processes (each takes every W-th step, so the order stays by step)."""

    featurize = make_featurize(args)

    def build(step: int) -> Batch:
        max_objects = 2 if step <= args.curriculum else 4
        return make_batch(
            step, args.seed, args.batch_size, args.negatives, max_objects, sampler, featurize
        )

    if args.workers <= 0:
        for step in range(start, args.steps + 1):
            yield build(step)
        return
    import torch

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            for step in range(start + info.id, args.steps + 1, info.num_workers):
                yield build(step)

    loader = torch.utils.data.DataLoader(
        Stream(), batch_size=None, num_workers=args.workers, collate_fn=lambda b: b,
        prefetch_factor=4, persistent_workers=False,
    )  # fmt: skip
    yield from loader


def resolve_device(name: str):
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def initial_model(args):
    """The run's model at step 0 (seeded by ``--seed``). TAGS and TAGS-DC start from the same
    weights as every other method, plus the MLM, WoD and WoC heads."""
    import torch

    torch.manual_seed(args.seed)
    pixels = args.featurizer if getattr(args, "perception", "symbolic") == "pixels" else None
    model = build_model(
        args.variant, args.hidden, args.layers, args.embed, args.pool, pixels=pixels
    )
    if args.negatives not in SELF_METHODS:
        return model
    start = model.state_dict()
    model = build_model(
        args.variant, args.hidden, args.layers, args.embed, args.pool, heads=True, pixels=pixels
    )
    missing, unexpected = model.load_state_dict(start, strict=False)
    assert not unexpected and all("_head." in k for k in missing), (missing, unexpected)
    return model


def train(args, keep: dict | None = None) -> dict:
    """One run: train, evaluate every ``--eval-every`` steps; returns (and writes) the curve.
    ``keep``, a dict, receives the trained ``model`` and the ``held_out`` set."""
    import torch
    import torch.nn.functional as F

    device = resolve_device(args.device)
    self_made = args.negatives in SELF_METHODS
    model = initial_model(args)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, min(args.warmup, args.steps // 10))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    held_out = eval_set(args.eval_seed, args.eval_scenes)
    crops = make_featurize(args)
    if crops is not None:  # the frozen CNN's features, computed once
        held_out.featurize = lambda scenes: pixel_features(model.cnn, crops(scenes), device)
    curve: list[dict] = []
    started = time.perf_counter()
    train_seconds, losses, step = 0.0, [], 0

    def record(step: int) -> None:
        t = time.perf_counter()
        acc = evaluate(model, held_out, device, args.bf16)
        row = {
            "step": step,
            "train_seconds": round(train_seconds, 1),
            "loss": float(np.mean(losses)) if losses else None,
            **acc,
        }
        losses.clear()
        curve.append(row)
        print(format_row(row), f"(eval {time.perf_counter() - t:.1f}s)", flush=True)

    print(f"held-out pairs: {held_out.counts()}", flush=True)
    record(0)
    t0 = time.perf_counter()
    sampler = make_sampler(args)
    miner = make_miner(args)
    self_stats = SelfNegativeStats()
    branches: Counter = Counter()  # per anchor, the rule a SelHN / FNE miner applied
    for step, batch in enumerate(batches(args, sampler), start=1):
        if crops is not None:
            batch = replace(batch, labels=pixel_features(model.cnn, batch.labels, device))
        if miner is not None and args.mined_loss == "bce":
            batch = mine(model, batch, miner, device, args.bf16)
        if self_made:
            batch, chosen, positives, units = self_negatives(
                model, batch, args, step, self_stats, device
            )
        with autocast(device, args.bf16):
            logits = model(**to_device(batch, None, device))
            target = torch.as_tensor(batch.targets, device=device)
            loss = F.binary_cross_entropy_with_logits(logits.float(), target)
            if miner is not None and args.mined_loss == "triplet":
                if args.miner == "fne":
                    fne_observe(model, batch, miner, step, device, args.bf16)
                loss = loss + mined_triplet_loss(
                    model, batch, logits, miner, device, args.bf16, branches
                )
            if self_made:
                loss = loss + self_negative_losses(
                    model, batch, chosen, positives, units, args, step, device
                )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        out_of_time = args.max_seconds and time.perf_counter() - started > args.max_seconds
        last = step in (args.steps, args.stop_after)
        if step % args.eval_every == 0 or last or out_of_time:
            train_seconds += time.perf_counter() - t0
            record(step)
            t0 = time.perf_counter()
        if out_of_time or step == args.stop_after:
            break
    if args.rsum:
        t = time.perf_counter()
        curve[-1]["retrieval"] = retrieval(model, held_out, device, args.bf16)
        print(f"retrieval at step {step}: {curve[-1]['retrieval']} "
              f"({time.perf_counter() - t:.1f}s)", flush=True)  # fmt: skip
    result = {
        "config": {k: v for k, v in vars(args).items() if k not in ("sweep", "out")},
        "eval_pairs": held_out.counts(),
        "steps_done": step,
        "steps_per_s": round(step / max(train_seconds, 1e-9), 2),
        "seconds": round(time.perf_counter() - started, 1),
        "curve": curve,
        "final": curve[-1],
    }
    if branches:
        result["miner_branches"] = {str(k): v for k, v in sorted(branches.items())}
        print(f"miner branches: {result['miner_branches']}", flush=True)
    if self_made:
        result["self_negatives"] = self_stats.as_dict()
        print(f"self-negatives: {result['self_negatives']}", flush=True)
    if isinstance(sampler, TagsPool) and args.workers <= 0:
        result["tags_pool"] = sampler.stats()
        print(f"tags negatives: {result['tags_pool']}", flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    if keep is not None:
        keep.update(model=model, held_out=held_out, device=device)
    return result


def format_row(row: dict) -> str:
    cells = " | ".join(f"{100 * row[k]:5.1f}" if k in row else "    -" for k in (*KINDS, "overall"))
    loss = f"{row['loss']:.3f}" if row.get("loss") is not None else "  -  "
    return f"| {row['step']:6d} | {row['train_seconds']:7.1f} | {loss} | {cells} |"


HEADER = "|   step | train s | loss  | attr  |  obj  |  rel  | role  |  all  |\n|---:|---:|---:|---:|---:|---:|---:|---:|"

#: the sweep's grid: (negatives, variant, tags-bind pooling, curriculum as a share of
#: ``--steps``, lr); 8 runs, each ``--sweep-seconds`` / 8 at most
SWEEP_GRID: tuple[tuple[str, str, str, float, float], ...] = (
    ("oracle", "tags-bind", "softmax", 0.0, 1e-3),
    ("oracle", "tags-bind", "gate", 0.0, 1e-3),
    ("oracle", "tags-bind", "gate", 0.0, 3e-3),
    ("oracle", "tags-bind", "gate", 0.3, 1e-3),
    ("oracle", "tags-rel", "softmax", 0.0, 1e-3),
    ("oracle", "tags", "softmax", 0.0, 1e-3),
    ("plain", "tags-bind", "gate", 0.0, 1e-3),
    ("plain", "tags-bind", "gate", 0.3, 1e-3),
)
GATE_SEEDS = (0, 1, 2)
#: the gate: oracle >= 90 % on these kinds, plain <= 60 % on those (mean over GATE_SEEDS)
ORACLE_AT_LEAST = {"attribute": 0.9, "relation": 0.9, "role": 0.9}
PLAIN_AT_MOST = {"relation": 0.6, "role": 0.6}
#: the gap closed is reported where the oracle is at least this far above plain
MIN_GAP = 0.1


def _runs(args, plan: Sequence[tuple[str, str, str, str, float, float, int]]) -> list[dict]:
    """Train every ``(name, negatives, variant, pool, curriculum share, lr, seed)`` of ``plan``
    one after another, each with ``--steps`` and its share of ``--sweep-seconds`` at most."""
    out = Path(args.out or "headroom_sweep")
    out.mkdir(parents=True, exist_ok=True)
    share = args.sweep_seconds / len(plan)
    summary = []
    for name, negatives, variant, pool, curriculum, lr, seed in plan:
        run = argparse.Namespace(**vars(args))
        run.negatives, run.variant, run.pool, run.lr, run.seed = negatives, variant, pool, lr, seed
        run.curriculum = int(curriculum * args.steps)
        run.max_seconds = max(share - 15, 5)  # start-up and the final evaluation
        run.out = str(out / f"{name}.json")
        print(f"\n### {name}\n{HEADER}", flush=True)
        result = train(run)
        keys = ("steps_done", "steps_per_s", "seconds", "final", "curve")
        summary.append({"name": name, "negatives": negatives, **{k: result[k] for k in keys}})
    print(
        "\n| run | steps | steps/s | s | attr | obj | rel | role |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for s in summary:
        cells = " | ".join(f"{100 * s['final'].get(k, float('nan')):.1f}" for k in KINDS)
        print(
            f"| {s['name']} | {s['steps_done']} | {s['steps_per_s']} | {s['seconds']} | {cells} |"
        )
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def sweep(args) -> list[dict]:
    """Every configuration of :data:`SWEEP_GRID` (seed ``--seed``); prints and writes a
    summary (``OUT/summary.json``, a curve per run)."""
    plan = []
    for n, v, p, c, lr in SWEEP_GRID:
        name = f"{n}-{v}{'-' + p if v == 'tags-bind' else ''}-c{c:g}-lr{lr:g}"
        plan.append((name, n, v, p, c, lr, args.seed))
    return _runs(args, plan)


def gate(args) -> dict:
    """The headroom gate for the configuration of ``args``: each of ``--methods`` (oracle and
    plain, and e.g. ``tags``) for each of ``--seeds``, the mean and sample std per kind, whether
    the gate passes, and every other method's gap closed per kind (at the end and by step)."""
    share = args.curriculum / args.steps
    methods = list(dict.fromkeys(["oracle", "plain", *args.methods]))
    plan = [
        (f"{n}-seed{s}", n, args.variant, args.pool, share, args.lr, s)
        for n in methods
        for s in args.seeds
    ]
    return judge(_runs(args, plan), methods, Path(args.out or "headroom_sweep"))


def judge(summary: Sequence[dict], methods: Sequence[str], out: Path) -> dict:
    """The gate's verdict over the runs of ``summary`` (mean ± std per method and kind, the
    pass, the gap closed, by step); printed and written to ``out/gate.json``."""
    verdict: dict = {}
    columns = [*KINDS, "overall"]
    print(
        "\n| negatives | " + " | ".join(columns) + " | RSum |\n|---|" + "---:|" * (len(columns) + 1)
    )
    for negatives in methods:
        finals = [s["final"] for s in summary if s["negatives"] == negatives]
        stats = {k: mean_std([f[k] for f in finals]) for k in KINDS}
        verdict[negatives] = stats
        overall = mean_std([f["overall"] for f in finals])
        rsums = [f["retrieval"]["rsum"] for f in finals if "retrieval" in f]
        rsum = mean_std(rsums) if len(rsums) == len(finals) else None
        verdict.setdefault("overall", {})[negatives] = overall
        verdict.setdefault("rsum", {})[negatives] = rsum
        cells = [f"{100 * m:.1f} ± {100 * sd:.1f}" for m, sd in [*stats.values(), overall]]
        cells.append(f"{rsum[0]:.1f} ± {rsum[1]:.1f}" if rsum else "-")
        print(f"| {negatives} | " + " | ".join(cells) + " |")
    passed = gate_passes(
        {k: v[0] for k, v in verdict["oracle"].items()},
        {k: v[0] for k, v in verdict["plain"].items()},
    )
    verdict["passed"] = passed
    verdict["gap_closed"] = {
        n: gap_closed(verdict[n], verdict["oracle"], verdict["plain"])
        for n in methods
        if n not in ("oracle", "plain")
    }
    for n, gaps in verdict["gap_closed"].items():
        print(f"gap closed by {n}: " + ", ".join(f"{k} {g:.2f}" for k, g in gaps.items()))
    verdict["by_step"] = gate_by_step(summary, methods)
    print(
        f"gate {'PASSED' if passed else 'not passed'}: oracle >= 90 on attribute, relation, role; plain <= 60 on relation, role"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "gate.json").write_text(json.dumps(verdict, indent=1))
    return verdict


def judge_folder(folder: Path) -> dict:
    """:func:`judge` over the single runs' curve files in ``folder`` (``--out`` of runs made
    one by one, e.g. side by side): every method found, oracle and plain required."""
    summary = []
    for path in sorted(folder.glob("*.json")):
        run = json.loads(path.read_text())
        if not isinstance(run, dict) or "curve" not in run or "config" not in run:
            continue
        negatives = run["config"].get("label") or run["config"]["negatives"]
        name = f"{negatives}-seed{run['config']['seed']}"
        summary.append({"name": name, "negatives": negatives, **run})
    methods = list(dict.fromkeys(["oracle", "plain", *sorted({s["negatives"] for s in summary})]))
    missing = [m for m in ("oracle", "plain") if not any(s["negatives"] == m for s in summary)]
    if missing:
        raise SystemExit(f"{folder}: no curve of {', '.join(missing)}")
    return judge(summary, methods, folder)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (0 for one value)."""
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def gate_passes(oracle: dict[str, float], plain: dict[str, float]) -> bool:
    """Oracle means >= :data:`ORACLE_AT_LEAST` and plain means <= :data:`PLAIN_AT_MOST`."""
    return all(oracle[k] >= v for k, v in ORACLE_AT_LEAST.items()) and all(
        plain[k] <= v for k, v in PLAIN_AT_MOST.items()
    )


def gap_closed(method: dict, oracle: dict, plain: dict) -> dict[str, float]:
    """Per kind, (method - plain) / (oracle - plain) of the means (values may be a mean or a
    ``(mean, std)`` pair); ``nan`` where the oracle is not :data:`MIN_GAP` above plain (a
    ratio of two small differences is noise)."""
    mean = {k: v[0] if isinstance(v, (tuple, list)) else v for k, v in method.items()}
    top = {k: v[0] if isinstance(v, (tuple, list)) else v for k, v in oracle.items()}
    low = {k: v[0] if isinstance(v, (tuple, list)) else v for k, v in plain.items()}
    return {
        k: (mean[k] - low[k]) / (top[k] - low[k]) if top[k] - low[k] >= MIN_GAP else float("nan")
        for k in KINDS
    }


def gate_by_step(
    summary: Sequence[dict], methods: Sequence[str] = ("oracle", "plain")
) -> list[dict]:
    """The gate at every evaluated step that all runs reached: the mean over seeds of every
    method per kind, whether the gate passes, and the other methods' relation and role gap
    closed; printed."""
    common = set.intersection(*({row["step"] for row in s["curve"]} for s in summary))
    others = [m for m in methods if m not in ("oracle", "plain")]
    rows = []
    head = ["oracle attr", "oracle rel", "oracle role", "plain rel", "plain role"]
    for m in others:
        head += [f"{m} rel", f"{m} role", f"{m} gap rel", f"{m} gap role"]
    print("\n| step | " + " | ".join(head) + " | gate |")
    print("|---:|" + "---:|" * len(head) + "---|")
    for step in sorted(common):
        means = {}
        for negatives in methods:
            at = [
                r
                for s in summary
                if s["negatives"] == negatives
                for r in s["curve"]
                if r["step"] == step
            ]
            means[negatives] = {k: float(np.mean([r[k] for r in at])) for k in KINDS}
        passed = gate_passes(means["oracle"], means["plain"])
        o, p = means["oracle"], means["plain"]
        cells = [o["attribute"], o["relation"], o["role"], p["relation"], p["role"]]
        text = [f"{100 * c:.1f}" for c in cells]
        row = {"step": step, **means, "passed": passed}
        for m in others:
            gaps = gap_closed(means[m], o, p)
            row[f"{m}_gap_closed"] = gaps
            text += [f"{100 * means[m]['relation']:.1f}", f"{100 * means[m]['role']:.1f}"]
            text += [f"{gaps['relation']:.2f}", f"{gaps['role']:.2f}"]
        rows.append(row)
        print(f"| {step} | " + " | ".join(text) + f" | {'pass' if passed else '-'} |")
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--negatives", choices=METHOD_CHOICES, default="oracle",
        help="istm: TAGS, tags-dc: TAGS-DC (the model's own MLM refills; research.self_negatives)",
    )  # fmt: skip
    parser.add_argument(
        "--refills", type=int, default=20, help="istm, tags-dc: refills per masked copy (L)"
    )
    parser.add_argument(
        "--temperature", type=float, default=1.5, help="istm, tags-dc: refill temperature"
    )
    parser.add_argument(
        "--mlm-weight", type=float, default=0.1, help="istm, tags-dc: l_MLM (paper 0.1)"
    )
    parser.add_argument(
        "--dc-weight", type=float, default=1e-3, help="tags-dc: l_WoD = l_WoC (paper 1e-3)"
    )
    parser.add_argument(
        "--rsum",
        action="store_true",
        help="at the last step, also image-text retrieval over the held-out scenes' captions",
    )
    parser.add_argument(
        "--stop-after", type=int, default=0, metavar="STEP",
        help="stop at this step (the schedule stays that of --steps)",
    )  # fmt: skip
    parser.add_argument(
        "--miner",
        choices=("hardest", "semi_hard", "selhn", "fne"),
        default="hardest",
        help="--negatives mined: the rule choosing among the candidates (tags.mining)",
    )
    parser.add_argument(
        "--mined-loss",
        choices=("bce", "triplet"),
        default="bce",
        help="--negatives mined: the chosen candidate as one more ITM row (bce), or the "
        "miner's own triplet loss over every candidate's ITM score (triplet; selhn needs it)",
    )
    parser.add_argument(
        "--tags-negatives",
        default=None,
        help="--negatives tags: a tags generate output over the --write-captions file",
    )
    parser.add_argument(
        "--write-captions",
        default=None,
        metavar="FILE",
        help="write the training captions of --seeds (steps 1..--steps) for tags generate, as "
        "JSON Lines (one image each); exit",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(GATE_SEEDS))
    parser.add_argument(
        "--label", default=None, help="the method's name for --judge (default: --negatives)"
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHOD_CHOICES,
        default=["oracle", "plain"],
        help="--gate: the methods run (oracle and plain always)",
    )
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--variant", choices=VARIANTS, default="tags-bind")
    parser.add_argument("--embed", choices=("tied", "free"), default="tied")
    parser.add_argument(
        "--pool",
        choices=("softmax", "gate"),
        default="gate",
        help="tags-bind: a role's word matches pooled by softmax weights or summed by sigmoid gates",
    )
    parser.add_argument(
        "--perception", choices=("symbolic", "pixels"), default="symbolic",
        help="regions as their words' embeddings (symbolic) or a frozen CNN's features of "
        "each object's crop of the rendered scene (pixels)",
    )  # fmt: skip
    parser.add_argument(
        "--featurizer", choices=("auto", "efficientnet", "random-conv"), default="auto",
        help="--perception pixels: the frozen CNN (auto: EfficientNet-Lite0 when installed)",
    )  # fmt: skip
    parser.add_argument("--crop-size", type=int, default=64, help="--perception pixels")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--curriculum", type=int, default=0, help="2-object scenes for N steps")
    parser.add_argument("--batch-size", type=int, default=64, help="scenes (captions) a step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--eval-scenes", type=int, default=200)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--max-seconds", type=float, default=0.0, help="stop a run after this")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (cuda only)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--workers", type=int, default=0, help="batch-building processes")
    parser.add_argument("--out", default=None, help="the curve JSON (sweep: a folder)")
    parser.add_argument("--sweep", action="store_true", help="run the grid (SWEEP_GRID)")
    parser.add_argument(
        "--gate", action="store_true", help="oracle and plain, 3 seeds, this configuration"
    )
    parser.add_argument("--sweep-seconds", type=float, default=420.0)
    parser.add_argument(
        "--shortcut",
        type=int,
        default=0,
        metavar="N",
        help="the trained text-only check of --tags-negatives drawn for the first N training "
        "captions of --seeds; exit",
    )
    parser.add_argument(
        "--judge",
        default=None,
        metavar="FOLDER",
        help="the gate's verdict over the single runs' curve files in FOLDER; exit",
    )
    args = parser.parse_args(argv)
    if (
        args.negatives == "mined"
        and args.miner in ("selhn", "fne")
        and args.mined_loss != "triplet"
    ):
        parser.error(f"--miner {args.miner}'s rule is its loss: add --mined-loss triplet")
    if args.negatives == "plain" and "--kinds" in (argv or sys.argv):
        parser.error("--kinds applies to --negatives oracle")
    uses_tags = args.negatives == "tags" or (args.gate and "tags" in args.methods) or args.shortcut
    if uses_tags and not args.write_captions:
        if not args.tags_negatives:
            parser.error("--negatives tags needs --tags-negatives (a tags generate output)")
        if not Path(args.tags_negatives).is_file():
            parser.error(f"--tags-negatives {args.tags_negatives} not found")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.write_captions:
        texts = training_captions(
            args.seeds, args.steps, args.batch_size, args.curriculum, TRAIN_SEED_BASE
        )
        lines = (json.dumps({"image_id": i, "caption": t}) for i, t in enumerate(texts))
        Path(args.write_captions).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{len(texts)} captions of seeds {args.seeds} -> {args.write_captions}")
        return 0
    if args.shortcut:
        pool = TagsPool.load(args.tags_negatives)
        texts = training_captions(
            args.seeds, args.steps, args.batch_size, args.curriculum, TRAIN_SEED_BASE
        )
        print(json.dumps(drawn_shortcut(pool, texts[: args.shortcut]), indent=1))
        return 0
    if args.judge:
        judge_folder(Path(args.judge))
        return 0
    if args.sweep or args.gate:
        (sweep if args.sweep else gate)(args)
        return 0
    print(HEADER, flush=True)
    result = train(args)
    print(f"steps/s {result['steps_per_s']}, {result['seconds']} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
