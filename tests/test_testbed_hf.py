"""Hugging Face CLIP and BLIP on the binding testbed (tags/testbed/hf.py): rendered scenes in,
the backend's own preprocessing and scores out, plain and oracle runs of each family, and
the method's added negatives reaching the loss of the training step."""

import json
from dataclasses import replace

import pytest
import torch
from research import headroom

from tags.benchmark.render import render_scene
from tags.testbed import TestbedConfig, training, world
from tags.testbed.dual import NOT_ADDED
from tags.testbed.evaluate import KINDS
from tags.testbed.hf import HFMatcher, SceneImages
from tags.testbed.inputs import to_device
from tags.testbed.pixels import pixel_features

CPU = torch.device("cpu")
TINY = ["--hidden", "32", "--layers", "1", "--image-size", "32", "--batch-size", "6"]
FAMILIES = ("hf-clip", "hf-blip")


def _config(variant: str, negatives: str = "oracle", **extra) -> TestbedConfig:
    values = dict(variant=variant, negatives=negatives, perception="pixels", hidden=32,
                  layers=1, image_size=32, batch_size=6, device="cpu")  # fmt: skip
    return TestbedConfig(**{**values, **extra})


def _batch(config: TestbedConfig, model: HFMatcher, negatives: str = "oracle") -> world.Batch:
    sampler = world.NegativeSampler(KINDS)
    batch = world.make_batch(1, 0, 6, negatives, 4, sampler, SceneImages(config.image_size))
    return replace(batch, labels=pixel_features(model.cnn, batch.labels, CPU))


