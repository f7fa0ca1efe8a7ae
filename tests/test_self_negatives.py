"""TAGS and TAGS-DC on the binding testbed (tags/testbed/self_negatives.py): units are the
caption's scene-graph units, refills stay aligned with the positive, the paper's filters apply,
the selection is the model's top ITM score, and TAGS-DC alone trains the WoD/WoC heads."""

import argparse

import numpy as np
import pytest
import torch
from research import headroom

from tags.benchmark.captions import Claim, Mention
from tags.benchmark.scenes import COLORS, RELATIONS
from tags.benchmark.truth import parse_claim
from tags.testbed import TestbedConfig, self_negatives, vocab, world
from tags.testbed import training as testbed_train
from tags.testbed.matcher import Matcher
from tags.testbed.self_negatives import (
    SelfNegativeStats,
    caption_units,
    caption_words,
    choose_negatives,
    refill_candidates,
    unit_choices,
)

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
    return vocab.tokenize(text)


def test_refills_replace_the_unit_in_place_and_fix_its_article():
    positive = _ids(RELATION.text)
    units = caption_units(RELATION)[:1]  # "red"
    draws = [np.array([[vocab.WORD_ID["orange"], vocab.WORD_ID["red"]]])]
    out = refill_candidates(positive, units, draws, vocab.VOCAB)
    (orange, _, kind), (same, _, _) = out
    assert kind == "attribute"
    assert orange.text == "there is an orange circle to the left of a large star"
    (edit,) = orange.edits
    assert RELATION.text[edit.start : edit.end] == edit.original == "a red"
    assert edit.replacement == "an orange"
    assert len(out[0][1]) == len(positive) and vocab.tokenize(orange.text) == out[0][1]
    assert same.edits == () and same.text == RELATION.text  # a refill of the same word


def test_filters_and_selection_follow_the_paper():
    positive = _ids(RELATION.text)
    units = caption_units(RELATION)[1:2]  # "circle"
    words = ["square", "star", "circle", "square", ","]
    draws = [[np.array([[vocab.WORD_ID[w] for w in words]])]]
    scored = []

    def score(rows):
        scored.extend(rows)
        return np.array([float(ids[5] == vocab.WORD_ID["star"]) for _, ids in rows])

    stats = SelfNegativeStats()
    others = [["a red star is above a large star"]]  # "star" is in another caption
    chosen = choose_negatives([positive], [units], draws, others, score, vocab.VOCAB, stats)
    assert stats.removed == {"false_negative": 1, "identical": 1, "duplicate": 1, "debris": 1}
    assert [vocab.VOCAB[ids[5]] for _, ids in scored] == ["square"]
    (only,) = chosen
    assert only.text == "there is a red square to the left of a large star"
    # without the other caption, "star" survives and the higher score wins
    chosen = choose_negatives([positive], [units], draws, [[]], score, vocab.VOCAB, stats)
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


def _model_and_batch(args):
    """The tiny seeded model with heads and step 1's batch of 6 scenes for ``args``."""
    torch.manual_seed(0)
    model = Matcher("tags-bind", 32, 1, "tied", "gate", heads=True)
    batch = world.make_batch(1, 0, 6, args.negatives, 4, testbed_train.make_sampler(args))
    return model, batch


def _refilled(args):
    """:func:`self_negatives.self_negatives` on :func:`_model_and_batch`: the model, the
    batch it started from, its statistics and what it returned."""
    model, batch = _model_and_batch(args)
    stats = SelfNegativeStats()
    out = self_negatives.self_negatives(model, batch, args, 1, stats, torch.device("cpu"))
    return model, batch, stats, out


def test_self_negatives_are_one_unit_refills_the_model_scores_highest():
    args = _args("istm")
    _, batch, stats, (out, chosen, positives, units) = _refilled(args)
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


def test_typed_refills_stay_in_the_units_word_class():
    args = _args("tags-dc", refill="typed", copies=0)
    _, _, stats, (_, chosen, positives, _) = _refilled(args)
    assert chosen and stats.chosen_truth["ungrammatical"] == 0  # every refill is grammatical
    classes = [set(c) for c in vocab.WORD_CLASSES]
    relation_words = {w for r in RELATIONS for w in r.split()}
    for r in chosen:
        old = [vocab.VOCAB[i] for i in positives[r.row]]
        new = [vocab.VOCAB[i] for i in r.ids]
        assert parse_claim(r.text) is not None, r.text
        if len(new) != len(old):  # a relation phrase of another length
            assert r.unit == "relation"
            continue
        changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b and a not in ("a", "an")]
        assert changed, r.text
        for a, b in changed:
            same_class = any(a in c and b in c for c in classes)
            assert same_class or {a, b} <= relation_words, (a, b, r.text)


def test_typed_choices_are_the_units_class_or_every_relation():
    def words(unit):
        return [[vocab.VOCAB[i] for i in c] for c in unit_choices([vocab.WORD_ID[w] for w in unit])]

    assert words(["red"]) == [[c] for c in COLORS]
    assert words(["large"]) == [["small"], ["large"]]
    relations = [r.split() for r in RELATIONS]
    assert words(["above"]) == words(["to", "the", "left", "of"]) == relations


def test_a_relation_refill_of_another_length_replaces_the_whole_phrase():
    positive = _ids(RELATION.text)
    units = caption_units(RELATION)[2:3]  # "to the left of"
    draws = [[[vocab.WORD_ID["above"]], [vocab.WORD_ID[w] for w in ("on", "top", "of")]]]
    (above, above_ids, kind), (on_top, _, _) = refill_candidates(
        positive, units, draws, vocab.VOCAB
    )
    assert kind == "relation"
    assert above.text == "there is a red circle above a large star"
    assert on_top.text == "there is a red circle on top of a large star"
    (edit,) = above.edits
    assert (edit.original, edit.replacement) == ("to the left of", "above")
    assert RELATION.text[edit.start : edit.end] == "to the left of"
    assert above_ids == vocab.tokenize(above.text) and len(above_ids) == len(positive) - 3


