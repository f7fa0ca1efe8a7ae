"""SceneGraph data model: JSON and FACTUAL round-trips, offsets, units (no spaCy needed)."""

import pytest

from parsers import (
    Attribute,
    Entity,
    Relation,
    SceneGraph,
    char_span_to_token_indices,
    read_factual,
    split_factual,
)


def make_graph() -> SceneGraph:
    caption = "two black dogs sitting on a red sofa"
    return SceneGraph(
        caption=caption,
        entities=[
            Entity("dog", "dogs", (10, 14), (0, 14), 2, (0, 3)),
            Entity("sofa", "sofa", (32, 36), (26, 36)),
        ],
        attributes=[Attribute(0, "black", "black", (4, 9)), Attribute(1, "red", "red", (28, 31))],
        relations=[Relation(0, "sit on", 1, ((15, 25),))],
    )


def test_json_round_trip_is_exact():
    graph = make_graph()
    assert SceneGraph.from_json(graph.to_json()) == graph
    assert SceneGraph.from_dict(graph.to_dict()).to_dict() == graph.to_dict()


def test_offsets_point_at_the_words():
    graph = make_graph()
    text = graph.caption
    assert text[slice(*graph.entities[0].head_span)] == "dogs"
    assert text[slice(*graph.entities[0].quantity_span)] == "two"
    assert text[slice(*graph.relations[0].spans[0])] == "sitting on"
    units = graph.units()
    assert [(kind, [text[s:e] for s, e in spans]) for kind, spans in units] == [
        ("object", ["dogs"]),
        ("attribute", ["two"]),
        ("object", ["sofa"]),
        ("attribute", ["black"]),
        ("attribute", ["red"]),
        ("relation", ["sitting on"]),
    ]


def test_to_factual_orders_relations_quantities_attributes_then_lone_objects():
    graph = make_graph()
    graph.entities.append(Entity("lamp"))
    assert graph.to_factual() == (
        "( dog , sit on , sofa ) , ( dog , is , 2 ) , ( dog , is , black ) , "
        "( sofa , is , red ) , ( lamp )"
    )


@pytest.mark.parametrize(
    "text",
    [
        "( stove , is , white ) , ( stove , in , kitchen )",
        "( bushes , grow on , lawn ) , ( trees , grow on , lawn ) , ( lawn , is , green )",
        "( plants , is , 2 )",
        "( houses )",
        "( tower , by , tower ) , ( tower , is , wire )",
        "( man , on top of , car ) , ( car , is , 3 ) , ( car , is , red ) , ( dog )",
    ],
)
def test_factual_round_trip(text):
    graph = read_factual(text)
    assert set(split_factual(graph.to_factual())) == set(split_factual(text))
    assert read_factual(graph.to_factual()).to_dict() == graph.to_dict()


def test_read_factual_builds_entities_quantities_and_relations():
    graph = read_factual(
        "( boys , ride , skateboards ) , ( boys , is , 2 ) , ( boys , is , young )"
    )
    assert [e.name for e in graph.entities] == ["boys", "skateboards"]
    assert graph.entities[0].quantity == 2
    assert [(a.entity, a.value) for a in graph.attributes] == [(0, "young")]
    assert [(r.subject, r.predicate, r.object) for r in graph.relations] == [(0, "ride", 1)]


@pytest.mark.parametrize("bad", ["( a , b )", "stray ( a )", "( a , , b )"])
def test_read_factual_rejects_malformed_strings(bad):
    with pytest.raises(ValueError):
        read_factual(bad)


def test_char_span_to_token_indices_skips_special_tokens():
    # "[CLS] tree trunk ##s [SEP]" offsets as a fast tokenizer reports them
    offsets = [(0, 0), (0, 4), (5, 10), (10, 11), (0, 0)]
    assert char_span_to_token_indices((5, 11), offsets) == [2, 3]
    assert char_span_to_token_indices((0, 4), offsets) == [1]
    assert char_span_to_token_indices((4, 5), offsets) == []
