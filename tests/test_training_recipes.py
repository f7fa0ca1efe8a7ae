"""Recipe registry and the switches: static generator, unit masking, dual retrieval, fixed
pools (both recipes), AOQ's two rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _training_utils import SwapNouns, state_dict_close, tiny_config

from tags.cli import main as cli_main
from tags.mining import OfflineNegatives, build_offline_negatives
from tags.modeling import TagsModel, tiny_mlm_path
from tags.training import get_recipe, list_recipes, register_recipe, training_function
from tags.training.factory import create_tokenizer
from tags.training.loop import phase_dir
from tags.training.recipes import Recipe


def rows(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_registry():
    assert {"tags-dc", "vse"} <= set(list_recipes())
    assert issubclass(get_recipe("vse"), Recipe)
    with pytest.raises(KeyError, match="unknown recipe 'clip'"):
        get_recipe("clip")
    with pytest.raises(ValueError, match="already registered"):
        register_recipe("vse")(type("Other", (Recipe,), {}))


def test_static_generator_with_scene_graph_units(tmp_path, monkeypatch):
    """Ablation switches: frozen separate MLM + unit masking (spaCy scene graphs). Every
    negative changes scene-graph units only, the pool is full (top_m), and the loss uses it."""
    import tags.training.recipes.tags_dc as tags_dc

    pools: list = []
    label = tags_dc.label_negatives

    def spy(positives, negatives, tokenizer, max_length):
        pools.append((list(positives), negatives))
        return label(positives, negatives, tokenizer, max_length)

    monkeypatch.setattr(tags_dc, "label_negatives", spy)
    cfg = tiny_config(
        "tags-dc",
        tmp_path / "run",
        "phases.0.steps=1",
        "tags_dc.synthetic.source=static",
        f"tags_dc.synthetic.static_generator={tiny_mlm_path()}",
        "tags_dc.synthetic.masking=unit",
        "tags_dc.synthetic.num_copies=3",
        "tags_dc.synthetic.num_samples=4",
        "tags_dc.synthetic.planner=false",  # the official code's unconstrained refills
    )
    training_function(cfg)
    row = rows(tmp_path / "run")[0]
    ((positives, negatives),) = pools
    assert row["synthetic/per_caption"] == sum(map(len, negatives)) / len(negatives) == 2.0
    assert row["loss/istm"] > 0
    for positive, pool in zip(positives, negatives):
        for text, edits in pool:
            assert text != positive and edits
            assert {e.type for e in edits} <= {"object", "attribute", "relation"}  # units
            assert all(positive[e.start : e.end] == e.original for e in edits)


def test_planned_refills_in_the_dynamic_generator(tmp_path, monkeypatch):
    """With the planner (the default), the training generator's refills are whole words that
    the planner offers for the unit, over the scene graphs of the training captions."""
    import tags.training.recipes.tags_dc as tags_dc
    import tags.training.synthetic as synthetic

    pools: list = []
    planners: list = []
    label = tags_dc.label_negatives
    build = synthetic.build_planner

    def spy(positives, negatives, tokenizer, max_length):
        pools.append((list(positives), negatives))
        return label(positives, negatives, tokenizer, max_length)

    def spy_build(parser, corpus, cache=None, noun_classes=None):
        planners.append((parser, build(parser, corpus, cache, noun_classes)))
        return planners[-1][1]

    monkeypatch.setattr(tags_dc, "label_negatives", spy)
    monkeypatch.setattr(synthetic, "build_planner", spy_build)
    cfg = tiny_config(
        "tags-dc",
        tmp_path / "run",
        "phases.0.steps=2",
        "tags_dc.synthetic.masking=unit",
        "tags_dc.synthetic.max_edits=1",
        "tags_dc.synthetic.num_copies=4",
        "tags_dc.synthetic.num_samples=4",
    )
    training_function(cfg)
    ((parser, planner),) = planners
    found = 0
    for positives, negatives in pools:
        for positive, pool in zip(positives, negatives):
            planned = {
                " ".join(c.surface).lower()
                for u in planner.plan(parser.parse(positive))
                for c in u.choices
            }
            for _, edits in pool:
                (edit,) = edits  # max_edits=1: one unit
                assert edit.replacement.lower().split()[-1] in {p.split()[-1] for p in planned}
                found += 1
    assert found > 0
    assert (tmp_path / "run" / tags_dc.PLANNER_CACHE).is_file()


def test_planner_counts_are_cached_per_corpus(tmp_path):
    """The training captions are parsed once per output dir: a second build (a resume, another
    process) reads the file; other captions are parsed again."""
    from tags.negatives.pipeline import default_parser
    from tags.training.synthetic import build_planner

    parser = default_parser()
    corpus = ["a dog sitting on a bench", "a cat sitting on a bench"] * 2
    cache = tmp_path / "scenes.json"
    first = build_planner(parser, corpus, cache)
    assert cache.is_file()

    class NoParse:
        def pipe(self, texts):
            raise AssertionError("parsed again")

    second = build_planner(NoParse(), corpus, cache)
    assert second.scenes.to_dict() == first.scenes.to_dict()
    with pytest.raises(AssertionError, match="parsed again"):
        build_planner(NoParse(), [*corpus, "a horse on the grass"], cache)


def test_dual_retrieval_and_selhn_itm_miner(tmp_path):
    """Dual-encoder retrieval picks the same negatives for both runs (no_grad, seeded);
    SelHN's mean branch (eps 1) can only give a smaller loss than its hardest branch (eps 0)."""
    out = {}
    for eps in (0.0, 1.0):
        run = tmp_path / f"eps{eps}"
        cfg = tiny_config(
            "tags-dc",
            run,
            "phases.0.steps=1",
            "tags_dc.retrieval.mode=dual",
            f"tags_dc.itm_miner={{name: selhn, kwargs: {{eps: {eps}}}}}",
            "tags_dc.synthetic.source=none",
        )
        training_function(cfg)
        out[eps] = rows(run)[0]
    hard, mean = out[0.0], out[1.0]
    assert hard["itm_i2t/selhn_all_share"] == 0.0 and hard["itm_t2i/selhn_all_share"] == 0.0
    assert mean["itm_i2t/selhn_all_share"] == 1.0 and mean["itm_t2i/selhn_all_share"] == 1.0
    for key in ("itm_i2t/hardness", "itm_t2i/hardness", "itm/pos_score"):
        assert hard[key] == pytest.approx(mean[key], abs=1e-6)  # the same retrieved negatives
    assert hard["loss/itm_i2t"] > mean["loss/itm_i2t"] > 0
    assert hard["loss/itm_t2i"] > mean["loss/itm_t2i"] > 0
    assert mean["loss/istm"] == 0.0 and mean["synthetic/per_caption"] == 0.0


