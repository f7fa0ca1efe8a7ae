"""Every setting of negative generation in one dataclass, and the named presets.

:class:`GenerationConfig` holds the knobs of the pipeline (copies, refills, masking, edit
operators, selection) and how the generator is assembled (with or without the edit planner,
its background counts and noun classes); :func:`~tags.negatives.factory.create_generator`
builds a :class:`~tags.negatives.pipeline.NegativeGenerator` from it. ``tags generate``'s
options, the engine-neutral batch function's settings and the training recipe's
``tags_dc.synthetic`` section all map onto its fields. :data:`PRESETS` are instances of it
(``tags generate --preset``); :meth:`GenerationConfig.from_preset` lays options over one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tags.negatives.edit_kinds import parse_kinds

#: A ``noun_classes`` value as the config keeps it: ``((class, (noun, ...)), ...)``.
NounClasses = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class GenerationConfig:
    """Knobs of TAGS-DC generation (defaults: the paper's base setting). Frozen and
    hashable: a preset is an instance, and settings can key a cache.

    Attributes:
        num_copies: masked copies ``K`` per caption.
        num_samples: refills ``L`` per masked copy.
        temperature: refill softmax temperature.
        top_m: negatives kept per caption.
        mask_ratio: share of tokens masked per copy.
        max_edits: most units edited per negative; ``None`` (the paper): as many as fit in
            ``mask_ratio``; ``1``: minimal edits, one copy per unit (``tags generate``'s
            default).
        swaps: with an edit planner, also exchange two attributes or a relation's subject
            and object head nouns (one operation, two edit spans).
        role_swaps: with an edit planner, also exchange the whole noun phrases of an
            asymmetric relation's subject and object ("a red circle left of a blue square"
            -> "a blue square left of a red circle"): relation negatives that only the
            image's layout tells apart (off: the paper, and ``tags generate``'s default).
        adds: with an edit planner, also insert an attribute or an object the caption does
            not name ("a dog" -> "a black dog", "a dog and a cat"; SugarCrepe's add_att /
            add_obj; see :mod:`~tags.negatives.additions`), one insertion per negative (off:
            the paper and ``tags generate``'s presets; ``--adds`` turns it on).
        balance_types: each masked copy starts from a unit of a type drawn uniformly among
            the caption's types (object, attribute, relation) instead of a uniform unit, so
            its one relation is edited as often as its several attributes (off: the paper).
        stratify_types: with a scorer, the top-m take turns by edit kind (relation,
            object, attribute: the best of each, then the second best...) instead of the
            plain top-m, which the many attribute candidates fill (off: the paper).
        masking: ``"unit"`` (scene-graph units) or ``"word"`` (ablation baseline).
        max_tokens: longer captions are cut at a word boundary (counted).
        batch_size: captions per processing batch (no effect on the output).
        seed: run seed.
        unconstrained: no edit planner: refills are any surface of the unit's type or any
            MLM word piece (the original TAGS-DC engine); a preset that sets it (``paper``)
            refills with a masked LM.
        background: scene counts added to the corpus's own for the edit planner
            (:func:`~tags.negatives.background.with_background`: ``"factual"``, files,
            ``None``/``"none"`` for none).
        noun_classes: ``{class: [noun, ...]}``: nouns the planner substitutes for each other
            as one category instead of WordNet's (kept as a tuple of pairs; see
            :meth:`noun_class_map`).
        kinds: the edit kinds kept (:data:`~tags.negatives.edit_kinds.EDIT_KINDS`:
            attribute, person, object, relation, swap, add); ``None``: all. A candidate
            with an edit of another kind is dropped by the ``other_kind`` filter.
    """

    num_copies: int = 20
    num_samples: int = 20
    temperature: float = 1.5
    top_m: int = 31
    mask_ratio: float = 0.15
    max_edits: int | None = None
    swaps: bool = True
    role_swaps: bool = False
    adds: bool = False
    balance_types: bool = False
    stratify_types: bool = False
    masking: str = "unit"
    max_tokens: int = 64
    batch_size: int = 64
    seed: int = 0
    unconstrained: bool = False
    background: str | None = "factual"
    noun_classes: NounClasses | None = None
    kinds: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.masking not in ("unit", "word"):
            raise ValueError(f"masking must be 'unit' or 'word', got {self.masking!r}")
        for name in ("num_copies", "num_samples", "top_m", "max_tokens", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if self.max_edits is not None and self.max_edits < 1:
            raise ValueError(f"max_edits must be at least 1 (or None), got {self.max_edits}")
        classes = self.noun_classes
        if isinstance(classes, Mapping):  # hashable, in the file's order
            classes = tuple((str(k), tuple(v)) for k, v in classes.items())
            object.__setattr__(self, "noun_classes", classes)
        if self.kinds is not None:  # hashable, sorted; ValueError naming the kinds
            object.__setattr__(self, "kinds", parse_kinds(self.kinds))
            for kind, on, how in (
                ("add", self.adds, "pass --adds, adds=True"),
                ("swap", self.swaps, "--no-swaps or the preset turns them off, swaps=False"),
            ):
                if kind in self.kinds and not on:
                    raise ValueError(f"--kinds {kind}: {kind} edits are off in this run ({how})")
        if self.background is not None and str(self.background).lower() == "none":
            object.__setattr__(self, "background", None)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> GenerationConfig:
        """Preset ``name`` (:data:`PRESETS`) with ``overrides`` (fields) laid over it;
        ``KeyError`` naming the presets for an unknown one."""
        if name not in PRESETS:
            raise KeyError(f"preset {name!r}: choose from {', '.join(sorted(PRESETS))}")
        return dataclasses.replace(PRESETS[name], **overrides)

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> GenerationConfig:
        """A config from any object holding some of its fields by name (e.g. the training
        recipe's ``tags_dc.synthetic`` section), with ``overrides`` over them."""
        shared = {
            f.name: getattr(settings, f.name)
            for f in dataclasses.fields(cls)
            if hasattr(settings, f.name)
        }
        return cls(**{**shared, **overrides})

    @property
    def planned(self) -> bool:
        """Whether the generator edits through the edit planner (unit masking, not
        ``unconstrained``)."""
        return not self.unconstrained and self.masking == "unit"

    def noun_class_map(self) -> dict[str, tuple[str, ...]] | None:
        """``noun_classes`` as a mapping (``None`` when unset)."""
        return dict(self.noun_classes) if self.noun_classes else None


#: The fields a preset sets: an option of these left ``None`` takes the preset's value.
PRESET_FIELDS = ("max_edits", "swaps", "adds", "unconstrained")

#: ``tags generate --preset`` (and the batch function's ``preset``): the settings filled in
#: where the options leave them.
PRESETS: dict[str, GenerationConfig] = {
    # one scene-graph unit per negative, planned substitutes, swaps: for datasets
    # (add edits are asked for with --adds: blind readers judged almost none clearly false)
    "minimal": GenerationConfig(max_edits=1, swaps=True, adds=False, unconstrained=False),
    # the paper's masking (about 15% of the tokens in whole units per copy), planned refills
    "multi-unit": GenerationConfig(max_edits=None, swaps=False, adds=False, unconstrained=False),
    # the TAGS paper exactly: that masking, MLM refills over the whole vocabulary, no planner
    "paper": GenerationConfig(max_edits=None, swaps=False, adds=False, unconstrained=True),
}


def read_noun_classes(path: str | Path) -> dict[str, list[str]]:
    """A ``noun_classes`` file: a JSON object of class name -> list of nouns. ``OSError``
    for an unreadable file, ``ValueError`` naming what is wrong with its content."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(nouns, list) and all(isinstance(n, str) for n in nouns)
        for nouns in data.values()
    ):
        raise ValueError(f'expected {{"class": ["noun", ...], ...}}, got {data!r:.80}')
    return data


def background_problem(spec: str | None, name: str = "background") -> str | None:
    """A one-line error (naming the option ``name``) when a ``background`` value cannot be
    used: a malformed list, or a file that is not a SceneCounts or vocabulary JSON; else
    ``None`` (a built-in background is loaded when the planner needs it)."""
    from tags.core.errors import one_line
    from tags.negatives.background import BUILTIN, background_parts, load_background

    if spec is None or str(spec).lower() == "none":
        return None
    try:
        parts = background_parts(str(spec))
    except ValueError as err:
        return f"{name}: {err}"
    for part in parts:
        if part in BUILTIN:
            continue
        why = None
        try:
            if not load_background(part).objects:  # a JSON of another schema
                why = "it holds no object counts"
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as err:
            why = one_line(err) or type(err).__name__
        if why is not None:
            return (
                f"{name} {part}: not a SceneCounts or vocabulary JSON ({why}); "
                "pass such a file, 'factual' or 'none'"
            )
    return None


__all__ = [
    "PRESETS",
    "PRESET_FIELDS",
    "GenerationConfig",
    "NounClasses",
    "background_problem",
    "read_noun_classes",
]
