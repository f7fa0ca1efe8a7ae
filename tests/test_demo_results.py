"""Method registry of the demo / results benchmark, and the mean ± std aggregation."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from tags.demo.budget import BUDGETS, override_budget
from tags.demo.methods import (
    data_section,
    get_method,
    list_methods,
    method_config,
    pretrain_config,
)
from tags.demo.results import aggregate, results_markdown
from tags.training.config import config_from_dict

DATA = SimpleNamespace(captions="caps.json", features="feats")
ASSETS = {
    "pretrained": "runs/pretrained/model",
    "reference_scores": "ref.pt",
    "oracle_negatives": "oracle.jsonl",
}


def test_registry_lists_every_compared_method():
    cross = {"hardest", "oracle", "tags", "tags-dc", "tags-dc-official", "tags-dc-word"}
    cross |= {"tags-dc-static", "tags-dc-fne", "tags-dc-selhn", "tags-dc-relations"}
    cross |= {"tags-roles", "tags-dc-roles"}
    dual = {"all", "vse-hardest", "selhn", "fne", "aoq", "ndgl"}
    assert set(list_methods("cross")) == cross
    assert set(list_methods("dual")) == dual
    with pytest.raises(KeyError, match="unknown method 'clip'"):
        get_method("clip")


@pytest.mark.parametrize("name", list_methods())
def test_every_method_builds_a_valid_config_with_the_shared_budget(tmp_path, name):
    budget = BUDGETS["small"]
    raw = method_config(name, budget, DATA, tmp_path / name, 3, ASSETS)
    config = config_from_dict(raw)
    assert config.total_steps == budget.steps  # same optimizer steps for every method
    assert config.batch_size == budget.batch_size and config.seed == 3
    assert config.model.source == "tags" and config.model.path == ASSETS["pretrained"]
    family = get_method(name).family
    assert config.recipe == ("tags-dc" if family == "cross" else "vse")
    if family == "cross":
        syn = config.tags_dc.synthetic
        miner = {"tags-dc-fne": "fne", "tags-dc-selhn": "selhn"}.get(name, "hardest")
        assert config.tags_dc.itm_miner.name == miner
        assert config.tags_dc.istm_miner.name == ("all" if miner == "hardest" else miner)
        assert config.tags_dc.truth_scenes is None  # DATA is not a shapes benchmark
        assert (syn.source == "none") == (name == "hardest")
        assert syn.masking == ("word" if name == "tags-dc-word" else "unit")
        assert (syn.source == "static") == (name == "tags-dc-static")
        assert (syn.source == "fixed") == (name == "oracle")
        assert (config.data.negatives == "oracle.jsonl") == (name == "oracle")
        official = name == "tags-dc-official"
        assert (config.tags_dc.wod_class_weights == [1.0, 0.11]) == official
        assert (config.tags_dc.woc_positions == "edited") == official
        relations = name == "tags-dc-relations"
        roles = name in ("tags-roles", "tags-dc-roles")
        assert syn.balance_types == relations and syn.stratify_types == (relations or roles)
        assert syn.role_swaps == roles and not syn.swaps  # head-noun swaps: off in training
        dc = name.startswith("tags-dc")
        assert [p.name for p in config.phases] == (
            ["nsg", "nsgdc"]
            if dc
            else ["nsg"]
            if name in ("tags", "tags-roles", "oracle")
            else ["main"]
        )
        last = config.phases[-1].weights
        assert (last.get("wod", 0) > 0) == dc and (last.get("istm", 0) > 0) == (name != "hardest")


def test_cross_methods_audit_the_shapes_benchmark_scenes():
    data = SimpleNamespace(captions="caps.json", features="feats", scenes="bench/scenes.jsonl")
    for name in ("hardest", "tags-dc-fne"):
        config = config_from_dict(method_config(name, BUDGETS["small"], data, "o", 0, ASSETS))
        assert config.tags_dc.truth_scenes == "bench/scenes.jsonl"
    fne = config_from_dict(method_config("tags-dc-fne", BUDGETS["small"], data, "o", 0, ASSETS))
    assert fne.tags_dc.itm_miner.kwargs["min_count"] == 2 * BUDGETS["small"].batch_size
    dual = config_from_dict(method_config("fne", BUDGETS["small"], data, "o", 0, ASSETS))
    assert dual.recipe == "vse"  # the dual family has no retrieved pool to audit


def test_dual_methods_use_their_miner():
    budget = BUDGETS["small"]
    miners = {
        "all": "all",
        "vse-hardest": "hardest",
        "selhn": "selhn",
        "fne": "fne",
        "ndgl": "ndgl",
    }
    for name, miner in miners.items():
        config = config_from_dict(method_config(name, budget, DATA, "out", 0, ASSETS))
        assert config.vse.miner.name == miner
    fne = config_from_dict(method_config("fne", budget, DATA, "out", 0, ASSETS))
    assert fne.vse.queue_size == budget.queue_size > 0
    aoq = config_from_dict(method_config("aoq", budget, DATA, "out", 0, ASSETS))
    assert [p.miner for p in aoq.phases] == [None, "aoq"] and aoq.phases[1].init == "initial"


def test_budget_sets_the_istm_weight_and_the_pretraining_itm_sampling():
    from dataclasses import replace

    budget = replace(BUDGETS["small"], istm_weight=0.25, itm_sampling="itc")
    config = config_from_dict(method_config("tags-dc", budget, DATA, "out", 0, ASSETS))
    assert [p.weights["istm"] for p in config.phases] == [0.25, 0.25]
    pre = config_from_dict(pretrain_config(budget, DATA, "out", 0))
    assert pre.pretrain.itm_sampling == "itc"


def test_pretrain_config_trains_from_scratch():
    budget = BUDGETS["small"]
    config = config_from_dict(pretrain_config(budget, DATA, "out", 1))
    assert config.recipe == "pretrain" and config.model.source == "scratch"
    assert config.model.overrides["initializer_range"] == budget.init_std
    assert config.total_steps == budget.pretrain_steps


def _result(rsum: float, mp: float) -> dict:
    retrieval = {k: rsum / 6 for k in ("i2t_r1", "i2t_r5", "i2t_r10", "t2i_r1", "t2i_r5")}
    retrieval |= {"t2i_r10": rsum / 6, "rsum": rsum}
    return {"retrieval": retrieval, "minimal_pairs": {"overall": mp, "object": mp}}


def test_aggregate_mean_and_sample_std():
    results = {
        0: {"hardest": _result(100.0, 0.5), "all": _result(30.0, 0.6)},
        1: {"hardest": _result(110.0, 0.7)},
        2: {"hardest": _result(120.0, 0.6)},
    }
    summary = aggregate(results)
    assert summary["hardest"]["n_seeds"] == 3 and summary["all"]["n_seeds"] == 1
    mean, std = summary["hardest"]["rsum"]
    assert mean == pytest.approx(110.0) and std == pytest.approx(10.0)
    mean, std = summary["hardest"]["overall"]
    assert mean == pytest.approx(60.0) and std == pytest.approx(10.0)
    assert "attribute" not in summary["hardest"]  # no pair of that type: left out
    assert summary["all"]["rsum"] == [30.0, 0.0]
    assert summary["hardest"]["family"] == "cross" and summary["all"]["family"] == "dual"
    table = results_markdown(summary, BUDGETS["small"], [0, 1, 2])
    row = next(line for line in table.splitlines() if "| hardest |" in line)
    assert "110.0 ± 10.0" in row and "60.0 ± 10.0" in row
    assert all(not math.isnan(v[0]) for v in summary["hardest"].values() if isinstance(v, list))


def test_result_plots_from_logged_metrics(tmp_path):
    import json

    from PIL import Image

    from tags.demo.results import draw_result_plots

    logs = {
        "hardest": [{"step": s, "itm_i2t/hardness": -0.1 * s} for s in range(1, 4)],
        "selhn": [
            {"step": s, "i2t/hardness": 0.0, "i2t/selhn_all_share": s / 4} for s in range(1, 4)
        ],
    }
    for name, rows in logs.items():
        (tmp_path / "seed0" / name).mkdir(parents=True)
        text = "\n".join(json.dumps(r) for r in rows)
        (tmp_path / "seed0" / name / "metrics.jsonl").write_text(text)
    plots = draw_result_plots(tmp_path, 0, ("hardest", "selhn", "fne"))  # fne never ran
    assert set(plots) == {"hardness", "selhn_share"}
    for path in plots.values():
        with Image.open(path) as image:
            assert image.format == "PNG" and len(image.getcolors(1 << 16) or []) > 2
    assert draw_result_plots(tmp_path, 0, ("hardest",)).keys() == {"hardness"}


def test_ndgl_reference_scores_are_the_dual_cosines_in_dataset_order(tmp_path):
    import torch

    from tags.backends.masked_lm import load_tokenizer
    from tags.data import build_dataset, pad_regions, pad_text
    from tags.data.synthetic import write_synthetic_dataset
    from tags.demo.pipeline import reference_scores
    from tags.modeling import TagsConfig, TagsModel, tiny_mlm_path
    from tags.training.config import DataConfig

    paths = write_synthetic_dataset(tmp_path / "data", num_images=5, layout="karpathy")
    tokenizer = load_tokenizer(str(tiny_mlm_path()))
    config = TagsConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=37,
        region_feature_size=16,
        max_position_embeddings=64,
    )
    model = TagsModel(config).eval()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    data = SimpleNamespace(captions=paths["captions"], features=paths["features"])
    budget = BUDGETS["tiny"]
    out = reference_scores(tmp_path / "model", data, budget, tmp_path / "ref.pt")
    scores = torch.load(out)
    dataset = build_dataset(DataConfig(**data_section(data, budget)), tokenizer)
    assert scores.shape == (dataset.num_images, len(dataset)) == (5, 25)
    # one image and one caption encoded alone give the same cosine (padding-invariant)
    feats, boxes = dataset.image(3)
    f, b, m = pad_regions([feats], [boxes])
    ids, mask = pad_text([dataset.tokens(7)])
    with torch.no_grad():
        expected = model.encode_image(f, b, m)[0] @ model.encode_text(ids, mask)[0]
    assert scores[3, 7].item() == pytest.approx(expected.item(), abs=1e-5)
    assert reference_scores(tmp_path / "model", data, budget, out) == out  # reused


def test_truth_audit_shares_are_aggregated_and_tabled():
    def audited(rsum, true, bad):
        return {**_result(rsum, 0.5), "truth_audit": {"true": true, "ungrammatical": bad}}

    results = {0: {"tags-dc": audited(100.0, 0.1, 0.3), "hardest": _result(90.0, 0.5)}}
    results[1] = {"tags-dc": audited(100.0, 0.3, 0.1)}
    summary = aggregate(results)
    assert summary["tags-dc"]["synthetic_true"] == pytest.approx([20.0, math.sqrt(200)])
    assert summary["tags-dc"]["synthetic_ungrammatical"][0] == pytest.approx(20.0)
    assert "synthetic_true" not in summary["hardest"]
    table = results_markdown(summary, BUDGETS["small"], [0, 1])
    assert "| tags-dc | 20.0 ± 14.1 | 20.0 ± 14.1 |" in table


def test_early_stopping_on_val_is_a_budget_option(tmp_path):
    """``patience`` with a val split: every fine-tuning evaluates val RSum during training
    and stops early; without a val split (or patience) nothing is evaluated in training."""
    import dataclasses

    budget = dataclasses.replace(BUDGETS["small"], val_images=20, patience=2)
    for name in ("hardest", "tags-dc", "vse-hardest"):
        config = config_from_dict(method_config(name, budget, DATA, tmp_path / name, 0, ASSETS))
        assert config.eval.split == "val" and config.eval.patience == 2
        assert config.eval.every == budget.steps // 6 and config.eval.metric == "rsum"
        assert config.eval.mode == get_method(name).family
    budget = dataclasses.replace(budget, eval_every=10)
    assert method_config("hardest", budget, DATA, tmp_path, 0, ASSETS)["eval"]["every"] == 10
    for budget in (BUDGETS["small"], dataclasses.replace(BUDGETS["small"], patience=2)):
        assert "eval" not in method_config("hardest", budget, DATA, tmp_path, 0, ASSETS)


def test_budget_overrides_cast_to_the_field_type_and_name_bad_settings():
    small = BUDGETS["small"]
    budget = override_budget(small, ["steps=900", "dc_steps=300", "lr=5e-4", "name=small900"])
    assert (budget.steps, budget.dc_steps, budget.lr, budget.name) == (900, 300, 5e-4, "small900")
    assert budget.pool_size == small.pool_size and override_budget(small, []) is small
    with pytest.raises(ValueError, match="stpes=900: expected FIELD=VALUE"):
        override_budget(small, ["stpes=900"])
    with pytest.raises(ValueError, match="'many' is not a int"):
        override_budget(small, ["steps=many"])
    with pytest.raises(ValueError, match="expected FIELD=VALUE"):
        override_budget(small, ["steps="])


def test_val_scores_are_aggregated_and_tabled_only_when_runs_have_a_val_split():
    def with_val(rsum, mp, val_rsum, val_mp):
        result = _result(rsum, mp)
        return {**result, "val": _result(val_rsum, val_mp)}

    results = {0: {"hardest": with_val(100.0, 0.5, 200.0, 0.7)}}
    results[1] = {"hardest": with_val(110.0, 0.6, 220.0, 0.9), "all": _result(30.0, 0.6)}
    summary = aggregate(results)
    assert summary["hardest"]["val_rsum"] == pytest.approx([210.0, math.sqrt(200)])
    assert summary["hardest"]["val_overall"] == pytest.approx([80.0, math.sqrt(200)])
    assert summary["hardest"]["rsum"][0] == pytest.approx(105.0)  # test stays test
    assert "val_rsum" not in summary["all"]
    table = results_markdown(summary, BUDGETS["small"], [0, 1])
    header = next(line for line in table.splitlines() if line.startswith("| family"))
    assert header.endswith("| val RSum | val MP |")
    row = next(line for line in table.splitlines() if "| hardest |" in line)
    assert row.endswith("| 210.0 ± 14.1 | 80.0 ± 14.1 |")
    assert next(line for line in table.splitlines() if "| all |" in line).endswith("| - | - |")
    plain = results_markdown(aggregate({0: {"all": _result(30.0, 0.6)}}), BUDGETS["small"], [0])
    assert "val RSum" not in plain
