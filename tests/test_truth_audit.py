"""Truth audit: the oracle judges texts against known scenes, and the tags-dc recipe logs the
shares of true and ungrammatical synthetic negatives only when configured."""

from __future__ import annotations

import json

import pytest
from _training_utils import tiny_config

from tags.benchmark.oracle import TruthOracle, pooled_shares
from tags.benchmark.scenes import Scene, SceneObject
from tags.benchmark.synthetic_audit import TruthAudit
from tags.core.types import Edit
from tags.demo.truth import enable_truth_audit, training_truth
from tags.training import training_function

POSITIVE = "a red circle above a blue square"
# (text, edit of POSITIVE, truth in SCENE)
NEGATIVES = [
    ("a red circle to the left of a blue square", ("relation", "above", "to the left of"), "true"),
    ("a red circle below a blue square", ("relation", "above", "below"), "false"),
    ("a red circle above an blue square", ("attribute", "a", "an"), "ungrammatical"),
]


def scene(image_id: int) -> Scene:
    """A red circle up left of a blue square."""
    objects = (
        SceneObject("circle", "red", "large", 40.0, 40.0, 20.0, (255, 0, 0)),
        SceneObject("square", "blue", "large", 150.0, 150.0, 20.0, (0, 0, 255)),
    )
    relations = ((0, "to the left of", 1), (0, "above", 1), (1, "to the right of", 0))
    relations += ((1, "below", 0),)
    return Scene(image_id, 192, 192, (0, 0, 0), objects, relations)


def write_scenes(path, ids) -> None:
    lines = [json.dumps({"image_id": i, "scene": scene(i).to_dict()}) for i in ids]
    path.write_text("\n".join(lines) + "\n")


def test_oracle_judges_texts_of_each_image(tmp_path):
    write_scenes(tmp_path / "scenes.jsonl", [3, 7])
    oracle = TruthOracle.from_path(tmp_path)  # the directory or the file
    assert oracle.judge(3, POSITIVE) == "true"
    assert [oracle.judge(7, t) for t, _, _ in NEGATIVES] == [n for _, _, n in NEGATIVES]
    shares = oracle.shares([3, 7], [[NEGATIVES[0][0]], [t for t, _, _ in NEGATIVES]])
    assert shares == {"true": 0.5, "false": 0.25, "ungrammatical": 0.25, "n": 4.0}
    with pytest.raises(KeyError, match="no scene for image 5"):
        oracle.judge(5, POSITIVE)
    with pytest.raises(FileNotFoundError):
        TruthOracle.from_path(tmp_path / "missing")
    pooled = pooled_shares([shares, {"true": 0.0, "false": 1.0, "ungrammatical": 0.0, "n": 4}])
    assert pooled == {"true": 0.25, "false": 0.625, "ungrammatical": 0.125, "n": 8.0}


def test_audit_maps_dense_indices_to_image_ids(tmp_path):
    audit = TruthAudit(TruthOracle({10: scene(10), 11: scene(11)}), [10, 11])
    out = audit([1, 0], [[NEGATIVES[0][0], NEGATIVES[1][0]], [NEGATIVES[2][0]]])
    assert {k: float(v) for k, v in out.items()} == pytest.approx(
        {
            "synthetic/true_share": 1 / 3,
            "synthetic/ungrammatical_share": 1 / 3,
            "synthetic/audited": 3.0,
        }
    )


class ConstructedNegatives:
    """Every positive becomes POSITIVE with the three NEGATIVES (one true, one false, one
    ungrammatical of the scene above)."""

    def __call__(self, model, request):
        out = []
        for i in range(len(request.texts)):
            request.texts[i] = POSITIVE
            pool = []
            for text, (kind, old, new), _ in NEGATIVES:
                start = POSITIVE.index(f" {old} ") + 1
                pool.append((text, (Edit(kind, old, new, start, start + len(old)),)))
            out.append(pool)
        return out


def test_recipe_logs_true_and_ungrammatical_shares_only_when_configured(tmp_path):
    scenes = tmp_path / "scenes.jsonl"
    write_scenes(scenes, range(8))  # the synthetic corpus: image ids 0..7
    for audit in (True, False):
        run = tmp_path / f"run{audit}"
        extra = [f"tags_dc.synthetic.truth_audit={scenes}"] if audit else []
        cfg = tiny_config("tags-dc", run, "phases.0.steps=2", *extra)
        training_function(cfg, source=ConstructedNegatives())
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        rows = [r for r in rows if "loss/total" in r]
        assert len(rows) == 2
        if not audit:
            assert not any("synthetic/true_share" in r for r in rows)
            continue
        for row in rows:
            assert row["synthetic/true_share"] == pytest.approx(1 / 3)
            assert row["synthetic/ungrammatical_share"] == pytest.approx(1 / 3)
            assert row["synthetic/audited"] == 3 * cfg.batch_size
            # the type mix of the negatives' edits: two relation edits, one attribute edit
            assert row["synthetic/type_relation"] == pytest.approx(2 / 3)
            assert row["synthetic/type_attribute"] == pytest.approx(1 / 3)
            assert row["synthetic/type_object"] == 0.0
        summary = training_truth(rows)
        assert summary == pytest.approx(
            {
                "true": 1 / 3,
                "ungrammatical": 1 / 3,
                "per_step": 12,
                "type_object": 0.0,
                "type_attribute": 1 / 3,
                "type_relation": 2 / 3,
            }
        )


def test_demo_turns_the_audit_on_for_synthetic_runs_only():
    with_syn = {"recipe": "tags-dc", "tags_dc": {"synthetic": {"source": "dynamic"}}}
    out = enable_truth_audit(with_syn, "data/scenes.jsonl")
    assert out["tags_dc"]["synthetic"]["truth_audit"] == "data/scenes.jsonl"
    assert "truth_audit" not in with_syn["tags_dc"]["synthetic"]  # not mutated
    hardest = {"recipe": "tags-dc", "tags_dc": {"synthetic": {"source": "none"}}}
    assert enable_truth_audit(hardest, "x") is hardest
    assert enable_truth_audit({"recipe": "vse"}, "x") == {"recipe": "vse"}
    assert training_truth([{"loss/total": 1.0}]) is None
