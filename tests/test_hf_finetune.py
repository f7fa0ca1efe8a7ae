"""The HF fine-tuning comparison's parts: val minimal pairs of the shapes benchmark, the
``vse`` recipe's hard-negative term, the negatives' ordering, and the comparison's tables
and extra scores (``scripts/research``, the package beside the benchmark scripts)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch

from tags.benchmark.hf_models import split_minimal_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # research package


@pytest.fixture(scope="module")
def shapes_with_val(tmp_path_factory):
    from tags.cli import main

    root = tmp_path_factory.mktemp("shapes_val")
    args = ["--train", "2", "--val", "3", "--test", "2", "--image-size", "64", "--crop-size",
            "32", "--featurizer", "random", "--save-images", "--threads", "1", "--quiet"]  # fmt: skip
    assert main(["make-benchmark", str(root), *args]) == 0
    return root


def test_val_minimal_pairs_come_from_val_scenes_and_are_false(shapes_with_val):
    from tags.benchmark.captions import Claim
    from tags.benchmark.minimal_pairs import read_pairs

    scenes = [json.loads(x) for x in (shapes_with_val / "scenes.jsonl").read_text().splitlines()]
    val_ids = {s["image_id"] for s in scenes if s["split"] == "val"}
    captions = {s["image_id"]: {Claim.from_dict(c).text for c in s["captions"]} for s in scenes}
    pairs = split_minimal_pairs(shapes_with_val, "val")
    assert pairs and {p.image_id for p in pairs} <= val_ids
    assert {p.type for p in pairs} >= {"attribute", "object"}
    for p in pairs:
        assert p.caption in captions[p.image_id] and p.negative != p.caption
    # the test split: the build's own file; the build folder is not written
    before = sorted(x.name for x in shapes_with_val.iterdir())
    assert split_minimal_pairs(shapes_with_val, "test") == read_pairs(
        shapes_with_val / "test_minimal_pairs.jsonl"
    )
    assert sorted(x.name for x in shapes_with_val.iterdir()) == before
    with pytest.raises(ValueError, match="no images of split 'restval'"):
        split_minimal_pairs(shapes_with_val, "restval")


def test_evaluate_hf_scores_the_val_pairs(tmp_path, shapes_with_val):
    from tags.benchmark.hf_models import HFModelConfig, build_clip, evaluate_hf
    from tags.benchmark.oracle_negatives import split_role_pairs

    model = build_clip(tmp_path / "clip", HFModelConfig(image_size=32, patch_size=8,
                       hidden_size=32, num_layers=1, num_heads=4, projection_dim=16))  # fmt: skip
    scores = evaluate_hf(model, shapes_with_val, "val")
    assert scores["mp_pairs"] == len(split_minimal_pairs(shapes_with_val, "val"))
    assert 0 <= scores["mp"] <= 1 and 0 <= scores["rsum"] <= 600
    assert "mp_role" not in scores
    roles = split_role_pairs(shapes_with_val / "scenes.jsonl", "val")
    with_roles = evaluate_hf(model, shapes_with_val, "val", role_pairs=roles)
    assert with_roles["mp_role_pairs"] == len(roles) and 0 <= with_roles["mp_role"] <= 1
    assert with_roles["mp"] == scores["mp"]  # role swaps are scored apart


class _Backend:
    """Dot-product similarities scaled by 10 (a CLIP-like logit scale)."""

    def pair_similarity(self, image, text):
        return (image * text).sum(-1)

    def scale_logits(self, sims, params=None):
        return 10 * sims

    def contrastive_logits(self, image, text, params=None):
        return 10 * image @ text.t()


def test_hard_negative_term_is_cross_entropy_over_own_negatives_only():
    from tags.training.recipes.vse import VSERecipe

    recipe = VSERecipe.__new__(VSERecipe)
    recipe.backend = _Backend()
    torch.manual_seed(0)
    img, txt, syn = torch.randn(3, 4), torch.randn(3, 4), torch.randn(4, 4)
    owner = torch.tensor([0, 0, 2, 2])  # image 1 has no synthetic negative
    loss = VSERecipe._hard_negative_loss(recipe, img, txt, syn, owner, {})
    expected = []
    for i, own in ((0, [0, 1]), (1, []), (2, [2, 3])):
        logits = torch.stack([10 * img[i] @ txt[i], *[10 * img[i] @ syn[j] for j in own]])
        expected.append(-torch.log_softmax(logits, 0)[0])
    assert loss.item() == pytest.approx(torch.stack(expected).mean().item(), rel=1e-5)
    assert expected[1].item() == 0.0


def test_hard_negative_weight_trains_the_term(tmp_path):
    from research.hf_tiny import MAKERS

    from tags.training import load_config, training_function
    from tests.test_training_backends import CONFIG, write_corpus

    clip = MAKERS["clip"](tmp_path / "clip")
    captions, images, negatives = write_corpus(tmp_path / "data")

    def run(name, *extra):
        config = load_config(CONFIG, [
            f"model.path={clip}", f"data.captions={captions}", f"data.images={images}",
            f"data.negatives={negatives}", f"output_dir={tmp_path / name}",
            "progress_bar=false", "tensorboard=false", "phases.0.steps=8",
            "phases.0.lr=3.0e-3", "optim.warmup_ratio=0.0", "vse.loss=contrastive",
            "vse.synthetic_negatives=1", "log_every=1", *extra,
        ])  # fmt: skip
        training_function(config)
        text = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        return [json.loads(x) for x in text]

    rows = run("hn", "phases.0.weights.hard_negative=2.0")
    terms = [r["loss/hard_negative"] for r in rows if "loss/hard_negative" in r]
    assert len(terms) == 8 and all(math.isfinite(t) for t in terms)
    assert sum(terms[-2:]) / 2 < terms[0]  # the term is trained
    # the total holds the weighted term on top of the NegCLIP InfoNCE
    first = rows[0]
    infonce = 0.5 * (first["loss/infonce_i2t"] + first["loss/infonce_t2i"])
    assert first["loss/total"] == pytest.approx(infonce + 2.0 * terms[0], rel=1e-4)
    assert not any("loss/hard_negative" in r for r in run("plain"))  # off by default


def test_relation_first_order_and_mix(tmp_path):
    from tags.benchmark import hf_finetune as script

    rows = [
        {"image_id": 0, "caption_id": 0, "negative": "a", "edits": [{"type": "attribute"}]},
        {"image_id": 0, "caption_id": 0, "negative": "b", "edits": [{"type": "object"}]},
        {"image_id": 0, "caption_id": 0, "negative": "c", "edits": [{"type": "relation"}]},
        {"image_id": 0, "caption_id": 1, "negative": "d", "edits": [{"type": "attribute"}]},
        {"image_id": 0, "caption_id": 1, "negative": "e", "edits": [{"type": "attribute"}]},
    ]
    path = tmp_path / "neg.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert script.order_negatives(path, "generated") == path
    ordered = script.order_negatives(path, "relation-first")
    got = [json.loads(x)["negative"] for x in ordered.read_text().splitlines()]
    assert got == ["c", "b", "a", "d", "e"]
    mix = script.negatives_mix(ordered, 1)
    assert mix == {"attribute": 50.0, "object": 0.0, "relation": 50.0,
                   "captions_with_relation": 50.0}  # fmt: skip
    assert script.negatives_mix(path, 1)["relation"] == 0.0
    with pytest.raises(ValueError, match="order must be one of"):
        script.order_negatives(path, "random")


def test_finetune_config_variants():
    from tags.benchmark.hf_finetune import finetune_config

    base = {"data": {}, "phases": [{"name": "main", "steps": 5}], "recipe": "vse"}
    plain = finetune_config(base, "plain")
    assert plain["vse"] == {"loss": "contrastive"} and "negatives" not in plain["data"]
    neg = finetune_config(base, "negclip", "n.jsonl", per_caption=3, hn_weight=2.0)
    assert neg["vse"]["synthetic_negatives"] == 3 and neg["data"]["negatives"] == "n.jsonl"
    assert neg["phases"][0]["weights"] == {"hard_negative": 2.0}
    assert "weights" not in base["phases"][0]  # the base is not changed
    assert finetune_config(base, "hardest")["vse"]["miner"]["name"] == "hardest"
    with pytest.raises(ValueError, match="needs a negatives file"):
        finetune_config(base, "negclip")


def test_finetune_config_blip_variants(tmp_path):
    from tags.benchmark.hf_finetune import finetune_config
    from tags.benchmark.hf_models import HFTrainConfig, train_config
    from tags.training.config import config_from_dict

    base = train_config(tmp_path / "m", tmp_path / "b", tmp_path / "o", "blip",
                        HFTrainConfig(steps=10, lr=1e-3))  # fmt: skip
    assert base["recipe"] == "pretrain"
    hardest = finetune_config(base, "itm-hardest", pool_size=6, num_negatives=2)
    tags = finetune_config(base, "tags", istm_weight=0.5)
    dc = finetune_config(base, "tags-dc", dc_steps=4)
    for config in (hardest, tags, dc):
        assert config["recipe"] == "tags-dc" and "pretrain" not in config
        assert config["tags_dc"]["itm_miner"]["name"] == "hardest"
        config_from_dict(config)  # the trainer accepts it
    assert hardest["tags_dc"]["synthetic"]["source"] == "none"
    assert hardest["tags_dc"]["retrieval"]["pool_size"] == 6
    assert [p["weights"].get("istm") for p in hardest["phases"]] == [None]
    assert tags["tags_dc"]["synthetic"]["source"] == "dynamic"
    assert [(p["name"], p["steps"], p["weights"]["istm"]) for p in tags["phases"]] == [
        ("nsg", 10, 0.5)
    ]
    assert [(p["name"], p["steps"], p["lr"]) for p in dc["phases"]] == [
        ("nsg", 6, 1e-3), ("nsgdc", 4, 5e-4)
    ]  # fmt: skip
    assert dc["phases"][1]["weights"]["wod"] > 0 and dc["phases"][1]["init"] == "previous"
    assert base["recipe"] == "pretrain" and "tags_dc" not in base  # the base is not changed
    with pytest.raises(ValueError, match="fine-tunes a pretrain base"):
        finetune_config({"recipe": "vse", "data": {}, "phases": []}, "tags")
    with pytest.raises(ValueError, match="fine-tunes a vse base"):
        finetune_config(base, "plain")
    with pytest.raises(ValueError, match="dc_steps"):
        finetune_config(base, "tags-dc", dc_steps=10)


def test_finetune_config_blip_level_terms(tmp_path):
    """``itm_bce`` on every BLIP variant's phases, ``istm_bce`` only where there are
    synthetic negatives; 0 (the default) leaves the weights as they were."""
    from tags.benchmark.hf_finetune import finetune_config
    from tags.benchmark.hf_models import HFTrainConfig, train_config
    from tags.training.config import config_from_dict

    base = train_config(tmp_path / "m", tmp_path / "b", tmp_path / "o", "blip",
                        HFTrainConfig(steps=10, lr=1e-3))  # fmt: skip
    for variant in ("itm-hardest", "tags", "tags-dc"):
        config = finetune_config(base, variant, dc_steps=4, itm_bce=1.0, istm_bce=0.5)
        config_from_dict(config)  # the trainer accepts it
        off = finetune_config(base, variant, dc_steps=4)
        for on, plain in zip(config["phases"], off["phases"]):
            assert "itm_bce" not in plain["weights"] and "istm_bce" not in plain["weights"]
            extra = {"itm_bce": 1.0, **({"istm_bce": 0.5} if variant != "itm-hardest" else {})}
            assert on["weights"] == {**plain["weights"], **extra}


def test_negatives_accuracy_by_kind(tmp_path, shapes_with_val):
    from research.finetune_probes import negatives_accuracy

    from tags.benchmark.hf_models import HFModelConfig, build_clip

    data = json.loads((shapes_with_val / "dataset_shapes.json").read_text())
    train = [im for im in data["images"] if im["split"] == "train"]
    rows = []
    for im in train:
        sentence = im["sentences"][0]
        for kind, op in (("attribute", "replace"), ("relation", "swap"), ("object", "replace")):
            rows.append({"image_id": im["imgid"], "caption_id": sentence["sentid"],
                         "positive": sentence["raw"], "negative": sentence["raw"] + " x",
                         "edits": [{"type": kind, "operation": op}]})  # fmt: skip
    path = tmp_path / "neg.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = build_clip(tmp_path / "clip", HFModelConfig(image_size=32, patch_size=8,
                       hidden_size=32, num_layers=1, num_heads=4, projection_dim=16))  # fmt: skip
    result = negatives_accuracy(model, shapes_with_val, path, per_caption=2, limit_images=1)
    # one image, its first two negatives: an attribute and a role swap (the object is third)
    assert result["pairs"] == 2
    assert set(result) == {"overall", "attribute", "role", "pairs"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["vse.loss=miner", "vse.synthetic_negatives=1"], "needs vse.loss: contrastive"),
        (["vse.loss=contrastive"], "vse.synthetic_negatives > 0"),
    ],
)
def test_hard_negative_weight_without_its_inputs_is_refused(tmp_path, overrides, message):
    from tags.training import load_config
    from tags.training.config import ConfigError
    from tests.test_training_backends import CONFIG

    with pytest.raises(ConfigError, match=message):
        load_config(CONFIG, [f"output_dir={tmp_path}", "data.negatives=n.jsonl",
                             "phases.0.weights.hard_negative=1.0", *overrides])  # fmt: skip


def test_sugarcrepe_export_scores_the_same_as_the_minimal_pairs(tmp_path, shapes_with_val):
    from research.finetune_probes import export_pairs_sugarcrepe, sugarcrepe_accuracy

    from tags.benchmark.hf_models import HFModelConfig, build_clip, evaluate_hf

    pairs = split_minimal_pairs(shapes_with_val, "test")
    suite = export_pairs_sugarcrepe(pairs, tmp_path / "sc")
    counts = {f.stem: len(json.loads(f.read_text())) for f in suite.glob("*.json")}
    assert sum(counts.values()) == len(pairs)
    item = next(iter(json.loads((suite / "replace_att.json").read_text()).values()))
    assert set(item) == {"filename", "caption", "negative_caption"}
    model = build_clip(tmp_path / "clip", HFModelConfig(image_size=32, patch_size=8,
                       hidden_size=32, num_layers=1, num_heads=4, projection_dim=16))  # fmt: skip
    scores = evaluate_hf(model, shapes_with_val, "test")
    suite_scores = sugarcrepe_accuracy(model, suite, shapes_with_val / "images")
    assert suite_scores["overall"] == pytest.approx(100 * scores["mp"])
    for kind, name in (("attribute", "replace_att"), ("object", "replace_obj")):
        assert suite_scores[name] == pytest.approx(100 * scores[f"mp_{kind}"])


def _record(rsum, mp, seconds=10.0):
    scores = {"rsum": rsum, "mp": mp, "mp_attribute": mp, "mp_object": mp, "mp_relation": mp}
    return {"scores": {"test": {**scores, "mp_role": 0.5}}, "train_seconds": seconds}


def test_finetune_table_summary_goal_and_readme_block():
    """The README's fine-tuning tables are regenerated by hf_finetune.py --readme: the rows,
    the goal check and the splice between the block's markers."""
    from research.finetune_table import (
        block_markers,
        goal_lines,
        readme_table,
        splice_block,
        summarize,
    )

    plain = summarize([_record(200.0, 0.60), _record(202.0, 0.62)], "test")
    assert plain["mp"] == pytest.approx(61.0) and plain["mp_std"] == pytest.approx(1.414, abs=1e-3)
    assert plain["rsum"] == pytest.approx(201.0) and plain["train_seconds"] == 10.0
    gain = summarize([_record(200.0, 0.70), _record(201.0, 0.68)], "test")
    small = summarize([_record(200.0, 0.63), _record(201.0, 0.61)], "test")
    lossy = summarize([_record(190.0, 0.70), _record(190.0, 0.70)], "test")
    (line,) = goal_lines({"plain": plain, "negclip": gain}, "clip")
    assert line.startswith("CLIP + tags negatives (NegCLIP-style) vs CLIP plain: MP +8.0")
    assert line.endswith("reached.") and "not reached" not in line
    assert goal_lines({"plain": plain, "negclip": small}, "clip")[0].endswith("not reached.")
    assert goal_lines({"plain": plain, "negclip": lossy}, "clip")[0].endswith("not reached.")
    blip = {"itm-hardest": plain, "tags": gain, "tags-dc": small}
    assert [x.split(":")[0] for x in goal_lines(blip, "blip")] == [
        "BLIP TAGS (ITM + ISTM) vs BLIP ITM + retrieved hard negatives",
        "BLIP TAGS-DC vs BLIP ITM + retrieved hard negatives",
    ]

    rows = readme_table({"plain": plain, "negclip": gain}, "clip").splitlines()
    assert rows[0] == "| model | RSum | MP | attribute | object | relation | role swap |"
    assert rows[2].startswith("| CLIP plain | 201.0 ± 1.4 | 61.0 ± 1.4 |")
    assert rows[3].startswith("| CLIP + tags negatives (NegCLIP-style) | 200.5 ± 0.7 | 69.0 ±")

    begin, end = block_markers("hf_finetune.py clip")
    text = f"intro\n{begin}\n| old |\n{end}\nafter\n"
    assert splice_block(text, "hf_finetune.py clip", "| new |") == (
        f"intro\n{begin}\n| new |\n{end}\nafter\n"
    )
    for broken in ("no markers\n", f"{end}\n{begin}\n", f"{begin}\n{begin}\n{end}\n"):
        with pytest.raises(ValueError, match="needs exactly one"):
            splice_block(broken, "hf_finetune.py clip", "| new |")


