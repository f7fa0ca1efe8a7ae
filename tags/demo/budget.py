"""Named training budgets of the demo (data sizes, steps, pool sizes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Budget:
    """Everything that sets the demo's cost. One shared pre-training run (``pretrain_*``,
    from scratch with ``init_std``), then every method gets the same ``steps`` of
    fine-tuning (TAGS-DC splits them into NSG ``steps - dc_steps`` and NSGDC ``dc_steps``).
    ``val_images`` > 0 adds a val split, on which every run is also evaluated (for choosing
    ``lr`` and ``istm_weight``, the L_ISTM weight, never on test); with ``patience`` > 0
    each fine-tuning also evaluates val RSum every ``eval_every`` steps (0: a sixth of
    ``steps``) and stops early after ``patience`` evaluations without a new best, keeping the
    best weights (``eval.patience`` of the training config)."""

    name: str
    train_images: int
    test_images: int
    steps: int
    dc_steps: int
    batch_size: int
    lr: float
    pool_size: int
    num_negatives: int
    num_copies: int
    num_samples: int
    top_m: int
    hidden_size: int
    layers: int
    pretrain_steps: int
    pretrain_lr: float
    pretrain_batch_size: int
    init_std: float = 0.08
    val_images: int = 0
    patience: int = 0
    eval_every: int = 0
    istm_weight: float = 1.0
    itm_sampling: str = "random"
    queue_size: int = 256
    max_regions: int = 8
    max_text_len: int = 24
    log_every: int = 5
    sample_captions: int = 6

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


BUDGETS: dict[str, Budget] = {
    # see docs/demo.md for the measured wall clock on 2 CPU cores
    "small": Budget(
        name="small",
        train_images=2000,
        test_images=100,
        steps=150,
        dc_steps=50,
        batch_size=16,
        lr=2e-4,
        pool_size=15,
        num_negatives=7,
        num_copies=4,
        num_samples=4,
        top_m=7,
        hidden_size=128,
        layers=2,
        pretrain_steps=400,
        pretrain_lr=2e-3,
        pretrain_batch_size=32,
    ),
    # end-to-end smoke run for the tests (< 1 min)
    "tiny": Budget(
        name="tiny",
        train_images=40,
        test_images=10,
        steps=3,
        dc_steps=1,
        batch_size=4,
        lr=1e-3,
        pool_size=4,
        num_negatives=2,
        num_copies=2,
        num_samples=2,
        top_m=2,
        hidden_size=32,
        layers=1,
        pretrain_steps=2,
        pretrain_lr=1e-3,
        pretrain_batch_size=4,
        queue_size=8,
        log_every=1,
        sample_captions=2,
    ),
}


def override_budget(budget: Budget, settings: list[str]) -> Budget:
    """``budget`` with ``FIELD=VALUE`` settings applied, each value cast to the field's type
    (``["steps=900", "lr=5e-4"]``); ``ValueError`` names a bad setting."""
    types = {f.name: type(getattr(budget, f.name)) for f in fields(budget)}
    changes: dict[str, Any] = {}
    for setting in settings:
        name, _, value = setting.partition("=")
        if name not in types or not value:
            raise ValueError(f"{setting}: expected FIELD=VALUE, FIELD one of {sorted(types)}")
        try:
            changes[name] = types[name](value)
        except ValueError:
            raise ValueError(f"{setting}: {value!r} is not a {types[name].__name__}") from None
    return replace(budget, **changes) if changes else budget


__all__ = ["BUDGETS", "Budget", "override_budget"]
