"""End to end on images rendered by ``tags make-benchmark --save-images`` (the session's
``shapes_benchmark``): ``tags generate`` -> ``tags train`` -> ``tags evaluate`` with tiny
random HF checkpoints, through the CLI as a user runs it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from research.hf_tiny import make_blip, make_clip

from tags.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "scripts" / "configs"
FAST = ["--k", "2", "--l", "3", "--top-m", "2", "--masking", "word", "--no-progress"]
QUIET = ["progress_bar=false", "tensorboard=false"]


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def split_sentences(captions: Path, split: str) -> dict[int, str]:
    images = json.loads(captions.read_text())["images"]
    return {s["sentid"]: s["raw"] for i in images if i["split"] == split for s in i["sentences"]}


def evaluate_and_check(model_dir: Path, captions: Path, images: Path, mode: str, out: Path):
    """``tags evaluate`` on the test split; its metrics are those of ``model_dir``."""
    from tags.backends import load_backend
    from tags.evaluation import retrieval_metrics
    from tags.evaluation.images import load_image_retrieval_split
    from tags.evaluation.scoring import compute_scores

    argv = ["evaluate", "--model", str(model_dir), "--captions", str(captions), "--images"]
    argv += [str(images), "--split", "test", "--mode", mode, "--device=cpu", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert (report["n_images"], report["n_texts"]) == (4, 20)
    backend = load_backend(model_dir)
    image_set, text_set, _ = load_image_retrieval_split(captions, images, backend, split="test")
    i2t, _ = compute_scores(backend, image_set, text_set, mode)
    assert report["metrics"] == pytest.approx(retrieval_metrics(i2t, text_set.txt2img))
    return report


def test_clip_negclip_generate_train_evaluate(shapes_benchmark, tmp_path, capsys):
    """CLIP: negatives ranked by CLIP against the rendered image, NegCLIP training with them
    as extra text columns, dual retrieval on the test split."""
    captions, images = shapes_benchmark / "dataset_shapes.json", shapes_benchmark / "images"
    clip = make_clip(tmp_path / "clip")
    neg = tmp_path / "neg.jsonl"
    argv = ["generate", "--captions", str(captions), "--split", "train", "--out", str(neg)]
    assert main([*argv, "--model", str(clip), "--images", str(images), *FAST]) == 0
    rows = jsonl(neg)
    train = split_sentences(captions, "train")
    assert rows and {r["caption_id"] for r in rows} <= set(train)
    assert all(r["negative"] != r["positive"] == train[r["caption_id"]] for r in rows)

    out = tmp_path / "run"
    argv = ["train", "--config", str(CONFIGS / "tiny_clip_vse_cpu.yaml"), f"model.path={clip}"]
    argv += [f"data.captions={captions}", f"data.images={images}", f"data.negatives={neg}"]
    argv += ["vse.synthetic_negatives=1", f"output_dir={out}", "phases.0.steps=3", *QUIET]
    assert main(argv) == 0
    logged = jsonl(out / "metrics.jsonl")
    assert len(logged) == 3 and all(math.isfinite(r["loss/total"]) for r in logged)
    assert "contrastive/pos_beats_synthetic" in logged[-1]  # the generated negatives were used

    from transformers import CLIPModel

    trained = CLIPModel.from_pretrained(out / "model").state_dict()
    initial = CLIPModel.from_pretrained(clip).state_dict()
    assert max((trained[k] - initial[k]).abs().max().item() for k in initial) > 1e-4
    evaluate_and_check(out / "model", captions, images, "dual", tmp_path / "metrics.json")


def test_blip_pretrain_then_tags_dc_then_two_stage_evaluate(shapes_benchmark, tmp_path):
    """BLIP: ``pretrain`` (ITM + MLM + ITC) saves an MLM head; ``tags-dc`` from that directory
    refills with it (dynamic generator), adds WoD/WoC; two-stage retrieval evaluates it."""
    captions, images = shapes_benchmark / "dataset_shapes.json", shapes_benchmark / "images"
    blip = make_blip(tmp_path / "blip")
    data = [f"data.captions={captions}", f"data.images={images}", *QUIET]
    pre = tmp_path / "pre"
    argv = ["train", "--config", str(CONFIGS / "tiny_blip_pretrain_cpu.yaml")]
    assert main([*argv, f"model.path={blip}", f"output_dir={pre}", "phases.0.steps=2", *data]) == 0
    heads = json.loads((pre / "model" / "tags_heads.json").read_text())
    assert heads["names"] == ["mlm"]

    dc = tmp_path / "dc"
    argv = ["train", "--config", str(CONFIGS / "tiny_blip_tags_dc_cpu.yaml")]
    assert main([*argv, f"model.path={pre / 'model'}", f"output_dir={dc}", *data]) == 0
    logged = jsonl(dc / "metrics.jsonl")
    assert all(math.isfinite(r["loss/total"]) for r in logged)
    assert logged[0]["synthetic/per_caption"] > 0 and logged[-1]["loss/woc"] > 0
    from safetensors.torch import load_file

    assert json.loads((dc / "model" / "tags_heads.json").read_text())["names"] == [
        "mlm", "wod", "woc",
    ]  # fmt: skip
    # tags-dc went on from the pretrained MLM head, not a fresh one: 3 Adam steps at lr <= 1e-3
    # move a weight by ~3e-3 at most, a fresh head (normal, std 0.02) differs by ~0.1
    key = "mlm.transform.dense.weight"
    before = load_file(str(pre / "model" / "tags_heads.safetensors"))[key]
    after = load_file(str(dc / "model" / "tags_heads.safetensors"))[key]
    assert (after - before).abs().max() < 5e-3 < 2e-2 < before.abs().max()
    evaluate_and_check(dc / "model", captions, images, "two-stage", tmp_path / "metrics.json")