@pytest.mark.parametrize("positions", ["all", "edited"])
def test_woc_targets_at_every_position_or_only_inside_the_edits(tmp_path, monkeypatch, positions):
    """SwapNouns replaces one one-piece noun per negative: ``edited`` keeps one WoC target
    per negative (the positive's noun), ``all`` every caption token."""

    from tags.training.losses import TokenCrossEntropy

    seen: list[torch.Tensor] = []
    forward = TokenCrossEntropy.forward

    def spy(self, logits, labels):
        seen.append(labels.detach().clone())
        return forward(self, logits, labels)

    monkeypatch.setattr(TokenCrossEntropy, "forward", spy)
    cfg = tiny_config(
        "tags-dc",
        tmp_path / "run",
        "phases.0.steps=1",
        "phases.0.weights={mlm: 0.0, wod: 0.0, woc: 1.0}",  # WoC is the only token loss
        f"tags_dc.woc_positions={positions}",
    )
    training_function(cfg, source=SwapNouns())
    (labels,) = seen
    n_syn = rows(tmp_path / "run")[0]["synthetic/per_caption"] * cfg.batch_size
    assert n_syn > 0 and rows(tmp_path / "run")[0]["loss/woc"] > 0
    if positions == "edited":
        assert labels.numel() == n_syn  # one refilled position per negative
        nouns = set(create_tokenizer(cfg.model).convert_tokens_to_ids(list(SwapNouns.NOUNS)))
        assert set(labels.tolist()) <= nouns  # the positive's noun is the target
    else:
        assert labels.numel() >= 4 * n_syn  # every token of every negative


