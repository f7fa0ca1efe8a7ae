"""Each method's paper preset / config, value by value against its paper.

TAGS-DC: Table 5 of Fan et al. 2022 and its Sec. 4 (399 -> 31 retrieved for base and large,
NSG 5000 then NSGDC 1500 steps, 10 % warm-up, Adam (0.9, 0.98), dropout 0.1, K = L = 20, unit
mask ratio 0.15); SelHN, FNE, AOQ, NDGL: the values DESIGN.md quotes from their papers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tags.mining import get_miner
from tags.training import ConfigError, config_from_dict, load_config
from tags.training.config import to_dict
from tags.training.presets import get_preset, list_presets

CONFIGS = Path(__file__).resolve().parents[1] / "scripts" / "configs"

#: Table 5: (NSG lr, NSGDC lr, |T-|, l_MLM, l_ISTM, l_WoD = l_WoC); l_ITM 1, alpha 0.2, tau 1.5.
TABLE5 = {
    ("flickr30k", "base"): (5e-5, 1e-5, 31, 1e-1, 1e-3, 1e-3),
    ("flickr30k", "large"): (4e-5, 1e-5, 23, 1e-1, 5e-4, 5e-4),
    ("coco", "base"): (5e-5, 1e-5, 31, 5e-2, 1e-4, 5e-4),
    ("coco", "large"): (4e-5, 1e-5, 23, 5e-2, 5e-4, 5e-4),
}


def _check_tags_dc(cfg, row) -> None:
    lr_nsg, lr_dc, synthetic, mlm, istm, dc = row
    nsg, nsgdc = cfg.phases
    assert cfg.recipe == "tags-dc"
    assert (nsg.name, nsg.steps, nsg.lr) == ("nsg", 5000, lr_nsg)
    assert (nsgdc.name, nsgdc.steps, nsgdc.lr, nsgdc.init) == ("nsgdc", 1500, lr_dc, "previous")
    assert nsg.weights == {"itm": 1.0, "mlm": mlm, "istm": istm, "wod": 0.0, "woc": 0.0}
    assert nsgdc.weights == {"itm": 1.0, "mlm": mlm, "istm": istm, "wod": dc, "woc": dc}
    dc_cfg = cfg.tags_dc
    for miner in (dc_cfg.itm_miner, dc_cfg.istm_miner):
        assert (miner.name, miner.kwargs) == ("all", {"margin": 0.2})  # alpha
    retrieval = dc_cfg.retrieval
    assert (retrieval.mode, retrieval.pool_size, retrieval.num_negatives) == ("pool", 399, 31)
    syn = dc_cfg.synthetic
    assert (syn.source, syn.masking, syn.temperature, syn.top_m) == (
        "dynamic", "unit", 1.5, synthetic
    )  # fmt: skip
    assert (syn.num_copies, syn.num_samples, syn.mask_ratio) == (20, 20, 0.15)  # K, L
    assert syn.max_edits is None  # about mask_ratio of the tokens per copy
    assert not (syn.swaps or syn.role_swaps or syn.balance_types or syn.stratify_types)
    assert dc_cfg.mlm_masking == "unit"  # Algorithm 1, line 5
    assert dc_cfg.wod_class_weights is None and dc_cfg.woc_positions == "all"
    assert cfg.optim.betas == [0.9, 0.98] and cfg.optim.warmup_ratio == 0.1
    assert cfg.model.dropout == 0.1


@pytest.mark.parametrize("key", sorted(TABLE5), ids=lambda k: "_".join(k))
def test_tags_dc_configs_are_table_5(key):
    data, size = key
    path = CONFIGS / f"tags_dc_{data}_{size}.yaml"
    cfg = load_config(path)
    _check_tags_dc(cfg, TABLE5[key])
    assert cfg.tags_dc.synthetic.planner is False  # MLM refills over the vocabulary
    assert "NOT VERIFIED" not in path.read_text().upper()
    planned = load_config(CONFIGS / f"tags_dc_{data}_{size}_planned.yaml")
    _check_tags_dc(planned, TABLE5[key])
    assert planned.tags_dc.synthetic.planner is True
    # the two differ in the planner only
    a, b = to_dict(cfg), to_dict(planned)
    a["output_dir"] = b["output_dir"]
    a["tags_dc"]["synthetic"]["planner"] = True
    assert a == b


def test_tags_dc_official_preset_differs_where_the_code_does():
    paper, official = get_preset("tags-dc-paper"), get_preset("tags-dc-official")
    assert official["tags_dc"]["wod_class_weights"] == [1.0, 0.11]
    assert official["tags_dc"]["woc_positions"] == "edited"
    assert official["tags_dc"]["synthetic"]["fn_filter"] == "official"
    official["tags_dc"] |= {"wod_class_weights": None, "woc_positions": "all"}
    official["tags_dc"]["synthetic"].pop("fn_filter")
    assert official == paper
    assert config_from_dict({"preset": "tags-dc-paper"}).tags_dc.synthetic.fn_filter == "paper"


def test_fn_filter_is_checked_and_left_out_of_old_resolved_configs():
    with pytest.raises(ConfigError, match="fn_filter"):
        config_from_dict({"tags_dc": {"synthetic": {"fn_filter": "nope"}}})
    # a config resolved before the setting existed compares equal to one at the default
    assert "fn_filter" not in to_dict(config_from_dict({}))["tags_dc"]["synthetic"]
    official = to_dict(config_from_dict({"tags_dc": {"synthetic": {"fn_filter": "official"}}}))
    assert official["tags_dc"]["synthetic"]["fn_filter"] == "official"


@pytest.fixture(scope="module")
def shapes_bench(tmp_path_factory):
    from tags.benchmark.build import BenchmarkConfig, build_benchmark

    root = tmp_path_factory.mktemp("bench")
    config = BenchmarkConfig(train=24, val=0, test=2, featurizer="random", crop_size=32)
    return build_benchmark(root / "data", config, threads=1).paths


@pytest.mark.parametrize("fn_filter", ["paper", "official"])
def test_fn_filter_reaches_the_training_engine(shapes_bench, tmp_path, monkeypatch, fn_filter):
    """The paper's filter sees the image's other captions; the official code's sees none."""
    from _training_utils import tiny_config

    import tags.negatives.pipeline as pipeline
    from tags.training import training_function

    seen: list[list[str]] = []
    real = pipeline.filter_candidates

    def spy(positive, candidates, others, removed=None, kinds=None):
        seen.append(list(others))
        return real(positive, candidates, others, removed, kinds)

    monkeypatch.setattr(pipeline, "filter_candidates", spy)
    config = tiny_config(
        "tags-dc",
        tmp_path / "run",
        f"data.captions={shapes_bench.captions}",
        f"data.features={shapes_bench.features}",
        "data.split=train",
        "batch_size=4",
        "tags_dc.synthetic.masking=unit",
        "tags_dc.synthetic.top_m=4",
        f"tags_dc.synthetic.fn_filter={fn_filter}",
        "phases.0.steps=1",
    )
    training_function(config)
    assert seen
    if fn_filter == "paper":
        assert all(others for others in seen)  # every shapes image has several captions
    else:
        assert not any(seen)


