"""The demo's speed-ups keep exact behaviour: cached region reads and tokens give the same
items, retrieval scores without autograd and picks what it picked before, the planner is
built once per corpus, and the stage timers add up."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tags.backends.masked_lm import load_tokenizer
from tags.core.regions import CachedRegions, Regions
from tags.data import PairCollator, build_dataset, write_synthetic_dataset
from tags.modeling import tiny_mlm_path
from tags.training.retrieval import retrieve_negatives
from tags.training.timing import StageTimer, timed_iter


class CountingStore:
    """A region store that counts its reads."""

    def __init__(self, size: int = 4) -> None:
        self.reads = 0
        self.size = size

    def get(self, image_id, filename=None, position=None):
        self.reads += 1
        value = float(image_id)
        return Regions(np.full((2, self.size), value, np.float32), np.zeros((2, 7), np.float32))


def test_cached_regions_read_once_and_evict_least_recent_first():
    store = CountingStore()
    item = 2 * 4 * 4 + 2 * 7 * 4  # bytes of one image's features + boxes
    cache = CachedRegions(store, max_bytes=2 * item)
    assert cache.get(1).features[0, 0] == 1 and cache.get(1) is cache.get(1)
    assert store.reads == 1
    cache.get(2)
    cache.get(1)  # 1 is now the most recent
    cache.get(3)  # over budget: 2 goes
    assert store.reads == 3 and cache.bytes == 2 * item
    cache.get(1)
    assert store.reads == 3
    cache.get(2)
    assert store.reads == 4
    assert CachedRegions(store, max_bytes=item - 1).get(9).features[0, 0] == 9  # too big


def _config(paths, **extra):
    return SimpleNamespace(
        captions=str(paths["captions"]), features=str(paths["features"]), format="karpathy",
        split=None, max_text_len=16, max_regions=3, limit_images=None, **extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("speed")
    paths = write_synthetic_dataset(root, num_images=30, num_regions=4, layout="karpathy")
    tokenizer = load_tokenizer(tiny_mlm_path())
    cached = build_dataset(_config(paths), tokenizer)
    plain = build_dataset(_config(paths), tokenizer)
    plain.regions = plain.regions.store  # the uncached reader underneath
    return cached, plain


def test_cached_dataset_items_equal_uncached(datasets):
    cached, plain = datasets
    assert isinstance(cached.regions, CachedRegions)
    for _ in range(2):  # second pass: from the caches
        for i in range(len(plain)):
            a, b = cached[i], plain[i]
            assert a["input_ids"] == b["input_ids"] and a["text"] == b["text"]
            assert torch.equal(a["features"], b["features"]) and torch.equal(a["boxes"], b["boxes"])
    item = cached[0]
    item["features"] += 1  # callers get copies: the cache stays intact
    item["input_ids"].append(7)
    assert torch.equal(cached[0]["features"], plain[0]["features"])
    assert cached[0]["input_ids"] == plain[0]["input_ids"]


def test_tokens_are_tokenized_once(datasets, monkeypatch):
    cached, _ = datasets
    calls = []
    tokenizer = cached.tokenizer

    def counting(*args, **kwargs):
        calls.append(args[0])
        return tokenizer(*args, **kwargs)

    monkeypatch.setattr(cached, "tokenizer", counting)
    monkeypatch.setattr(cached, "_tokens", {})
    first = [cached.tokens(i) for i in range(10)]
    again = [cached.tokens(i) for i in range(10)]
    assert first == again and len(calls) == 10


class GradProbe(torch.nn.Module):
    """A TagsModel stand-in with a trainable parameter that records whether autograd was on
    while scoring."""

    config = SimpleNamespace(model_type="tags")

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor(1e-3))
        self.grad_enabled: list[bool] = []

    def score_pairs(self, input_ids, attention_mask, region_features, region_boxes, region_mask):
        self.grad_enabled.append(torch.is_grad_enabled())
        text = (input_ids * attention_mask).sum(1).float() * self.weight
        image = (region_features * region_mask[..., None]).sum((1, 2))
        return SimpleNamespace(logits=(text + image) * 1e-2)


def test_retrieval_scores_without_autograd_and_keeps_its_picks(datasets):
    cached, plain = datasets
    batch = PairCollator(0)([plain[i] for i in (0, 17, 42)])
    config = SimpleNamespace(mode="pool", pool_size=20, num_negatives=5, score_batch_size=16)
    picks = []
    for dataset in (cached, plain):
        probe = GradProbe()
        gens = [torch.Generator().manual_seed(s) for s in (1, 2, 3)]
        picks.append(
            retrieve_negatives(probe, dataset, batch, gens, config, contextlib.nullcontext)
        )
        assert probe.grad_enabled and not any(probe.grad_enabled)
        assert probe.training  # the training flag is restored
    for a, b in zip(*picks):
        assert torch.equal(a, b)
    # the picks are the pool's best by the score, as the naive full scoring ranks them
    caps = picks[0][0]
    image_of = plain.image_of
    for row, anchor in enumerate((0, 17, 42)):
        assert not (image_of[caps[row]] == image_of[anchor]).any()
        sums = [sum(plain.tokens(int(c))) for c in caps[row]]
        assert sums == sorted(sums, reverse=True)


def test_planner_is_built_once_per_corpus(monkeypatch):
    from tags.training import synthetic

    calls = []

    class Parser:
        def pipe(self, texts):
            calls.append(list(texts))
            return iter(())

    monkeypatch.setattr(synthetic, "_PLANNERS", {})
    parser = Parser()
    first = synthetic.build_planner(parser, ["a dog", "a  cat"])
    assert synthetic.build_planner(parser, ["a dog", "a cat"]) is first  # same normalized text
    assert len(calls) == 1
    other = synthetic.build_planner(parser, ["a bird"])
    assert other is not first and len(calls) == 2


def test_engine_source_reuses_the_planners_parses(monkeypatch):
    """The per-step parses of training captions come from the planner's counting pass."""
    from parsers.graph import SceneGraph
    from tags.negatives import pipeline
    from tags.training import synthetic

    class Parser:
        def __init__(self):
            self.parsed = []

        def pipe(self, texts, **kwargs):
            for text in texts:
                self.parsed.append(text)
                yield SceneGraph(caption=text)

        def parse_batch(self, texts, **kwargs):
            return list(self.pipe(texts))

    parser = Parser()
    monkeypatch.setattr(pipeline, "default_parser", lambda: parser)
    monkeypatch.setattr(synthetic, "_PLANNERS", {})
    config = SimpleNamespace(masking="unit", planner=True, noun_classes=None)
    tokenizer = load_tokenizer(tiny_mlm_path())
    source = synthetic.EngineSource(tokenizer, config, corpus=["a red dog", "a  cat"])
    assert parser.parsed == ["a red dog", "a cat"]
    graphs = source.parser.parse_batch(["a cat", "a bird"])
    assert [g.caption for g in graphs] == ["a cat", "a bird"]
    assert parser.parsed == ["a red dog", "a cat", "a bird"]  # "a cat" was not parsed again
    # the wrapped parser shares the planner of the bare one (the demo's sample negatives)
    assert synthetic.build_planner(parser, ["a red dog", "a cat"]) is source.planner


def test_stage_timer_and_timed_iter():
    timer = StageTimer()
    with timer("a"):
        pass
    timer.add("a", 2.0)
    timer.add("b", 0.5)
    assert list(timed_iter([1, 2, 3], timer, "data")) == [1, 2, 3]
    out = timer.metrics()
    assert set(out) == {"time/a", "time/b", "time/data"}
    assert 2.0 <= float(out["time/a"]) < 2.5 and float(out["time/b"]) == 0.5
    assert timer.metrics() == {}  # reset


def test_stage_seconds_weights_windows_by_their_steps():
    from tags.demo.pipeline import stage_seconds

    rows = [
        {"step": 5, "time/retrieval": 1.0, "loss/total": 1.0},
        {"step": 7, "time/retrieval": 2.0, "time/forward": 1.0},
        {"step": 7, "phase": 0, "eval/rsum": 3.0},  # an evaluation row: no time
    ]
    assert stage_seconds(rows) == {"retrieval": 9.0, "forward": 2.0}
