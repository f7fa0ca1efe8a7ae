"""The pluralize operator: a free person or animal subject made two, with corpus evidence."""

from __future__ import annotations

import pytest

from tags.core.types import apply_edits
from tags.negatives.operators import CaptionContext, get_operator
from tests._planning import corpus_evidence

CORPUS = [
    "Two dogs running along the beach.",
    "Dogs running through the park.",
    "A dog runs along the beach.",
    "Two trees near a building.",
    "Trees near a house.",
    "A tree stands by the road.",
    "A horse walking along a fence.",
    "A horse standing in a field.",
    "A horse eating grass.",
]


@pytest.fixture(scope="module")
def operator(parser):
    return get_operator("pluralize", corpus_evidence(parser, CORPUS))


def _negatives(operator, parser, caption: str) -> list[str]:
    context = CaptionContext(parser.parse(caption), operator.evidence)
    out = []
    for proposal in operator.propose(context):
        candidate = proposal.item
        assert apply_edits(caption, candidate.edits) == candidate.text  # the offset contract
        assert [e.type for e in candidate.edits] == ["attribute"]
        out.append(candidate.text)
    return out


def test_a_free_subject_the_corpus_writes_in_the_plural_is_made_two(operator, parser):
    assert _negatives(operator, parser, "A dog running along the beach.") == [
        "Two dogs running along the beach."
    ]
    assert _negatives(operator, parser, "A brown dog walking past a fence.") == [
        "Two brown dogs walking past a fence."
    ]


def test_a_noun_never_written_in_the_plural_stays_one(operator, parser):
    # "horse" is never plural in the corpus
    assert _negatives(operator, parser, "A horse walking along the beach.") == []


def test_an_inanimate_subject_stays_one(operator, parser):
    # "two trees near the building" may well be true of a photo of "a tree near the building"
    assert _negatives(operator, parser, "A tree near the building.") == []


def test_what_holds_a_subject_to_one_keeps_it(operator, parser):
    # a finite verb, a pronoun, "alone", a support, a word that says one
    assert _negatives(operator, parser, "A dog runs along the beach.") == []
    assert _negatives(operator, parser, "A dog running along the beach with its ball.") == []
    assert _negatives(operator, parser, "A dog running along the beach alone.") == []
    assert _negatives(operator, parser, "A dog sitting on a bench.") == []
    assert _negatives(operator, parser, "A lone dog running along the beach.") == []
    assert _negatives(operator, parser, "A dog running along the beach, the dog is wet.") == []
