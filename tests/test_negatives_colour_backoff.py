"""Colours (a closed class) backed off to the noun's substitution category."""

from __future__ import annotations

import pytest

from tags.negatives.operators.evidence import COLOUR_PRIOR, SceneEvidence
from tags.negatives.operators.replace_attribute import attribute_substitutes
from tags.negatives.pipeline import default_parser
from tags.negatives.planner import EditPlanner
from tags.negatives.scenes import SceneCounts
from tags.negatives.vocabulary import SceneGraphVocabulary

#: Fixed categories, so the tests do not depend on WordNet's.
CLASSES = {
    "fixture": ["toilet", "sink", "bathtub"],
    "sign": ["stop sign", "placard", "street sign", "banner"],
    "animal": ["dog", "cat", "parrot"],
    "landscape": ["sky", "valley", "hill", "field", "rock"],
}


def evidence(colours: dict[str, dict[str, int]]) -> SceneEvidence:
    scenes = SceneCounts()
    for noun, values in colours.items():
        scenes.objects[(noun, noun, False)] = sum(values.values()) + 1
        for value, count in values.items():
            scenes.attribute_object[(value, noun)] = count
    return SceneEvidence(scenes, noun_classes=CLASSES)


def test_a_colour_the_noun_lacks_is_counted_from_its_categorys_other_nouns():
    ev = evidence(
        {
            "toilet": {"white": 27, "tan": 1},
            "sink": {"white": 10, "black": 5, "blue": 1},
            "bathtub": {"white": 6, "black": 3},
        }
    )
    # black is 5 of the sink's 16 colour mentions (which count as 10: COLOUR_NOUN_CAP) and 3
    # of the bathtub's 9: 5 * 10 / 16 + 3 of 10 + 9
    assert ev.colour_count("black", "toilet") == pytest.approx(COLOUR_PRIOR * 6.125 / 19)
    assert ev.colour_fits("black", "toilet")  # black sinks and bathtubs
    assert not ev.colour_fits("blue", "toilet")  # one blue sink is no evidence
    assert not ev.colour_fits("tan", "toilet")  # one own mention, none in the category
    assert ev.colour_count("white", "toilet") > 27  # its own mentions count in full


def test_a_noun_the_corpus_colours_often_keeps_its_own_colours():
    kinds = {"street sign": {"blue": 5, "white": 5}, "banner": {"red": 5, "black": 5}}
    often = evidence({"stop sign": {"red": 60}, **kinds})
    rarely = evidence({"placard": {"red": 1}, **kinds})
    # the same category share of blue (0.25): enough for a rarely coloured noun only
    assert often.colour_count("blue", "stop sign") == rarely.colour_count("blue", "placard")
    assert rarely.colour_fits("blue", "placard")
    assert not often.colour_fits("blue", "stop sign")


def test_a_noun_without_a_category_borrows_nothing():
    ev = evidence({"qwzx": {"red": 1}, "sink": {"black": 10}})
    assert ev.colour_count("black", "qwzx") == 0.0
    assert not ev.colour_fits("black", "qwzx")
    assert ev.category_colours("qwzx") == frozenset()


CORPUS = [
    "a white toilet in a small bathroom",
    "a white toilet next to a sink",
    "a black sink in a bathroom",
    "a black bathtub in a bathroom",
    "a white sink in a bathroom",
    "a brown dog on the grass",
    "a black dog on the grass",
    "a white cat on the grass",
    "a black cat on the grass",
    "a grey cat on the grass",
]


@pytest.fixture(scope="module")
def planner() -> EditPlanner:
    # one green parrot among a dozen coloured animals
    graphs = default_parser().parse_batch(CORPUS * 3 + ["a green parrot on a branch"])
    vocab = SceneGraphVocabulary().update(graphs)
    return EditPlanner(vocab.scenes, noun_classes=CLASSES)


def substitutes(planner: EditPlanner, caption: str, value: str) -> set[str]:
    graph = default_parser().parse(caption)
    context = planner.analyse(graph)
    (attribute,) = [a for a in graph.attributes if a.value == value]
    return {c.surface[0] for c in attribute_substitutes(context, attribute)}


def test_the_attribute_operator_offers_the_categorys_colours(planner):
    # the corpus never writes a black toilet; its sinks and bathtubs are black
    assert "black" in substitutes(planner, "a white toilet in a bathroom", "white")


def test_a_colour_rare_in_the_category_is_not_offered(planner):
    # one green parrot: the dogs' kinds are white, black, grey, almost never green
    assert "white" in substitutes(planner, "a brown dog on the grass", "brown")
    assert "green" not in substitutes(planner, "a brown dog on the grass", "brown")


def test_no_one_noun_speaks_for_its_category():
    # "the sky" is blue 194 times; valleys and skies are filed together: without a cap the
    # sky alone made "a green valley" "a blue valley"
    from tags.negatives.operators.evidence import COLOUR_NOUN_CAP

    others = {"hill": {"green": 8}, "field": {"green": 8}, "rock": {"gray": 8}}
    often = evidence({"sky": {"blue": 194}, "valley": {"green": 1}, **others})
    seldom = evidence({"sky": {"blue": 10}, "valley": {"green": 1}, **others})
    assert COLOUR_NOUN_CAP == 10
    # the sky's 194 mentions count as its 10: the valley's blue share is 10 of 34
    assert often.colour_count("blue", "valley") == pytest.approx(COLOUR_PRIOR * 10 / 34)
    assert often.colour_count("blue", "valley") == seldom.colour_count("blue", "valley")
    assert often.colour_count("blue", "sky") >= 194  # its own mentions count in full
