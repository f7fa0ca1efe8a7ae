"""SugarCrepe's adversarial refinement (tags.evaluation.refine, tags export --refine)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tags.cli import main
from tags.evaluation.refine import GRID, ZERO_GRID, accuracy, adversarial_keep, refine_pairs

COLORS = ["red", "blue", "green", "black", "white", "yellow", "brown", "pink"]
NOUNS = ["dog", "cat", "man", "woman", "car", "horse", "bird", "child"]
PLACES = ["beach", "street", "park", "field", "road", "grass", "snow", "room"]


def _cells(a: np.ndarray, b: np.ndarray) -> list[tuple]:
    """Each pair's matching group (the rule, spelled out pair by pair) and side."""
    out = []
    for x, y in zip(a, b):
        if x == 0 and y == 0:
            out.append(("neither", None))
        elif x == 0:
            out.append((("A0", min(int(abs(y) * ZERO_GRID), ZERO_GRID - 1)), y > 0))
        elif y == 0:
            out.append((("B0", min(int(abs(x) * ZERO_GRID), ZERO_GRID - 1)), x > 0))
        else:
            i, j = (min(int(abs(v) * GRID), GRID - 1) for v in (x, y))
            out.append(((np.sign(x) == np.sign(y), i, j), x > 0))
    return out


