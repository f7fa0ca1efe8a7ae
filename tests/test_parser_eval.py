"""SPICE-style tuple F1 on hand-made graphs."""

import pytest

from parsers import read_factual
from parsers.evaluation import caption_f1, graph_tuples, score_graphs


@pytest.fixture(scope="module")
def lemma():
    from parsers.nlp import Lemmatizer, load_pipeline

    return Lemmatizer(load_pipeline()).lemma


def test_tuples_are_lemmatized_with_number_words_as_digits(lemma):
    graph = read_factual(
        "( boys , riding , skateboards ) , ( boys , is , two ) , ( boys , is , taller )"
    )
    t = graph_tuples(graph, lemma)
    assert t["object"] == {("boy",), ("skateboard",)}
    assert t["relation"] == {("boy", "ride", "skateboard")}
    assert t["attribute"] == {("boy", "2"), ("boy", "tall")}


def test_caption_f1_edge_cases():
    assert caption_f1(set(), set()) == 1.0
    assert caption_f1({1}, set()) == 0.0
    assert caption_f1({1, 2}, {2, 3, 4}) == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_score_graphs_by_hand(lemma):
    gold = [
        read_factual("( man , ride , horse )"),
        read_factual("( dog , on , mat ) , ( mat , is , red )"),
    ]
    pred = [
        read_factual("( men , riding , horses )"),  # same after lemmatization
        read_factual("( dog , under , mat ) , ( mat , is , red )"),
    ]
    scores = score_graphs(pred, gold, lemma)
    # caption 2: pred {dog, mat, (mat red), (dog under mat)} vs gold {dog, mat, (mat red),
    # (dog on mat)} -> 3 of 4 both ways -> F1 0.75
    assert scores.mean_f1 == pytest.approx(100 * (1 + 0.75) / 2)
    assert scores.set_match == pytest.approx(50.0)
    assert scores.micro["relation"]["f1"] == pytest.approx(50.0)
    assert scores.micro["object"]["f1"] == pytest.approx(100.0)
    assert scores.micro["attribute"]["recall"] == pytest.approx(100.0)


def test_score_graphs_rejects_misaligned_lists(lemma):
    with pytest.raises(ValueError):
        score_graphs([read_factual("( a )")], [], lemma)
