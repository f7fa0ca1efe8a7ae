"""People named by words WordNet files elsewhere are never replaced by animals."""

from __future__ import annotations

from tags.negatives.operators.replace_object import object_substitutes
from tags.negatives.pipeline import default_parser
from tags.negatives.planner import EditPlanner
from tags.negatives.vocabulary import SceneGraphVocabulary

CORPUS = [
    "two dogs walking on a street",
    "two horses walking on a street",
    "two males walking on a street",
    "two men walking on a street",
    "two women walking on a street",
]


def test_males_are_people_not_animals():
    parser = default_parser()
    planner = EditPlanner(SceneGraphVocabulary().update(parser.parse_batch(CORPUS * 3)).scenes)
    graph = parser.parse("two males walking on a street")
    context = planner.analyse(graph)
    (index,) = [i for i, e in enumerate(graph.entities) if e.name.lower() in ("male", "males")]
    surfaces = {c.surface[0] for c in object_substitutes(context, index)}
    # "male" is a person word (WordNet's first sense is an animal): a role, not swapped
    assert not surfaces & {"dogs", "horses"}
    # while the same corpus gives a dog its animal substitutes
    dogs = parser.parse("two dogs walking on a street")
    context = planner.analyse(dogs)
    (index,) = [i for i, e in enumerate(dogs.entities) if e.name.lower() in ("dog", "dogs")]
    assert "horses" in {c.surface[0] for c in object_substitutes(context, index)}
