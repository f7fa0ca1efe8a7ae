"""The counting pass's parses kept for generation (:class:`tags.negatives.parses.ParseCache`)."""

from __future__ import annotations

from _data import FLICKR_CAPTIONS

from parsers.graph import Entity, SceneGraph
from tags.cli import main
from tags.negatives.parses import ParseCache


class CountingParser:
    """A stand-in parser: one entity named after the caption's first word; counts calls."""

    def __init__(self):
        self.parsed: list[str] = []
        self.truncated = 7

    def _graph(self, text: str) -> SceneGraph:
        self.parsed.append(text)
        return SceneGraph(caption=text, entities=[Entity(text.split()[0])])

    def pipe(self, captions, **kwargs):
        for text in captions:
            yield self._graph(text)

    def parse_batch(self, captions, **kwargs):
        return [self._graph(text) for text in captions]


TEXTS = [f"word{i} and more words" for i in range(10)]


def test_kept_parses_answer_generation_and_the_others_are_parsed_in_order():
    inner = CountingParser()
    cache = ParseCache(inner)
    counted = list(cache.pipe(iter(TEXTS[:6])))
    assert [g.caption for g in counted] == TEXTS[:6]
    assert len(cache) == 6 and inner.parsed == TEXTS[:6]
    inner.parsed.clear()
    asked = [TEXTS[8], TEXTS[1], TEXTS[9], TEXTS[5]]
    graphs = cache.parse_batch(asked)
    assert [g.caption for g in graphs] == asked
    assert [g.entities[0].name for g in graphs] == ["word8", "word1", "word9", "word5"]
    assert inner.parsed == [TEXTS[8], TEXTS[9]]  # only the texts the counting pass did not see
    assert cache.hits == 2
    assert cache.truncated == 7  # other attributes read through to the parser


def test_each_lookup_is_a_fresh_graph_equal_to_the_kept_one():
    cache = ParseCache(CountingParser())
    kept = next(cache.pipe([TEXTS[0]]))
    first, second = cache.parse_batch([TEXTS[0], TEXTS[0]])
    assert first == kept and second == kept
    first.entities.append(Entity("changed"))
    assert cache.parse_batch([TEXTS[0]])[0] == kept  # a change to one copy stays there
    assert first is not second


def test_the_budget_bounds_what_is_kept():
    one = ParseCache(CountingParser())
    list(one.pipe(TEXTS[:1]))
    cost = one.size
    assert cost > 0
    cache = ParseCache(CountingParser(), max_bytes=3 * cost + cost // 2)
    list(cache.pipe(TEXTS))  # every graph still comes through
    assert len(cache) == 3 and cache.size <= cache.max_bytes
    inner = cache.parser
    inner.parsed.clear()
    cache.parse_batch(TEXTS)
    assert inner.parsed == TEXTS[3:]
    cache.clear()
    assert len(cache) == 0 and cache.size == 0


def test_kept_parses_equal_the_parsers_own(parser):
    texts = [" ".join(t.split()) for t in FLICKR_CAPTIONS.read_text().splitlines()[:30]]
    cache = ParseCache(parser)
    list(cache.pipe(texts))
    kept = cache.parse_batch(texts)
    assert cache.hits == len(texts)
    assert [g.to_dict() for g in kept] == [g.to_dict() for g in parser.parse_batch(texts)]


def test_generation_after_the_counting_pass_equals_generation_that_parses(tmp_path):
    """`tags generate` reuses the counting pass's parses; with an existing --vocab there is no
    counting pass and generation parses every caption: the same bytes."""
    corpus = tmp_path / "caps.txt"
    corpus.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:40]) + "\n")
    fast = ["--k", "5", "--l", "5", "--top-m", "8", "--no-progress"]
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(first), *fast]) == 0
    vocab = first.with_name(first.name + ".vocab.json")
    args = ["generate", "--captions", str(corpus), "--out", str(second), "--vocab", str(vocab)]
    assert main([*args, *fast]) == 0
    assert first.read_bytes() == second.read_bytes() and first.read_bytes()
