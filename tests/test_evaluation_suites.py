"""Compositional suites: readers of every published format (tiny files written here, with
rendered images), hand-computed accuracies on fixed scorers, ties, Winoground scores,
two-stage reranking, the backend scorer, and the report rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tags.benchmark.minimal_pairs import MinimalPair, minimal_pair_accuracy, write_pairs
from tags.evaluation.suites import (
    ImageRef,
    SuiteError,
    SuiteSpec,
    compare,
    evaluate_suite,
    list_suites,
    markdown_table,
    read_suite,
)
from tags.evaluation.suites.evaluate import item_outcomes
from tags.evaluation.suites.order import normalize
from tags.evaluation.suites.scoring import PixelSource


def by_length(images, captions):
    """Fixed scorer: the longer caption scores higher, whatever the image."""
    return [float(len(c)) for c in captions]


class Table:
    """Fixed scorer: a lookup of (image name, caption) -> score; records what it saw."""

    def __init__(self, table: dict[tuple[str, str], float]):
        self.table = table
        self.seen: list[tuple[str, str]] = []

    def __call__(self, images, captions):
        pairs = [(i.name, c) for i, c in zip(images, captions)]
        self.seen += pairs
        return [self.table[p] for p in pairs]


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def render(path: Path, color=(200, 30, 30), size=(40, 30), box=None) -> Path:
    """A dark image, with a coloured rectangle at ``box`` (x1, y1, x2, y2) when given."""
    image = Image.new("RGB", size, (10, 10, 10))
    if box is not None:
        image.paste(color, box)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


# ---------------------------------------------------------------------------- readers + scores


def test_registry_lists_every_format():
    assert set(list_suites()) == {
        "sugarcrepe", "vg-relation", "vg-attribution", "coco-order", "flickr-order",
        "winoground", "shapes", "pairs",
    }  # fmt: skip
    with pytest.raises(SuiteError, match="unknown suite 'nope'"):
        read_suite("nope", ".")


def test_sugarcrepe_per_subset_accuracy_by_hand(tmp_path):
    root = tmp_path / "sugar-crepe" / "data"
    write_json(root / "add_att.json", {
        "0": {"filename": "a.jpg", "caption": "a big red dog", "negative_caption": "a dog"},
        "1": {"filename": "b.jpg", "caption": "a cat", "negative_caption": "a fat cat"},
    })  # fmt: skip
    write_json(root / "swap_obj.json", {
        "7": {"filename": "a.jpg", "caption": "a dog on a mat", "negative_caption": "a mat"},
    })  # fmt: skip
    suite = read_suite("sugarcrepe", tmp_path / "sugar-crepe")  # finds data/
    assert [i.subset for i in suite.items] == ["add_att", "add_att", "swap_obj"]
    assert suite.items[2].id == "7" and suite.items[2].images[0].name == "a.jpg"
    assert any("replace_rel" in n for n in suite.notes)  # missing subsets are named
    result = evaluate_suite(suite, by_length)
    # add_att: 13 > 5 wins, 5 > 9 loses; swap_obj: 14 > 5 wins
    assert result.subsets["add_att"] == {"accuracy": 50.0, "n": 2}
    assert result.subsets["swap_obj"] == {"accuracy": 100.0, "n": 1}
    assert result.overall["accuracy"] == pytest.approx(200 / 3)
    assert result.overall["macro"] == pytest.approx(75.0)
    assert result.n_pairs == 6


def test_negatives_equal_to_positives_score_zero(tmp_path):
    rows = [{"image": f"{k}.png", "positive": f"caption {k}", "negative": f"caption {k}"}
            for k in range(4)]  # fmt: skip
    suite = read_suite("pairs", write_jsonl(tmp_path / "ties.jsonl", rows))
    scorer = Table({(f"{k}.png", f"caption {k}"): 1.0 for k in range(4)})
    result = evaluate_suite(suite, scorer)
    assert result.overall["accuracy"] == 0.0  # ties are failures
    assert len(scorer.seen) == 4  # each distinct pair scored once


def test_generate_output_is_a_suite(tmp_path):
    edit = {"type": "attribute", "operation": "replace", "original": "red", "replacement": "blue"}
    rows = [
        {"image_id": 3, "caption_id": 15, "positive": "a red ball", "negative": "a blue ball",
         "edits": [edit], "negative_index": 0, "num_negatives": 2},
        {"image_id": 3, "caption_id": 15, "positive": "a red ball", "negative": "a red dog",
         "edits": [{**edit, "type": "object"}], "negative_index": 1, "num_negatives": 2},
    ]  # fmt: skip
    suite = read_suite("pairs", write_jsonl(tmp_path / "neg.jsonl", rows))
    assert [i.subset for i in suite.items] == ["replace attribute", "replace object"]
    assert suite.items[0].images[0] == ImageRef("3", key=3)
    scorer = Table({("3", "a red ball"): 2.0, ("3", "a blue ball"): 1.0, ("3", "a red dog"): 3.0})
    result = evaluate_suite(suite, scorer)
    assert result.subsets["replace attribute"]["accuracy"] == 100.0
    assert result.subsets["replace object"]["accuracy"] == 0.0
    assert scorer.seen.count(("3", "a red ball")) == 1  # the shared positive once


def test_shapes_suite_equals_minimal_pair_accuracy(tmp_path):
    pairs = [
        MinimalPair(5, "a red circle", "a blue circle", "attribute", "red", "blue"),
        MinimalPair(5, "a red circle", "a red square big", "object", "circle", "square"),
        MinimalPair(6, "a star above a square", "a star below a square", "relation", "above",
                    "below"),
        MinimalPair(6, "a green star", "a green stars", "object", "star", "stars"),
    ]  # fmt: skip
    write_pairs(pairs, tmp_path / "test_minimal_pairs.jsonl")
    (tmp_path / "features").mkdir()
    suite = read_suite("shapes", tmp_path)
    assert suite.features == tmp_path / "features" and suite.image_root is None
    assert suite.items[0].images[0] == ImageRef("5.png", key=5)
    result = evaluate_suite(suite, by_length)
    expected = minimal_pair_accuracy(lambda ids, caps: by_length(None, caps), pairs)
    assert result.overall["accuracy"] == pytest.approx(100 * expected["overall"])
    for kind in ("attribute", "object", "relation"):
        assert result.subsets[kind]["accuracy"] == pytest.approx(100 * expected[kind])
    # by hand: attribute 12 > 13 no; object 12 > 16 no, 12 > 13 no; relation 21 > 21 tie
    assert result.overall["accuracy"] == 0.0


def test_vg_relation_and_attribution(tmp_path):
    base = {"image_path": "1.jpg", "bbox_x": 4, "bbox_y": 2, "bbox_w": 10, "bbox_h": 8}
    write_json(tmp_path / "aro" / "visual_genome_relation.json", [
        {**base, "true_caption": "the cup is on the table", "false_caption": "the table is on the cup", "relation_name": "on"},
        {**base, "true_caption": "the man is behind the car", "false_caption": "the car is behind the man", "relation_name": "behind"},
        {**base, "true_caption": "the dog is on the bed", "false_caption": "the bed is on the dog", "relation_name": "on"},
    ])  # fmt: skip
    (tmp_path / "aro" / "images").mkdir()
    suite = read_suite("vg-relation", tmp_path / "aro")
    assert suite.image_root == tmp_path / "aro" / "images"
    assert suite.items[0].images[0] == ImageRef("1.jpg", (4.0, 2.0, 10.0, 8.0))
    table = {("1.jpg", i.captions[0]): 1.0 for i in suite.items}
    table.update({("1.jpg", i.captions[1]): 0.5 for i in suite.items})
    table[("1.jpg", "the bed is on the dog")] = 2.0  # one "on" item wrong
    result = evaluate_suite(suite, Table(table))
    assert result.subsets == {
        "behind": {"accuracy": 100.0, "n": 1},
        "on": {"accuracy": 50.0, "n": 2},
    }
    assert result.overall == pytest.approx({"accuracy": 200 / 3, "macro": 75.0})

    rows = [{**base, "true_caption": f"the red {k}", "false_caption": f"the blue {k}",
             "attributes": ["red", "blue"]} for k in range(3)]  # fmt: skip
    rows.append({**base, "true_caption": "a wet dog", "false_caption": "a dry dog in a pond",
                 "attributes": ["wet", "dry"]})  # fmt: skip
    suite = read_suite(
        "vg-attribution", write_json(tmp_path / "visual_genome_attribution.json", rows)
    )
    result = evaluate_suite(suite, by_length)  # "the red k" < "the blue k": all wrong
    assert result.subsets["red_blue"] == {"accuracy": 0.0, "n": 3}
    assert result.subsets["wet_dry"] == {"accuracy": 0.0, "n": 1}
    assert "macro" not in result.overall  # no pair reaches 25 items (ARO's rule)


def test_order_suites(tmp_path):
    rows = [{"image": "val2014/x.jpg", "caption_options": ["a b c", "c b a", "b a c"]}]
    suite = read_suite("coco-order", write_json(tmp_path / "coco-order.json", rows))
    assert suite.items[0].captions == ("a b c", "c b a", "b a c")
    annotation = [{"image": "f/1.jpg", "caption": ["A man rides a brown horse on the beach.",
                                                   "Two dogs play."]}]  # fmt: skip
    suite = read_suite("flickr-order", write_json(tmp_path / "flickr30k_test.json", annotation))
    assert len(suite.items) == 2 and suite.notes
    options = suite.items[0].captions
    assert len(options) == 5 and options[0] == "a man rides a brown horse on the beach"
    for option in options[1:]:  # word-order perturbations: the same words
        assert sorted(option.replace(",", "").split()) == sorted(options[0].split())
    again = read_suite("flickr-order", tmp_path / "flickr30k_test.json")
    assert again.items[0].captions == options  # seeded
    assert normalize('He said: "Hi!"  (ok)') == "he said hi ok"


def test_winoground_scores_by_hand(tmp_path):
    rows = [
        {"id": 0, "image_0": "ex_0_img_0", "image_1": "ex_0_img_1", "caption_0": "c0",
         "caption_1": "c1", "collapsed_tag": "Object"},
        {"id": 1, "image_0": "ex_1_img_0", "image_1": "ex_1_img_1", "caption_0": "d0",
         "caption_1": "d1", "collapsed_tag": "Relation"},
        {"id": 2, "image_0": "ex_2_img_0", "image_1": "ex_2_img_1", "caption_0": "e0",
         "caption_1": "e1", "collapsed_tag": "Relation"},
    ]  # fmt: skip
    file = write_jsonl(tmp_path / "winoground" / "data" / "examples.jsonl", rows)
    (file.parent / "images").mkdir()
    suite = read_suite("winoground", tmp_path / "winoground")
    assert suite.image_root == file.parent / "images" and suite.task == "group"
    # scores[image][caption]
    m = {
        0: [[0.9, 0.1], [0.2, 0.8]],  # text right, image right -> group right
        1: [[0.5, 0.1], [0.6, 0.9]],  # text right (.5 > .1, .9 > .6); image: .5 < .6 wrong
        2: [[0.5, 0.5], [0.1, 0.9]],  # text tie in image 0 -> wrong; image right
    }
    table = {
        (f"ex_{n}_img_{i}", f"{'cde'[n]}{c}"): m[n][i][c]
        for n in m for i in range(2) for c in range(2)
    }  # fmt: skip
    result = evaluate_suite(suite, Table(table))
    assert result.overall == pytest.approx({"text": 200 / 3, "image": 200 / 3, "group": 100 / 3})
    assert result.subsets["Object"] == {"text": 100.0, "image": 100.0, "group": 100.0, "n": 1}
    assert result.subsets["Relation"] == {"text": 50.0, "image": 50.0, "group": 0.0, "n": 2}
    assert item_outcomes("group", np.array([[1.0, 0.0], [0.0, 1.0]]))["group"]


def test_two_stage_reranks_only_the_first_stage_top_k(tmp_path):
    rows = [{"image": "1.png", "caption_options": ["good", "bad one", "worse"]}]
    suite = read_suite("coco-order", write_json(tmp_path / "o.json", rows))
    cross = Table({("1.png", "good"): 5.0, ("1.png", "bad one"): 1.0, ("1.png", "worse"): 0.0})
    dual = Table({("1.png", "good"): 0.1, ("1.png", "bad one"): 0.9, ("1.png", "worse"): 0.5})
    full = evaluate_suite(suite, cross, first_stage=dual, topk=3)
    assert full.overall["accuracy"] == 100.0  # every option reranked = cross
    top1 = evaluate_suite(suite, cross, first_stage=dual, topk=1)
    assert top1.overall["accuracy"] == 0.0  # "good" is outside the dual top-1
    assert ("1.png", "good") not in cross.seen[-1:]  # only "bad one" rescored


def test_bad_files_name_the_problem(tmp_path):
    with pytest.raises(SuiteError, match="missing 'negative_caption'"):
        read_suite("sugarcrepe", write_json(tmp_path / "add_obj.json",
                                             {"1": {"filename": "a", "caption": "x"}}))  # fmt: skip
    with pytest.raises(SuiteError, match="NAME=PATH"):
        SuiteSpec.parse_many(["sugarcrepe"])
    specs = SuiteSpec.parse_many(["a=x,b=y", "c=z"])
    assert [(s.name, str(s.path)) for s in specs] == [("a", "x"), ("b", "y"), ("c", "z")]


def test_pixel_source_crops_to_the_box(tmp_path):
    render(tmp_path / "img" / "1.jpg", color=(0, 200, 0), size=(60, 40), box=(20, 10, 40, 30))
    seen = []
    source = PixelSource(tmp_path / "img", lambda images: seen.append(images[0]) or {
        "pixel_values": np.zeros((1, 3, 2, 2))})  # fmt: skip
    source.load(ImageRef("1.jpg", (20.0, 10.0, 20.0, 20.0)))
    crop = np.asarray(seen[0])
    assert crop.shape == (20, 20, 3) and crop[..., 1].min() > 150  # all green
    source.load(ImageRef("1"))  # suffix found
    assert np.asarray(seen[1]).shape == (40, 60, 3)


# ---------------------------------------------------------------------------- report rows


def test_compare_rows_and_markdown():
    def report(acc, rsum):
        suite = {"name": "s", "task": "options", "overall": {"accuracy": acc, "macro": acc},
                 "subsets": {"x": {"accuracy": acc, "n": 4}}, "n_items": 4, "n_pairs": 8,
                 "notes": []}  # fmt: skip
        keys = ("i2t_r1", "i2t_r5", "i2t_r10", "t2i_r1", "t2i_r5", "t2i_r10")
        return {"retrieval": {**dict.fromkeys(keys, 10.0), "rsum": rsum}, "suites": {"s": suite}}

    rows = compare(report(75.0, 60.0), report(50.0, 90.0))
    by = {(r["section"], r["metric"]): r for r in rows}
    assert by[("s", "accuracy")]["delta"] == 25.0 and by[("s", "x")]["n"] == 4
    assert by[("retrieval", "rsum")]["delta"] == -30.0
    table = markdown_table(rows, "tuned", "start")
    assert "| s | accuracy | 4 | 50.00 | 75.00 | +25.00 |" in table
    assert "| retrieval | rsum |  | 90.00 | 60.00 | -30.00 |" in table
    assert all(r["baseline"] is None for r in compare(report(75.0, 60.0)))
