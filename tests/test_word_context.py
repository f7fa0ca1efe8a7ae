"""The object operator's word-context rule: a substitute that fits the caption's other words
clearly worse than the original, by word vectors, is refused ("brushing her teeth with a
toothbrush" -> not "with a tennis racket"). Tiny vectors inline, the shipped table, and one
small planner; offline, seconds."""

from __future__ import annotations

import numpy as np
import pytest

from tags.negatives.operators import objects
from tags.negatives.word_vectors import (
    CUE_SIMILARITY,
    MIN_CUE_DELTA,
    MIN_MEAN_DELTA,
    WordVectors,
    context_misfit,
    word_vectors,
)
from tests._planning import choices_at, corpus_planner


def table(rows: dict[str, list[float]]) -> WordVectors:
    """A :class:`WordVectors` of the given (unnormalised) vectors, int8 as shipped."""
    words = list(rows)
    vectors = np.array([rows[w] for w in words], dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return WordVectors(words, np.round(vectors * 127).astype(np.int8))


TINY = table(
    {
        "toothbrush": [1.0, 0.2, 0.0, 0.0],
        "comb": [0.9, 0.4, 0.1, 0.0],
        "racket": [0.0, 0.2, 1.0, 0.0],
        "brush": [1.0, 0.0, 0.0, 0.0],
        "girl": [0.0, 1.0, 0.0, 0.0],
        "court": [0.0, 0.0, 0.3, 1.0],
        "tennis court": [0.0, 0.0, 1.0, 0.2],
    }
)


def test_the_thresholds_are_set():
    assert MIN_MEAN_DELTA < 0 and MIN_CUE_DELTA < 0 and 0 < CUE_SIMILARITY < 1


def test_a_substitute_far_from_the_originals_strong_cue_is_refused():
    assert context_misfit(TINY, "toothbrush", "racket", ["girl", "brush"])
    assert not context_misfit(TINY, "toothbrush", "comb", ["girl", "brush"])


def test_no_judgement_without_evidence():
    assert not context_misfit(None, "toothbrush", "racket", ["brush"])  # no table
    assert not context_misfit(TINY, "toothbrush", "racket", [])  # no context
    assert not context_misfit(TINY, "toothbrush", "spoon", ["brush"])  # unknown noun
    assert not context_misfit(TINY, "toothbrush", "racket", ["unknown"])  # no context vector
    # the original and the substitute are not their own context
    assert not context_misfit(TINY, "toothbrush", "racket", ["toothbrush", "racket"])


def test_a_weak_cue_does_not_judge():
    # "girl" is no closer to a toothbrush than to a racket: nothing to go by
    assert not context_misfit(TINY, "toothbrush", "racket", ["girl"])


def test_a_name_takes_its_last_words_vector():
    assert TINY.vector("blue comb") is not None and TINY.vector("blue spoon") is None
    assert TINY.similarity("tennis court", "court") is not None


def test_the_shipped_table_catches_a_strong_cue_and_keeps_siblings():
    vectors = word_vectors()
    assert vectors is not None
    teeth = ["girl", "shirt", "brush", "teeth", "blue"]
    assert context_misfit(vectors, "toothbrush", "tennis racket", teeth)
    assert context_misfit(vectors, "toothbrush", "baseball bat", teeth)
    assert context_misfit(vectors, "stove", "fridge", ["man", "food", "pot", "cook"])
    # ordinary negatives: another grazing animal, another seat, another vehicle driven
    assert not context_misfit(vectors, "cow", "horse", ["herd", "field", "stand", "green"])
    assert not context_misfit(vectors, "bench", "chair", ["woman", "sit", "wooden"])
    assert not context_misfit(vectors, "car", "bus", ["man", "street", "drive"])


CORPUS = [
    "a girl brushing her teeth with a toothbrush",
    "a girl brushing her teeth with a toothbrush",
    "a boy brushing his teeth with a toothbrush",
    "a boy brushing his teeth with a tennis racket",
    "a girl brushing her teeth with a tennis racket",
    "a man holding a tennis racket",
    "a man holding a tennis racket",
    "a woman holding a toothbrush",
]


def test_the_planner_refuses_the_misfit(parser, monkeypatch):
    planner = corpus_planner(parser, CORPUS, min_count=1)
    text = "a girl brushing her teeth with a toothbrush"
    assert "tennis racket" not in choices_at(planner, parser, text, "toothbrush", "object")
    # the rule, and only the rule, keeps it out
    monkeypatch.setattr(objects, "WORD_CONTEXT", False)
    planner = corpus_planner(parser, CORPUS, min_count=1)
    assert "tennis racket" in choices_at(planner, parser, text, "toothbrush", "object")


@pytest.mark.parametrize("text", ["a man holding a tennis racket"])
def test_a_fitting_substitute_stays(parser, text):
    planner = corpus_planner(parser, CORPUS, min_count=1)
    assert "toothbrush" in choices_at(planner, parser, text, "tennis racket", "object")
