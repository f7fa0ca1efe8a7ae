"""The one way to build a :class:`~tags.negatives.pipeline.NegativeGenerator`.

:func:`create_generator` assembles the generator a :class:`~.config.GenerationConfig` asks
for: the refill (the given one, else typed substitution from the corpus vocabulary), the
parser, the edit planner over the corpus's scene counts plus ``config.background``
(:func:`edit_planner`), and the optional scorer, region store, label tokenizer and
plausibility filter. ``tags generate``, the engine-neutral batch function, the training
recipe's synthetic negatives, the demo and the benchmark scripts all build theirs here.
"""

from __future__ import annotations

from typing import Any

from tags.negatives.config import GenerationConfig
from tags.negatives.pipeline import NegativeGenerator, default_parser

#: ``planner=`` default of :func:`create_generator`: built from the vocabulary and config.
AUTO: Any = type("Auto", (), {"__repr__": lambda self: "AUTO"})()


def edit_planner(config: GenerationConfig, vocabulary: Any) -> Any:
    """The :class:`~tags.negatives.planner.EditPlanner` over ``vocabulary``'s scene counts
    plus ``config.background`` with ``config.noun_classes``; ``None`` when the config edits
    without one (``unconstrained`` or word masking). ``ValueError`` for a bad background."""
    if not config.planned:
        return None
    from tags.negatives.background import with_background
    from tags.negatives.planner import EditPlanner

    scenes = with_background(vocabulary.scenes, config.background)
    return EditPlanner(scenes, noun_classes=config.noun_class_map())


def create_generator(
    config: GenerationConfig,
    *,
    vocabulary: Any = None,
    refiller: Any = None,
    parser: Any = None,
    planner: Any = AUTO,
    scorer: Any = None,
    regions: Any = None,
    label_tokenizer: Any = None,
    plausibility: Any = None,
    processes: int = 1,
    explain_skipped: bool = False,
) -> NegativeGenerator:
    """The :class:`~tags.negatives.pipeline.NegativeGenerator` of ``config``.

    Args:
        config: every generation setting.
        vocabulary: the corpus's :class:`~tags.negatives.vocabulary.SceneGraphVocabulary`:
            the refill source when no ``refiller`` is given, and the planner's counts.
        refiller: an :class:`~tags.negatives.refill.MLMRefiller` (or any refiller); default:
            a :class:`~tags.negatives.refill.VocabularyRefiller` over ``vocabulary``.
        parser: the scene-graph parser (default: :func:`default_parser` with unit masking).
        planner: an edit planner, ``None`` for none; default: :func:`edit_planner` over
            ``vocabulary`` (none without a vocabulary).
        scorer, regions, label_tokenizer, plausibility, processes, explain_skipped: as
            :class:`~tags.negatives.pipeline.NegativeGenerator`.
    """
    if refiller is None:
        if vocabulary is None:
            raise ValueError("create_generator needs a refiller or the corpus vocabulary")
        from tags.negatives.refill import VocabularyRefiller

        refiller = VocabularyRefiller(vocabulary, num_samples=config.num_samples)
    if planner is AUTO:
        planner = edit_planner(config, vocabulary) if vocabulary is not None else None
    if parser is None and config.masking == "unit":
        parser = default_parser()
    return NegativeGenerator(
        refiller,
        config,
        parser=parser,
        scorer=scorer,
        regions=regions,
        label_tokenizer=label_tokenizer,
        planner=planner,
        processes=processes,
        plausibility=plausibility,
        explain_skipped=explain_skipped,
    )


def plausibility_filter(lm: str, max_surprise: float | None = None, device: Any = None) -> Any:
    """The causal-LM :class:`~tags.negatives.plausibility.PlausibilityFilter` of ``lm`` (a
    folder, a ``.gguf`` file, ``smollm2`` or ``gemma3``) at ``max_surprise`` nats (default:
    the LM's, :func:`~tags.negatives.plausibility.default_max_surprise`)."""
    from tags.negatives.plausibility import CausalLM, PlausibilityFilter, default_max_surprise

    threshold = default_max_surprise(lm) if max_surprise is None else max_surprise
    return PlausibilityFilter(
        CausalLM(lm, device=device), threshold, exempt=lambda c: not scene_edit(c)
    )


def scene_edit(candidate: Any) -> bool:
    """Whether a candidate changes the scene's things, the edits a causal LM judges: every
    edit an object edit, and not all of them between person nouns. An attribute, count or
    relation edit keeps the scene's things, and there the LM's preference is the phrase's
    frequency ("a tall building" over "a short building"); people fit wherever people do,
    and an LM finds "a woman surfing" less likely than "a man surfing": it dropped
    male-to-female edits only."""
    from tags.negatives.lexicon import PERSON_NOUNS

    def head(text: str) -> str:
        words = text.lower().split()
        return words[-1] if words else ""

    edits = getattr(candidate, "edits", ())
    return (
        bool(edits)
        and all(e.type == "object" for e in edits)
        and not all(
            head(e.original) in PERSON_NOUNS and head(e.replacement) in PERSON_NOUNS for e in edits
        )
    )


__all__ = [
    "AUTO",
    "create_generator",
    "edit_planner",
    "plausibility_filter",
    "scene_edit",
]
