"""Pruning corpus counts (``tags counts prune``) and the trained text-only check."""

from __future__ import annotations

import json

import pytest
from _data import flickr_sample

from tags.core.io import read_captions
from tags.evaluation.text_prior import held_out_pair_accuracy
from tags.negatives.counts import count_groups
from tags.negatives.pruning import PRUNABLE, prune_counts
from tags.negatives.scenes import SceneCounts


@pytest.fixture(scope="module")
def captions(tmp_path_factory):
    return flickr_sample(tmp_path_factory.mktemp("counts"), 100)


@pytest.fixture(scope="module")
def counts(parser, captions, tmp_path_factory):
    vocab = count_groups(read_captions(captions), parser=parser)
    saved = tmp_path_factory.mktemp("counts") / "counts.json"
    vocab.save(saved)
    return vocab, saved


def test_pruning_drops_rare_combinations_only(counts):
    vocab, _ = counts
    before = json.dumps(vocab.to_dict())
    pruned, kept = prune_counts(vocab, 2)
    assert json.dumps(vocab.to_dict()) == before  # the input is not changed
    assert set(kept) == set(PRUNABLE)
    for name in SceneCounts._FIELDS:
        old, new = getattr(vocab.scenes, name), getattr(pruned.scenes, name)
        if name in PRUNABLE:
            assert new == {k: c for k, c in old.items() if c >= 2}
            assert kept[name] == (len(old), len(new))
        else:
            assert new == old  # single things and denominators stay whole
    assert sum(a - b for a, b in kept.values()) > 0  # something was seen once
    assert pruned.counts == vocab.counts
    one, _ = prune_counts(vocab, 1)
    assert one.to_dict() == vocab.to_dict()
    only, kept = prune_counts(vocab, 5, ["codescription"])
    assert set(kept) == {"codescription"} and only.scenes.bigrams == vocab.scenes.bigrams
    with pytest.raises(ValueError, match="cannot prune objects"):
        prune_counts(vocab, 2, ["objects"])
    with pytest.raises(ValueError, match="min_count"):
        prune_counts(vocab, 0)


def test_counts_prune_command(counts, captions, tmp_path, cli):
    vocab, saved = counts
    out = tmp_path / "pruned.json"
    done = cli("counts", "prune", saved, "--min-count", "3", "--out", out)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == prune_counts(vocab, 3)[0].to_dict()
    assert out.stat().st_size < saved.stat().st_size and "codescription" in done.stderr
    # generation from the pruned counts runs and finds negatives
    negatives = tmp_path / "negatives.jsonl"
    done = cli("generate", "--captions", captions, "--vocab", out, "--out", negatives,
               "--num-workers", "1", "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert negatives.read_text().count("\n") > 20
    done = cli("counts", "prune", saved, "--min-count", "2", "--tables", "bigrams,nope",
               "--out", tmp_path / "x.json")  # fmt: skip
    assert done.returncode == 2 and "nope" in done.stderr and "Traceback" not in done.stderr
    done = cli("counts", "prune", saved, "--min-count", "0", "--out", tmp_path / "y.json")
    assert done.returncode == 2 and "--min-count" in done.stderr
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()


def test_held_out_pair_accuracy_finds_a_planted_shortcut():
    nouns = ["dog", "cat", "man", "boy", "girl", "horse", "bird", "car", "tree", "ball"] * 6
    places = ["park", "street", "field", "beach", "room", "yard"]
    # every negative says "below" where its caption says "above": a word-only shortcut
    shortcut = [(f"a {n} above the {p}", f"a {n} below the {p}") for n in nouns for p in places[:2]]
    keys = list(range(len(shortcut)))
    assert min(held_out_pair_accuracy(shortcut, keys)) > 0.95
    # each caption's pair both ways round (one key, so one side of the split): every word
    # is the false one as often as the true one, in every context
    combos = [(n, p) for n in nouns[:10] for p in places]
    balanced, pair_keys = [], []
    for n, p in combos:
        balanced += [(f"a {n} above the {p}", f"a {n} below the {p}"),
                     (f"a {n} below the {p}", f"a {n} above the {p}")]  # fmt: skip
        pair_keys += [(n, p), (n, p)]
    accuracies = held_out_pair_accuracy(balanced, pair_keys)
    assert len(accuracies) == 3 and max(accuracies) <= 0.6
    with pytest.raises(ValueError, match="keys"):
        held_out_pair_accuracy(shortcut, keys[:-1])