def _pools_jsonl(tmp_path: Path, cfg) -> Path:
    """Real ``tags generate`` output (vocabulary refills) for the synthetic corpus."""
    from tags.training.loop import _materialize_data

    data = _materialize_data(cfg, True)
    path = tmp_path / "negatives.jsonl"
    argv = ["generate", "--captions", data.captions, "--out", str(path), "--k", "2", "--l", "2"]
    assert cli_main([*argv, "--top-m", "2", "--no-progress"]) == 0
    return path


def test_fixed_pools_in_both_recipes(tmp_path):
    """vse: the synthetic captions are extra i2t candidates only (t2i unchanged, i2t harder);
    tags-dc: each caption gets its first top_m negatives of the file."""
    from tags.data import EpochSampler, NegativePools

    probe = tiny_config("vse", tmp_path / "probe")
    path = _pools_jsonl(tmp_path, probe)
    first = {}
    for n in (0, 2):
        run = tmp_path / f"vse{n}"
        extra = [f"data.negatives={path}"] if n else []
        training_function(
            tiny_config(
                "vse", run, "phases.0.steps=1", *extra, f"vse.synthetic_negatives={n}",
                "vse.miner.name=hardest",
            )
        )  # fmt: skip
        first[n] = rows(run)[0]
    assert first[2]["loss/triplet_t2i"] == pytest.approx(first[0]["loss/triplet_t2i"], abs=1e-6)
    assert first[2]["loss/triplet_i2t"] > first[0]["loss/triplet_i2t"]
    assert first[2]["i2t/hardness"] > first[0]["i2t/hardness"]
    cfg = tiny_config(
        "tags-dc", tmp_path / "dc", "phases.0.steps=1", f"data.negatives={path}",
        "tags_dc.synthetic.source=fixed", "phases.0.weights={wod: 1.0, woc: 1.0}",
    )  # fmt: skip
    training_function(cfg)
    row = rows(tmp_path / "dc")[0]
    dataset = _tiny_dataset(cfg)
    pools = NegativePools.from_jsonl(path)
    batch = list(EpochSampler(len(dataset), cfg.seed))[: cfg.batch_size]
    expected = [len(pools.get(dataset[i]["caption_id"], 2)) for i in batch]
    assert row["synthetic/per_caption"] == sum(expected) / len(expected) > 0
    assert row["loss/wod"] > 0 and row["loss/woc"] > 0


AOQ_PHASES = (
    "phases=[{name: round1, steps: 2, lr: 1.0e-2},"
    " {name: round2, steps: 1, lr: 0.0, miner: aoq, init: initial}]"
)


def _offline_from(model: torch.nn.Module, cfg, h: int) -> OfflineNegatives:
    """AOQ's ranking of the tiny training set by ``model``'s dual embeddings."""
    from tags.training.retrieval import encode_dataset

    dataset = _tiny_dataset(cfg)
    model.eval()
    images, captions = encode_dataset(model, dataset)
    return build_offline_negatives(images, captions, dataset.image_of, h=h, h_caption=2)


def test_aoq_ranks_with_round_one_then_restarts_from_the_initial_weights(tmp_path):
    run = tmp_path / "run"
    cfg = tiny_config("vse", run, AOQ_PHASES, "vse.aoq={h: 10}")
    result = training_function(cfg)
    initial = TagsModel.from_pretrained(run / "phases" / "-1_initial")
    round1 = TagsModel.from_pretrained(run / "phases" / "0_round1")
    state_dict_close(result.model, initial, atol=0.0)  # round 2 (lr 0) = the initial weights
    offline = OfflineNegatives.load(run / "phases" / "1_round2" / "aoq_offline_negatives.pt")
    assert offline.i2t.shape == (8, 10)  # top-h negative captions of every image
    own = offline.caption_to_image[offline.i2t] == torch.arange(8)[:, None]
    assert not own.any()  # never a caption of the image itself
    # ranked by round 1's model (paper 3.2, official geti2toffcandi.py), not the initial one
    assert torch.equal(offline.i2t, _offline_from(round1, cfg, 10).i2t)
    assert not torch.equal(offline.i2t, _offline_from(initial, cfg, 10).i2t)
    last = rows(run)[-1]
    assert last["phase"] == 1 and "i2t/weight" in last and "t2i/offline" in last