def test_readme_holds_the_regenerated_finetune_blocks():
    """Both families' tables in the README sit between the markers hf_finetune.py rewrites."""
    from research.finetune_table import splice_block

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for family in ("clip", "blip"):
        assert splice_block(readme, f"hf_finetune.py {family}", "| x |") != readme


def test_a_run_of_other_settings_is_never_replaced_silently(tmp_path):
    """hf_finetune.py keeps finished runs: a run folder holding another config is refused in
    one line naming what differs (before, the earlier run was cleared and retrained)."""
    from tags.benchmark.hf_finetune import (
        SettingsChangedError,
        config_differences,
        run_finetune,
    )

    old = {"output_dir": str(tmp_path / "run" / "train"), "phases": [{"steps": 200, "lr": 2e-4}]}
    new = {**old, "phases": [{"steps": 100, "lr": 2e-4}], "seed": 1}
    assert config_differences(old, new) == ["phases.0.steps", "seed"]
    assert config_differences(old, old) == []
    model = tmp_path / "run" / "train" / "model"
    model.mkdir(parents=True)
    (model / "weights").write_text("kept")
    record = {"config": old, "train_seconds": 1.0, "scores": {"test": {"rsum": 1.0}}}
    (tmp_path / "run" / "result.json").write_text(json.dumps(record))
    with pytest.raises(SettingsChangedError, match=r"differs in: phases\.0\.steps, seed"):
        run_finetune(new, tmp_path / "run", tmp_path / "data", replace_other_settings=False)
    assert (model / "weights").read_text() == "kept"
    assert json.loads((tmp_path / "run" / "result.json").read_text()) == record
    # the same config is reused as before (nothing trained, scores kept)
    assert run_finetune(old, tmp_path / "run", tmp_path / "data")["scores"] == record["scores"]
