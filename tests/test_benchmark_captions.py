"""Benchmark captions: five distinct true captions per image that parse into the scene."""

from __future__ import annotations

import numpy as np
import pytest

from tags.benchmark.captions import LIST_TEMPLATE, Claim, Mention, holds, sample_claims
from tags.benchmark.scenes import COLORS, SIZES, Scene, generate_scene

# parser predicate (lemmatized) -> benchmark relation
PREDICATES = {
    "to left of": "to the left of",
    "to right of": "to the right of",
    "above": "above",
    "under": "below",
    "below": "below",
    "next to": "next to",
    "on top of": "on top of",
}


def _claims(image_id: int) -> tuple[Scene, list[Claim]]:
    scene = generate_scene(image_id)
    return scene, sample_claims(scene, np.random.default_rng([0, image_id, 1]))


@pytest.mark.parametrize("image_id", range(30))
def test_five_distinct_true_captions(image_id):
    scene, claims = _claims(image_id)
    assert len(claims) == 5 and len({c.text for c in claims}) == 5
    assert all(holds(c, scene) for c in claims)


def test_captions_vary_in_template_and_wording():
    claims = [c for i in range(30) for c in _claims(i)[1]]
    assert len({c.template for c in claims}) >= 4
    assert any(c.template == LIST_TEMPLATE for c in claims)
    assert any(m.color is None for c in claims for m in c.mentions)  # size-only mentions
    assert any(m.size is None for c in claims for m in c.mentions)  # colour-only mentions


def test_holds_rejects_false_claims():
    scene = generate_scene(0)
    a, b = scene.objects[0], scene.objects[1]
    relation = next(r for s, r, o in scene.relations if (s, o) == (0, 1))
    true = Claim("{a} {rel} {b}", (Mention(a.shape, a.color), Mention(b.shape)), relation)
    assert holds(true, scene)
    missing = next(
        c for c in COLORS if all((c, a.shape) != (o.color, o.shape) for o in scene.objects)
    )
    assert not holds(
        Claim(true.template, (Mention(a.shape, missing), true.mentions[1]), relation), scene
    )
    wrong_count = Claim(LIST_TEMPLATE, tuple(Mention(o.shape) for o in scene.objects[:1]))
    assert not holds(wrong_count, scene)


def test_texts_read_naturally():
    assert Mention("circle", "orange", "large").text == "a large orange circle"
    assert Mention("square", "orange").text == "an orange square"
    claim = Claim(LIST_TEMPLATE, (Mention("star", "red"), Mention("circle", size="small")))
    assert claim.text == "two shapes: a red star and a small circle"
    assert Claim.from_dict(claim.to_dict()) == claim


def _matches(entity: int, graph, obj) -> bool:
    values = {a.value for a in graph.attributes_of(entity)}
    known = {v for v in values if v in COLORS or v in SIZES}
    return graph.entities[entity].name == obj.shape and known <= {obj.color, obj.size}


def test_captions_parse_into_the_true_scene_graph(parser):
    checked = 0
    for image_id in range(12):
        scene, claims = _claims(image_id)
        for claim, graph in zip(claims, parser.parse_batch([c.text for c in claims]), strict=True):
            shapes = [i for i, e in enumerate(graph.entities) if e.name != "shape"]
            assert len(shapes) == len(claim.mentions), (claim.text, graph.to_factual())
            mentioned = {v for m in claim.mentions for v in (m.color, m.size) if v}
            parsed = {a.value for a in graph.attributes if a.value in COLORS or a.value in SIZES}
            assert parsed == mentioned, (claim.text, graph.to_factual())
            for i in shapes:  # every parsed object with its attributes exists in the scene
                assert any(_matches(i, graph, o) for o in scene.objects), claim.text
            if claim.relation is None:
                assert not graph.relations
                continue
            assert len(graph.relations) == 1, (claim.text, graph.to_factual())
            rel = graph.relations[0]
            relation = PREDICATES[rel.predicate]
            assert relation == claim.relation
            assert any(
                relation in scene.related(s, o)
                for s, so in enumerate(scene.objects)
                for o, oo in enumerate(scene.objects)
                if s != o and _matches(rel.subject, graph, so) and _matches(rel.object, graph, oo)
            ), (claim.text, graph.to_factual())
            checked += 1
    assert checked >= 30