@pytest.mark.parametrize("method", ["istm", "tags-dc"])
def test_only_tags_dc_trains_the_word_heads(method):
    plain = testbed_train.initial_model(_args("plain"))
    start = dict(testbed_train.initial_model(_args(method)).named_parameters())
    for name, p in plain.named_parameters():  # the same start as every other method
        assert torch.equal(p, start[name]), name
    keep: dict = {}
    result = headroom.train(_args(method), keep)
    assert result["self_negatives"]["chosen"] > 0
    fresh = testbed_train.initial_model(_args(method))
    trained = keep["model"]
    moved = {
        name: not torch.equal(p, dict(fresh.named_parameters())[name])
        for name, p in trained.named_parameters()
    }
    wod = [v for k, v in moved.items() if "wod" in k]
    mlm = [v for k, v in moved.items() if "mlm" in k or "cls.predictions" in k]
    assert wod and all(wod) == (method == "tags-dc")
    assert any(mlm)  # the MLM loss trains the refill head in both


@pytest.mark.parametrize(("dc_start", "trained"), [(3, False), (2, True)])
def test_word_heads_wait_for_dc_start(dc_start, trained):
    keep: dict = {}
    headroom.train(_args("tags-dc", dc_start=dc_start), keep)  # steps 1 and 2
    fresh = dict(testbed_train.initial_model(_args("tags-dc")).named_parameters())
    wod = [
        not torch.equal(p, fresh[name])
        for name, p in keep["model"].named_parameters()
        if "wod" in name
    ]
    assert wod and all(wod) == trained and any(wod) == trained


def test_top_m_keeps_each_captions_best_refills_in_score_order():
    positive = _ids(RELATION.text)
    units = caption_units(RELATION)[1:2]  # "circle"
    words = ["square", "star", "diamond", "square"]
    draws = [[np.array([[vocab.WORD_ID[w] for w in words]])]]
    rank = {"star": 2.0, "square": 1.0, "diamond": 0.5}

    def score(rows):
        return np.array([rank[vocab.VOCAB[ids[5]]] for _, ids in rows])

    def choose(*top_m):
        stats = SelfNegativeStats()
        return choose_negatives([positive], [units], draws, [[]], score, vocab.VOCAB, stats, *top_m)

    assert [(vocab.VOCAB[r.ids[5]], r.rank) for r in choose(2)] == [("star", 0), ("square", 1)]
    assert [(vocab.VOCAB[r.ids[5]], r.rank) for r in choose(31)][-1] == ("diamond", 2)
    assert choose() == choose(1) == choose(2)[:1]


def test_istm_triplet_is_each_positives_mean_hinge_over_its_refills():
    model, batch = _model_and_batch(_args("istm"))
    positives = [vocab.tokenize(t) for t in batch.texts[:6]]
    neg = [vocab.tokenize(t) for t in batch.texts[:6][::-1]]  # other scenes' captions
    chosen = [
        self_negatives.Refilled(0, neg[0], "object", "", 0),
        self_negatives.Refilled(0, neg[1], "object", "", 1),
        self_negatives.Refilled(0, neg[2], "object", "", 2),
        self_negatives.Refilled(3, neg[3], "object", "", 0),
    ]
    got = self_negatives.istm_triplet(model, batch, chosen, positives, "cpu", margin=5.0)

    def s(ids, row):
        x = self_negatives.inputs_of([ids], [row], batch, "cpu")
        return torch.sigmoid(model(**x))[0]

    first = sum(5.0 - s(positives[0], 0) + s(neg[k], 0) for k in range(3)) / 3
    want = (first + 5.0 - s(positives[3], 3) + s(neg[3], 3)) / 2  # each positive counts once
    assert torch.allclose(got, want, atol=1e-5)


def test_triplet_istm_adds_no_row_and_trains_the_top_m():
    args = _args("istm", istm_loss="triplet", top_m=3, refill="typed")
    model, batch, stats, (out, chosen, positives, units) = _refilled(args)
    assert out.texts == batch.texts  # the refills go to L_ISTM, not to the ITM rows
    per_row: dict[int, list[int]] = {}
    for r in chosen:
        per_row.setdefault(r.row, []).append(r.rank)
    assert per_row and max(map(len, per_row.values())) == 3
    assert all(ranks == list(range(len(ranks))) for ranks in per_row.values())
    assert sum(stats.chosen_truth.values()) == len(per_row)  # the best of each counts
    losses = []
    for weight in (0.0, 1.0):
        config = _args("istm", istm_loss="triplet", istm_weight=weight)
        losses.append(
            self_negatives.self_negative_losses(
                model, out, chosen, positives, units, config, 1, "cpu"
            )
        )
    assert losses[1].item() > losses[0].item()
    with pytest.raises(ValueError, match="istm_loss"):
        TestbedConfig(negatives="istm", istm_loss="pairs")


def test_driver_flags_reach_the_config():
    args = ["--negatives", "tags-dc", "--dc-start", "125", "--istm-loss", "triplet"]
    config = headroom.run_config(headroom.parse_args([*args, "--top-m", "5", "--istm-weight", "1"]))
    assert (config.dc_start, config.istm_loss, config.top_m, config.istm_weight) == (
        125, "triplet", 5, 1.0,
    )  # fmt: skip
    default = headroom.run_config(headroom.parse_args(["--negatives", "tags-dc"]))
    assert (default.dc_start, default.istm_loss, default.top_m) == (0, "row", 31)
