"""People named by words WordNet files elsewhere are never replaced by animals."""

from __future__ import annotations

from tags.negatives.operators.objects import object_substitutes
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


def test_an_adult_and_a_child_of_one_gender_are_not_exchanged():
    """Captions call young men boys and young women girls: "a man" -> "a woman", "a girl",
    not "a boy" (nor back); a role swap of a man and a boy still exchanges two people."""
    from tags.negatives.lexicon import ages_overlap, persons_exclusive

    corpus = [f"a {p} riding a bike" for p in ("man", "woman", "boy", "girl")]
    parser = default_parser()
    planner = EditPlanner(SceneGraphVocabulary().update(parser.parse_batch(corpus * 3)).scenes)

    def people(text):
        graph = parser.parse(text)
        context = planner.analyse(graph)
        return {c.surface[0] for c in object_substitutes(context, 0)}

    assert people("a man riding a bike") == {"woman", "girl"}
    assert people("a boy riding a bike") == {"girl", "woman"}
    assert people("a woman riding a bike") == {"man", "boy"}
    assert ages_overlap("men", "boys") and ages_overlap("lady", "girl")
    assert not ages_overlap("man", "girl") and not ages_overlap("man", "guy")
    assert persons_exclusive("boy", "man")  # two people of one caption: swapped
