"""Recipes on HF backends (raw images): vse on CLIP / SigLIP (miners and the model's own
contrastive loss with synthetic negatives); OUT/model loads with plain transformers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from _hf_corpus import CAPTIONS, write_corpus
from research.hf_tiny import MAKERS, render_images

from tags.cli import main as cli_main
from tags.training import load_config, training_function
from tags.training.state import load_custom_states

CONFIG = Path(__file__).resolve().parents[1] / "scripts" / "configs" / "tiny_clip_vse_cpu.yaml"


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
        # BLIP-2 ITC: max over the query embeddings of each image. A random tiny BLIP-2
        # starts at the uniform plateau (every pair alike): SelHN leaves it, the hardest
        # negative alone stays at 2 x margin for 24+ steps (docs/backends.md)
        ("blip-2", ["vse.synthetic_negatives=1", "phases.0.lr=1.0e-3"], 24),
        ("blip-2", ["vse.loss=miner", "vse.miner.name=selhn", "phases.0.lr=1.0e-3"], 24),
    ],
    ids=[
        "clip-negclip", "siglip-negclip", "clip-selhn", "clip-fne-queue", "blip-itc",
        "blip2-itc-negclip", "blip2-selhn",
    ],
)  # fmt: skip
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
    with pytest.raises(ConfigError, match=r"model\.path"):
        training_function(config)


BLIP_TAGS_DC = CONFIG.parent / "tiny_blip_tags_dc_cpu.yaml"
BLIP_PRETRAIN = CONFIG.parent / "tiny_blip_pretrain_cpu.yaml"


def test_tags_dc_on_blip_two_phases_heads_saved_and_reloaded(corpus, tmp_path):
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    from tags.backends import load_backend

    dirs, (captions, images, _) = corpus
    out = tmp_path / "out"
    config = load_config(
        BLIP_TAGS_DC,
        [f"model.path={dirs['blip']}", f"data.captions={captions}", f"data.images={images}",
         f"output_dir={out}", "progress_bar=false", "tensorboard=false"],
    )  # fmt: skip
    result = training_function(config)
    assert result.state.step == 3
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    # NSG: no WoD/WoC; NSGDC: all five terms, finite; the dynamic generator made negatives
    assert rows[0]["loss/wod"] == 0.0 and rows[-1]["loss/wod"] > 0.0
    assert all(math.isfinite(r["loss/total"]) for r in rows)
    assert rows[-1]["synthetic/per_caption"] > 0
    for phase in ("0_nsg", "1_nsgdc"):
        assert (out / "phases" / phase / "tags_heads.safetensors").is_file()
    model = BlipForImageTextRetrieval.from_pretrained(out / "model").eval()
    AutoProcessor.from_pretrained(out / "model")
    backend = load_backend(out / "model")
    assert backend.supports("mlm") and backend.heads.wod is not None
    trained = result.model.eval()
    with torch.no_grad():
        for name, p in model.state_dict().items():
            assert torch.equal(p, trained.state_dict()[name]), name
        # the reloaded heads are tied to the word embeddings again and can refill
        text = backend.text_inputs(["a red dog runs on the grass"])
        mask = torch.zeros_like(text["input_ids"], dtype=torch.bool)
        mask[0, 2] = True
        pixels = backend.image_inputs(render_images(1, seed=3))
        logits = backend.mlm_logits(text, pixels, mask)
    assert logits.shape == (1, backend.vocab_size)
    from safetensors.torch import load_file

    nsg = load_file(str(out / "phases" / "0_nsg" / "tags_heads.safetensors"))
    final = load_file(str(out / "model" / "tags_heads.safetensors"))
    # WoD trains in NSGDC only (weight 0 in NSG): the saved final head moved
    assert not torch.equal(nsg["wod.classifier.weight"], final["wod.classifier.weight"])
    assert torch.equal(final["wod.classifier.weight"], backend.heads.wod.classifier.weight)
    tied = backend.model.text_encoder.get_input_embeddings().weight
    assert backend.heads.mlm.decoder.weight is tied and backend.heads.woc.decoder.weight is tied


def test_tags_dc_on_blip_loss_falls_on_repeated_batch(corpus, tmp_path):
    dirs, (captions, images, _) = corpus
    config = load_config(
        BLIP_TAGS_DC,
        [f"model.path={dirs['blip']}", f"data.captions={captions}", f"data.images={images}",
         f"output_dir={tmp_path}", "progress_bar=false", "tensorboard=false",
         "phases=[{name: main, steps: 10, lr: 3.0e-3, weights: {itm: 1.0, mlm: 0.1, "
         "istm: 1.0e-3, wod: 1.0e-3, woc: 1.0e-3}}]"],
    )  # fmt: skip
    training_function(config)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    total = [r["loss/total"] for r in rows]
    assert all(math.isfinite(v) for v in total)
    # a random tiny BLIP scores every pair alike (ITM hinge stays at the margin at first);
    # the token losses carry the fall
    for key in ("loss/total", "loss/mlm", "loss/wod"):
        values = [r[key] for r in rows]
        assert sum(values[-3:]) / 3 < 0.98 * sum(values[:2]) / 2, (key, values)


@pytest.mark.slow
@pytest.mark.distributed
def test_clip_two_processes_equal_one(two_processes, tmp_path):
    from _dist_scripts.clip_ddp import config

    # _dist_scripts/clip_ddp.py on the launch's own tiny CLIP and corpus
    ddp_out = two_processes.check("clip")
    paths = two_processes.clip_paths
    single = training_function(config(tmp_path / "one", *paths))
    ddp = torch.load(ddp_out / "clip.pt")
    ref = single.model.state_dict()
    assert ddp.keys() == ref.keys()
    for key, value in ref.items():
        torch.testing.assert_close(ddp[key], value, atol=1e-5, rtol=1e-4, msg=key)
    from transformers import CLIPModel

    initial = CLIPModel.from_pretrained(paths[0]).state_dict()
    assert max((ref[k] - initial[k]).abs().max().item() for k in ref) > 1e-3
    one = losses(tmp_path / "one")
    two = losses(ddp_out / "clip")
    assert one == pytest.approx(two, abs=1e-5) and len(one) == 3


def test_tags_dc_on_blip2_trains_and_saves_plain_blip2(corpus, tmp_path):
    from transformers import Blip2ForImageTextRetrieval

    from tags.backends import Blip2Backend, load_backend

    dirs, (captions, images, _) = corpus
    out = tmp_path / "out"
    config = load_config(
        BLIP_TAGS_DC,
        [f"model.path={dirs['blip-2']}", f"data.captions={captions}", f"data.images={images}",
         f"output_dir={out}", "progress_bar=false", "tensorboard=false"],
    )  # fmt: skip
    result = training_function(config)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert result.state.step == 3 and all(math.isfinite(r["loss/total"]) for r in rows)
    assert rows[-1]["loss/woc"] > 0 and rows[-1]["synthetic/per_caption"] > 0
    model = Blip2ForImageTextRetrieval.from_pretrained(out / "model")
    initial = Blip2ForImageTextRetrieval.from_pretrained(dirs["blip-2"])
    moved = max(
        (a - initial.state_dict()[k]).abs().max().item() for k, a in model.state_dict().items()
    )
    assert moved > 1e-4
    backend = load_backend(out / "model")
    assert isinstance(backend, Blip2Backend) and backend.supports("mlm")
    assert backend.heads.mlm.decoder.weight is backend.model.get_input_embeddings().weight


def test_in_training_evaluation_on_raw_images(corpus, tmp_path):
    from tags.backends import load_backend
    from tags.evaluation import retrieval_metrics
    from tags.evaluation.images import load_image_retrieval_split
    from tags.evaluation.scoring import compute_scores

    _, (captions, images, _) = corpus
    out = tmp_path / "out"
    run(
        corpus, tmp_path, "clip", f"eval.captions={captions}", f"eval.images={images}",
        "eval.split=train", "eval.mode=dual", steps=2,
    )  # fmt: skip
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    logged = [r for r in rows if "eval/rsum" in r]
    assert len(logged) == 1 and logged[0]["step"] == 2
    # the logged metrics are those of the trained model on the same images
    backend = load_backend(out / "model")
    sets = load_image_retrieval_split(captions, images, backend, split="train", max_length=32)
    i2t, _ = compute_scores(backend, sets[0], sets[1], "dual")
    expected = retrieval_metrics(i2t, sets[1].txt2img)
    assert logged[0]["eval/rsum"] == pytest.approx(expected["rsum"])


def test_recipes_refuse_backends_that_cannot_serve_them(corpus, tmp_path):
    from tags.backends import BackendError

    dirs, (captions, images, _) = corpus
    base = [f"data.captions={captions}", f"data.images={images}"]
    config = load_config(
        BLIP_TAGS_DC, [f"model.path={dirs['clip']}", *base, f"output_dir={tmp_path / 'a'}"]
    )
    with pytest.raises(BackendError, match="clip backend has no 'token_states'"):
        training_function(config)
    config = load_config(
        BLIP_PRETRAIN, [f"model.path={dirs['siglip']}", *base, f"output_dir={tmp_path / 'b'}"]
    )
    with pytest.raises(BackendError, match=r"siglip backend has no 'itm' capability \(pretrain"):
        training_function(config)


def test_vse_on_blip2_itc_learns_past_the_uniform_plateau(corpus, tmp_path):
    """BLIP-2's ITC (max over query embeddings, temperature 0.07): a random tiny model first
    drops to ln(4) (every caption alike), then ranks its own caption first."""
    _, values = run(corpus, tmp_path, "blip-2", "phases.0.lr=3.0e-3", steps=24)
    assert all(math.isfinite(v) for v in values)
    assert sum(values[-3:]) / 3 < math.log(4) - 0.1 < values[0], values


def test_aoq_on_blip2_ranks_by_the_model_itc(corpus, tmp_path):
    """AOQ's offline ranking on BLIP-2 uses its ITC (``logits_per_image`` of the HF model:
    max over the query embeddings), round 2 trains with it."""
    from transformers import Blip2ForImageTextRetrieval

    from tags.backends import load_backend
    from tags.mining import OfflineNegatives

    dirs, (_, images, _) = corpus
    run(
        corpus, tmp_path, "blip-2", "vse.loss=miner", "vse.miner.name=hardest",
        "phases=[{name: round1, steps: 1, lr: 1.0e-4},"
        " {name: round2, steps: 2, lr: 1.0e-4, miner: aoq, init: initial}]",
    )  # fmt: skip
    out = tmp_path / "out"
    offline = OfflineNegatives.load(out / "phases" / "1_round2" / "aoq_offline_negatives.pt")
    backend = load_backend(dirs["blip-2"])  # for its processor
    model = Blip2ForImageTextRetrieval.from_pretrained(out / "phases" / "0_round1").eval()
    from PIL import Image

    pixels = backend.image_inputs(
        [Image.open(images / f"{k}.png").convert("RGB") for k in range(4)]
    )
    with torch.no_grad():
        itc = model(
            **pixels, **backend.text_inputs(CAPTIONS), use_image_text_matching_head=False
        ).logits_per_image  # [images, captions], one caption per image
    itc = itc.masked_fill(torch.eye(4, dtype=torch.bool), float("-inf"))
    assert offline.i2t.shape == (4, 3)
    assert torch.equal(offline.i2t, itc.topk(3, dim=1).indices)
    assert torch.equal(offline.t2i[:, 0], itc.t().argmax(dim=1))
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["phase"] == 1 and "i2t/weight" in rows[-1]
    assert all(math.isfinite(r["loss/total"]) for r in rows)


@pytest.mark.parametrize("name", ["blip", "blip-2"])
def test_pretrain_on_blip_backends_loss_falls_and_saves_the_mlm_head(corpus, tmp_path, name):
    """``pretrain`` (ITM on random negatives + MLM + ITC) on an HF cross-encoder: the MLM
    head sits on the image-grounded text states, tied to the word embeddings, saved beside."""
    from tags.backends import load_backend

    dirs, (captions, images, _) = corpus
    out = tmp_path / "out"
    config = load_config(
        BLIP_PRETRAIN,
        [f"model.path={dirs[name]}", f"data.captions={captions}", f"data.images={images}",
         f"output_dir={out}", "progress_bar=false", "tensorboard=false",
         "phases.0.steps=10", "phases.0.lr=3.0e-3"],
    )  # fmt: skip
    result = training_function(config)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert result.state.step == 10 and len(rows) == 10
    for key in ("loss/total", "loss/itm", "loss/mlm", "loss/itc"):
        values = [r[key] for r in rows]
        assert all(math.isfinite(v) and v > 0 for v in values), key
    for key in ("loss/total", "loss/itm", "loss/mlm"):  # the batch repeats (4 pairs, batch 4)
        values = [r[key] for r in rows]
        assert sum(values[-3:]) / 3 < 0.97 * values[0], (key, values)
    backend = load_backend(out / "model")
    assert backend.supports("mlm") and backend.heads.settings["names"] == ["mlm"]
    assert backend.heads.mlm.decoder.weight is backend.model.get_input_embeddings().weight
    trained = result.model.state_dict()
    assert all(torch.equal(v, trained[k]) for k, v in backend.model.state_dict().items())
    # tags-dc after pretrain adds the missing WoD/WoC heads, keeps the pretrained MLM head
    mlm = {k: v.clone() for k, v in backend.heads.mlm.state_dict().items()}
    heads = backend.ensure_heads()
    assert heads.settings["names"] == ["mlm", "wod", "woc"]
    assert all(torch.equal(v, heads.mlm.state_dict()[k]) for k, v in mlm.items())
    assert torch.equal(heads.woc.transform.dense.weight, heads.mlm.transform.dense.weight)
    assert heads.woc.decoder.weight is backend.model.get_input_embeddings().weight


def test_fne_queue_on_blip2_keeps_one_key_per_query(corpus, tmp_path):
    """FNE with its momentum queue on BLIP-2: the queue holds every image's query embeddings
    ``[size, Q, D]`` and the candidates are ranked by the max over them."""
    result, values = run(
        corpus, tmp_path, "blip-2", "vse.loss=miner", "vse.miner.name=fne", "vse.queue_size=8",
        steps=3,
    )  # fmt: skip
    assert len(values) == 3 and all(math.isfinite(v) for v in values)
    states = load_custom_states(result.checkpoint)
    queue = next(s["image_feats"] for s in states if "image_feats" in s)
    num_queries = result.model.config.num_query_tokens
    assert queue.shape == (8, num_queries, result.model.config.image_text_hidden_size)
    rows = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["queue/filled"] == 8.0  # 2 steps x 4 keys, then full
    # the keys are distinct per query (not one vector repeated)
    assert (queue[:, 0] - queue[:, 1]).abs().max() > 1e-4


def test_saved_heads_are_restored_in_place(corpus, tmp_path):
    """A phase that starts from saved weights (init: initial / previous) gets the TAGS heads
    saved beside them back, into the parameters the optimizer holds."""
    from tags.backends import load_backend

    dirs, _ = corpus
    backend = load_backend(dirs["blip"])
    backend.ensure_heads()
    saved = {k: v.clone() for k, v in backend.heads.state_dict().items()}
    backend.save_extras(tmp_path / "phase")
    weight = backend.heads.wod.classifier.weight
    with torch.no_grad():
        for p in backend.heads.parameters():
            p.add_(1.0)
    assert not torch.equal(weight, saved["wod.classifier.weight"])
    backend.load_extras(tmp_path / "phase")
    assert backend.heads.wod.classifier.weight is weight  # in place
    for key, value in backend.heads.state_dict().items():
        if not key.endswith("decoder.weight"):  # tied to the word embeddings, not saved
            assert torch.equal(value, saved[key]), key
    backend.load_extras(tmp_path / "nothing-here")  # no heads saved: left as they are
    assert torch.equal(backend.heads.wod.classifier.weight, saved["wod.classifier.weight"])


def test_training_image_names_outside_the_root_are_refused_unless_allowed(corpus, tmp_path, capsys):
    dirs, _ = corpus
    captions, images, _ = write_corpus(tmp_path / "data")
    data = json.loads(captions.read_text())
    (images / "1.png").rename(tmp_path / "data" / "1.png")
    data["images"][1]["filename"] = "../1.png"
    captions.write_text(json.dumps(data), encoding="utf-8")
    argv = [
        "train", "--config", str(CONFIG), f"model.path={dirs['clip']}",
        f"data.captions={captions}", f"data.images={images}", f"output_dir={tmp_path / 'a'}",
        "max_steps=1", "progress_bar=false", "tensorboard=false",
    ]  # fmt: skip
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "'../1.png' points outside the image root" in err
    assert "data.allow_outside_root" in err and "Traceback" not in err
    assert not (tmp_path / "a").exists()
    assert cli_main([*argv, "data.allow_outside_root=true"]) == 0