def _tiny_dataset(cfg):
    from tags.data import build_dataset
    from tags.training.factory import create_tokenizer
    from tags.training.loop import _materialize_data

    return build_dataset(_materialize_data(cfg, False), create_tokenizer(cfg.model))


def test_ndgl_with_reference_scores(tmp_path):
    """The logged NDGL terms equal the miner applied by hand to the first batch (lr 0: the
    model stays at its initial weights) with the mean of the two reference matrices."""
    from tags.data import EpochSampler
    from tags.mining import NDGLMiner, direction_pairs
    from tags.training.retrieval import encode_dataset

    reference = torch.rand(8, 40, generator=torch.Generator().manual_seed(0))
    torch.save(reference, tmp_path / "ref_a.pt")
    torch.save(reference.flip(1), tmp_path / "ref_b.pt")
    run = tmp_path / "run"
    refs = f"vse.reference_scores=[{tmp_path / 'ref_a.pt'}, {tmp_path / 'ref_b.pt'}]"
    cfg = tiny_config(
        "vse", run, "phases.0.steps=1", "phases.0.lr=0.0", "vse.miner.name=ndgl", refs
    )
    result = training_function(cfg)
    row = rows(run)[0]
    assert "i2t/target_index" not in row  # integer extras are not averaged

    dataset = _tiny_dataset(cfg)
    batch = list(EpochSampler(len(dataset), cfg.seed))[: cfg.batch_size]
    model = result.model.eval()
    images, captions = encode_dataset(model, dataset)
    ids = dataset.image_of[batch]
    img, txt = images[ids], captions[batch]
    own = torch.arange(len(batch))
    target = ((reference + reference.flip(1)) / 2)[ids][:, batch]  # [anchor image, caption]
    miner = NDGLMiner()  # the paper's lambdas: 100 (MR), 0.5 (HNR)
    i2t = miner(
        *direction_pairs(img @ txt.t(), own, ids, ids),
        target_scores=target,
        target_positive=target[own, own],
    )
    t2i = miner(
        *direction_pairs(txt @ img.t(), own, ids, ids),
        target_scores=target.t(),
        target_positive=target.t()[own, own],
    )
    for key in ("margin_kl", "hnr", "online"):
        assert row[f"i2t/{key}"] == pytest.approx(i2t.extras[key].mean().item(), abs=1e-4)
        assert row[f"t2i/{key}"] == pytest.approx(t2i.extras[key].mean().item(), abs=1e-4)
    assert row["i2t/margin_kl"] > 0 and row["i2t/hnr"] > 0  # the terms are exercised
    expected = i2t.loss.mean() + t2i.loss.mean()
    assert row["loss/total"] == pytest.approx(expected.item(), rel=1e-4)
    bad = tmp_path / "bad.pt"
    torch.save(torch.rand(3, 3), bad)
    with pytest.raises(ValueError, match=r"expected \[images, captions\] = \[8, 40\]"):
        training_function(
            tiny_config(
                "vse", tmp_path / "b", "vse.miner.name=ndgl", f"vse.reference_scores=[{bad}]"
            )
        )


@pytest.mark.parametrize("mode", ["dual", "cross"])
def test_retrieval_evaluation_at_phase_ends(tmp_path, mode):
    from tags.data import write_synthetic_dataset

    held_out = write_synthetic_dataset(
        tmp_path / "test", num_images=4, captions_per_image=2, layout="karpathy", split="test"
    )
    run = tmp_path / "run"
    cfg = tiny_config(
        "vse",
        run,
        "phases=[{name: a, steps: 2, lr: 1.0e-3}, {name: b, steps: 1, lr: 1.0e-3}]",
        f"eval.captions={held_out['captions']}",
        f"eval.features={held_out['features']}",
        f"eval.mode={mode}",
        "eval.split=test",
    )
    result = training_function(cfg)
    evals = [r for r in rows(run) if "eval/rsum" in r]
    assert [r["step"] for r in evals] == [2, 3]  # the two phase ends
    assert 0 <= evals[-1]["eval/i2t_r1"] <= 100 and evals[-1]["eval/rsum"] > 0
    assert result.last_metrics["eval/rsum"] == evals[-1]["eval/rsum"]


