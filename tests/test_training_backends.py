"""Recipes on HF backends (raw images): vse on CLIP / SigLIP (miners and the model's own
contrastive loss with synthetic negatives); OUT/model loads with plain transformers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tags.training import load_config, training_function
from tests._hf_tiny import MAKERS, render_images

CONFIG = Path(__file__).resolve().parents[1] / "scripts" / "configs" / "tiny_clip_vse_cpu.yaml"
CAPTIONS = [
    "a red dog runs on the grass",
    "two cats sit near a table",
    "a man holding a ball",
    "a blue car on the street",
]
SWAPS = {"dog": "cat", "cats": "dogs", "man": "woman", "car": "bus"}


def write_corpus(root: Path, images_per_caption: int = 1) -> tuple[Path, Path, Path]:
    """Karpathy JSON (train split, flat image folder) + a `tags generate`-style JSONL."""
    image_dir = root / "images"
    image_dir.mkdir(parents=True)
    images, negatives, sentid = [], [], 0
    for k, image in enumerate(render_images(len(CAPTIONS), seed=3)):
        image.save(image_dir / f"{k}.png")
        sentences = []
        for _ in range(images_per_caption):
            caption = CAPTIONS[k]
            sentences.append({"raw": caption, "sentid": sentid})
            word = next(w for w in SWAPS if w in caption.split())
            negatives.append(
                {
                    "caption_id": sentid,
                    "positive": caption,
                    "negative": caption.replace(word, SWAPS[word]),
                    "edits": [],
                }
            )
            sentid += 1
        images.append(
            {"imgid": k, "split": "train", "filename": f"{k}.png", "sentences": sentences}
        )
    captions = root / "dataset.json"
    captions.write_text(json.dumps({"images": images}), encoding="utf-8")
    neg = root / "negatives.jsonl"
    neg.write_text("".join(json.dumps(r) + "\n" for r in negatives), encoding="utf-8")
    return captions, image_dir, neg


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    dirs = {name: make(root / name) for name, make in MAKERS.items()}
    return dirs, write_corpus(root / "data")


def losses(out: Path) -> list[float]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["loss/total"] for r in rows if "loss/total" in r]


def run(corpus, tmp_path, name, *overrides, steps=6):
    dirs, (captions, images, negatives) = corpus
    config = load_config(
        CONFIG,
        [
            f"model.path={dirs[name]}",
            f"data.captions={captions}",
            f"data.images={images}",
            f"data.negatives={negatives}",
            f"output_dir={tmp_path / 'out'}",
            "progress_bar=false",
            "tensorboard=false",
            f"phases.0.steps={steps}",
            "phases.0.lr=3.0e-3",  # (a later override wins)
            "optim.warmup_ratio=0.0",
            *overrides,
        ],
    )
    result = training_function(config)
    return result, losses(tmp_path / "out")


@pytest.mark.parametrize(
    ("name", "overrides", "steps"),
    [
        ("clip", ["vse.synthetic_negatives=1"], 6),
        ("siglip", ["vse.synthetic_negatives=1"], 6),
        ("clip", ["vse.loss=miner", "vse.miner.name=selhn"], 6),
        ("clip", ["vse.loss=miner", "vse.miner.name=hardest", "vse.queue_size=8"], 6),
        # a random tiny BLIP's [CLS] text state hardly depends on the words at first: it
        # needs ~15 steps before the ITC loss leaves ln(4)
        ("blip", ["vse.loss=contrastive", "phases.0.lr=1.0e-3"], 24),
    ],
    ids=["clip-negclip", "siglip-negclip", "clip-selhn", "clip-fne-queue", "blip-itc"],
)
def test_vse_on_backends_loss_falls_on_repeated_batch(corpus, tmp_path, name, overrides, steps):
    # 4 pairs, batch 4: every step sees the same batch (in another order)
    result, values = run(corpus, tmp_path, name, *overrides, steps=steps)
    assert len(values) == steps and all(math.isfinite(v) for v in values)
    tail = values[-max(2, steps // 4) :]
    assert sum(tail) / len(tail) < 0.9 * values[0], values
    assert result.state.step == steps


def test_negclip_columns_and_plain_transformers_reload(corpus, tmp_path):
    from transformers import AutoProcessor, CLIPModel

    result, _ = run(corpus, tmp_path, "clip", "vse.synthetic_negatives=1", steps=3)
    rows = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert "contrastive/pos_beats_synthetic" in rows[-1]
    model = CLIPModel.from_pretrained(tmp_path / "out" / "model").eval()
    processor = AutoProcessor.from_pretrained(tmp_path / "out" / "model")
    trained = result.model.eval()
    inputs = processor(
        images=render_images(2, seed=3), text=CAPTIONS[:2], return_tensors="pt", padding=True
    )
    with torch.no_grad():
        assert torch.equal(model(**inputs).logits_per_image, trained(**inputs).logits_per_image)
    original = CLIPModel.from_pretrained(corpus[0]["clip"]).eval()
    with torch.no_grad():
        assert not torch.allclose(
            original(**inputs).logits_per_image, model(**inputs).logits_per_image
        )


def test_cli_train_with_issue_command_line(corpus, tmp_path):
    from tags.cli import main

    dirs, (captions, images, _) = corpus
    out = tmp_path / "cli"
    code = main(
        [
            "train", "--config", str(CONFIG), f"model.path={dirs['clip']}",
            f"data.captions={captions}", f"data.images={images}", f"output_dir={out}",
            "max_steps=2", "progress_bar=false", "tensorboard=false",
        ]
    )  # fmt: skip
    assert code == 0
    assert (out / "checkpoints").is_dir()


def test_bad_training_images_skipped_or_stop(corpus, tmp_path, capsys):
    dirs, _ = corpus
    captions, images, _ = write_corpus(tmp_path / "data")
    (images / "2.png").write_bytes(b"\x89PNG broken")
    base = [f"model.path={dirs['clip']}", f"data.captions={captions}", f"data.images={images}"]
    config = load_config(
        CONFIG, [*base, f"output_dir={tmp_path / 'a'}", "phases.0.steps=1", "batch_size=2",
                 "progress_bar=false", "tensorboard=false"]
    )  # fmt: skip
    result = training_function(config)
    assert result.state.step == 1
    assert "skipping image 2" in capsys.readouterr().out
    from tags.data.images import ImageError

    config = load_config(
        CONFIG, [*base, f"output_dir={tmp_path / 'b'}", "data.on_bad_image=error",
                 "progress_bar=false", "tensorboard=false"]
    )  # fmt: skip
    with pytest.raises(ImageError, match=r"2\.png"):
        training_function(config)


def test_tags_model_dir_is_refused_for_raw_images(corpus, tmp_path):
    from tags.training.config import ConfigError

    _, (captions, images, _) = corpus
    config = load_config(
        CONFIG, [f"data.captions={captions}", f"data.images={images}", f"output_dir={tmp_path}"]
    )
    with pytest.raises(ConfigError, match=r"needs model\.path"):
        training_function(config)
