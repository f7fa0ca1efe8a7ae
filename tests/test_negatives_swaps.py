"""Swaps on graded evidence: relations attested role by role, people exchanging places,
attribute values backed off to the noun's category, objects exchanged between owners, and
the structural "a swap is allowed" count of the quality benchmark."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tags.core.types import Edit
from tags.negatives import apply_edits
from tags.negatives.operators.add import AddAttribute
from tags.negatives.operators.swaps import (
    _shade_before,
    exchangeable_people,
    kin,
    owner_swaps,
    swap_allowed,
    swap_attested,
    swap_candidates,
)
from tags.negatives.planner import EditPlanner
from tags.negatives.vocabulary import SceneGraphVocabulary

# No caption attests a swapped relation of the test captions itself: only role by role.
CORPUS = [
    "a dog chasing a cat",
    "a cat chasing a bird",  # a cat chases some animal
    "a horse chasing a dog",  # some animal chases a dog
    "a baby holding a cup",  # a baby holds things, never a person
    "a man holding a baby",
    "a girl holding a boy",
    "a red car on the street",
    "a blue car on the street",
    "a green truck on the street",
    "a yellow truck on the street",
    "a red truck on the street",
    "a brown dog on the grass",
    "a black dog on the grass",
    "a white dog on the grass",
    "a blue ball on the grass",
    "a red ball on the grass",
    "a teenage boy on the street",
    "a little girl on the grass",
    "a man with a guitar talking to a woman with a purse",
    "a girl with a violin",
    "a boy with a guitar",
    "a boy with a purse",  # the evidence alone would hand a man a purse
    "a girl with a backpack",
    "a white puppy on the grass",
    "a black puppy on the grass",
    "a white cat on the grass",
    "a black cat on the grass",
    "a purple hexagon below a small red triangle",
    "a man in a white vest on the street",
]


@pytest.fixture(scope="module")
def evidence(parser):
    vocab = SceneGraphVocabulary().update(parser.parse_batch(CORPUS * 2))
    return EditPlanner(vocab.scenes, min_count=2).evidence


def swaps(parser, evidence, caption: str, graded: bool = True, roles: bool = False) -> list[str]:
    graph = parser.parse(caption)
    found = swap_candidates(
        graph,
        evidence.scenes,
        evidence.category,
        evidence.similar_attributes,
        roles=roles,
        evidence=evidence if graded else None,
        shares=AddAttribute(evidence).value_shares if graded else None,
    )
    for candidate in found:  # the edit-offset contract
        assert apply_edits(caption, candidate.edits) == candidate.text
        assert {e.operation for e in candidate.edits} == {"swap"}
    return [c.text for c in found]


def test_a_relation_swap_is_attested_role_by_role(parser, evidence):
    """No "a cat chasing a dog" in the corpus: a cat chases some animal and some animal
    chases a dog, so the swap is made with graded evidence and not without it."""
    assert swaps(parser, evidence, "a dog chasing a cat") == ["a cat chasing a dog"]
    assert swaps(parser, evidence, "a dog chasing a cat", graded=False) == []
    assert swap_attested(evidence, "dog", "chase", "cat")
    # a baby holds cups, never a person: not "a baby holding a man"
    assert not swap_attested(evidence, "man", "hold", "baby")
    assert swaps(parser, evidence, "a man holding a baby") == []


def test_people_of_two_genders_exchange_places(parser, evidence):
    """What a girl does to a boy, a boy may do to a girl; not when a garment, a pronoun,
    a reciprocal verb or two nouns for maybe one person would make it wrong or true."""
    assert exchangeable_people("girl", "boy") and exchangeable_people("man", "woman")
    assert not exchangeable_people("man", "boy")  # another age: "a boy holding a man"
    assert not exchangeable_people("woman", "lady")  # one gender: maybe the same person
    assert swaps(parser, evidence, "a woman holding a man") == ["a man holding a woman"]
    assert swaps(parser, evidence, "a woman in a bikini holding a man") == []
    assert swaps(parser, evidence, "a girl holding her boy") == []
    assert swaps(parser, evidence, "a man talking to a woman") == []  # she talks to him too
    assert swaps(parser, evidence, "a lady holding a woman") == []


def test_role_swaps_keep_ages_with_their_people(parser, evidence):
    """A role swap moves the age words with their nouns: "a little boy holding a teenage
    girl" is refused; a head-noun swap leaves them in place."""
    found = swaps(parser, evidence, "a teenage girl holding a little boy", roles=True)
    assert "a little boy holding a teenage girl" not in found
    assert "a teenage boy holding a little girl" in found
    # things keep their sizes: the shapes benchmark's role swaps
    found = swaps(parser, evidence, "a small red triangle below a purple hexagon", roles=True)
    assert "a purple hexagon below a small red triangle" in found


