"""Filters and selection on hand-made candidates."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tags.core.types import Candidate, Edit, apply_edits
from tags.negatives.filters import filter_candidates, is_false_negative, replaced_words
from tags.negatives.selection import edit_kind, select, select_random, select_top_m

POSITIVE = "A man rides a red bike ."


def candidate(*edits: tuple[str, str, str, int, int], debris: bool = False) -> Candidate:
    parsed = tuple(Edit(*e) for e in edits)
    return Candidate(apply_edits(POSITIVE, parsed), parsed, debris)


def test_each_filter_removes_exactly_its_cases():
    keep_1 = candidate(("object", "bike", "horse", 18, 22))
    keep_2 = candidate(("attribute", "red", "blue", 14, 17))
    identical = Candidate(POSITIVE, ())
    debris = candidate(("object", "bike", "##ing", 18, 22), debris=True)
    duplicate = candidate(("object", "bike", "horse", 18, 22))
    # "green" and "scooter" both occur in another caption of the image: a false negative
    false_negative = candidate(
        ("attribute", "red", "green", 14, 17), ("object", "bike", "scooter", 18, 22)
    )
    # only one replaced word occurs there: kept
    partly = candidate(("attribute", "red", "green", 14, 17), ("object", "bike", "horse", 18, 22))
    others = ["A person on a green scooter .", "Someone riding outdoors ."]
    removed: Counter = Counter()
    kept = filter_candidates(
        POSITIVE,
        [keep_1, identical, debris, duplicate, false_negative, keep_2, partly],
        others,
        removed,
    )
    assert kept == [keep_1, keep_2, partly]
    assert removed == Counter(identical=1, debris=1, duplicate=1, false_negative=1)


def test_false_negative_rule_uses_other_captions_only():
    cand = candidate(("object", "man", "person", 2, 5))
    assert replaced_words(cand) == {"person"}
    assert is_false_negative(cand, {"a", "person", "on"})
    assert not is_false_negative(cand, {"a", "man"})
    # the positive itself is not an "other caption": nothing is dropped without others
    assert filter_candidates(POSITIVE, [cand], []) == [cand]
    # case and punctuation do not matter
    assert filter_candidates(POSITIVE, [cand], ["PERSON!"]) == []


def test_identical_by_text_even_with_edits():
    # an edit that rewrites text to itself (e.g. case-only refills are never emitted) is identical
    same = Candidate(POSITIVE, (Edit("object", "man", "man", 2, 5),))
    removed: Counter = Counter()
    assert filter_candidates(POSITIVE, [same], [], removed) == []
    assert removed["identical"] == 1


def test_select_top_m_by_score_and_seeded_sample():
    cands = [candidate(("object", "bike", w, 18, 22)) for w in ("horse", "car", "boat", "kite")]
    top = select_top_m(cands, [0.1, 0.9, 0.5, 0.9], 3)
    assert [c.edits[0].replacement for c, _ in top] == ["car", "kite", "boat"]
    assert [s for _, s in top] == [0.9, 0.9, 0.5]
    a = select_random(cands, 2, random.Random(7))
    b = select_random(cands, 2, random.Random(7))
    assert a == b and len(a) == 2
    assert select_random(cands, 10, random.Random(0)) == cands
    with pytest.raises(ValueError):
        select_top_m(cands, [0.1], 1)


def test_stratified_top_m_keeps_every_edit_kind():
    """With ``stratify_types`` the kinds take turns (best kind first): the one relation
    negative is kept although four attribute negatives outscore it."""
    colours = [candidate(("attribute", "red", w, 14, 17)) for w in ("blue", "pink", "tan", "gray")]
    relation = candidate(("relation", "rides", "pushes", 6, 11))
    obj = candidate(("object", "bike", "car", 18, 22))
    both = candidate(("attribute", "red", "blue", 14, 17), ("relation", "rides", "pushes", 6, 11))
    cands = [*colours, relation, obj]
    scores = [0.9, 0.8, 0.7, 0.6, 0.2, 0.5]
    plain = [c for c, _ in select_top_m(cands, scores, 3)]
    assert relation not in plain and obj not in plain
    chosen = [c for c, _ in select_top_m(cands, scores, 3, stratify_types=True)]
    assert chosen == [colours[0], obj, relation]
    chosen = [c for c, _ in select_top_m(cands, scores, 5, stratify_types=True)]
    assert chosen == [colours[0], obj, relation, colours[1], colours[2]]
    assert [edit_kind(c) for c in (both, obj, colours[0])] == ["relation", "object", "attribute"]
    picked = select(cands, 3, random.Random(0), scores=scores, stratify_types=True)
    assert [c for c, _ in picked] == chosen[:3]


def test_select_scores_each_candidate_once():
    class Scorer:
        def __init__(self):
            self.seen: list[str] = []

        def score(self, texts, image):
            self.seen.extend(texts)
            return [len(t) for t in texts]

    cands = [candidate(("object", "bike", w, 18, 22)) for w in ("horse", "car", "motorbike")]
    scorer = Scorer()
    chosen = select(cands, 2, random.Random(0), scorer, image=object())
    assert sorted(scorer.seen) == sorted(c.text for c in cands)
    assert [c.edits[0].replacement for c, _ in chosen] == ["motorbike", "horse"]
    # no image: a seeded sample without scores
    assert all(s is None for _, s in select(cands, 2, random.Random(0), scorer, image=None))


def test_pipeline_drops_refills_found_in_other_captions_of_the_same_image():
    from tags.core.types import Caption, ImageGroup
    from tags.negatives.pipeline import GenerationConfig, NegativeGenerator, default_parser
    from tags.negatives.refill import VocabularyRefiller
    from tags.negatives.vocabulary import SceneGraphVocabulary

    vocab = SceneGraphVocabulary(min_pool=1)
    vocab.add("object", ("cat",), 3)
    vocab.add("object", ("horse",), 1)
    generator = NegativeGenerator(
        VocabularyRefiller(vocab, num_samples=10),
        GenerationConfig(num_copies=2, num_samples=10),
        parser=default_parser(),
    )
    same_image = ImageGroup(
        0, [Caption(0, 0, "A dog is running ."), Caption(0, 1, "A cat sleeps .")]
    )
    other_image = ImageGroup(1, [Caption(1, 2, "A dog is running .")])
    results = {
        r.caption.caption_id: r.records for r in generator.generate([same_image, other_image])
    }
    # image 0: "cat" is in the image's other caption, so only "horse" survives
    assert {r.negative for r in results[0]} == {"A horse is running ."}
    # image 1: the same caption keeps "cat" (no other caption mentions it)
    assert {r.negative for r in results[2]} == {"A cat is running .", "A horse is running ."}
    assert generator.stats.removed["false_negative"] >= 1


def test_false_negative_counts_only_the_changed_words():
    """The paper's rule is about the *replaced* tokens: "sitting on" -> "sitting under"
    replaces "under" only, so a sibling caption with "under" makes it a false negative
    (the old rule also required "sitting" there and kept it)."""
    positive = "A man sitting on a bench ."
    start = positive.index("sitting on")
    edit = Edit("relation", "sitting on", "sitting under", start, start + len("sitting on"))
    cand = Candidate(apply_edits(positive, (edit,)), (edit,))
    assert replaced_words(cand) == {"under"}
    removed: Counter = Counter()
    assert filter_candidates(positive, [cand], ["A dog under a tree ."], removed) == []
    assert removed["false_negative"] == 1
    # a changed word no sibling has: kept, although the unchanged "sitting" is there
    other = Edit("relation", "sitting on", "sitting near", start, start + len("sitting on"))
    near = Candidate(apply_edits(positive, (other,)), (other,))
    assert filter_candidates(positive, [near], ["A man sitting under a tree ."]) == [near]


def test_positive_is_not_a_sibling_but_a_sibling_copy_is_a_false_negative():
    """Per the paper's wording ("the image's *other* annotated captions"), the positive does
    not count: a refill that repeats a word of the positive only is kept. A candidate equal
    to another caption of the image is dropped whatever its edits, swaps included."""
    repeat = candidate(("object", "bike", "man", 18, 22))  # "man" occurs in the positive only
    assert filter_candidates(POSITIVE, [repeat], ["A woman walks ."]) == [repeat]
    positive = "A dog chases a cat ."
    swap = (
        Edit("object", "dog", "cat", 2, 5, "swap"),
        Edit("object", "cat", "dog", 15, 18, "swap"),
    )
    swapped = Candidate(apply_edits(positive, swap), swap)
    assert swapped.text == "A cat chases a dog ."
    removed: Counter = Counter()
    assert filter_candidates(positive, [swapped], ["a cat chases a dog"], removed) == []
    assert removed["false_negative"] == 1
    assert filter_candidates(positive, [swapped], ["A cat sleeps ."]) == [swapped]
