"""The headroom driver's mechanics (scripts/research/headroom.py): its negatives are true
minimal pairs of their scene, its held-out set is fixed by its seed, its curve has every kind."""

import json
from dataclasses import replace

import numpy as np
import pytest
from research import headroom

from tags.benchmark.captions import holds
from tags.benchmark.minimal_pairs import single_edits
from tags.benchmark.truth import parse_claim
from tags.mining import get_miner
from tags.testbed import evaluate as held_out
from tags.testbed import inputs, matcher, mining, vocab, world
from tags.testbed import training as testbed_train
from tags.testbed.matcher import Matcher
from tags.testbed.verdict import MIN_GAP, gap_closed


def _sampler():
    return world.NegativeSampler(held_out.KINDS)


@pytest.mark.parametrize("max_objects", [2, 4])
def test_oracle_negatives_are_false_single_edits_of_their_scene(max_objects):
    sampler, seen = _sampler(), set()
    for step in range(1, 5):
        seen |= _check_oracle_batch(world.make_batch(step, 0, 64, "oracle", max_objects, sampler))
    assert seen == {"random", *held_out.KINDS}


def _check_oracle_batch(batch) -> set[str]:
    positives = {}
    seen = set()
    for text, i, target, kind in zip(
        batch.texts, batch.scene_index, batch.targets, batch.kinds, strict=True
    ):
        scene = batch.scenes[i]
        claim = parse_claim(text)
        assert claim is not None, text
        assert holds(claim, scene) == (target == 1.0), (text, kind)
        if kind == "positive":
            positives[i] = claim
            continue
        seen.add(kind)
        positive = positives[i]  # positives come first
        if kind == "role":
            assert claim.mentions == positive.mentions[::-1]
            assert claim.relation == positive.relation and claim.template == positive.template
        elif kind in ("attribute", "object", "relation"):
            one_unit = {e.text: k for k, _, _, e in single_edits(positive)}
            assert one_unit.get(text) == kind, (positive.text, text, kind)
        else:
            assert kind == "random"
    return seen


def test_plain_draws_only_other_scenes_captions():
    batch = world.make_batch(3, 0, 16, "plain", 4, _sampler())
    assert set(batch.kinds) == {"positive", "random"}
    captions = batch.texts[:16]
    for text, i, kind in zip(batch.texts, batch.scene_index, batch.kinds, strict=True):
        if kind == "random":
            assert text in captions and captions[i] != text
            assert not holds(parse_claim(text), batch.scenes[i])


def test_curriculum_scenes_and_fresh_scenes_each_step():
    two = world.make_batch(1, 0, 16, "plain", 2, _sampler())
    assert all(len(s.objects) == 2 for s in two.scenes)
    a = world.make_batch(1, 0, 16, "plain", 4, _sampler())
    b = world.make_batch(2, 0, 16, "plain", 4, _sampler())
    assert {len(s.objects) for s in a.scenes + b.scenes} == {2, 3, 4}
    assert a.texts != b.texts
    assert world.make_batch(1, 0, 16, "plain", 4, _sampler()).texts == a.texts


def test_eval_set_is_fixed_by_its_seed_and_its_pairs_are_true_vs_false():
    first, again, other = (held_out.eval_set(s, 12) for s in (0, 0, 1))
    assert first.pairs == again.pairs
    assert first.pairs != other.pairs
    assert set(first.counts()) == set(held_out.KINDS)
    for pair in first.pairs:
        scene = first.scenes[pair.image_id]
        assert holds(parse_claim(pair.caption), scene)
        assert not holds(parse_claim(pair.negative), scene)
    # never a training scene: the generator seeds differ
    train = world.make_batch(0, 0, 12, "plain", 4, _sampler())
    assert [s.objects for s in train.scenes] != [first.scenes[i].objects for i in range(12)]


