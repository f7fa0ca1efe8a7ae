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
