"""scripts/benchmarks/counts_scale.py --synthetic-store-mib: the renamed copies that make a
store large (no word shared with the real counts, relation tag shapes kept, every table
``copies + 1`` times its size), the fit's standard error, and the mapped-file sampler."""

from __future__ import annotations

import mmap
import os
import runpy
import sys
from collections import Counter
from pathlib import Path

import pytest

from tags.negatives.vocabulary import SceneGraphVocabulary

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))
    try:
        return runpy.run_path(str(ROOT / "scripts" / "benchmarks" / "counts_scale.py"))
    finally:
        sys.path.remove(str(ROOT / "scripts" / "benchmarks"))


def test_copy_suffixes_are_letters_and_distinct(bench):
    suffixes = [bench["copy_suffix"](c) for c in range(1, 60)]
    assert suffixes[0] == "xqb" and len(set(suffixes)) == len(suffixes)
    assert all(s.isalpha() for s in suffixes)
    assert bench["copy_suffix"](12, digits=True) == "xq12"  # never an all-letters name


def test_renamed_keys_keep_their_shape(bench):
    renamed = bench["renamed"]
    assert renamed("baseball hat", "xqb") == "baseballxqb hatxqb"
    assert renamed(("man", ("sitting on",), "VBG IN"), "xqb")[1] == ("sittingxqb onxqb",)
    assert renamed(("man", "man", True), "xqc") == ("manxqc", "manxqc", True)
    assert renamed("", "xqb") == ""


def test_synthetic_vocabulary_copies_every_table(bench, tmp_path):
    vocab = SceneGraphVocabulary()
    vocab.counts["object"] = Counter({("man",): 3, ("red hat",): 1})
    vocab.scenes.objects.update({("man", "man", False): 3, ("hat", "red hat", False): 1})
    vocab.scenes.relations[("on", ("sitting on",), "VBG IN")] = 2
    vocab.scenes.triples[("man", "on", "bench")] = 2
    vocab.scenes.bigrams.update({"<s> a": 4, "a man": 3})
    path = tmp_path / "counts.json"
    vocab.save(path)
    copied = bench["synthetic_vocabulary"](path, 2)
    vocab = SceneGraphVocabulary.load(path)  # in the file's order
    assert len(copied.counts["object"]) == 6
    for name in ("objects", "relations", "triples", "bigrams"):
        real, table = getattr(vocab.scenes, name), getattr(copied.scenes, name)
        assert len(table) == 3 * len(real)
        assert list(table)[: len(real)] == list(real)  # the real entries first, unchanged
    assert {k[2] for k in copied.scenes.relations} == {"VBG IN"}
    assert ("manxqc", "onxqc", "benchxqc") in copied.scenes.triples
    assert copied.scenes.bigrams["<s>xqb axqb"] == 4
    store = tmp_path / "copied.store"
    copied.save_store(store, facts=False)
    assert len(SceneGraphVocabulary.load(store).scenes.triples) == 3


def test_fit_with_error(bench):
    fixed, slope, error = bench["fit_with_error"]([1.0, 2.0, 3.0, 4.0], [3.0, 5.0, 7.0, 9.0])
    assert (fixed, slope) == pytest.approx((1.0, 2.0)) and error == pytest.approx(0.0)
    _, slope, error = bench["fit_with_error"]([1.0, 2.0, 3.0, 4.0], [3.0, 5.5, 6.5, 9.0])
    assert slope == pytest.approx(1.9) and error > 0


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/PID/smaps")
def test_mapped_file_counts_the_pages_touched(bench, tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"\1" * (64 * 4096))
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        sampler = bench["MappedFile"](os.getpid(), path, every=0.01)
        assert sum(mapped[i * 4096] for i in range(64)) == 64
        pss, rss = sampler._sample(os.getpid())
        mapped.close()
    assert 60 * 4096 <= rss <= 64 * 4096 and 0 < pss <= rss
