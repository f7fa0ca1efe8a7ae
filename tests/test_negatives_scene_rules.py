"""Rules from the held-out COCO read of 2026-11-29: colour lists, side relations, "without"."""

from __future__ import annotations

from collections import Counter

from tags.core.types import Candidate, Edit, apply_edits
from tags.negatives.colour_lists import edits_colour_list, list_colours
from tags.negatives.filters import filter_candidates
from tags.negatives.lexicon import PREPOSITION_OPPOSITES


def _colour_edit(positive: str, old: str, new: str) -> Candidate:
    start = positive.index(old)
    edit = Edit("attribute", old, new, start, start + len(old), "replace")
    return Candidate(apply_edits(positive, (edit,)), (edit,))


def test_a_colour_in_a_list_of_three_is_not_replaced():
    positive = "a kite colorful with blue yellow and red stripes"
    assert list_colours(positive, positive.index("yellow"), positive.index("yellow") + 6) == 3
    assert edits_colour_list(positive, _colour_edit(positive, "yellow", "silver"))
    assert edits_colour_list(positive, _colour_edit(positive, "red", "green"))  # list's end
    commas = "four dogs in blue , green , red and black jerseys"
    assert edits_colour_list(commas, _colour_edit(commas, "green", "white"))
    removed: Counter = Counter()
    assert (
        filter_candidates(positive, [_colour_edit(positive, "yellow", "silver")], [], removed) == []
    )
    assert removed["colour_list"] == 1


def test_two_colours_and_non_colour_edits_stay():
    pair = "a pink and white flower with green leaves"
    assert not edits_colour_list(pair, _colour_edit(pair, "white", "yellow"))
    positive = "a blue yellow and red kite"
    assert not edits_colour_list(positive, _colour_edit(positive, "kite", "bird"))


def test_side_relations_that_may_hold_together_are_not_exchanged():
    for near in ("next to", "beside"):
        assert not {"behind", "in front of"} & set(PREPOSITION_OPPOSITES[near])
    assert PREPOSITION_OPPOSITES["behind"] == ("in front of",)  # these exclude each other


def test_without_needs_the_counts_to_say_it(parser):
    from tags.negatives.planner import EditPlanner
    from tags.negatives.vocabulary import SceneGraphVocabulary

    corpus = ["a man with a hat", "a man without a hat", "a man with a kite", "a woman"] * 3
    vocab = SceneGraphVocabulary().update(parser.parse_batch(corpus))
    planner = EditPlanner(vocab.scenes, min_count=2)
    units = {}
    for caption in ("a man with a hat", "a man with a kite"):
        graph = parser.parse(caption)
        for unit in planner.plan(graph):
            units[(caption, unit.type, graph.caption[slice(*unit.spans[0])])] = unit.choices
    assert ("a man with a hat", "relation", "with") in units
    assert ("a man with a kite", "relation", "with") not in units  # "without a kite": unsaid
