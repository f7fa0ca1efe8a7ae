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
    ``typed``, the unit's word class; ``copies`` units per caption, 0: all), the best-scored kept, with ``mlm_weight`` x MLM (and ``dc_weight`` x WoD + WoC).
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
    # training
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
        if self.refill not in ("free", "typed"):
            raise ValueError(f"refill {self.refill!r}: free or typed")
        if self.perception not in ("symbolic", "pixels"):
            raise ValueError(f"perception {self.perception!r}: symbolic or pixels")
        for name in ("steps", "batch_size", "eval_every", "hidden", "layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

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
