"""Graded slot evidence backed off to WordNet siblings (tags.negatives.backoff)."""

from __future__ import annotations

from collections import Counter

import pytest

from tags.negatives.backoff import RolePools, SiblingBackoff, wordnet_similarity
from tags.negatives.lexical import wordnet

#: A fake taxonomy: similarity by hand, two categories.
SIMILAR = {
    frozenset({"cart", "wagon"}): 0.9,
    frozenset({"cart", "canoe"}): 0.7,
    frozenset({"cart", "truck"}): 0.8,
}
CATEGORY = {"cart": "vehicle", "wagon": "vehicle", "canoe": "vehicle", "truck": "vehicle"}


def similarity(a: str, b: str) -> float:
    return 1.0 if a == b else SIMILAR.get(frozenset({a, b}), 0.0)


def backoff(**kwargs) -> SiblingBackoff:
    return SiblingBackoff(similarity, CATEGORY.get, **kwargs)


def test_own_count_counts_fully_and_siblings_by_their_similarity():
    found = backoff().evidence("cart", Counter({"cart": 2, "wagon": 3, "canoe": 10, "dog": 50}))
    # 2 + 3 * 0.9^8 + 10 * 0.7^8; the dog is of another category
    assert found == pytest.approx(2 + 3 * 0.9**8 + 10 * 0.7**8)


def test_close_siblings_attest_a_slot_far_ones_do_not():
    b = backoff()
    assert b.attested("cart", Counter({"wagon": 3}))  # 3 * 0.43 = 1.29
    assert not b.attested("cart", Counter({"wagon": 2}))  # 0.86: less than one mention
    assert not b.attested("cart", Counter({"canoe": 15}))  # 15 * 0.058 = 0.86
    assert b.attested("cart", Counter({"truck": 4, "wagon": 1}))  # 4 * 0.17 + 0.43
    assert b.attested("cart", Counter({"cart": 1}))
    assert not b.attested("cart", Counter({"dog": 100}))


def test_sharpness_and_threshold_grade_the_evidence():
    pool = Counter({"truck": 4})
    assert not backoff().attested("cart", pool)  # 4 * 0.8^8 = 0.67
    assert backoff(sharpness=4.0).attested("cart", pool)  # 4 * 0.41 = 1.64
    assert backoff(threshold=0.5).attested("cart", pool)


def test_a_noun_without_category_has_its_own_count_only():
    b = backoff()
    assert b.evidence("spork", Counter({"spork": 1, "wagon": 100})) == 1.0
    assert not b.attested("spork", Counter({"wagon": 100}))


def test_the_grouping_follows_the_pool_it_was_built_for():
    b = backoff()
    first = Counter({"wagon": 3})
    assert b.attested("cart", first)
    second = Counter({"canoe": 3})
    assert not b.attested("cart", second)  # not the first pool's cached grouping


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