def test_selhn_paper_preset():
    cfg = config_from_dict({"preset": "selhn-paper"})
    assert cfg.recipe == "vse"
    assert (cfg.vse.miner.name, cfg.vse.miner.kwargs) == ("selhn", {"margin": 0.2, "eps": 0.01})
    miner = get_miner(cfg.vse.miner.name, **cfg.vse.miner.kwargs)
    assert (miner.margin, miner.eps) == (0.2, 0.01)


@pytest.mark.parametrize(
    ("preset", "tau", "threshold", "cut"),
    [("fne-paper", 1.0, 0.01, False), ("fne-official", 0.5, 1e-3, True)],
)
def test_fne_presets(preset, tau, threshold, cut):
    """Paper: exp(-P), threshold 0.01, no cut; official code: exp(-0.5 P), 1e-3, the cut."""
    cfg = config_from_dict({"preset": preset})
    assert (cfg.vse.queue_size, cfg.vse.momentum) == (8192, 0.995)
    assert cfg.vse.miner.name == "fne"
    miner = get_miner("fne", **cfg.vse.miner.kwargs)
    assert (miner.prior, miner.margin) == (1e-4, 0.2)
    assert (miner.tau, miner.threshold, miner.cut) == (tau, threshold, cut)


def test_aoq_paper_preset():
    cfg = config_from_dict(
        {"preset": "aoq-paper", "phases": [{"steps": 10, "lr": 2e-4}, {"steps": 5, "lr": 2e-4}]}
    )
    assert cfg.vse.aoq.h == 300
    assert (cfg.vse.miner.name, cfg.vse.miner.kwargs) == ("hardest", {"margin": 0.2})
    round1, round2 = cfg.phases
    assert (round1.name, round1.miner, round1.steps) == ("round1", None, 10)
    assert (round2.name, round2.miner, round2.init, round2.steps) == ("round2", "aoq", "initial", 5)
    miner = get_miner("aoq")  # the recipe's round-2 miner (vse.miner is round 1's)
    assert (miner.alpha, miner.beta, miner.margin, miner.offline_margin) == (0.3, 1.5, 0.2, 0.0)


