"""Training with Accelerate: configs, recipes (``tags-dc``, ``vse``), losses, the loop.

- ``config``: dataclass schema, YAML loading, dotted overrides (:func:`load_config`);
- ``recipes``: registry (:func:`register_recipe`, :func:`get_recipe`, :func:`list_recipes`)
  and the two built-in recipes;
- ``losses``: TAGS-DC loss terms as modules; ``retrieval``: retrieved negatives;
  ``synthetic``: the synthetic-negative interface and its sources;
- ``optim``: optimizer and phase-aware linear schedule; ``state``/``tracking``: checkpointed
  loop position, JSONL / tensorboard logging;
- ``evaluation``: R@K / RSum on a held-out split at phase ends (:mod:`tags.evaluation`);
- ``loop``: :func:`training_function`.

See ``docs/training.md``.

Layer: above evaluation and mining. May import ``tags.evaluation``, ``tags.mining`` and
every layer below them; never ``tags.benchmark``, ``tags.demo`` or ``tags.cli`` (the
benchmark's truth audits come in as plug-ins, see ``audits``).
"""

from tags.training.config import (
    ConfigError,
    TrainConfig,
    config_from_dict,
    load_config,
    save_config,
)
from tags.training.loop import TrainResult, checkpoint_dirs, train, training_function
from tags.training.recipes import (
    Recipe,
    StepContext,
    StepOutput,
    get_recipe,
    list_recipes,
    register_recipe,
)

__all__ = [
    "ConfigError",
    "Recipe",
    "StepContext",
    "StepOutput",
    "TrainConfig",
    "TrainResult",
    "checkpoint_dirs",
    "config_from_dict",
    "get_recipe",
    "list_recipes",
    "load_config",
    "register_recipe",
    "save_config",
    "train",
    "training_function",
]
