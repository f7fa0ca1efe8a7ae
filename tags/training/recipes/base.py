"""Recipe interface and registry (``@register_recipe``, ``get_recipe``, ``list_recipes``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import torch
from torch import nn

_RECIPES: dict[str, type[Recipe]] = {}
T = TypeVar("T", bound="type[Recipe]")


def register_recipe(name: str) -> Callable[[T], T]:
    """Class decorator: make a :class:`Recipe` selectable as ``recipe: name``."""

    def wrap(cls: T) -> T:
        if name in _RECIPES:
            raise ValueError(f"recipe {name!r} is already registered")
        cls.name = name
        _RECIPES[name] = cls
        return cls

    return wrap


def list_recipes() -> list[str]:
    return sorted(_RECIPES)


def get_recipe(name: str) -> type[Recipe]:
    if name not in _RECIPES:
        raise KeyError(f"unknown recipe {name!r}; choose from {', '.join(list_recipes())}")
    return _RECIPES[name]


def to_device(item: Any, device: torch.device) -> Any:
    """A dataset image item (a pixel tensor, or a TagsModel ``(features, boxes)`` pair) on
    ``device``."""
    return tuple(t.to(device) for t in item) if isinstance(item, tuple) else item.to(device)


@dataclass
class StepContext:
    """What a training step needs to know beyond its batch."""

    step: int  # global optimizer step being computed (0-based)
    phase_index: int
    phase: Any  # PhaseConfig
    weights: dict[str, float]
    seed: int

    def generator(self, *keys: int, device: torch.device | str = "cpu") -> torch.Generator:
        """A generator (on ``device``) that is a pure function of (seed, step, keys):
        identical on every process and after resuming, whatever the process count."""
        value = self.seed
        for k in (self.step, *keys):
            value = (value * 6364136223846793005 + int(k) + 1442695040888963407) % (1 << 63)
        return torch.Generator(device=device).manual_seed(value)


@dataclass
class StepOutput:
    """Total loss of a step and detached scalar metrics (same keys on every process)."""

    loss: torch.Tensor
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)


class Recipe:
    """One training method. The loop prepares :attr:`module` with Accelerate, calls
    :meth:`training_step` per micro-batch and the hooks at phase/epoch/step boundaries.

    Subclasses set ``loss_terms`` (allowed keys of a phase's ``weights``) and
    ``default_weights``.
    """

    name: ClassVar[str] = ""
    loss_terms: ClassVar[tuple[str, ...]] = ()
    default_weights: ClassVar[dict[str, float]] = {}
    #: the heads each loss term trains, recorded in the saved model when a phase with a
    #: positive weight on the term begins (``tags explain`` refuses heads never trained)
    head_terms: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(
        self,
        config: Any,
        accelerator: Any,
        model: nn.Module,
        tokenizer: Any,
        dataset: Any,
        backend: Any = None,
    ):
        """``backend``: the :class:`~tags.backends.VLBackend` that wraps ``model`` (the loop
        passes the loaded one, with the TAGS heads saved beside the model); default: a new
        one over ``model``."""
        from tags.backends import as_backend

        self.config = config
        self.accelerator = accelerator
        self.model = model
        self.tokenizer = tokenizer
        self.dataset = dataset
        self.backend = backend if backend is not None else as_backend(model, tokenizer)

    @classmethod
    def validate(cls, config: Any) -> None:
        from tags.core.errors import ConfigError

        for i, phase in enumerate(config.phases):
            unknown = set(phase.weights) - set(cls.loss_terms)
            if unknown:
                raise ConfigError(
                    f"phases.{i}.weights: unknown loss term(s) {sorted(unknown)} for recipe "
                    f"{cls.name!r}; valid: {', '.join(cls.loss_terms)}"
                )

    def weights(self, phase: Any) -> dict[str, float]:
        return {**self.default_weights, **phase.weights}

    @property
    def module(self) -> nn.Module:
        """The module to prepare (its ``forward`` carries every gradient)."""
        return self.model

    def tags_model(self, module: nn.Module) -> nn.Module:
        """The unwrapped :class:`TagsModel` inside the prepared ``module``."""
        return self.accelerator.unwrap_model(module)

    def save_extras(self, path: Any) -> None:
        """What lives outside the saved model (a BLIP's TAGS heads), beside it."""
        self.backend.save_extras(path)

    def load_extras(self, path: Any) -> None:
        """Restore what :meth:`save_extras` wrote (a phase starting from saved weights)."""
        load = getattr(self.backend, "load_extras", None)
        if load is not None:
            load(path)

    def stateful(self) -> list[Any]:
        """Objects with ``state_dict``/``load_state_dict`` saved in every checkpoint."""
        return []

    def start_phase(self, index: int, phase: Any, module: nn.Module) -> None:
        """Called once when a phase begins, before the phase's ``init`` weights are loaded:
        ``module`` still holds the model the previous phase ended with."""
        self.record_trained_heads(index)

    def record_trained_heads(self, index: int) -> None:
        """Mark the heads that phases ``0..index`` train (a positive weight on a term of
        :attr:`head_terms`) in the backend's saved record."""
        names = {
            head
            for phase in self.config.phases[: index + 1]
            for term, weight in self.weights(phase).items()
            if weight > 0
            for head in self.head_terms.get(term, ())
        }
        if names:
            self.backend.mark_trained_heads(tuple(sorted(names)))

    def phase_weights_ready(self, index: int, phase: Any, module: nn.Module) -> None:
        """Called once when a phase begins, after its ``init`` weights are loaded (not when
        resuming inside it: the checkpoint holds what this hook changed)."""

    def resume_phase(self, index: int, phase: Any, module: nn.Module) -> None:
        """Called instead of :meth:`start_phase` after resuming inside phase ``index``:
        restore per-phase choices (e.g. a miner override) without recomputing anything
        that depends on the previous phase's model."""
        self.record_trained_heads(index)

    def start_epoch(self, epoch: int) -> None:
        """Called when an epoch begins (not when resuming inside it)."""

    def after_optimizer_step(self, module: nn.Module) -> None:
        """Called after every optimizer step."""

    def training_step(
        self, module: nn.Module, batch: dict[str, Any], ctx: StepContext
    ) -> StepOutput:
        raise NotImplementedError


__all__ = [
    "Recipe",
    "StepContext",
    "StepOutput",
    "get_recipe",
    "list_recipes",
    "register_recipe",
    "to_device",
]
