"""Exclusive-verb evidence that carries to corpora without image groups (shipped verb table)."""

from __future__ import annotations

import gzip
import json
import math
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tags.negatives.background import VERB_TABLE, load_background
from tags.negatives.operators.replace_relation import _verb_choices
from tags.negatives.planner import EditPlanner
from tags.negatives.scenes import VERB_GROUP_FIELDS, SceneCounts
from tags.negatives.vocabulary import SceneGraphVocabulary

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def table() -> SceneCounts:
    with gzip.open(VERB_TABLE, "rt", encoding="utf-8") as handle:
        return SceneCounts.from_dict(json.load(handle))


def _relation_choices(planner: EditPlanner, graph) -> set[tuple[str, ...]]:
    return {c.surface for u in planner.plan(graph) if u.type == "relation" for c in u.choices}


def test_the_shipped_table_holds_verb_group_counts_only(table):
    # Flickr30K dev: 1014 images x 5 captions; nothing but the verb group fields
    assert table.verb_grouped["<s>"] == 5070
    with gzip.open(VERB_TABLE, "rt", encoding="utf-8") as handle:
        assert set(json.load(handle)) == set(VERB_GROUP_FIELDS)
    assert not table.grouped and not table.objects and not table.unigrams


def test_a_corpus_without_image_groups_gets_exclusive_verbs_from_the_table(parser, table):
    corpus = ["a man walking on a beach", "a dog laying on a beach", "a man laying on a bench"]
    flat = SceneGraphVocabulary().update(parser.parse_batch(corpus * 2)).scenes
    assert not flat.verbs_exclusive("walk", "lay")  # one caption an image: no evidence
    merged = flat.merged(table)
    # writers of one Flickr30K dev image never say "walking" and "laying" together
    assert merged.verbs_exclusive("walk", "lay")
    # a compatible pair stays refused: "holding" / "carrying" are said of one image
    assert not merged.verbs_exclusive("hold", "carry")
    assert merged.verb_codescription_lift("hold", "carry") > 0.0


def test_only_the_verbs_background_adds_the_table():
    assert load_background("factual").verb_grouped["<s>"] == 0
    assert load_background("factual+verbs").verb_grouped["<s>"] == 5070


def test_a_verb_only_table_leaves_object_codescription_alone(parser, table):
    groups = [parser.parse_batch(["a dog in a field", "a dog on a pasture"])] * 3
    groups += [parser.parse_batch(["a man on a street", "a man on a road"])] * 3
    scenes = SceneGraphVocabulary().update_groups(groups).scenes
    assert scenes.verb_grouped["<s>"] == scenes.grouped["<s>"] == 12
    before = scenes.codescription_lift("field", "pasture")
    assert scenes.merged(table).codescription_lift("field", "pasture") == before


def test_counts_written_before_the_verb_caption_count_keep_their_denominator(parser):
    groups = [parser.parse_batch(["a man washing a car"] * 2 + ["a man painting a car"])] * 4
    scenes = SceneGraphVocabulary().update_groups(groups).scenes
    old = scenes.to_dict()
    old["verb_grouped"] = [row for row in old["verb_grouped"] if row[0] != "<s>"]
    loaded = SceneCounts.from_dict(old)
    assert loaded.verb_grouped["<s>"] == scenes.grouped["<s>"] == 12
    assert loaded.verb_codescription_lift("wash", "paint") == pytest.approx(
        scenes.verb_codescription_lift("wash", "paint")
    )


def test_posture_verbs_said_of_one_image_are_not_exchanged(parser):
    # "running" / "jumping" are both posture and locomotion verbs, but the writers of one
    # image say both (one dog, one leap): no edit between them; "sitting" is never said
    run = ["a dog running on the grass", "a dog jumping on the grass"] * 2
    sit = ["a dog sitting on the grass"] * 4
    groups = [parser.parse_batch(texts) for texts in [run] * 4 + [sit] * 12]
    scenes = SceneGraphVocabulary().update_groups(groups).scenes
    assert scenes.verb_codescription_lift("run", "jump") > math.log(2.0)
    evidence = EditPlanner(scenes, min_count=2).evidence
    choices = {c.surface for c in _verb_choices(evidence, "run on", "VBG IN", "dog", "grass")}
    assert choices == {("sitting on",)}


def test_a_way_of_an_act_is_not_exclusive_with_it(parser):
    # WordNet defines "surf" as "ride the waves ...", "squat" as "sit on one's heels": one act
    from tags.negatives.wordnet import wordnet

    assert wordnet().way_of("ride", "surf") and wordnet().way_of("sit", "squat")
    assert not wordnet().way_of("ride", "walk") and not wordnet().way_of("sit", "stand")
    corpus = ["a man riding on a surfboard", "a man surfing on a surfboard"]
    scenes = SceneGraphVocabulary().update(parser.parse_batch(corpus * 2)).scenes
    planner = EditPlanner(scenes, min_count=2)
    assert ("surfing on",) not in _relation_choices(planner, parser.parse(corpus[0]))
    assert planner.explain(parser.parse(corpus[0])).candidates["relation:way_of_the_act"] == 1


def test_laying_is_replaced_but_never_written(parser):
    corpus = ["a dog laying on the couch", "a dog sitting on the couch", "a dog lying on the bed"]
    corpus += ["a cat laying on the bed", "a cat sitting on the bed", "a cat lying on the couch"]
    scenes = SceneGraphVocabulary().update(parser.parse_batch(corpus * 2)).scenes
    planner = EditPlanner(scenes, min_count=2)
    assert ("sitting on",) in _relation_choices(planner, parser.parse(corpus[0]))
    assert ("laying on",) not in _relation_choices(planner, parser.parse(corpus[1]))


@pytest.mark.slow
def test_the_build_script_gives_the_same_bytes_and_no_caption_text(tmp_path, monkeypatch):
    """Two runs, one in a subprocess (another hash seed) and one in this process meanwhile,
    write the same bytes under other file names."""
    captions = tmp_path / "caps.txt"
    lines = ["a man riding a bike on a road"] * 3 + ["a man walking a bike on a road"] * 2
    lines += ["a girl sitting on a bench in a park"] * 5
    captions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script = str(ROOT / "scripts/build_verb_codescription.py")
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    with subprocess.Popen(
        [sys.executable, script, str(captions), "--out", str(a)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as other:
        monkeypatch.setattr(sys, "argv", [script, str(captions), "--out", str(b)])
        runpy.run_path(script, run_name="__main__")
        _, err = other.communicate(timeout=300)
    assert other.returncode == 0, err.decode(errors="replace")[-2000:]
    outs = [a.read_bytes(), b.read_bytes()]
    assert outs[0] == outs[1]
    data = json.loads(gzip.decompress(outs[0]))
    assert set(data) == set(VERB_GROUP_FIELDS)
    assert "bench" not in json.dumps(data)  # verb lemmas only
    counts = SceneCounts.from_dict(data)
    assert counts.verb_grouped["<s>"] == 10 and counts.verb_codescription[("rid", "walk")] == 3
