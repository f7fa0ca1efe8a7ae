"""Shared helpers of the edit-planner tests: a planner over a small corpus, and the
substitutes it plans for one word of a caption."""

from __future__ import annotations

from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.planner import EditPlanner
from tags.negatives.vocabulary import SceneGraphVocabulary


def corpus_planner(parser, corpus: list[str], min_count: int = 2) -> EditPlanner:
    """An :class:`EditPlanner` over the scene graphs of ``corpus`` alone (no background)."""
    vocab = SceneGraphVocabulary().update(parser.parse_batch(corpus))
    return EditPlanner(vocab.scenes, min_count=min_count)


def corpus_evidence(parser, corpus: list[str], min_count: int = 1) -> SceneEvidence:
    """A :class:`SceneEvidence` over the scene graphs of ``corpus`` alone (no background)."""
    scenes = SceneGraphVocabulary().update(parser.parse(c) for c in corpus).scenes
    return SceneEvidence(scenes, min_count=min_count)


def choices_at(planner, parser, text: str, word: str, kind: str | None = None) -> set[str]:
    """The first words of the substitutes ``planner`` plans for the unit that starts where
    ``word`` first occurs in ``text`` (of type ``kind``, any when ``None``)."""
    graph = parser.parse(text)
    start = text.index(word)
    return {
        c.surface[0]
        for u in planner.plan(graph)
        if (kind is None or u.type == kind) and u.spans[0][0] == start
        for c in u.choices
    }