def _synthetic(n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    a = np.clip(rng.normal(0.25, 0.3, n), -1, 1)  # both scorers prefer the positive
    b = np.clip(0.5 * a + rng.normal(0.1, 0.2, n), -1, 1)
    a[:60], b[40:100], a[-3:] = 0.0, 0.0, 1.0  # A at 0, B at 0, both at 0, a gap of 1
    return a, b


def test_every_bin_is_balanced_and_as_full_as_the_rule_allows():
    a, b = _synthetic()
    kept = adversarial_keep(a, b, seed=3)
    assert list(kept) == sorted(set(kept.tolist()))
    cells = _cells(a, b)
    sides: dict[object, list[int]] = {}
    for i in kept:
        group, side = cells[i]
        if group != "neither":
            sides.setdefault(group, [0, 0])[int(side)] += 1
    assert sides and all(pos == neg for neg, pos in sides.values())
    everywhere: dict[object, list[int]] = {}
    for group, side in cells:
        if group != "neither":
            everywhere.setdefault(group, [0, 0])[int(side)] += 1
    neither = sum(1 for g, _ in cells if g == "neither")
    assert neither == 20 and set(range(40, 60)) <= set(kept.tolist())
    assert len(kept) == neither + sum(2 * min(c) for c in everywhere.values())
    both = (a[kept] != 0) & (b[kept] != 0)
    assert (a[kept][both] > 0).sum() == (a[kept][both] < 0).sum()
    assert (b[kept][both] > 0).sum() == (b[kept][both] < 0).sum()
    assert accuracy(a) > 0.75 and abs(accuracy(a[kept]) - 0.5) < 0.02


def test_the_same_seed_keeps_the_same_pairs_and_another_seed_others():
    a, b = _synthetic()
    first = adversarial_keep(a, b, seed=1)
    assert np.array_equal(first, adversarial_keep(list(a), list(b), seed=1))
    other = adversarial_keep(a, b, seed=2)
    assert len(other) == len(first) and not np.array_equal(first, other)
    coarse = adversarial_keep(a, b, seed=1, grid=5)
    assert len(coarse) > len(first)  # fewer, fuller bins match more pairs


@pytest.mark.parametrize(
    "a, b, message",
    [([0.1, np.nan], [0.1, 0.2], "gap_a"), ([0.1], [1.5], "gap_b"), ([0.1], [0.1, 0.2], "1 gaps")],
)
def test_bad_gaps_are_refused(a, b, message):
    with pytest.raises(ValueError, match=message):
        adversarial_keep(a, b)


def _planted(n: int = 480, seed: int = 0) -> tuple[list[tuple[str, str]], list[int]]:
    """Captions whose negative swaps the colour for another (no text prior) and, in half of
    the pairs, also ends in the word "zzz" (a shortcut any text-only scorer finds)."""
    rng = random.Random(seed)
    pairs, keys = [], []
    for i in range(n):
        color, noun, place = rng.choice(COLORS), rng.choice(NOUNS), rng.choice(PLACES)
        other = rng.choice([c for c in COLORS if c != color])
        positive = f"a {color} {noun} on the {place}"
        negative = f"a {other} {noun} on the {place}" + (" zzz" if i % 2 else "")
        pairs.append((positive, negative))
        keys.append(i // 2)  # two pairs per image
    return pairs, keys


def test_a_planted_word_shortcut_is_refined_away():
    pairs, keys = _planted()
    keep, report = refine_pairs(pairs, keys, seed=0)
    shortcut = np.array(["zzz" in neg for _, neg in pairs])
    assert report["pairs"] == 480 and report["kept"] == len(keep)
    assert report["kept"] + report["dropped"] == 480
    assert shortcut[keep].mean() < 0.2 < 0.5 == shortcut.mean()  # the "zzz" pairs go
    held = report["held_out"]["classifier"]
    assert held["before"] > 0.7  # half the pairs are won by the word alone
    assert abs(held["after"] - 0.5) < 0.08 and abs(held["after_refit"] - 0.5) < 0.08
    for scorer in ("classifier", "trigram"):
        assert report["refinement"][scorer]["before"] > 0.65
        assert report["refinement"][scorer]["after"] == pytest.approx(0.5, abs=0.03)
    assert report["held_out"]["unigram"]["before"] > 0.7
    assert report["held_out"]["unigram"]["after"] < 0.6
    again, _ = refine_pairs(pairs, keys, seed=0)
    assert np.array_equal(keep, again)
    with pytest.raises(ValueError, match="differ from the judge"):
        refine_pairs(pairs, keys, judge="trigram", check_lm="trigram")
    with pytest.raises(ValueError, match="two images"):
        refine_pairs(pairs[:2], [0, 0])


def _record(image: int, caption: int, positive: str, original: str, replacement: str, kind: str):
    start = positive.index(original)
    negative = positive[:start] + replacement + positive[start + len(original) :]
    edit = {"type": kind, "original": original, "replacement": replacement, "start": start,
            "end": start + len(original), "operation": "replace"}  # fmt: skip
    return {"image_id": image, "caption_id": caption, "positive": positive,
            "negative": negative, "edits": [edit]}  # fmt: skip


def _negatives(path, every: int = 2) -> dict[str, set]:
    """A small `tags generate`-like output: replace_att (colours; one in ``every`` adds a
    "zzz" tail to the replacement) and replace_obj (nouns) pairs; the pairs of each subset."""
    rng = random.Random(1)
    records, subsets = [], {"replace_att": set(), "replace_obj": set()}
    for caption in range(240):
        color, noun, place = rng.choice(COLORS), rng.choice(NOUNS), rng.choice(PLACES)
        positive = f"a {color} {noun} on the {place}"
        tail = " zzz" if caption % every == every - 1 else ""
        other = rng.choice([c for c in COLORS if c != color]) + tail
        noun2 = rng.choice([n for n in NOUNS if n != noun])
        for record in (
            _record(caption // 2, caption, positive, color, other, "attribute"),
            _record(caption // 2, caption, positive, noun, noun2, "object"),
        ):
            records.append(record)
            name = "replace_att" if record["edits"][0]["type"] == "attribute" else "replace_obj"
            subsets[name].add((f"{record['image_id']}.jpg", positive, record["negative"]))
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return subsets


def test_export_refine_writes_only_kept_pairs_and_the_report(tmp_path, capsys):
    src = tmp_path / "neg.jsonl"
    subsets = _negatives(src)
    folder = tmp_path / "sc"
    argv = ["export", str(src), "--format", "sugarcrepe", "--by-type", "--allow-empty-subsets",
            "--image-ext", ".jpg", "--out", str(folder), "--refine"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    report = json.loads((folder / "refine_report.json").read_text())
    assert report["seed"] == 0 and report["judge"] == "trigram" and report["check_lm"] == "unigram"
    assert set(report["subsets"]) == {"replace_att", "replace_obj"}
    for name, pairs in subsets.items():
        items = json.loads((folder / f"{name}.json").read_text())
        got = [(v["filename"], v["caption"], v["negative_caption"]) for v in items.values()]
        counts = report["subsets"][name]
        assert len(got) == len(set(got)) == counts["kept"] and set(got) <= pairs
        assert counts["pairs"] == len(pairs) and counts["dropped"] == len(pairs) - len(got)
        assert f"refine {name}: {len(pairs)} pairs, kept {len(got)}" in err
    att = json.loads((folder / "replace_att.json").read_text()).values()
    assert sum("zzz" in v["negative_caption"] for v in att) < 0.25 * len(att)  # was 1/2
    assert report["subsets"]["replace_att"]["kept_share"] < 0.8
    first = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert main([*argv, "--overwrite"]) == 0  # deterministic
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == first
    assert main([*argv, "--overwrite", "--refine-seed", "5"]) == 0
    assert json.loads((folder / "refine_report.json").read_text())["seed"] == 5
    single = tmp_path / "all.sugarcrepe.json"  # one file: the report beside it
    argv = ["export", str(src), "--format", "sugarcrepe", "--image-ext", ".jpg", "--out",
            str(single), "--refine", "--refine-grid", "3"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((tmp_path / "all.sugarcrepe.refine_report.json").read_text())
    assert report["grid"] == 3 and report["subsets"]["all"]["grid"] == 3
    assert len(json.loads(single.read_text())) == report["subsets"]["all"]["kept"] < 480


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--format", "json", "--refine"], "--refine refines SugarCrepe pairs"),
        (["--format", "sugarcrepe", "--refine-seed", "1"], "--refine-seed is a setting"),
        (["--format", "sugarcrepe", "--refine", "--check-lm", "trigram"], "--check-lm trigram"),
    ],
)
def test_bad_refine_options_are_one_line(tmp_path, capsys, extra, named):
    src = tmp_path / "neg.jsonl"
    _negatives(src)
    out = tmp_path / "out"
    assert main(["export", str(src), "--image-ext", ".jpg", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert named in err and len(err.splitlines()) == 1
    assert not out.exists()
    with pytest.raises(SystemExit):  # argparse: a grid of no bins
        main(["export", str(src), "--format", "sugarcrepe", "--refine", "--refine-grid", "0"])


def test_a_subset_the_refinement_empties_is_named(tmp_path, capsys):
    src = tmp_path / "neg.jsonl"
    _negatives(src, every=1)  # every replace_att negative ends in "zzz": nothing to match
    folder = tmp_path / "sc"
    argv = ["export", str(src), "--format", "sugarcrepe", "--by-type", "--image-ext", ".jpg",
            "--out", str(folder), "--refine"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "the refinement (--refine) kept no pair of replace_att" in err
    assert "no negative of add_obj, add_att" in err and len(err.splitlines()) == 1
    assert not folder.exists()
    assert main([*argv, "--allow-empty-subsets"]) == 0
    report = json.loads((folder / "refine_report.json").read_text())["subsets"]
    assert report["replace_att"]["kept"] == 0 and report["replace_att"]["pairs"] == 240
    assert json.loads((folder / "replace_att.json").read_text()) == {}
    assert report["replace_obj"]["kept"] > 0


def test_smollm2_missing_is_one_line(tmp_path, capsys, monkeypatch):
    import tags.negatives.plausibility as plausibility

    monkeypatch.setattr(plausibility, "smollm2_path", lambda: None)
    src = tmp_path / "neg.jsonl"
    _negatives(src)
    out = tmp_path / "sc"
    argv = ["export", str(src), "--format", "sugarcrepe", "--image-ext", ".jpg", "--out",
            str(out), "--refine", "--refine-lm", "smollm2"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "--refine-lm smollm2: not installed (pip install" in err and len(err.splitlines()) == 1
    assert not out.exists()


class _LengthLM:
    """A fake causal LM: a text's mean token NLL is its length in characters."""

    def __init__(self, sign: float = 1.0):
        self.sign = sign

    def mean_nll(self, texts):
        return [self.sign * len(t) for t in texts]


def test_causal_lms_are_looked_up_by_name():
    from tags.evaluation.refine import CAUSAL_LMS, lm_gaps, refine_pairs

    assert {"smollm2", "gemma3"} <= set(CAUSAL_LMS)
    pairs = [("a dog", "a black dog"), ("a long red car", "a car")]
    fold = np.zeros(len(pairs), int)
    short, long = _LengthLM(), _LengthLM(-1.0)
    gaps = lm_gaps(pairs, fold, "gemma3", {"smollm2": long, "gemma3": short})
    assert gaps[0] > 0 > gaps[1]  # gemma3's scores (the shorter text preferred), not smollm2's
    assert np.array_equal(lm_gaps(pairs, fold, "gemma3", short), gaps)  # one LM: itself
    with pytest.raises(ValueError, match="the gemma3 LM needs its CausalLM"):
        lm_gaps(pairs, fold, "gemma3", {"smollm2": long})
    many = [(f"a dog number {i}", f"a cat number {i} here") for i in range(40)]
    keys = list(range(40))
    _, report = refine_pairs(
        many, keys, judge="smollm2", check_lm="gemma3", causal={"smollm2": short, "gemma3": long}
    )
    assert set(report["held_out"]) == {"classifier", "gemma3"}
    assert report["held_out"]["gemma3"]["before"] == 0.0  # the longer negative preferred
