"""One testbed run's settings: the method, the model, the budget and the evaluation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: every ``negatives`` method of the testbed
METHODS: tuple[str, ...] = ("plain", "oracle", "tags", "mined", "istm", "tags-dc")
#: a method's name in reports
METHOD_NAMES: dict[str, str] = {
    "plain": "plain",
    "oracle": "oracle",
    "tags": "tags negatives",
    "mined": "hardest of 8",
    "istm": "TAGS",
    "tags-dc": "TAGS-DC",
}
MINERS: tuple[str, ...] = ("hardest", "semi_hard", "selhn", "fne")
#: TAGS / TAGS-DC refills: the whole vocabulary (the paper) or the masked unit's word class
REFILLS: tuple[str, ...] = ("free", "typed")
#: regions from their words (given perception) or a frozen CNN over rendered crops
PERCEPTIONS: tuple[str, ...] = ("symbolic", "pixels")
#: the dual encoder's ``variant`` (:class:`~tags.testbed.dual.DualMatcher`); the others are
#: the cross-encoder's (:data:`tags.testbed.matcher.VARIANTS`)
DUAL = "dual"
#: Hugging Face models on rendered whole images (:mod:`tags.testbed.hf`): CLIP, a dual
#: encoder (``contrastive`` by default), and BLIP, a cross-encoder (its ITM head, ``itm``)
HF_VARIANTS: tuple[str, ...] = ("hf-clip", "hf-blip")
#: ``loss``: binary ITM over the batch's rows, or CLIP's InfoNCE with the method's negatives
#: as extra text columns (NegCLIP; the dual encoder's default)
LOSSES: tuple[str, ...] = ("itm", "contrastive")
#: TAGS / TAGS-DC ``istm_loss``: the best refill as one more ITM row, or the paper's L_ISTM
#: (a triplet over the top-m refills)
ISTM_LOSSES: tuple[str, ...] = ("row", "triplet")


@dataclass
class TestbedConfig:
    """A run on the binding testbed: fresh 2-4 object scenes every step, binary ITM.

    Negatives (``negatives``), each added to another scene's caption checked false of the
    scene: ``plain`` (nothing more), ``oracle`` (a scene-checked single edit, kind uniform
    among ``kinds``, word directions balanced), ``tags`` (a ``tags generate`` negative of the
    caption from ``tags_negatives``), ``mined`` (the ``miner``'s pick among 8 other scenes'
    captions; ``mined_loss`` ``bce``: one more ITM row, ``triplet``: the miner's hinge),
    ``istm`` (TAGS) and ``tags-dc`` (TAGS-DC): the model's own MLM refills of the caption's
    units (``refills`` per masked copy at ``temperature``, over the vocabulary or, ``refill``
    ``typed``, the unit's word class; ``copies`` units per caption, 0: all), with
    ``mlm_weight`` x MLM (and ``dc_weight`` x WoD + WoC from step ``dc_start``, 0: all along;
    the paper's NSG then NSGDC phases). ``istm_loss`` ``row``: the best-scored refill as one
    more ITM row; ``triplet`` (the paper's L_ISTM): ``istm_weight`` x the mean hinge (margin
    0.2) of the positive's sigmoid score over the ``top_m`` best-scored kept refills.
    ``variant`` ``dual``: a dual encoder (:mod:`tags.testbed.dual`), trained by default with
    ``loss`` ``contrastive`` (CLIP's InfoNCE over the batch's scenes and true captions, the
    method's added negatives as extra text columns: NegCLIP); every other variant is the
    cross-encoder, trained with binary ``itm``. ``variant`` ``hf-clip`` / ``hf-blip``: a
    Hugging Face CLIP (``contrastive`` by default) or BLIP (``itm``, its ITM head) on the
    rendered whole scene (``perception`` ``pixels``, ``image_size`` px), from the directory
    ``hf_model`` or built at random (``hidden`` x ``layers``, ``patch_size`` px patches):
    :mod:`tags.testbed.hf`.
    ``rsum``: retrieval over the held-out scenes at the end; ``check_shortcut``: the trained
    text-only check of every negative the method added (:mod:`tags.testbed.shortcut`).
    """

    __test__ = False  # not a pytest class

    negatives: str = "plain"
    seed: int = 0
    label: str | None = None
    # model
    variant: str = "tags-bind"
    hidden: int = 128
    layers: int = 2
    embed: str = "tied"
    pool: str = "gate"
    perception: str = "symbolic"
    featurizer: str = "auto"
    crop_size: int = 64
    hf_model: str | None = None  # hf-clip / hf-blip: a local model directory (else built)
    image_size: int = 64  # hf-clip / hf-blip: the rendered scene's side in pixels
    patch_size: int = 8  # hf-clip / hf-blip built at random: the ViT's patch side
    # training
    loss: str | None = None  # None: contrastive for the dual encoder, else itm
    steps: int = 250
    stop_after: int = 0
    curriculum: int = 0
    batch_size: int = 64
    lr: float = 1e-3
    warmup: int = 50
    max_seconds: float = 0.0
    workers: int = 0
    device: str = "auto"
    bf16: bool = False
    # methods
    kinds: tuple[str, ...] = ("attribute", "object", "relation", "role")
    tags_negatives: str | None = None
    miner: str = "hardest"
    mined_loss: str = "bce"
    refill: str = "free"
    refills: int = 20
    temperature: float = 1.5
    copies: int = 0
    mlm_weight: float = 0.1
    dc_weight: float = 1e-3
    dc_start: int = 0
    istm_loss: str = "row"
    top_m: int = 31
    istm_weight: float = 1e-3
    # evaluation
    eval_seed: int = 0
    eval_scenes: int = 200
    eval_every: int = 50
    rsum: bool = False
    check_shortcut: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kinds = tuple(self.kinds)
        if self.negatives not in METHODS:
            raise ValueError(f"negatives {self.negatives!r}: choose one of {METHODS}")
        if self.negatives == "tags" and not self.tags_negatives:
            raise ValueError("negatives 'tags' needs tags_negatives (a tags generate output)")
        if self.miner not in MINERS:
            raise ValueError(f"miner {self.miner!r}: choose one of {MINERS}")
        if self.mined_loss not in ("bce", "triplet"):
            raise ValueError(f"mined_loss {self.mined_loss!r}: bce or triplet")
        if self.refill not in REFILLS:
            raise ValueError(f"refill {self.refill!r}: free or typed")
        if self.istm_loss not in ISTM_LOSSES:
            raise ValueError(f"istm_loss {self.istm_loss!r}: choose one of {ISTM_LOSSES}")
        if self.perception not in PERCEPTIONS:
            raise ValueError(f"perception {self.perception!r}: symbolic or pixels")
        self._check_loss()
        for name in ("steps", "batch_size", "eval_every", "hidden", "layers", "top_m",
                     "image_size", "patch_size"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def _check_loss(self) -> None:
        """Resolve ``loss``'s default for the variant; reject what the dual encoder lacks."""
        dual = self.variant in (DUAL, "hf-clip")
        if self.loss is None:
            self.loss = "contrastive" if dual else "itm"
        if self.loss not in LOSSES:
            raise ValueError(f"loss {self.loss!r}: choose one of {LOSSES}")
        if self.loss == "contrastive" and not dual:
            raise ValueError(f"loss contrastive needs a dual encoder ({DUAL!r} or 'hf-clip')")
        if self.loss == "contrastive" and self.negatives == "mined" and self.mined_loss != "bce":
            raise ValueError("loss contrastive: mined negatives as extra columns (mined_loss bce)")
        if self.variant == DUAL and self.negatives in ("istm", "tags-dc"):
            raise ValueError(f"negatives {self.negatives!r} needs MLM heads: not variant dual")
        if self.variant == DUAL and (self.perception != "symbolic" or self.embed != "tied"):
            raise ValueError("variant dual: symbolic perception, tied embeddings only")
        if self.variant in HF_VARIANTS:
            if self.perception != "pixels":
                raise ValueError(f"variant {self.variant}: rendered images (perception pixels)")
            if self.negatives in ("istm", "tags-dc"):
                raise ValueError(f"negatives {self.negatives!r}: the testbed's MLM heads, "
                                 f"not variant {self.variant}")  # fmt: skip

    @property
    def name(self) -> str:
        """The method's name in reports (``label`` when set)."""
        return self.label or METHOD_NAMES.get(self.negatives, self.negatives)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TestbedConfig:
        """A config of the fields found in ``values`` (e.g. ``vars(args)``); the rest are kept
        in :attr:`extra` (written to the run record)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in values.items() if k in names}
        return cls(**known, extra={k: v for k, v in values.items() if k not in names})

    def to_dict(self) -> dict[str, Any]:
        """The run record's ``config``: every field, with :attr:`extra` merged in."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "extra"}
        out["kinds"] = list(self.kinds)
        return {**self.extra, **out}
