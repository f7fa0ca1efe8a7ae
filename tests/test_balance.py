"""Dataset-level balance of negatives (``tags generate --balance``, ``tags balance``)."""

from __future__ import annotations

import json
from collections import Counter

from _data import FLICKR_CAPTIONS

from tags.evaluation.text_prior import held_out_pair_accuracy
from tags.negatives.balance import RATIO, SLACK, balance_records, edit_sides, renumbered


def record(cid: int, caption: str, old: str, new: str, kind: str = "relation", op: str = "replace"):
    start = caption.index(old)
    return {
        "image_id": cid,
        "caption_id": cid,
        "positive": caption,
        "negative": caption[:start] + new + caption[start + len(old) :],
        "edits": [{"type": kind, "original": old, "replacement": new, "start": start,
                   "end": start + len(old), "operation": op}],
        "negative_index": 0,
        "num_negatives": 1,
    }  # fmt: skip


def shortcut_set() -> list[dict]:
    """'on top of' -> 'below' 60 times, the other way 6 times; a swap; a second negative."""
    things = ["cat", "dog", "cup", "box", "bag", "hat"]
    rows = []
    for i in range(60):
        a, b = things[i % 6], things[(i // 6) % 6]
        rows.append(record(i, f"a {a} on top of a {b}", "on top of", "below"))
    for i in range(60, 66):
        rows.append(record(i, f"a {things[i % 6]} below a table", "below", "on top of"))
    rows.append(record(70, "a red cat and a blue dog", "red", "blue", "attribute", "swap"))
    return rows


def counts(rows: list[dict]) -> tuple[Counter, Counter]:
    true, false = Counter(), Counter()
    for r in rows:
        for t, f in edit_sides(r):
            true[t] += 1
            false[f] += 1
    return true, false


def test_balance_bounds_every_word_and_context_and_removes_the_shortcut():
    rows = shortcut_set()
    keep = balance_records(rows)
    kept = [r for r, k in zip(rows, keep) if k]
    true, false = counts(kept)
    for key in set(true) | set(false):
        assert false[key] <= RATIO * true[key] + SLACK and true[key] <= RATIO * false[key] + SLACK
    assert 6 <= len(kept) < 30  # "below" kept about as often false as true
    assert keep[-1]  # the swap is neutral: kept
    before = held_out_pair_accuracy([(r["positive"], r["negative"]) for r in rows],
                                    [r["caption_id"] for r in rows])  # fmt: skip
    assert min(before) > 0.9  # the planted shortcut
    assert balance_records(kept) == [True] * len(kept)  # balanced again unchanged
    assert balance_records(rows) == keep  # deterministic


def test_captions_that_keep_another_negative_lose_first():
    rows = shortcut_set()[:66]
    extra = record(3, rows[3]["positive"], "cat", "dog", "object")  # caption 3 has two
    keep = balance_records([*rows, extra])
    assert not keep[3]  # its "below" negative went before the single ones of other captions
    assert keep[-1]


def test_renumbered_counts_per_caption():
    rows = [{"caption_id": 1}, {"caption_id": 1}, {"caption_id": 2}]
    out = renumbered(rows)
    assert [(r["negative_index"], r["num_negatives"]) for r in out] == [(0, 2), (1, 2), (0, 1)]


def test_generate_balance_equals_tags_balance_and_resumes_without_generating(cli, tmp_path):
    captions = tmp_path / "caps.txt"
    captions.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:200]) + "\n")
    fast = ["--k", "5", "--l", "5", "--num-workers", "1", "--no-progress"]
    plain, balanced = tmp_path / "plain.jsonl", tmp_path / "balanced.jsonl"
    assert cli("generate", "--captions", captions, "--out", plain, *fast).returncode == 0
    done = cli("generate", "--captions", captions, "--out", balanced, "--balance", *fast)
    assert done.returncode == 0, done.stderr
    assert "balance: kept" in done.stderr
    again = tmp_path / "again.jsonl"
    done = cli("balance", plain, "--out", again)
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == balanced.read_bytes()
    kept = [json.loads(line) for line in balanced.read_text().splitlines()]
    assert 0 < len(kept) < len(plain.read_text().splitlines())  # something was dropped
    meta = json.loads(balanced.with_name(balanced.name + ".meta.json").read_text())
    assert meta["balanced"] == "done"
    # a resume of the finished, balanced run generates nothing and changes nothing
    before = balanced.read_bytes()
    done = cli("generate", "--captions", captions, "--out", balanced, "--balance", "--resume",
               *fast)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert balanced.read_bytes() == before and "processed" not in done.stderr
    # refused in one line
    done = cli("generate", "--captions", captions, "--out", tmp_path / "s.jsonl", "--balance",
               "--shard", "0/2", *fast)  # fmt: skip
    assert done.returncode == 2 and "tags balance" in done.stderr
    (tmp_path / "cut.jsonl").write_bytes(plain.read_bytes()[:-40])
    done = cli("balance", tmp_path / "cut.jsonl", "--out", tmp_path / "x.jsonl")
    assert done.returncode == 2 and "unfinished" in done.stderr
    assert not (tmp_path / "x.jsonl").exists()
