"""Edits the rest of the caption makes odd or not false: "other X", a part's colour, a hedged
value, two names of one colour."""

from __future__ import annotations

import pytest

from tests._planning import choices_at, corpus_planner

CORPUS = [
    "a black cat on a sofa",
    "a white cat on a sofa",
    "a grey cat on a sofa",
    "a gray cat on a sofa",
    "a black cat with white patches",
    "a brown cat on a bed",
    "a motorcycle next to other vehicles",
    "a motorcycle next to buses",
    "a red car next to other cars",
    "a cloudy sky over a house",
    "a sunny sky over a house",
    "a clear sky over a house",
]


@pytest.fixture(scope="module")
def planner(parser):
    return corpus_planner(parser, CORPUS * 3)


_choices = choices_at


def test_a_noun_after_other_names_the_kind_of_something_else(planner, parser, monkeypatch):
    from tags.negatives.operators import objects

    # (the word-vector rule alone refuses "vehicles" -> "buses" too: the "other" rule here)
    monkeypatch.setattr(objects, "WORD_CONTEXT", False)
    # "next to other buses" would make the motorcycle a bus
    assert not _choices(planner, parser, "a motorcycle next to other vehicles", "vehicles")
    assert _choices(planner, parser, "a motorcycle next to vehicles", "vehicles")


def test_a_colour_is_not_changed_to_its_parts_colour(planner, parser):
    found = _choices(planner, parser, "a black cat with white patches", "black")
    assert found and "white" not in found  # "a white cat with white patches"
    # without the patches, white is the first substitute of black
    assert "white" in _choices(planner, parser, "a black cat on a sofa", "black")


def test_two_names_of_one_colour_give_one_negative(planner, parser):
    found = _choices(planner, parser, "a black cat on a sofa", "black")
    assert len(found & {"grey", "gray"}) == 1


def test_a_hedged_value_is_not_flipped(planner, parser):
    # "a partly cloudy sky" is partly sunny too
    assert not _choices(planner, parser, "a partly cloudy sky over a house", "cloudy")
    assert _choices(planner, parser, "a cloudy sky over a house", "cloudy")
