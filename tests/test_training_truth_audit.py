"""Scene truth of retrieved negatives (shapes benchmark): judging, rates, summaries, a run."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from _training_utils import tiny_config

from tags.benchmark.build import BenchmarkConfig, build_benchmark
from tags.benchmark.captions import sample_claims
from tags.benchmark.retrieval_audit import RetrievalTruthAudit, summarize_truth
from tags.benchmark.scenes import generate_scene
from tags.benchmark.truth import caption_truth
from tags.training import training_function
from tags.training.metrics import phase_means
from tags.training.retrieval import RetrievalPools


@pytest.fixture(scope="module")
def world():
    """Four images (ids 10..13) with three captions each, as a dataset-like object."""
    scenes = {10 + i: generate_scene(10 + i, seed=1) for i in range(4)}
    texts, groups, image_of = [], [], []
    for dense, (image_id, scene) in enumerate(scenes.items()):
        claims = sample_claims(scene, np.random.default_rng(image_id), count=3)
        texts += [c.text for c in claims]
        image_of += [dense] * 3
        groups.append(SimpleNamespace(image_id=image_id))
    dataset = SimpleNamespace(groups=groups, text=lambda i: texts[i])
    return dataset, scenes, texts, image_of


def _pools(captions, images, c_scores=None, i_scores=None):
    caps, imgs = torch.tensor(captions), torch.tensor(images)
    return RetrievalPools(
        caps,
        torch.rand(caps.shape) if c_scores is None else torch.tensor(c_scores),
        torch.ones_like(caps, dtype=torch.bool),
        imgs,
        torch.rand(imgs.shape) if i_scores is None else torch.tensor(i_scores),
        torch.ones_like(imgs, dtype=torch.bool),
    )


def test_each_direction_is_judged_against_the_right_scene(world):
    dataset, scenes, texts, image_of = world
    audit = RetrievalTruthAudit(dataset, scenes)
    # anchors: caption 0 (image 0) and caption 4 (image 1); pools of other images only
    pools = _pools([[3, 6, 9, 10], [0, 7, 8, 11]], [[1, 2, 3], [0, 2, 3]])
    i2t, t2i = audit.pool_truth([0, 4], [0, 1], pools)
    scene = [scenes[10 + d] for d in range(4)]
    for a, (caption, image) in enumerate([(0, 0), (4, 1)]):
        for j, c in enumerate(pools.captions[a].tolist()):  # pool caption vs anchor image
            assert i2t[a, j] == (caption_truth(texts[c], scene[image]) == "true")
        for j, i in enumerate(pools.images[a].tolist()):  # anchor caption vs pool image
            assert t2i[a, j] == (caption_truth(texts[caption], scene[i]) == "true")
    # an image's own captions are true of it (the judge agrees with the benchmark)
    assert all(audit.is_true(c, image_of[c]) for c in range(len(texts)))


def test_missing_scenes_are_refused(world):
    dataset, scenes, _, _ = world
    with pytest.raises(ValueError, match="no scene"):
        RetrievalTruthAudit(dataset, {10: scenes[10]})


def test_rates_and_posterior_counts_by_hand(world):
    audit = RetrievalTruthAudit(world[0], world[1])
    truth = torch.tensor([[True, False, True, False], [False, False, False, True]])
    scores = torch.tensor([[0.9, 0.8, 0.1, 0.2], [0.3, 0.7, 0.6, 0.5]])
    mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    columns = torch.tensor([[0, 1], [1, 2]])  # the retrieved two per anchor
    selected = torch.tensor([[True, False], [True, True]])  # what entered the loss
    posterior = torch.tensor([[0.9, 0.6, 0.1, 0.0], [0.0, 0.2, 0.7, 0.9]])
    out = audit.direction_metrics("itm_i2t", truth, scores, mask, columns, selected, posterior)
    got = {k.split("/")[-1]: v.item() for k, v in out.items()}
    assert got["fn_pool"] == pytest.approx(2 / 7)  # (0,0), (0,2); (1,3) is padding
    assert got["fn_top1"] == pytest.approx(1 / 2)  # top-1: (0,0) true, (1,1) false
    assert got["fn_topk"] == pytest.approx(1 / 4)  # top-2: (0,0),(0,1),(1,1),(1,2)
    assert got["fn_selected"] == pytest.approx(1 / 3)  # (0,0), (1,1), (1,2)
    assert (got["n_selected"], got["n_selected_fn"]) == (3, 1)
    # posterior > 0.5 on valid candidates: (0,0) true, (0,1) false, (1,2) false
    assert (got["fne_tp"], got["fne_predicted"], got["fne_true"]) == (1, 3, 2)
    cold = audit.direction_metrics(
        "itm_i2t", truth, scores, mask, columns, selected, None, fne=True
    )
    assert cold["truth/itm_i2t/fne_predicted"] == 0 and cold["truth/itm_i2t/fne_true"] == 0
    assert "truth/itm_i2t/fne_tp" not in audit.direction_metrics(
        "itm_i2t", truth, scores, mask, columns, selected, None
    )


def test_summaries_from_metric_rows():
    rows = [
        {
            "phase": 0,
            "truth/itm_i2t/fn_pool": 0.2,
            "truth/itm_i2t/fn_top1": 0.5,
            "truth/itm_i2t/fn_topk": 0.3,
            "truth/itm_i2t/fn_selected": 0.5,
            "truth/itm_i2t/n_selected": 2.0,
            "truth/itm_i2t/n_selected_fn": 1.0,
            "truth/itm_i2t/fne_tp": 1.0,
            "truth/itm_i2t/fne_predicted": 4.0,
            "truth/itm_i2t/fne_true": 2.0,
            "itm_i2t/selhn_all_share": 0.25,
        },
        {
            "phase": 1,
            "truth/itm_i2t/fn_pool": 0.4,
            "truth/itm_i2t/fn_top1": 0.5,
            "truth/itm_i2t/fn_topk": 0.1,
            "truth/itm_i2t/fn_selected": 0.0,
            "truth/itm_i2t/n_selected": 6.0,
            "truth/itm_i2t/n_selected_fn": 0.0,
            "truth/itm_i2t/fne_tp": 1.0,
            "truth/itm_i2t/fne_predicted": 0.0,
            "truth/itm_i2t/fne_true": 2.0,
            "itm_i2t/selhn_all_share": 0.75,
        },
    ]
    summary = summarize_truth(rows)
    assert summary["i2t_fn_pool_step_mean"] == pytest.approx(0.3)
    assert summary["i2t_fn_selected"] == pytest.approx(1 / 8)  # counts, not mean of rates
    assert summary["i2t_fne_precision"] == pytest.approx(2 / 4)
    assert summary["i2t_fne_recall"] == pytest.approx(2 / 4)
    assert "t2i_fn_pool_step_mean" not in summary
    from tags.demo.report import truth_table

    table = truth_table({"hardest": rows, "plain": [{"step": 1, "loss/total": 1.0}]})
    row = next(line for line in table if line.startswith("| `hardest` |"))
    # pool 30.00 (i2t) / - (t2i), ..., selected 12.50, FNE precision 50.00
    assert "30.00/-" in row and "12.50/-" in row and "50.00/-" in row
    assert not any("plain" in line for line in table)  # runs without audit are left out
    assert truth_table({"plain": []}) == []
    shares = phase_means(rows, "selhn_all_share")
    assert shares == {"itm_i2t/selhn_all_share@0": 0.25, "itm_i2t/selhn_all_share@1": 0.75}


def test_a_tags_dc_run_logs_the_truth_of_its_negatives(tmp_path, monkeypatch):
    seen = []
    judge = RetrievalTruthAudit.pool_truth

    def spy(self, captions, images, pools):
        out = judge(self, captions, images, pools)
        seen.append((self, list(captions), list(images), pools, out))
        return out

    monkeypatch.setattr(RetrievalTruthAudit, "pool_truth", spy)
    built = build_benchmark(
        tmp_path / "bench",
        BenchmarkConfig(train=8, val=0, test=2, featurizer="random", crop_size=32),
        threads=1,
    )
    run = tmp_path / "run"
    config = tiny_config(
        "tags-dc",
        run,
        f"data.captions={built.paths.captions}",
        f"data.features={built.paths.features}",
        "data.split=train",
        f"tags_dc.truth_scenes={built.paths.scenes}",
        "tags_dc.itm_miner.name=hardest",
        "tags_dc.synthetic.source=none",
        "phases.0.steps=2",
    )
    training_function(config)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        for prefix in ("itm_i2t", "itm_t2i"):
            head = f"truth/{prefix}/"
            assert row[head + "n_selected"] == 4  # hardest: one negative per anchor
            assert row[head + "fn_selected"] == pytest.approx(
                row[head + "n_selected_fn"] / row[head + "n_selected"]
            )
            assert row[head + "fn_selected"] == pytest.approx(row[head + "fn_top1"])
            assert 0 <= row[head + "fn_pool"] <= 1
    # the recipe hands the judge dataset caption indices and their own (dense) images; the
    # logged pool rates are the judge's verdicts on exactly those pools
    assert len(seen) == 2
    for (audit, captions, images, pools, (i2t, t2i)), row in zip(seen, rows):
        image_of = audit.dataset.image_of
        assert images == image_of[captions].tolist()
        assert not (image_of[pools.captions] == torch.tensor(images)[:, None]).any()
        assert row["truth/itm_i2t/fn_pool"] == pytest.approx(i2t.float().mean().item())
        assert row["truth/itm_t2i/fn_pool"] == pytest.approx(t2i.float().mean().item())
    assert set(summarize_truth(rows)) >= {"i2t_fn_selected", "t2i_fn_selected"}