def test_aoq_round_two_that_would_fine_tune_is_refused_unless_asked():
    phases = [
        {"name": "round1", "steps": 2},
        {"name": "round2", "steps": 2, "miner": "aoq", "init": "previous"},
    ]
    for init in ("previous", "continue"):
        phases[1]["init"] = init
        with pytest.raises(ConfigError, match="allow_finetune"):
            config_from_dict({"recipe": "vse", "phases": phases})
    cfg = config_from_dict({"recipe": "vse", "phases": phases}, ["vse.aoq.allow_finetune=true"])
    assert cfg.vse.aoq.allow_finetune and cfg.phases[1].init == "continue"
    assert to_dict(cfg)["vse"]["aoq"]["allow_finetune"] is True
    # at its default the new setting stays out of a resolved config (older runs read alike)
    phases[1]["init"] = "initial"
    assert (
        "allow_finetune"
        not in to_dict(config_from_dict({"recipe": "vse", "phases": phases}))["vse"]["aoq"]
    )


def test_ndgl_paper_preset():
    cfg = config_from_dict({"preset": "ndgl-paper", "vse": {"reference_scores": ["r.pt"]}})
    miner = get_miner(cfg.vse.miner.name, **cfg.vse.miner.kwargs)
    assert (miner.gamma, miner.margin, miner.lambda_mr, miner.lambda_hnr) == (0.01, 0.2, 100, 0.5)
    assert miner.kl_direction == "predicted||target"  # KL(P, Q) as the paper writes it


def test_presets_merge_under_the_config_and_overrides():
    assert {"tags-dc-paper", "fne-paper", "aoq-paper", "ndgl-paper", "selhn-paper"} <= set(
        list_presets()
    )
    cfg = config_from_dict(
        {"preset": "fne-paper", "vse": {"queue_size": 16}}, ["vse.miner.kwargs.cut=true"]
    )
    assert cfg.vse.queue_size == 16 and cfg.vse.momentum == 0.995
    assert cfg.vse.miner.kwargs["cut"] is True and cfg.vse.miner.kwargs["preset"] == "paper"
    cfg = config_from_dict({"recipe": "vse"}, ["preset=selhn-paper"])
    assert cfg.vse.miner.name == "selhn"
    assert "preset" not in to_dict(cfg)
    with pytest.raises(ConfigError, match="unknown preset"):
        config_from_dict({"preset": "nope"})
