"""TAGS and TAGS-DC on the headroom testbed (scripts/research/self_negatives.py): units are the
caption's scene-graph units, refills stay aligned with the positive, the paper's filters apply,
the selection is the model's top ITM score, and TAGS-DC alone trains the WoD/WoC heads."""

import argparse

import numpy as np
import pytest
import torch
from research import headroom
from research.self_negatives import (
    SelfNegativeStats,
    caption_units,
    caption_words,
    choose_negatives,
    refill_candidates,
)

from tags.benchmark.captions import Claim, Mention
from tags.benchmark.truth import parse_claim

RELATION = Claim("there is {a} {rel} {b}", (Mention("circle", "red"), Mention("star", None, "large")), "to the left of")  # fmt: skip
LISTED = Claim("{n} shapes: {items}", (Mention("square", "blue", "small"), Mention("hexagon", "orange")))  # fmt: skip


def test_units_are_each_mentions_attributes_and_shape_and_the_relation_phrase():
    words = caption_words(RELATION.text)
    got = [(kind, [words[p] for p in positions]) for kind, positions in caption_units(RELATION)]
    assert got == [
        ("attribute", ["red"]),
        ("object", ["circle"]),
        ("relation", ["to", "the", "left", "of"]),
        ("attribute", ["large"]),
        ("object", ["star"]),
    ]
    words = caption_words(LISTED.text)
    got = [(kind, [words[p] for p in positions]) for kind, positions in caption_units(LISTED)]
    assert got == [
        ("attribute", ["small"]),
        ("attribute", ["blue"]),
        ("object", ["square"]),
        ("attribute", ["orange"]),
        ("object", ["hexagon"]),
    ]


def _ids(text: str) -> list[int]:
    return headroom.tokenize(text)


def test_refills_replace_the_unit_in_place_and_fix_its_article():
    positive = _ids(RELATION.text)
    units = caption_units(RELATION)[:1]  # "red"
    draws = [np.array([[headroom.WORD_ID["orange"], headroom.WORD_ID["red"]]])]
    out = refill_candidates(positive, units, draws, headroom.VOCAB)
    (orange, _, kind), (same, _, _) = out
    assert kind == "attribute"
    assert orange.text == "there is an orange circle to the left of a large star"
    (edit,) = orange.edits
    assert RELATION.text[edit.start : edit.end] == edit.original == "a red"
    assert edit.replacement == "an orange"
    assert len(out[0][1]) == len(positive) and headroom.tokenize(orange.text) == out[0][1]
    assert same.edits == () and same.text == RELATION.text  # a refill of the same word


def test_filters_and_selection_follow_the_paper():
    positive = _ids(RELATION.text)
    units = caption_units(RELATION)[1:2]  # "circle"
    words = ["square", "star", "circle", "square", ","]
    draws = [[np.array([[headroom.WORD_ID[w] for w in words]])]]
    scored = []

    def score(rows):
        scored.extend(rows)
        return np.array([float(ids[5] == headroom.WORD_ID["star"]) for _, ids in rows])

    stats = SelfNegativeStats()
    others = [["a red star is above a large star"]]  # "star" is in another caption
    chosen = choose_negatives([positive], [units], draws, others, score, headroom.VOCAB, stats)
    assert stats.removed == {"false_negative": 1, "identical": 1, "duplicate": 1, "debris": 1}
    assert [headroom.VOCAB[ids[5]] for _, ids in scored] == ["square"]
    (only,) = chosen
    assert only.text == "there is a red square to the left of a large star"
    # without the other caption, "star" survives and the higher score wins
    chosen = choose_negatives([positive], [units], draws, [[]], score, headroom.VOCAB, stats)
    assert chosen[0].text == "there is a red star to the left of a large star"


def _args(method: str, **kw) -> argparse.Namespace:
    args = headroom.parse_args(
        ["--negatives", method, "--steps", "2", "--eval-every", "2", "--eval-scenes", "6",
         "--batch-size", "6", "--refills", "3", "--hidden", "32", "--layers", "1",
         "--device", "cpu"]
    )  # fmt: skip
    for k, v in kw.items():
        setattr(args, k, v)
    return args


def test_self_negatives_are_one_unit_refills_the_model_scores_highest():
    args = _args("istm")
    torch.manual_seed(0)
    model = headroom.build_model("tags-bind", 32, 1, "tied", "gate", heads=True)
    batch = headroom.make_batch(1, 0, 6, "istm", 4, headroom.make_sampler(args))
    stats = SelfNegativeStats()
    out, chosen, positives, units = headroom.self_negatives(
        model, batch, args, 1, stats, torch.device("cpu")
    )
    added = [k for k, kind in enumerate(out.kinds) if kind.startswith("self-")]
    assert len(added) == len(chosen) > 0
    for k, r in zip(added, chosen, strict=True):
        assert out.texts[k] == r.text and out.targets[k] == 0.0 and out.scene_index[k] == r.row
        positive = positives[r.row]
        changed = {p - 1 for p, (a, b) in enumerate(zip(positive, r.ids)) if a != b}
        spans = [set(pos) for _, pos in units[r.row]]
        assert any(changed - {min(s) - 1} <= s and changed & s for s in spans), r.text
        assert parse_claim(batch.texts[r.row]) is not None
    assert sum(stats.chosen_truth.values()) == len(chosen)
    assert [(p, n) for p, n, _ in stats.last] == [(batch.texts[r.row], r.text) for r in chosen]
    assert stats.candidates == sum(len(u) for u in units) * args.refills


@pytest.mark.parametrize("method", ["istm", "tags-dc"])
def test_only_tags_dc_trains_the_word_heads(method):
    plain = headroom.initial_model(_args("plain"))
    start = dict(headroom.initial_model(_args(method)).named_parameters())
    for name, p in plain.named_parameters():  # the same start as every other method
        assert torch.equal(p, start[name]), name
    keep: dict = {}
    result = headroom.train(_args(method), keep)
    assert result["self_negatives"]["chosen"] > 0
    fresh = headroom.initial_model(_args(method))
    trained = keep["model"]
    moved = {
        name: not torch.equal(p, dict(fresh.named_parameters())[name])
        for name, p in trained.named_parameters()
    }
    wod = [v for k, v in moved.items() if "wod" in k]
    mlm = [v for k, v in moved.items() if "mlm" in k or "cls.predictions" in k]
    assert wod and all(wod) == (method == "tags-dc")
    assert any(mlm)  # the MLM loss trains the refill head in both