def test_early_stopping_keeps_the_best_weights(tmp_path):
    """``eval.patience``: the run stops after that many evaluations without a new best
    ``eval.metric``; ``best/`` and ``model/`` hold the best evaluated weights, and a resumed
    stopped run stays stopped. Phase b has lr 0, so its evaluations cannot improve."""
    from tags.data import write_synthetic_dataset

    held_out = write_synthetic_dataset(
        tmp_path / "val", num_images=4, captions_per_image=2, layout="karpathy", split="val"
    )
    run = tmp_path / "run"
    overrides = [
        "phases=[{name: a, steps: 2, lr: 1.0e-2}, {name: b, steps: 6, lr: 0.0}]",
        f"eval.captions={held_out['captions']}",
        f"eval.features={held_out['features']}",
        "eval.split=val",
        "eval.every=1",
        "eval.patience=2",
    ]
    result = training_function(tiny_config("vse", run, *overrides))
    evals = [(r["step"], r["eval/rsum"]) for r in rows(run) if "eval/rsum" in r]
    best, stale, stopped = float("-inf"), 0, None
    for step, value in evals:  # the rule, replayed on the logged evaluations
        best, stale = (value, 0) if value > best else (best, stale + 1)
        if stale >= 2:
            stopped = step
            break
    assert stopped is not None and stopped <= 4  # phase b cannot improve: 2 more evals
    assert result.state.step == stopped == evals[-1][0] < 8
    best_step = max(evals, key=lambda e: (e[1], -e[0]))[0]
    assert result.state.best_step == best_step and result.state.best == max(v for _, v in evals)
    best_model = TagsModel.from_pretrained(run / "best")
    assert state_dict_close(best_model, TagsModel.from_pretrained(run / "model")) == 0
    assert state_dict_close(best_model, result.model) == 0
    if best_step < 2:  # the weights after phase a (the last ones) are not the best
        last = TagsModel.from_pretrained(phase_dir(run, 0, "a"))
        with pytest.raises(AssertionError):
            state_dict_close(best_model, last)
    again = training_function(tiny_config("vse", run, *overrides, "resume_from=latest"))
    assert again.state.step == stopped
    assert len([r for r in rows(run) if "eval/rsum" in r]) == len(evals)
    with pytest.raises(ValueError, match=r"eval\.metric 'nope' is not an evaluation metric"):
        training_function(tiny_config("vse", tmp_path / "bad", *overrides, "eval.metric=nope"))
    with pytest.raises(ValueError, match="need an evaluation"):
        tiny_config("vse", tmp_path / "bad2", "eval.patience=1")


@pytest.mark.parametrize("init", ["random", "mlm"])
def test_woc_head_starts_from_the_mlm_head(tmp_path, init):
    """``tags_dc.woc_init: mlm``: the first phase with a WoC weight copies the MLM head's
    transform and bias into the WoC head (lr 0 in that phase keeps what it started from)."""
    run = tmp_path / init
    cfg = tiny_config(
        "tags-dc",
        run,
        "phases=[{name: nsg, steps: 1, lr: 1.0e-2, weights: {woc: 0.0, wod: 0.0}},"
        " {name: nsgdc, steps: 1, lr: 0.0, init: previous, weights: {woc: 1.0}}]",
        f"tags_dc.woc_init={init}",
    )
    training_function(cfg, source=SwapNouns())
    model = TagsModel.from_pretrained(run / "model")
    mlm, woc = model.mlm_head, model.woc_head
    same = all(
        torch.equal(a, b)
        for a, b in zip(mlm.transform.state_dict().values(), woc.transform.state_dict().values())
    ) and torch.equal(mlm.bias, woc.bias)
    assert same == (init == "mlm")
    assert rows(run)[-1]["loss/woc"] > 0
