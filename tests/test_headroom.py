"""The headroom driver's mechanics (scripts/research/headroom.py): its negatives are true
minimal pairs of their scene, its held-out set is fixed by its seed, its curve has every kind."""

import json

import pytest
from research import headroom

from tags.benchmark.captions import holds
from tags.benchmark.minimal_pairs import single_edits
from tags.benchmark.truth import parse_claim


def _sampler():
    return headroom.NegativeSampler(headroom.KINDS)


@pytest.mark.parametrize("max_objects", [2, 4])
def test_oracle_negatives_are_false_single_edits_of_their_scene(max_objects):
    sampler, seen = _sampler(), set()
    for step in range(1, 5):
        seen |= _check_oracle_batch(
            headroom.make_batch(step, 0, 64, "oracle", max_objects, sampler)
        )
    assert seen == {"random", *headroom.KINDS}


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
    batch = headroom.make_batch(3, 0, 16, "plain", 4, _sampler())
    assert set(batch.kinds) == {"positive", "random"}
    captions = batch.texts[:16]
    for text, i, kind in zip(batch.texts, batch.scene_index, batch.kinds, strict=True):
        if kind == "random":
            assert text in captions and captions[i] != text
            assert not holds(parse_claim(text), batch.scenes[i])


def test_curriculum_scenes_and_fresh_scenes_each_step():
    two = headroom.make_batch(1, 0, 16, "plain", 2, _sampler())
    assert all(len(s.objects) == 2 for s in two.scenes)
    a = headroom.make_batch(1, 0, 16, "plain", 4, _sampler())
    b = headroom.make_batch(2, 0, 16, "plain", 4, _sampler())
    assert {len(s.objects) for s in a.scenes + b.scenes} == {2, 3, 4}
    assert a.texts != b.texts
    assert headroom.make_batch(1, 0, 16, "plain", 4, _sampler()).texts == a.texts


def test_eval_set_is_fixed_by_its_seed_and_its_pairs_are_true_vs_false():
    first, again, other = (headroom.eval_set(s, 12) for s in (0, 0, 1))
    assert first.pairs == again.pairs
    assert first.pairs != other.pairs
    assert set(first.counts()) == set(headroom.KINDS)
    for pair in first.pairs:
        scene = first.scenes[pair.image_id]
        assert holds(parse_claim(pair.caption), scene)
        assert not holds(parse_claim(pair.negative), scene)
    # never a training scene: the generator seeds differ
    train = headroom.make_batch(0, 0, 12, "plain", 4, _sampler())
    assert [s.objects for s in train.scenes] != [first.scenes[i].objects for i in range(12)]


def test_geometry_reads_left_of_from_the_boxes():
    torch = pytest.importorskip("torch")
    boxes = torch.tensor([[[0.1, 0.4, 0.2, 0.5], [0.6, 0.4, 0.7, 0.5]]])
    geo = headroom.geometry(boxes)
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
        assert set(headroom.KINDS) <= set(row) and 0.0 <= row["relation"] <= 1.0
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
        for kind in headroom.KINDS:
            mean = verdict[negatives][kind][0]
            assert mean == pytest.approx(sum(f[kind] for f in finals) / len(finals))
    expected = all(verdict["oracle"][k][0] >= 0.9 for k in ("attribute", "relation", "role"))
    expected = expected and all(verdict["plain"][k][0] <= 0.6 for k in ("relation", "role"))
    assert verdict["passed"] is expected
