"""The edit operator registry and the planner that runs the registered operators."""

from __future__ import annotations

import pytest

from tags.core.errors import UserError
from tags.core.types import Candidate, Edit, apply_edits
from tags.negatives import Caption, GenerationConfig, ImageGroup, NegativeGenerator
from tags.negatives.operators import (
    EditOperator,
    Proposal,
    UnknownOperatorError,
    get_operator,
    list_operators,
    register_operator,
    unregister_operator,
)
from tags.negatives.planner import EditPlanner
from tags.negatives.refill import VocabularyRefiller
from tags.negatives.vocabulary import SceneGraphVocabulary

BUILT_INS = [
    "replace_object",
    "replace_attribute",
    "replace_act",
    "replace_relation",
    "flip_setting",
    "pluralize",
    "swap_attribute",
    "swap_object",
    "swap_role",
    "add_attribute",
    "add_object",
]

CORPUS = [
    "a dog sitting on a bench",
    "a cat sitting on a bench",
    "a dog standing on a bench",
    "a cat standing on a bench",
    "a black dog chasing a white cat",
    "a white dog chasing a black cat",
    "a black cat chasing a white dog",
    "a white cat chasing a black dog",
    "two dogs on the grass",
    "three dogs on the grass",
    "a red car parked near a blue bike",
    "a blue car parked near a red bike",
]

CAPTION = "a black dog chasing a white cat"


@pytest.fixture(scope="module")
def vocab(parser) -> SceneGraphVocabulary:
    return SceneGraphVocabulary().update(parser.parse_batch(CORPUS * 3))


def unit_types(planner: EditPlanner, graph) -> set[str]:
    return {unit.type for unit in planner.plan(graph)}


def test_the_built_in_operators_are_listed_in_the_order_the_planner_runs_them(vocab):
    assert [name for name in list_operators() if name in BUILT_INS] == BUILT_INS
    assert EditPlanner(vocab.scenes).operator_names()[: len(BUILT_INS)] == BUILT_INS


def test_an_unknown_operator_is_one_line_naming_it(vocab):
    planner = EditPlanner(vocab.scenes)
    with pytest.raises(UnknownOperatorError) as info:
        get_operator("replace_colour", planner.evidence)
    message = str(info.value)
    assert "\n" not in message and "'replace_colour'" in message
    assert "replace_object" in message  # what is registered
    assert isinstance(info.value, UserError)  # the CLI prints it and exits 2
    with pytest.raises(UnknownOperatorError):
        EditPlanner(vocab.scenes, operators=["replace_object", "replace_colour"])


def test_a_name_is_registered_once():
    class Other(EditOperator):
        edit_types = ("object",)

    with pytest.raises(ValueError, match="already registered"):
        register_operator("replace_object")(Other)


@pytest.mark.parametrize("name", BUILT_INS)
def test_every_operator_proposes_only_its_own_edit_types(parser, vocab, name):
    planner = EditPlanner(vocab.scenes, min_count=2)
    operator = get_operator(name, planner.evidence)
    assert isinstance(operator, EditOperator) and operator.name == name
    assert operator.edit_types and operator.kind in ("unit", "candidate")
    for text in (CAPTION, "a red car parked near a blue bike", "two dogs sitting on a bench"):
        context = planner.analyse(parser.parse(text))
        for proposal in operator.propose(context) + operator.fallback(context):
            item = proposal.item
            if operator.kind == "unit":
                assert item.type in operator.edit_types
            else:
                assert {e.type for e in item.edits} <= set(operator.edit_types)
                assert apply_edits(text, item.edits) == item.text


def test_disabling_an_operator_removes_its_edit_type(parser, vocab):
    graph = parser.parse("a dog sitting on a bench")
    everything = EditPlanner(vocab.scenes, min_count=2)
    assert {"object", "relation"} <= unit_types(everything, graph)
    names = [n for n in list_operators() if n != "replace_relation"]
    without = EditPlanner(vocab.scenes, min_count=2, operators=names)
    assert "replace_relation" not in without.operator_names()
    assert unit_types(without, graph) == unit_types(everything, graph) - {"relation"}
    # a candidate operator too: no object swaps without swap_object
    graph = parser.parse(CAPTION)
    swaps = everything.propose(graph, {"swaps"}).candidates
    assert any(e.type == "object" for c in swaps for e in c.edits)
    names = [n for n in list_operators() if n != "swap_object"]
    kept = EditPlanner(vocab.scenes, min_count=2, operators=names).propose(graph, {"swaps"})
    assert kept.candidates and all(e.type != "object" for c in kept.candidates for e in c.edits)


def test_proposals_follow_the_caption_not_the_operator_order(parser, vocab):
    """The planner merges proposals by their key: running the operators in another order
    plans the same units and candidates in the same order (the output stays the same)."""
    graph = parser.parse("two dogs sitting on a bench near a red car")
    forward = EditPlanner(vocab.scenes, min_count=2)
    backward = EditPlanner(vocab.scenes, min_count=2, operators=BUILT_INS[::-1])
    switches = {"swaps", "adds"}
    a, b = forward.propose(graph, switches), backward.propose(graph, switches)
    assert [u.spans for u in a.units] == [u.spans for u in b.units]
    assert len({u.type for u in a.units}) >= 2
    assert [c.text for c in a.candidates] == [c.text for c in b.candidates]


class Shout(EditOperator):
    """A test operator from outside the package: the caption's first noun in capitals."""

    edit_types = ("object",)
    kind = "candidate"

    def propose(self, context) -> list[Proposal]:
        entity = context.graph.entities[0]
        start, end = entity.head_span
        word = context.caption[start:end]
        edit = Edit("object", word, word.upper(), start, end)
        return [Proposal(Candidate(apply_edits(context.caption, [edit]), (edit,), weight=9.0))]


@pytest.fixture
def shout():
    register_operator("test_shout")(Shout)
    try:
        yield Shout
    finally:
        unregister_operator("test_shout")


def test_an_operator_registered_from_outside_is_run_by_the_planner(parser, vocab, shout):
    assert list_operators()[-1] == "test_shout"  # after the built-ins
    planner = EditPlanner(vocab.scenes, min_count=2)
    assert "test_shout" in planner.operator_names()
    graph = parser.parse(CAPTION)
    texts = [c.text for c in planner.propose(graph).candidates]
    assert "a black DOG chasing a white cat" in texts
    # ... and its negatives reach the generated dataset through the pipeline
    generator = NegativeGenerator(
        VocabularyRefiller(vocab), GenerationConfig(max_edits=1), parser=parser, planner=planner
    )
    group = ImageGroup(0, [Caption(0, 0, CAPTION)])
    (result,) = generator.generate([group])
    assert "a black DOG chasing a white cat" in [r.negative for r in result.records]
    unregister_operator("test_shout")
    assert "test_shout" not in EditPlanner(vocab.scenes).operator_names()