def test_attribute_swaps_back_off_to_the_category(parser, evidence):
    """ "a blue truck" is never written, but blue is a usual colour of vehicles; a blue dog
    is not a usual animal (nor written)."""
    caption = "a blue car and a green truck"
    assert swaps(parser, evidence, caption) == ["a green car and a blue truck"]
    assert swaps(parser, evidence, caption, graded=False) == []
    assert swaps(parser, evidence, "a brown dog and a blue ball") == []


def test_swapped_heads_take_the_case_of_their_place(parser, evidence):
    """The capital of sentence case stays at the start of the caption."""
    assert swaps(parser, evidence, "Woman holding a man") == ["Man holding a woman"]


def test_no_attribute_swap_between_kin(parser, evidence):
    """ "a white dog and a black puppy" -> "a black dog and a white puppy" may describe the
    same two animals (a puppy is a dog); a puppy and a cat are told apart."""
    assert swaps(parser, evidence, "a white dog and a black puppy") == []
    assert kin(evidence, "dog", "puppy") and not kin(evidence, "dog", "cat")
    assert not kin(evidence, "dog", "object")  # too general to name the dog twice
    assert swaps(parser, evidence, "a white puppy and a black cat") == [
        "a black puppy and a white cat"
    ]


def test_a_colour_keeps_its_shade_word(parser, evidence):
    """ "a neon green vest" -> not "a neon white vest": the word qualifying the colour would
    stay behind; an attribute of its own ("a big green") does not block a swap."""
    graph = parser.parse("a man in a neon green vest near a white truck")
    green = next(a for a in graph.attributes if a.value == "green")
    assert _shade_before(graph, green)
    graph = parser.parse("a big green truck near a white car")
    green = next(a for a in graph.attributes if a.value == "green")
    assert not _shade_before(graph, green)
    assert swaps(parser, evidence, "a man in a neon green vest near a white truck") == []
    assert swaps(parser, evidence, "a man in a green vest near a white truck") == [
        "a man in a white vest near a green truck"
    ]


def test_objects_are_exchanged_between_owners(parser, evidence):
    """Each object moves with its whole noun phrase to the other owner when it fits the
    other's relation; never a gendered garment between a man and a woman."""
    graph = parser.parse("a man with a guitar talking to a woman with a violin")
    found = [c for _, c in owner_swaps(graph, evidence)]
    assert [c.text for c in found] == ["a man with a violin talking to a woman with a guitar"]
    assert {(e.type, e.operation) for e in found[0].edits} == {("object", "swap")}
    assert apply_edits(graph.caption, found[0].edits) == found[0].text
    graph = parser.parse("a man with a backpack talking to a woman with a purse")
    assert list(owner_swaps(graph, evidence)) == []
    # one owner, or a part of the body: nothing is exchanged
    assert list(owner_swaps(parser.parse("a man with a guitar and a violin"), evidence)) == []


def test_swap_allowed_is_structural(parser, evidence):
    """Allowed: two attributes of one class on two nouns, an asymmetric relation within
    one category; not a symmetric or reciprocal relation, two categories, or one object."""
    allowed = {
        caption: swap_allowed(parser.parse(caption), evidence.category)
        for caption in (
            "a red car and a blue bike",
            "a dog chasing a cat",
            "a dog next to a cat",
            "a man talking to a woman",
            "a man riding a horse",
            "a red car",
        )
    }
    assert allowed == {
        "a red car and a blue bike": True,
        "a dog chasing a cat": True,
        "a dog next to a cat": False,
        "a man talking to a woman": False,
        "a man riding a horse": False,
        "a red car": False,
    }


def test_the_quality_report_counts_swaps_where_allowed():
    """The swap shares of the quality report (scripts/benchmarks/negative_quality.py)."""
    from tags.negatives.mix import type_mix

    swap = SimpleNamespace(
        edits=[
            Edit("attribute", "red", "blue", 2, 5, "swap"),
            Edit("attribute", "blue", "red", 10, 14, "swap"),
        ]
    )
    replace = SimpleNamespace(edits=[Edit("attribute", "red", "green", 2, 5, "replace")])
    results = [
        SimpleNamespace(records=[swap, replace]),  # allows a swap
        SimpleNamespace(records=[replace, replace]),  # does not
    ]
    mix = type_mix(results, [True, False])
    assert mix["swap (all)"] == pytest.approx(0.25)
    assert mix["swap (where allowed)"] == pytest.approx(0.5)
    assert mix["swap allowed (captions)"] == pytest.approx(0.5)
    assert "swap (where allowed)" not in type_mix(results)
