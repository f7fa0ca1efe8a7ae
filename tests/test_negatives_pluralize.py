"""The pluralize operator: a landmark object made two, with corpus evidence of its plural."""

from __future__ import annotations

import pytest

from tags.negatives.operators import CaptionContext, get_operator
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.pipeline import default_parser
from tags.negatives.types import apply_edits
from tags.negatives.vocabulary import SceneGraphVocabulary

CORPUS = [
    "Two dogs running along the beach.",
    "Dogs running through the park.",
    "A dog runs along the beach.",
    "A dog sleeps next to two motorcycles.",
    "Motorcycles are parked on the street.",
    "A man stands in front of two buildings.",
    "Tall buildings line the street.",
    "A girl walks under the sky.",
    "A boy looks at the sky.",
    "A man rides a skateboard.",
    "Two skateboards lean on a wall.",
    "Skateboards are stacked by the door.",
]


@pytest.fixture(scope="module")
def parser():
    return default_parser()


@pytest.fixture(scope="module")
def operator(parser):
    scenes = SceneGraphVocabulary().update(parser.parse(c) for c in CORPUS).scenes
    return get_operator("pluralize", SceneEvidence(scenes, min_count=1))


def _negatives(operator, parser, caption: str) -> list[str]:
    context = CaptionContext(parser.parse(caption), operator.evidence)
    out = []
    for proposal in operator.propose(context):
        candidate = proposal.item
        assert apply_edits(caption, candidate.edits) == candidate.text  # the offset contract
        assert [e.type for e in candidate.edits] == ["attribute"]
        out.append(candidate.text)
    return out


def test_a_landmark_the_corpus_writes_in_the_plural_is_made_two(operator, parser):
    assert _negatives(operator, parser, "A cat sits next to a motorcycle.") == [
        "A cat sits next to two motorcycles."
    ]
    assert _negatives(operator, parser, "A woman waits in front of a tall building.") == [
        "A woman waits in front of two tall buildings."
    ]


def test_a_noun_never_written_in_the_plural_stays_one(operator, parser):
    assert _negatives(operator, parser, "A kite flies under a sky.") == []  # "two skies"


def test_a_support_or_instrument_stays_one(operator, parser):
    # "riding two skateboards": skateboards are plural in the corpus, but one rides one
    assert _negatives(operator, parser, "A boy rides a skateboard.") == []
    assert _negatives(operator, parser, "A cat sits on a motorcycle.") == []


def test_a_phrase_that_says_one_or_a_pinned_count_stays(operator, parser):
    assert _negatives(operator, parser, "A cat sits next to a lone motorcycle.") == []
    assert (
        _negatives(operator, parser, "A dog sits next to a motorcycle, the motorcycle is red.")
        == []
    )


def test_a_free_subject_is_made_two_where_nothing_agrees_with_it(operator, parser):
    assert _negatives(operator, parser, "A dog running along the beach.") == [
        "Two dogs running along the beach."
    ]
    # a finite verb, a pronoun, "alone", a support ("on a motorcycle") hold it to one
    assert _negatives(operator, parser, "A dog runs along the beach.") == []
    assert _negatives(operator, parser, "A dog running along the beach with its ball.") == []
    assert _negatives(operator, parser, "A dog running along the beach alone.") == []
    assert _negatives(operator, parser, "A dog sitting on a motorcycle.") == []
