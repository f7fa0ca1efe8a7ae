"""Graded slot evidence backed off to WordNet siblings (tags.negatives.backoff)."""

from __future__ import annotations

from collections import Counter

import pytest

from tags.negatives.backoff import RolePools, SiblingBackoff, wordnet_similarity
from tags.negatives.wordnet import wordnet

#: A fake taxonomy: similarity by hand, two categories.
SIMILAR = {
    frozenset({"cart", "wagon"}): 0.9,
    frozenset({"cart", "canoe"}): 0.7,
    frozenset({"cart", "truck"}): 0.8,
}
CATEGORY = {"cart": "vehicle", "wagon": "vehicle", "canoe": "vehicle", "truck": "vehicle"}


def similarity(a: str, b: str) -> float:
    return 1.0 if a == b else SIMILAR.get(frozenset({a, b}), 0.0)


#: Mentions of each noun in the corpus (N).
MENTIONS = Counter({"cart": 4, "wagon": 10, "canoe": 40, "truck": 20, "drawer": 30, "dog": 50})


def backoff(**kwargs) -> SiblingBackoff:
    return SiblingBackoff(similarity, CATEGORY.get, MENTIONS, **kwargs)


def test_rate_pools_own_and_sibling_counts_weighted_by_similarity():
    pool = Counter({"wagon": 5, "canoe": 20, "dog": 50})
    w_wagon, w_canoe, w_truck = 0.9**8, 0.7**8, 0.8**8
    expected = (5 * w_wagon + 20 * w_canoe) / (4 + 10 * w_wagon + 40 * w_canoe + 20 * w_truck)
    assert backoff().rate("cart", pool) == pytest.approx(expected)  # the dog: another category
    assert backoff(sharpness=1.0).rate("cart", pool) == pytest.approx(
        (5 * 0.9 + 20 * 0.7) / (4 + 10 * 0.9 + 40 * 0.7 + 20 * 0.8)
    )


def test_a_rare_noun_takes_its_near_kinds_rate_a_frequent_one_keeps_its_own():
    pool = Counter({"wagon": 8, "truck": 2})
    rare = SiblingBackoff(similarity, CATEGORY.get, {**MENTIONS, "cart": 1})
    frequent = SiblingBackoff(similarity, CATEGORY.get, {**MENTIONS, "cart": 1000})
    assert rare.rate("cart", pool) > 0.3  # wagons fill the slot 8 times in 10
    assert frequent.rate("cart", pool) < 0.01  # 1000 carts, none in the slot


def test_a_substitute_fits_when_its_rate_is_a_share_of_the_originals():
    b = backoff()
    # wagons are pushed (8 of 10), and so are trucks sometimes: a cart fits where a truck is
    pushed = Counter({"wagon": 8, "truck": 4})
    assert b.fits("cart", "truck", pushed)
    # nothing of the cart's kind is in the slot: no evidence, no fit
    assert not b.fits("cart", "dog", Counter({"dog": 4}))
    # every dog fills the slot, of the cart's kind only far canoes, 3 of 40: too little
    assert b.rate("cart", Counter({"dog": 50, "canoe": 3})) < 0.1
    assert not b.fits("cart", "dog", Counter({"dog": 50, "canoe": 3}))
    assert b.fits("cart", "truck", Counter({"cart": 1, "truck": 10}))  # attested: enough
    assert not b.fits("spork", "truck", Counter({"wagon": 10, "truck": 1}))  # no category


def test_the_originals_own_counts_are_no_evidence_for_its_substitute():
    # trucks fill the slot, and a cart is a kind of truck (0.8): but the truck is the
    # original, in the slot by definition ("a crowd in a room" -> not "in a drawer")
    pool = Counter({"truck": 10})
    assert backoff().counts("cart", pool)[0] == pytest.approx(10 * 0.8**8)
    assert backoff().counts("cart", pool, leave_out="truck")[0] == 0.0
    assert not backoff(min_ratio=0.0, min_evidence=0.1).fits("cart", "truck", pool)
    assert backoff(min_ratio=0.0, min_evidence=0.1).fits("cart", "wagon", pool)


def test_min_ratio_grades_how_close_to_the_original_a_substitute_must_come():
    pool = Counter({"dog": 50, "canoe": 30})  # the cart's rate: 30 * 0.058 / 14 = 0.12
    assert not backoff().fits("cart", "dog", pool)  # a quarter of the dog's rate, 1.0
    assert backoff(min_ratio=0.1).fits("cart", "dog", pool)
    # evidence worth less than one mention is not enough, whatever the rates
    few = Counter({"dog": 1, "wagon": 2})  # 2 * 0.43 = 0.86 mentions' worth
    assert not backoff(min_ratio=0.0).fits("cart", "dog", few)
    assert backoff(min_ratio=0.0, min_evidence=0.5).fits("cart", "dog", few)


def test_role_pools_collect_the_arguments_next_to_a_category():
    triples = Counter(
        {
            ("man", "push", "wagon"): 2,
            ("boy", "push", "truck"): 1,
            ("man", "push", "dog"): 4,
            ("wagon", "on", "road"): 3,
        }
    )
    category = {"man": "person", "boy": "person", "wagon": "vehicle", "truck": "vehicle"}.get
    pools = RolePools(triples, category)
    assert pools.pool("subject", "push", "vehicle") == Counter({"man": 2, "boy": 1})
    assert pools.pool("object", "push", "person") == Counter({"dog": 4, "wagon": 2, "truck": 1})
    assert pools.pool("object", "on", "vehicle") == Counter({"road": 3})
    assert pools.pool("subject", "pull", "vehicle") == Counter()


def test_wordnet_similarity_ranks_near_kinds_above_far_ones():
    wn = wordnet()
    if getattr(wn, "reader", None) is None:
        pytest.skip("WordNet data not installed")
    sim = wordnet_similarity(wn)
    assert sim("cart", "cart") == 1.0
    assert sim("cart", "wagon") > sim("cart", "canoe") > 0.0
    assert sim("dog", "cat") > sim("dog", "skillet")
    assert sim("qwzx", "dog") == 0.0
    assert sim("ice cream", "cake") > 0.0  # a compound is looked up as one lemma


def test_scene_evidence_backs_a_role_off_to_near_kinds_only_when_asked():
    from tags.negatives.operators.evidence import SceneEvidence
    from tags.negatives.scenes import SceneCounts

    if getattr(wordnet(), "reader", None) is None:
        pytest.skip("WordNet data not installed")
    scenes = SceneCounts()
    for name, count in {"man": 20, "wagon": 10, "truck": 10, "cart": 2, "canoe": 10}.items():
        scenes.objects[(name, name, False)] = count
    scenes.triples.update({("man", "push", "wagon"): 8, ("man", "push", "truck"): 4})
    pushed = [("object", "push", "man")]  # the substitute is what the man pushes
    assert not SceneEvidence(scenes).roles_fit("cart", pushed, "truck")
    on = SceneEvidence(scenes, sibling_backoff=True)
    assert on.roles_fit("cart", pushed, "truck")  # wagons (sim 0.95) are pushed
    assert not on.roles_fit("canoe", pushed, "truck")  # its kinds are far (sim 0.67)
    assert not on.roles_fit("cart", pushed)  # no original to weigh against: no backoff
    assert on.roles_fit("wagon", pushed, "truck")  # attested itself
