"""The memory-mapped counts store (``tags counts store``, ``tags generate --vocab STORE``)."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest
from _data import flickr_sample

from tags.core.io import read_captions
from tags.negatives import store as store_module
from tags.negatives.background import load_background
from tags.negatives.counts import count_groups
from tags.negatives.scenes import SceneCounts
from tags.negatives.store import (
    CountsTable,
    StoreError,
    SummedCounts,
    open_store,
    write_store,
)
from tags.negatives.vocabulary import SceneGraphVocabulary


@pytest.fixture(scope="module")
def captions(tmp_path_factory):
    return flickr_sample(tmp_path_factory.mktemp("store"), 100)


@pytest.fixture(scope="module")
def saved(parser, captions, tmp_path_factory):
    """The counts as JSON, read back (as ``--vocab`` reads them), and as a store."""
    folder = tmp_path_factory.mktemp("store")
    json_path, store_path = folder / "counts.json", folder / "counts.store"
    count_groups(read_captions(captions), parser=parser).save(json_path)
    vocab = SceneGraphVocabulary.load(json_path)
    vocab.save_store(store_path)
    return vocab, json_path, store_path


def _tables(vocab: SceneGraphVocabulary) -> dict:
    tables = {f"counts/{k}": c for k, c in vocab.counts.items()}
    tables.update({name: getattr(vocab.scenes, name) for name in SceneCounts._FIELDS})
    return tables


def test_every_table_round_trips_in_order(saved):
    vocab, _, store_path = saved
    stored = SceneGraphVocabulary.load(store_path)  # --vocab's reader sees a store
    assert (stored.min_count, stored.min_pool) == (vocab.min_count, vocab.min_pool)
    assert list(stored.counts) == list(vocab.counts)
    expected, got = _tables(vocab), _tables(stored)
    assert set(got) == set(expected)
    filled = 0
    for name, table in got.items():
        assert isinstance(table, CountsTable), name
        want = expected[name]
        assert list(table.items()) == list(want.items()), name  # same keys, counts, order
        assert list(table) == list(want) and table.values() == list(want.values()), name
        assert len(table) == len(want) and bool(table) == bool(want), name
        for key, count in want.items():
            assert table.get(key) == count and table[key] == count and key in table, name
        filled += bool(want)
    assert filled >= 20  # the sample fills most tables (objects, triples, bigrams, ...)
    # the derived lookups agree too
    assert stored.scenes.index["objects_by_number"] == vocab.scenes.index["objects_by_number"]
    assert stored.sample("object", ("dog",), _rng()) == vocab.sample("object", ("dog",), _rng())


def _rng():
    import random

    return random.Random(0)


def test_missing_keys_read_like_a_counter(saved):
    _, _, store_path = saved
    _, tables = open_store(store_path)
    objects = tables["scenes/objects"]
    for missing in [("unicorn", "unicorns", True), "unicorn", ("dog",), 3, ["dog"], None]:
        assert objects.get(missing) is None and objects.get(missing, 7) == 7
        assert objects[missing] == 0 and missing not in objects
    present = next(iter(objects))
    assert present in objects and objects[present] > 0
    last = list(objects)[-1]
    found = objects.find_many([present, ("unicorn", "unicorns", True), last, "unicorn"])
    assert found == [0, -1, len(objects) - 1, -1]
    assert tables["scenes/objects"].find_many([]) == []
    # a key whose hash is present but whose bytes differ is not found
    table = tables["scenes/bigrams"]
    key = next(iter(table))
    real = store_module.key_hash
    try:
        store_module.key_hash = lambda data: real(store_module.encode_key(key))
        assert table.get("not a bigram") is None and table.get(key) == table[key] > 0
    finally:
        store_module.key_hash = real
    assert pickle.loads(pickle.dumps(objects)).get(present) == objects[present]


def test_a_hash_collision_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "key_hash", lambda data: len(data) % 3)
    with pytest.raises(ValueError, match="share the hash"):
        write_store(tmp_path / "c.store", {"t": Counter({"ab": 1, "cd": 2})})
    assert not (tmp_path / "c.store").exists()
    write_store(tmp_path / "ok.store", {"t": Counter({"a": 1, "bb": 2, "ccc": 3})})
    assert dict(open_store(tmp_path / "ok.store")[1]["t"]) == {"a": 1, "bb": 2, "ccc": 3}


def test_summed_counts_match_counter_update():
    first = Counter({"b": 2, "a": 1, ("x", "y"): 4})
    second = Counter({"c": 5, "a": 3, "z": 0})
    summed, expected = SummedCounts(first, second), Counter()
    expected.update(first)
    expected.update(second)
    assert list(summed.items()) == list(expected.items())
    assert len(summed) == len(expected) and list(summed.values()) == list(expected.values())
    assert summed.get("a") == 4 and summed["nope"] == 0 and summed.get("nope") is None
    assert summed.get("z") == 0 and "z" in summed and "nope" not in summed


def test_the_background_merges_the_same_from_a_store(saved):
    vocab, _, store_path = saved
    background = load_background("factual")
    from_json = vocab.scenes.merged(background)
    from_store = SceneGraphVocabulary.load(store_path).scenes.merged(background)
    for name in SceneCounts._FIELDS:
        assert isinstance(getattr(from_store, name), SummedCounts)
        assert list(getattr(from_store, name).items()) == list(getattr(from_json, name).items())


def test_generation_from_the_store_is_byte_identical(saved, captions, tmp_path, cli):
    _, json_path, _ = saved
    store_path = tmp_path / "counts.store"
    done = cli("counts", "store", json_path, "--out", store_path)
    assert done.returncode == 0, done.stderr
    assert SceneGraphVocabulary.load(store_path).to_dict() == saved[0].to_dict()
    done = cli("counts", "store", json_path, "--out", store_path)
    assert done.returncode == 2 and "--overwrite" in done.stderr
    outputs = []
    for vocab in (json_path, store_path):
        out = tmp_path / f"{vocab.suffix[1:]}.jsonl"
        done = cli("generate", "--captions", captions, "--vocab", vocab, "--out", out,
                   "--num-workers", "2", "--seed", "0", "--no-progress")  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") > 20


def test_a_bad_store_is_one_line_naming_it(saved, captions, tmp_path, cli):
    _, _, store_path = saved
    data = store_path.read_bytes()
    cut = tmp_path / "cut.store"
    cut.write_bytes(data[: len(data) // 2])
    header = tmp_path / "header.store"
    header.write_bytes(data[:8] + (10**6).to_bytes(8, "little") + data[16:])
    tiny = tmp_path / "tiny.store"
    tiny.write_bytes(data[:12])
    for bad, says in [(cut, "cut short"), (header, "header"), (tiny, "header")]:
        with pytest.raises(StoreError, match=says) as err:
            SceneGraphVocabulary.load(bad)
        assert str(bad) in str(err.value) and "\n" not in str(err.value)
    out = tmp_path / "o.jsonl"
    done = cli("generate", "--captions", captions, "--vocab", cut, "--out", out,
               "--num-workers", "1", "--no-progress")  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(cut) in lines[0] and "cut short" in lines[0]
    assert not out.exists()


# ------------------------------------------------ WordNet's answers kept in the store
def _planner(vocab: SceneGraphVocabulary):
    from tags.negatives.config import GenerationConfig
    from tags.negatives.factory import edit_planner

    return edit_planner(GenerationConfig(), vocab)


def test_the_stored_wordnet_answers_are_wordnets(saved):
    from tags.negatives.scenes import fact_words
    from tags.negatives.wordnet import STORED_QUERIES, StoredWordNet, WordNet, wordnet

    service = wordnet()
    if not isinstance(service, WordNet):
        pytest.skip("WordNet data not installed")
    vocab, _, store_path = saved
    stored = SceneGraphVocabulary.load(store_path)
    evidence = _planner(stored).evidence
    assert isinstance(evidence.wordnet, StoredWordNet)  # the planner reads the store's
    assert isinstance(_planner(vocab).evidence.wordnet, WordNet)  # JSON: WordNet itself
    words = fact_words(vocab.scenes)
    assert len(words) > 50 and set(stored.scenes.facts.packed) == set(words)
    answers = {q: [getattr(evidence.wordnet, q)(w) for w in words] for q in STORED_QUERIES}
    for query in STORED_QUERIES:
        assert answers[query] == [getattr(service, query)(w) for w in words], query
    assert any(answers["category"]) and any(d is not None for d in answers["depth"])
    assert any(answers["is_activity"]) or not any(w.endswith("ing") for w in words)
    # a word the store does not hold, and the other queries: WordNet's own
    assert evidence.wordnet.category("zebra") == service.category("zebra")
    assert evidence.wordnet.related("dog", "cat") == service.related("dog", "cat")


def test_stored_answers_of_another_wordnet_are_not_trusted(saved):
    from dataclasses import replace

    from tags.negatives.wordnet import WordNet, wordnet

    if not isinstance(wordnet(), WordNet):
        pytest.skip("WordNet data not installed")
    stored = SceneGraphVocabulary.load(saved[2])
    stored.scenes.facts = replace(stored.scenes.facts, fingerprint="another")
    assert _planner(stored).evidence.wordnet is wordnet()


def test_the_planners_tables_are_the_same_from_the_store(saved):
    vocab, _, store_path = saved
    planners = [_planner(vocab), _planner(SceneGraphVocabulary.load(store_path))]
    for planner in planners:
        planner.prepare()
    json_ev, store_ev = (p.evidence for p in planners)
    # the same entries in the same order (iteration order decides ties downstream)
    assert list(json_ev._by_category) == list(store_ev._by_category)
    for key, table in json_ev._by_category.items():
        assert list(table.items()) == list(store_ev._by_category[key].items()), key
    for table in ("colour_table", "value_nouns", "category_triples", "people_places"):
        want, got = getattr(json_ev, table)(), getattr(store_ev, table)()
        assert list(want.items()) == list(got.items()), table
    assert json_ev.partners() == store_ev.partners()
    assert json_ev.object_category_predicates("man") == store_ev.object_category_predicates("man")


def test_the_sampling_pools_are_built_per_form_and_the_same(saved):
    vocab, _, store_path = saved
    stored = SceneGraphVocabulary.load(store_path)
    fresh = SceneGraphVocabulary.load(saved[1])
    assert fresh._pool("object:plural") is not None
    assert set(fresh._pools) == {"object:plural"}  # only the pool drawn from
    for key in vocab.counts:
        a, b = vocab._pool(key), stored._pool(key)
        assert (a is None) == (b is None), key
        if a is not None:
            assert (a.items, a.cumulative) == (b.items, b.cumulative), key
    assert vocab._pool("no such form") is None


# ------------------------------------------------ the planner's index kept in the store
def _plain(table):
    """A (nested) count mapping as lists of pairs, in order."""
    return [
        (key, _plain(value) if hasattr(value, "items") else value) for key, value in table.items()
    ]


@pytest.mark.parametrize("background", ["factual", None])
def test_the_index_is_read_from_the_store_as_built(saved, background):
    from tags.negatives.scenes import INDEX_FLAT, INDEX_GROUPS
    from tags.negatives.store import CountsTable, GroupedTable, SummedGroups

    vocab, _, store_path = saved
    stored = SceneGraphVocabulary.load(store_path)
    assert set(stored.scenes.stored_index) == {*INDEX_GROUPS, *INDEX_FLAT}
    extra = load_background(background) if background else None
    built = vocab.scenes.merged(extra) if extra else vocab.scenes
    mapped = stored.scenes.merged(extra) if extra else stored.scenes
    want, got = built.index, mapped.index
    kind = SummedGroups if extra else GroupedTable
    for name in INDEX_GROUPS:
        assert isinstance(got[name], kind), name  # read from the mapped file, not built
        assert _plain(got[name]) == _plain(want[name]), name  # same groups, counts, order
        assert len(got[name]) == len(want[name]), name
        for group, inner in list(want[name].items())[:50]:
            view = got[name].get(group)
            assert len(view) == len(inner) and list(view) == list(inner), (name, group)
            for key, count in list(inner.items())[:20]:
                assert view.get(key) == view[key] == count and key in view
            assert view.get(("no", "such")) is None and view["nope"] == 0
        assert got[name].get("no such group") is None
        assert len(got[name]["no such group"]) == 0  # [] of a missing group: empty
    for name in INDEX_FLAT:
        assert list(got[name].items()) == list(want[name].items()), name
    assert got["total"] == want["total"]
    if not extra:
        assert isinstance(got["followers"], CountsTable)
    # Counter's arithmetic gives the same Counter, in the same order
    subject = next(iter(want["predicates_of_subject"]))
    a, b = want["predicates_of_subject"][subject], got["predicates_of_subject"][subject]
    other = Counter({"zz": 1, next(iter(a)): 2})
    for result, expected in [
        (b + other, a + other),
        (other + b, other + a),
        (b - other, a - other),
    ]:
        assert isinstance(result, Counter) and list(result.items()) == list(expected.items())
    assert b.most_common(3) == a.most_common(3)


def test_a_store_without_the_index_builds_it(saved, tmp_path):
    vocab, _, _ = saved
    path = tmp_path / "old.store"
    tables = {f"counts/{k}": c for k, c in vocab.counts.items()}
    tables.update({f"scenes/{n}": getattr(vocab.scenes, n) for n in SceneCounts._FIELDS})
    meta = {"kind": "tags vocabulary", "min_count": vocab.min_count, "min_pool": vocab.min_pool}
    write_store(path, tables, meta)  # as written before the index and WordNet's answers
    old = SceneGraphVocabulary.load(path)
    assert old.scenes.stored_index is None and old.scenes.facts is None
    assert _plain(old.scenes.index["attributes_of_object"]) == _plain(
        vocab.scenes.index["attributes_of_object"]
    )
