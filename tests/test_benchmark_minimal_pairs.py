"""Minimal pairs: false for their image, one unit away from a true caption; the accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from tags.benchmark.captions import holds, sample_claims
from tags.benchmark.minimal_pairs import (
    PAIR_TYPES,
    MinimalPair,
    accuracy_by_word,
    minimal_pair_accuracy,
    minimal_pair_wins,
    minimal_pairs,
    read_pairs,
    role_swap_pairs,
    single_edits,
    write_pairs,
)
from tags.benchmark.scenes import generate_scene

IDS = range(20)


def _pairs(image_id: int):
    scene = generate_scene(image_id)
    claims = sample_claims(scene, np.random.default_rng([0, image_id, 1]))
    return scene, claims, minimal_pairs(scene, claims, np.random.default_rng([0, image_id, 2]))


def _words(text: str) -> list[str]:
    return ["a" if w == "an" else w for w in text.replace(",", " ,").replace(":", " :").split()]


def _one_substitution(before: str, after: str, old: str, new: str) -> bool:
    """``after`` is ``before`` with one occurrence of the words ``old`` replaced by ``new``
    (articles normalised), everything else unchanged."""
    a, b, o, n = _words(before), _words(after), old.split(), new.split()
    return any(
        a[:i] == b[:i]
        and a[i : i + len(o)] == o
        and b[i : i + len(n)] == n
        and a[i + len(o) :] == b[i + len(n) :]
        for i in range(len(a))
    )


@pytest.mark.parametrize("image_id", IDS)
def test_pairs_are_false_and_one_unit_away(image_id):
    scene, claims, pairs = _pairs(image_id)
    by_text = {c.text: c for c in claims}
    assert pairs
    for pair in pairs:
        assert pair.image_id == image_id and pair.type in PAIR_TYPES
        claim = by_text[pair.caption]  # the positive is one of the image's true captions
        assert holds(claim, scene)
        edited = [e for kind, _, _, e in single_edits(claim) if e.text == pair.negative]
        assert edited and not holds(edited[0], scene)
        assert pair.original != pair.replacement
        assert _one_substitution(pair.caption, pair.negative, pair.original, pair.replacement)


def test_all_types_occur_at_most_one_per_type_per_caption():
    pairs = [p for i in IDS for p in _pairs(i)[2]]
    assert {p.type for p in pairs} == set(PAIR_TYPES)
    keys = [(p.caption, p.type) for p in pairs]
    assert len(keys) == len(set(keys))


def test_pairs_round_trip_through_jsonl(tmp_path):
    pairs = _pairs(0)[2]
    write_pairs(pairs, tmp_path / "pairs.jsonl")
    assert read_pairs(tmp_path / "pairs.jsonl") == pairs


def test_minimal_pair_accuracy_oracle_and_adversary():
    pairs = [p for i in IDS for p in _pairs(i)[2]]
    truth = {(p.image_id, p.caption) for p in pairs}
    calls = []

    def oracle(ids, captions):
        calls.append(len(captions))
        return [1.0 if (i, c) in truth else 0.0 for i, c in zip(ids, captions, strict=True)]

    result = minimal_pair_accuracy(oracle, pairs, batch_size=16)
    assert result == {"overall": 1.0, **{t: 1.0 for t in PAIR_TYPES}}
    assert max(calls) <= 16 and sum(calls) == 2 * len(pairs)
    flipped = minimal_pair_accuracy(lambda i, c: [-s for s in oracle(i, c)], pairs)
    assert flipped["overall"] == 0.0
    # ties do not count as wins
    assert minimal_pair_accuracy(lambda i, c: np.zeros(len(c)), pairs)["overall"] == 0.0


def test_minimal_pair_accuracy_per_type_mix():
    pairs = [
        MinimalPair(0, "p", "n1", "attribute", "red", "blue"),
        MinimalPair(0, "p", "n2", "relation", "above", "below"),
    ]
    scores = {"p": 0.5, "n1": 0.2, "n2": 0.9}
    result = minimal_pair_accuracy(lambda ids, caps: [scores[c] for c in caps], pairs)
    assert result == {"overall": 0.5, "attribute": 1.0, "relation": 0.0}
    with pytest.raises(ValueError):
        minimal_pair_accuracy(lambda ids, caps: [], [])


def test_accuracy_by_word_groups_the_pairs_by_their_false_or_true_word():
    pairs = [
        MinimalPair(0, "p0", "n0", "relation", "above", "next to"),
        MinimalPair(1, "p1", "n1", "relation", "below", "next to"),
        MinimalPair(2, "p2", "n2", "relation", "next to", "above"),
    ]
    # a scorer that only dislikes the words "next to": no image involved
    score = {"p0": 1.0, "n0": 0.0, "p1": 1.0, "n1": 0.0, "p2": 0.0, "n2": 1.0}
    wins = minimal_pair_wins(lambda ids, caps: [score[c] for c in caps], pairs, batch_size=2)
    assert wins.tolist() == [True, True, False]
    assert accuracy_by_word(pairs, wins) == {"above": (0.0, 1), "next to": (1.0, 2)}
    by_true = accuracy_by_word(pairs, wins, field="original")
    assert by_true == {"above": (1.0, 1), "below": (1.0, 1), "next to": (0.0, 1)}
    with pytest.raises(ValueError, match="field"):
        accuracy_by_word(pairs, wins, field="type")
    with pytest.raises(ValueError, match="wins"):
        accuracy_by_word(pairs, wins[:2])


def test_one_substitution_check_rejects_two_changes():
    before = "a red circle above a blue square"
    assert _one_substitution(before, "a green circle above a blue square", "red", "green")
    assert not _one_substitution(before, "a green circle below a blue square", "red", "green")


def test_role_pairs_swap_the_mentions_and_are_false():
    """A role pair has the positive's words in another order (no text prior) and is false;
    relation captions whose swap is also true (e.g. "next to") give no pair."""
    pairs, relation_claims = [], 0
    for image_id in IDS:
        scene, claims, _ = _pairs(image_id)
        relation_claims += sum(c.relation is not None for c in claims)
        found = role_swap_pairs(scene, claims)
        by_text = {c.text: c for c in claims}
        for pair in found:
            claim = by_text[pair.caption]
            a, b = claim.mentions
            assert pair.type == "role" and (pair.original, pair.replacement) == (a.text, b.text)
            assert sorted(_words(pair.caption)) == sorted(_words(pair.negative))
            assert pair.negative == claim.template.format(a=b.text, rel=claim.relation, b=a.text)
            assert holds(claim, scene) and pair.negative != pair.caption
        swapped_true = [
            c for c in claims if c.relation is not None and c.text not in {p.caption for p in found}
        ]
        for claim in swapped_true:  # no pair: the swap holds too, or reads the same
            a, b = claim.mentions
            swap = claim.template.format(a=b.text, rel=claim.relation, b=a.text)
            assert swap == claim.text or holds(
                type(claim)(claim.template, (b, a), claim.relation), scene
            )
        pairs += found
    assert 0 < len(pairs) <= relation_claims
    scores = {p.caption: 1.0 for p in pairs}
    result = minimal_pair_accuracy(lambda ids, caps: [scores.get(c, 0.0) for c in caps], pairs)
    assert result == {"overall": 1.0, "role": 1.0}