@pytest.mark.parametrize("variant", FAMILIES)
@pytest.mark.parametrize("negatives", ["plain", "oracle"])
def test_a_run_of_each_family_trains_and_evaluates_every_kind(variant, negatives, tmp_path):
    out = tmp_path / "run.json"
    argv = ["--variant", variant, "--perception", "pixels", "--negatives", negatives, *TINY,
            "--steps", "2", "--eval-every", "2", "--eval-scenes", "6", "--device", "cpu"]  # fmt: skip
    assert headroom.main([*argv, "--rsum", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["steps_done"] == 2 and [r["step"] for r in result["curve"]] == [0, 2]
    assert set(KINDS) <= set(result["final"]) and "rsum" in result["final"]["retrieval"]
    loss = {"hf-clip": "contrastive", "hf-blip": "itm"}[variant]
    assert result["config"]["loss"] == loss and result["config"]["image_size"] == 32


@pytest.mark.parametrize("variant", FAMILIES)
def test_rows_score_as_the_backend_scores_them_on_its_own_pixels(variant):
    config = _config(variant)
    model = training.initial_model(config).eval()
    batch = world.make_batch(1, 0, 6, "oracle", 4, world.NegativeSampler(KINDS), SceneImages(32))
    # the fast path (PIL resize, normalised on the device) = the backend's processor
    pixels = pixel_features(model.cnn, batch.labels, CPU)
    own = model.backend.image_inputs([render_scene(s) for s in batch.scenes])["pixel_values"]
    assert pixels.shape == own.shape == (6, 3, 32, 32)
    assert (pixels - own).abs().max() < 0.05
    x = to_device(replace(batch, labels=pixels), None, CPU)
    assert model.captions(x["input_ids"], x["attention_mask"]) == batch.texts
    with torch.no_grad():
        scores = model(**x)  # the vision tower once per scene
        text = model.backend.text_inputs(batch.texts)
        reference = model.backend.score_pairs(text, {"pixel_values": x["labels"]})
    assert scores.shape == (len(batch.texts),)
    assert torch.allclose(scores.float(), reference.float(), atol=1e-4)


def _step(config: TestbedConfig, batch_of) -> tuple[float, list[torch.Tensor]]:
    """The loss of the training loop's first step on ``batch_of(model)``, and the weights."""
    model = training.initial_model(config)
    batch = batch_of(model)
    torch.manual_seed(1)  # BLIP's dropout
    loss = training._Step(config, model, CPU)(1, batch)
    return loss, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("variant", FAMILIES)
def test_the_oracles_negatives_reach_the_loss(variant):
    """The oracle's added rows change the step's loss and update; without them it is plain's
    step on the same scenes."""
    config = _config(variant)

    def oracle(model):
        batch = _batch(config, model)
        assert any(k not in NOT_ADDED for k in batch.kinds)
        return batch

    def stripped(model):
        batch = _batch(config, model)
        keep = [r for r, k in enumerate(batch.kinds) if k in NOT_ADDED]
        return replace(batch, **{f: [getattr(batch, f)[r] for r in keep]
                                 for f in ("texts", "scene_index", "targets", "kinds")})  # fmt: skip

    with_added, after = _step(config, oracle)
    without, after_without = _step(config, stripped)
    plain, after_plain = _step(
        replace(config, negatives="plain"), lambda m: _batch(config, m, "plain")
    )
    assert without == pytest.approx(plain) and all(
        torch.equal(p, q) for p, q in zip(after_without, after_plain, strict=True)
    )
    assert with_added != pytest.approx(without, abs=1e-6)
    assert any(not torch.equal(p, q) for p, q in zip(after, after_without, strict=True))
    if variant == "hf-clip":  # the added rows are extra columns of the image-to-text softmax
        assert with_added > without


def test_a_local_model_directory_is_read_not_built(tmp_path):
    from tags.benchmark.hf_models import HFModelConfig, build_blip

    path = build_blip(tmp_path / "blip", HFModelConfig("blip", 32, 8, 32, 1, 4, 32, seed=7))
    config = _config("hf-blip", hf_model=str(path), hidden=64)  # the directory's shape wins
    model = training.initial_model(config)
    assert model.backend.model.config.text_config.hidden_size == 32
    built = training.initial_model(replace(config, hf_model=None, hidden=32, seed=7))
    state = built.state_dict()
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


def test_the_driver_and_the_config_keep_the_hf_families_to_what_they_have(capsys):
    with pytest.raises(SystemExit):
        headroom.parse_args(["--variant", "hf-clip"])  # rendered images: --perception pixels
    assert "--perception pixels" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        headroom.parse_args(["--hf-model", "somewhere"])
    assert "--hf-model needs --variant" in capsys.readouterr().err
    args = headroom.parse_args(
        ["--variant", "hf-blip", "--perception", "pixels", "--hf-model", "m", "--image-size",
         "48", "--patch-size", "16"]
    )  # fmt: skip
    config = headroom.run_config(args)
    assert (config.hf_model, config.image_size, config.patch_size) == ("m", 48, 16)
    with pytest.raises(ValueError, match="MLM heads"):
        _config("hf-blip", "istm")
    with pytest.raises(ValueError, match="dual encoder"):
        _config("hf-blip", loss="contrastive")
    with pytest.raises(ValueError, match="perception pixels"):
        _config("hf-clip", perception="symbolic")
    assert _config("hf-clip", loss="itm").loss == "itm"


def test_pixel_ladder_script_runs_an_hf_family(tmp_path):
    """The GPU script's HF path, tiny, on CPU (one family: each run starts its own Python;
    hf-clip's runs take the same path with another --variant): the runs and the verdict in
    the family's folder."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(headroom.__file__).with_name("pixel_ladder.sh")
    env = {
        **os.environ, "STEPS": "2", "EVAL_EVERY": "2", "EVAL_SCENES": "6", "DEVICE": "cpu",
        "WORKERS": "0", "SEEDS": "0", "METHODS": "plain oracle", "PYTHON": sys.executable,
        "VARIANTS": "hf-blip", "HF_EXTRA": " ".join(TINY), "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    run = ["bash", str(script), str(tmp_path)]
    wrong = subprocess.run(run, env={**env, "VARIANTS": "hf-vit"}, capture_output=True, text=True)
    assert wrong.returncode == 2 and "unknown variant hf-vit" in wrong.stderr
    done = subprocess.run(run, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gate not passed" in done.stdout  # 2 steps: no binding
    verdict = json.loads((tmp_path / "hf-blip" / "gate.json").read_text())
    assert set(verdict["rsum"]) == {"oracle", "plain"}
    for name in ("plain-seed0.json", "oracle-seed0.json"):
        record = json.loads((tmp_path / "hf-blip" / name).read_text())
        assert record["config"]["variant"] == "hf-blip" and "retrieval" in record["final"]
        assert record["config"]["perception"] == "pixels" and record["config"]["hidden"] == 32