def test_geometry_reads_left_of_from_the_boxes():
    torch = pytest.importorskip("torch")
    boxes = torch.tensor([[[0.1, 0.4, 0.2, 0.5], [0.6, 0.4, 0.7, 0.5]]])
    geo = matcher.geometry(boxes)
    assert geo.shape == (1, 2, 2, 10)
    assert geo[0, 0, 1, 2] == pytest.approx(4.0)  # clear gap: 0 left of 1 by 0.4
    assert geo[0, 1, 0, 3] == pytest.approx(4.0)  # 1 right of 0
    assert geo[0, 0, 1, 0] == pytest.approx(5.0)  # centre offset x


def test_run_writes_a_curve_with_every_kind(tmp_path, capsys):
    out = tmp_path / "curve.json"
    argv = ["--steps", "4", "--eval-every", "2", "--eval-scenes", "12", "--batch-size", "8"]
    assert headroom.main([*argv, "--device", "cpu", "--curriculum", "2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [row["step"] for row in result["curve"]] == [0, 2, 4]
    for row in result["curve"]:
        assert set(held_out.KINDS) <= set(row) and 0.0 <= row["relation"] <= 1.0
    assert result["steps_done"] == 4 and result["steps_per_s"] > 0
    assert "| attr" in capsys.readouterr().out


def test_sweep_runs_its_grid(tmp_path, monkeypatch, capsys):
    grid = (("oracle", "tags-bind", "gate", 0.5, 1e-3), ("plain", "tags", "softmax", 0.0, 1e-3))
    monkeypatch.setattr(headroom, "SWEEP_GRID", grid)
    argv = ["--sweep", "--steps", "2", "--eval-every", "2", "--eval-scenes", "8"]
    assert headroom.main([*argv, "--batch-size", "4", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [s["name"] for s in summary] == [
        "oracle-tags-bind-gate-c0.5-lr0.001",
        "plain-tags-c0-lr0.001",
    ]
    assert all(s["steps_done"] == 2 for s in summary)
    assert (tmp_path / "plain-tags-c0-lr0.001.json").is_file()


def test_gate_runs_oracle_and_plain_per_seed_and_judges_the_means(tmp_path, monkeypatch):
    monkeypatch.setattr(headroom, "GATE_SEEDS", (0, 1))
    argv = ["--gate", "--steps", "2", "--curriculum", "1", "--eval-every", "2"]
    assert (
        headroom.main([*argv, "--eval-scenes", "8", "--batch-size", "4", "--out", str(tmp_path)])
        == 0
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [s["name"] for s in summary] == [
        "oracle-seed0",
        "oracle-seed1",
        "plain-seed0",
        "plain-seed1",
    ]
    verdict = json.loads((tmp_path / "gate.json").read_text())
    for negatives in ("oracle", "plain"):
        finals = [s["final"] for s in summary if s["negatives"] == negatives]
        for kind in held_out.KINDS:
            mean = verdict[negatives][kind][0]
            assert mean == pytest.approx(sum(f[kind] for f in finals) / len(finals))
    expected = all(verdict["oracle"][k][0] >= 0.9 for k in ("attribute", "relation", "role"))
    expected = expected and all(verdict["plain"][k][0] <= 0.6 for k in ("relation", "role"))
    assert verdict["passed"] is expected


def _tags_records(texts):
    """tags generate records for ``texts``: one relation flip or attribute edit each (the
    benchmark's own single edits, with the edit fields tags generate writes)."""
    records = []
    for text in texts:
        claim = parse_claim(text)
        for kind, old, new, edited in single_edits(claim):
            if kind in ("attribute", "relation"):
                edit = {"type": kind, "original": old, "replacement": new, "operation": "replace"}
                records.append({"positive": text, "negative": edited.text, "edits": [edit]})
    swap = {"type": "attribute", "operation": "swap"}
    records.append({"positive": texts[0], "negative": "x", "edits": [swap, swap]})
    records.append({"positive": texts[0], "negative": "y", "edits": []})  # no kind: skipped
    return records


def test_write_captions_lists_the_positives_the_batches_train_on(tmp_path):
    out = tmp_path / "caps.jsonl"
    argv = ["--write-captions", str(out), "--steps", "3", "--batch-size", "4", "--seeds", "0", "1"]
    assert headroom.main(argv) == 0
    expected = []
    for seed in (0, 1):
        for step in (1, 2, 3):
            expected += world.make_batch(step, seed, 4, "plain", 4, _sampler()).texts[:4]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["caption"] for r in records] == list(dict.fromkeys(expected))
    assert [r["image_id"] for r in records] == list(range(len(records)))  # one image each


def test_tags_pool_draws_by_kind_and_counts_negatives_true_of_their_scene(tmp_path):
    from tags.testbed.tags_pool import TagsPool, record_kind

    assert record_kind([{"type": "relation", "operation": "flip"}]) == "relation"
    assert record_kind([{"type": "object", "operation": "swap"}] * 2) == "swap"
    assert record_kind([]) is None
    batch = world.make_batch(1, 0, 8, "plain", 4, _sampler())
    texts = batch.texts[:8]
    path = tmp_path / "tags.jsonl"
    records = _tags_records(texts)
    true_text = texts[1]  # a "negative" that is the caption itself: true of its scene
    records.append({"positive": texts[1], "negative": true_text, "edits": [{"type": "object"}]})
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    pool = TagsPool.load(path)
    assert set(pool.by_caption[texts[0]]) >= {"swap"}
    assert pool.by_caption[texts[1]]["object"] == [true_text]
    tagged = world.make_batch(1, 0, 8, "tags", 4, pool)
    rows = list(zip(tagged.texts, tagged.scene_index, tagged.kinds, strict=True))[8:]
    from_pool = [(t, i, k) for t, i, k in rows if k != "random"]
    assert from_pool
    for text, i, kind in from_pool:
        assert text in pool.by_caption[texts[i]][kind]
    assert sum(pool.drawn.values()) == len(from_pool)
    true_drawn = sum(1 for t, i, _ in from_pool if holds(parse_claim(t), tagged.scenes[i]))
    assert sum(pool.true_of_scene.values()) == true_drawn
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(records[-2]) + "\n")
    with pytest.raises(ValueError, match="no tags generate records"):
        TagsPool.load(empty)


def test_gate_with_tags_reports_the_gap_closed(tmp_path, monkeypatch):
    caps = tmp_path / "caps.jsonl"
    headroom.main(
        ["--write-captions", str(caps), "--steps", "2", "--batch-size", "4", "--seeds", "0"]
    )
    pool = tmp_path / "tags.jsonl"
    pool.write_text(
        "\n".join(
            json.dumps(r)
            for r in _tags_records(
                [json.loads(x)["caption"] for x in caps.read_text().splitlines()]
            )
        )
        + "\n"
    )
    argv = ["--gate", "--methods", "tags", "--tags-negatives", str(pool), "--seeds", "0"]
    argv += ["--steps", "2", "--eval-every", "2", "--eval-scenes", "8", "--batch-size", "4"]
    assert headroom.main([*argv, "--out", str(tmp_path / "g")]) == 0
    verdict = json.loads((tmp_path / "g" / "gate.json").read_text())
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert [s["name"] for s in summary] == ["oracle-seed0", "plain-seed0", "tags-seed0"]
    o, p, t = (verdict[n] for n in ("oracle", "plain", "tags"))
    for kind, gap in verdict["gap_closed"]["tags"].items():
        if o[kind][0] - p[kind][0] >= MIN_GAP:
            assert gap == pytest.approx((t[kind][0] - p[kind][0]) / (o[kind][0] - p[kind][0]))
        else:
            assert gap != gap  # nan: no gap (or too small a one) to close
    assert "tags_gap_closed" in verdict["by_step"][-1]


def test_tags_negatives_need_their_file(tmp_path):
    with pytest.raises(SystemExit):
        headroom.parse_args(["--negatives", "tags"])
    with pytest.raises(SystemExit):
        headroom.parse_args(["--negatives", "tags", "--tags-negatives", str(tmp_path / "no")])


def test_judge_reads_single_runs_made_side_by_side(tmp_path):
    argv = ["--steps", "2", "--eval-every", "2", "--eval-scenes", "8", "--batch-size", "4"]
    for negatives, seed in (("oracle", 0), ("plain", 0), ("oracle", 1), ("plain", 1)):
        out = str(tmp_path / f"{negatives}{seed}.json")
        assert (
            headroom.main([*argv, "--negatives", negatives, "--seed", str(seed), "--out", out]) == 0
        )
    labelled = ["--negatives", "oracle", "--label", "other", "--out", str(tmp_path / "x.json")]
    assert headroom.main([*argv, *labelled]) == 0
    verdict = headroom.judge_folder(tmp_path)
    assert set(verdict["gap_closed"]) == {"other"}
    finals = [json.loads((tmp_path / f"oracle{s}.json").read_text())["final"] for s in (0, 1)]
    assert verdict["oracle"]["relation"][0] == pytest.approx(
        (finals[0]["relation"] + finals[1]["relation"]) / 2
    )
    assert (tmp_path / "gate.json").is_file()
    (tmp_path / "plain0.json").unlink(), (tmp_path / "plain1.json").unlink()
    with pytest.raises(SystemExit, match="no curve of plain"):
        headroom.judge_folder(tmp_path)


def test_mined_negatives_are_the_candidates_the_miner_ranks_highest():
    torch = pytest.importorskip("torch")
    from tags.mining import get_miner

    class IdSum(torch.nn.Module):  # a score the test can compute: the sum of the token ids
        def forward(self, input_ids, attention_mask, **_):
            return (input_ids * attention_mask).sum(1).float()

    batch = world.make_batch(2, 0, 12, "mined", 4, _sampler())
    assert batch.kinds == ["positive"] * 12 and len(batch.candidates) == 12
    for i, texts in enumerate(batch.candidates):
        assert 0 < len(texts) <= world.MINING_CANDIDATES
        assert all(t in batch.texts and t != batch.texts[i] for t in texts)
        assert not any(holds(parse_claim(t), batch.scenes[i]) for t in texts)
    mined = mining.mine(IdSum(), batch, get_miner("hardest"), torch.device("cpu"), False)
    assert mined.texts[:12] == batch.texts and mined.kinds[12:] == ["mined"] * 12
    for text, i in zip(mined.texts[12:], mined.scene_index[12:], strict=True):
        best = max(batch.candidates[i], key=lambda t: sum(vocab.tokenize(t)))
        assert sum(vocab.tokenize(text)) == sum(vocab.tokenize(best))
    assert mined.targets[12:] == [0.0] * 12


def test_drawn_shortcut_finds_a_word_that_marks_the_negatives():
    from tags.testbed.tags_pool import TagsPool, drawn_shortcut
    from tags.testbed.world import training_captions

    texts = training_captions([0], 20, 16, 0, world.TRAIN_SEED_BASE)
    marked = TagsPool({t: {"attribute": [t + " now"]} for t in texts})
    assert drawn_shortcut(marked, texts)["overall"] > 0.9
    others = training_captions([1], 20, 16, 0, world.TRAIN_SEED_BASE)
    unrelated = TagsPool({t: {"object": [others[k]]} for k, t in enumerate(texts)})
    found = drawn_shortcut(unrelated, texts)  # negatives drawn as the captions are
    assert found["pairs"] == len(texts) and 0.35 < found["overall"] < 0.65


def test_gap_closed_is_the_share_of_the_oracle_gap_and_nan_on_a_small_gap():
    kinds = dict.fromkeys(held_out.KINDS, 0.5)
    oracle = {**kinds, "relation": (0.9, 0.01), "role": 0.55}
    plain = {**kinds, "relation": (0.5, 0.02)}
    gaps = gap_closed({**kinds, "relation": (0.8, 0.0), "role": 0.55}, oracle, plain)
    assert gaps["relation"] == pytest.approx(0.75)
    assert gaps["role"] != gaps["role"] and gaps["attribute"] != gaps["attribute"]


def test_mined_triplet_loss_is_the_miners_hinge_over_each_scenes_candidates():
    import torch

    torch.manual_seed(0)
    model = Matcher("tags-bind", 32, 1, "tied", "gate")
    batch = world.make_batch(1, 0, 6, "mined", 4, _sampler())
    batch.candidates[2] = batch.candidates[2][:3]  # ragged rows are masked, not scored as 0
    cpu = torch.device("cpu")
    positive = model(**inputs.to_device(batch, range(6), cpu))
    loss = mining.mined_triplet_loss(model, batch, positive, get_miner("hardest"), cpu, False)
    expected = []
    for i, texts in enumerate(batch.candidates):
        scored = replace(batch, texts=texts, scene_index=[i] * len(texts))
        cand = torch.sigmoid(model(**inputs.to_device(scored, None, cpu)))
        expected.append((0.2 + cand.max() - torch.sigmoid(positive[i])).clamp(min=0))
    assert torch.allclose(loss, torch.stack(expected).mean(), atol=1e-6)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.parametrize("miner", ["selhn", "fne"])
def test_selhn_and_fne_need_their_triplet_loss_and_train_with_it(miner):
    with pytest.raises(SystemExit):
        headroom.parse_args(["--negatives", "mined", "--miner", miner])
    args = headroom.parse_args(
        ["--negatives", "mined", "--miner", miner, "--mined-loss", "triplet", "--steps", "2",
         "--eval-every", "2", "--eval-scenes", "6", "--batch-size", "6", "--hidden", "32",
         "--layers", "1", "--device", "cpu"]
    )  # fmt: skip
    result = headroom.train(args)
    assert result["steps_done"] == 2 and np.isfinite(result["final"]["loss"])
    branches = result["miner_branches"]  # per anchor and step, the rule the miner applied
    assert 0 < sum(branches.values()) <= 2 * 6
    if miner == "fne":
        assert set(branches) == {"0"}  # too few right anchors yet: the hardest (warm-up)


class _Oracle:
    """Scores 1 where the caption is one of the scene's own (``shift``: of the next scene)."""

    def __init__(self, data, shift=0):
        ids = sorted(data.scenes)
        self.owner = {
            tuple(vocab.tokenize(t)): k for k, i in enumerate(ids) for t in data.captions[i]
        }
        _, boxes, _ = world.stack_scenes([data.scenes[i] for i in ids])
        self.scene = {tuple(np.round(b.reshape(-1), 5)): k for k, b in enumerate(boxes)}
        self.shift, self.n = shift, len(ids)

    def eval(self):
        pass

    def train(self, mode=True):
        pass

    training = False

    def __call__(self, input_ids, attention_mask, labels, boxes, region_mask):
        import torch

        out = []
        for ids, mask, b in zip(input_ids.tolist(), attention_mask.tolist(), boxes.numpy()):
            text = self.owner[tuple(i for i, m in zip(ids, mask) if m)]
            scene = self.scene[tuple(np.round(b.reshape(-1), 5))]
            out.append(float(text == (scene + self.shift) % self.n))
        return torch.tensor(out)


def test_retrieval_ranks_each_scene_against_every_caption():
    import torch

    data = held_out.eval_set(0, 12)
    assert all(len(c) == 5 for c in data.captions.values())
    cpu = torch.device("cpu")
    perfect = held_out.retrieval(_Oracle(data), data, cpu, False, chunk=97)
    assert perfect["i2t_r1"] == perfect["t2i_r1"] == 100.0 and perfect["rsum"] == 600.0
    shifted = held_out.retrieval(_Oracle(data, shift=1), data, cpu, False, chunk=97)
    assert shifted["i2t_r1"] == shifted["t2i_r1"] == 0.0


def test_fne_statistics_come_from_the_right_anchors_of_the_in_batch_square():
    import torch

    batch = world.make_batch(1, 0, 20, "mined", 4, _sampler())
    n = mining.FNE_SQUARE
    owner = {tuple(vocab.tokenize(t)): i for i, t in enumerate(batch.texts[:n])}
    where = {tuple(np.round(b.reshape(-1), 5)): i for i, b in enumerate(batch.boxes[:n])}
    wrong = 3  # scene 3 prefers scene 4's caption: not a right anchor

    class Model:
        training = False

        def eval(self):
            pass

        def train(self, mode=True):
            pass

        def __call__(self, input_ids, attention_mask, labels, boxes, region_mask):
            out = []
            for ids, mask, b in zip(input_ids.tolist(), attention_mask.tolist(), boxes.numpy()):
                text = owner[tuple(i for i, m in zip(ids, mask) if m)]
                scene = where[tuple(np.round(b.reshape(-1), 5))]
                own = text == scene and scene != wrong
                out.append(2.0 if own else 3.0 if (scene, text) == (wrong, wrong + 1) else -2.0)
            return torch.tensor(out)

    miner = get_miner("fne")
    mining.fne_observe(Model(), batch, miner, 1, torch.device("cpu"), False)
    assert miner.stats.pos_count == n - 2  # 3 loses its row, 4 its column
    mean, _ = miner.stats.pos_moments
    assert mean == pytest.approx(float(torch.sigmoid(torch.tensor(2.0))))


def test_pixel_crops_are_each_objects_box_and_zero_padding():
    from tags.testbed.pixels import PixelCrops

    batch = world.make_batch(1, 0, 6, "plain", 4, _sampler(), featurize=PixelCrops(24))
    assert batch.labels.dtype == np.uint8 and batch.labels.shape == (6, 4, 24, 24, 3)
    for i, scene in enumerate(batch.scenes):
        n = len(scene.objects)
        assert batch.region_mask[i].sum() == n
        assert (batch.labels[i, n:] == 0).all()
        assert all(batch.labels[i, k].std() > 0 for k in range(n))  # a shape on its background


def test_pixel_perception_trains_through_a_frozen_cnn():
    import torch

    from tags.testbed.pixels import FrozenCNN

    args = headroom.parse_args(
        ["--perception", "pixels", "--featurizer", "random-conv", "--crop-size", "24",
         "--negatives", "oracle", "--steps", "2", "--eval-every", "2", "--eval-scenes", "6",
         "--batch-size", "6", "--hidden", "32", "--layers", "1", "--device", "cpu"]
    )  # fmt: skip
    keep: dict = {}
    result = headroom.train(args, keep)
    assert result["steps_done"] == 2 and set(held_out.KINDS) <= set(result["final"])
    model, fresh = keep["model"], FrozenCNN("random-conv")
    assert model.cnn.dim == 256 and not model.cnn.training
    for (name, p), q in zip(model.cnn.named_parameters(), fresh.parameters(), strict=True):
        assert torch.equal(p, q), name  # frozen
    start = testbed_train.initial_model(args)
    moved = [
        name
        for (name, p), q in zip(model.named_parameters(), start.parameters(), strict=True)
        if not torch.equal(p, q)
    ]
    assert moved and all(not n.startswith("cnn.") for n in moved)
    assert "tags.img_embeddings.img_linear.weight" in moved  # pixels -> words is learned


def test_pixel_ladder_script_runs_its_methods_and_judges_them(tmp_path):
    """The GPU script's path, tiny, on CPU: it must work the first time a device is lent."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(headroom.__file__).with_name("pixel_ladder.sh")
    env = {
        **os.environ, "STEPS": "2", "EVAL_EVERY": "2", "EVAL_SCENES": "6", "DEVICE": "cpu",
        "WORKERS": "0", "SEEDS": "0", "METHODS": "plain oracle", "PYTHON": sys.executable,
        "EXTRA": "--featurizer random-conv --batch-size 6 --hidden 32 --layers 1",
        "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    done = subprocess.run(
        ["bash", str(script), str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gate not passed" in done.stdout  # 2 steps: no method learns binding
    verdict = json.loads((tmp_path / "gate.json").read_text())
    assert set(verdict["rsum"]) == {"oracle", "plain"}
    for name in ("plain-seed0.json", "oracle-seed0.json"):
        run = json.loads((tmp_path / name).read_text())
        assert run["config"]["perception"] == "pixels" and "retrieval" in run["final"]
