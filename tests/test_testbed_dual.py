"""The testbed's dual encoder (tags.testbed.dual): its scores are scaled cosines of two
independent encoders, its CLIP / NegCLIP loss reads the method's added negatives as extra text
columns, a run trains it, and the config keeps it away from what it lacks."""

import json
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from research import headroom

from tags.testbed import TestbedConfig, training, world
from tags.testbed.dual import DualMatcher, contrastive_loss
from tags.testbed.evaluate import KINDS
from tags.testbed.inputs import to_device

CPU = torch.device("cpu")


def _model(seed: int = 0) -> DualMatcher:
    torch.manual_seed(seed)
    return DualMatcher(hidden=32, layers=1)


def _batch(negatives: str = "oracle", scenes: int = 8) -> world.Batch:
    return world.make_batch(1, 0, scenes, negatives, 4, world.NegativeSampler(KINDS))


def test_scores_are_the_scaled_cosine_of_unit_text_and_image_vectors():
    model, batch = _model(), _batch()
    x = to_device(batch, None, CPU)
    n = len(batch.texts)
    with torch.no_grad():
        scores = model(**x)
        text = model.encode_text(x["input_ids"], x["attention_mask"])
        image = model.encode_image(x["labels"], x["boxes"], x["region_mask"])
    assert scores.shape == (n,) and text.shape == image.shape == (n, 32)
    assert torch.allclose(text.norm(dim=-1), torch.ones(n), atol=1e-5)
    assert torch.allclose(image.norm(dim=-1), torch.ones(n), atol=1e-5)
    cosine = F.cosine_similarity(text, image, dim=-1)
    assert torch.allclose(scores, cosine / 0.07, atol=1e-4)
    assert model.scale().item() == pytest.approx(1 / 0.07, rel=1e-5)
    # the text vector does not depend on the scene, nor the image vector on the caption
    y = to_device(replace(batch, scene_index=[0] * n), None, CPU)
    with torch.no_grad():
        assert torch.allclose(model.encode_text(y["input_ids"], y["attention_mask"]), text)


def test_padding_changes_no_vector():
    model, batch = _model(), _batch()
    x = to_device(batch, None, CPU)
    short = min(range(len(batch.texts)), key=lambda r: len(batch.texts[r]))
    alone = to_device(batch, [short], CPU)
    assert alone["input_ids"].shape[1] < x["input_ids"].shape[1]
    with torch.no_grad():
        padded = model.encode_text(x["input_ids"], x["attention_mask"])[short]
        single = model.encode_text(alone["input_ids"], alone["attention_mask"])[0]
        assert torch.allclose(padded, single, atol=1e-5)
        # a scene with fewer than 4 objects: its padded regions' contents are ignored
        row = next(r for r in range(len(batch.texts)) if x["region_mask"][r].sum() < 4)
        labels, boxes = x["labels"].clone(), x["boxes"].clone()
        labels[row][x["region_mask"][row] == 0] = 5
        boxes[row][x["region_mask"][row] == 0] = 0.5
        a = model.encode_image(x["labels"], x["boxes"], x["region_mask"])[row]
        b = model.encode_image(labels, boxes, x["region_mask"])[row]
        assert torch.allclose(a, b, atol=1e-5)
        labels[row][0] = 6  # a real region's words do count
        assert not torch.allclose(a, model.encode_image(labels, boxes, x["region_mask"])[row])


def _expected(model: DualMatcher, batch: world.Batch, hard: list[str]) -> torch.Tensor:
    """InfoNCE both ways over the positives, ``hard`` as extra image-to-text columns."""
    n = len(batch.scenes)
    positives = replace(batch, texts=batch.texts[:n], scene_index=list(range(n)))
    x = to_device(positives, None, CPU)
    image = model.encode_image(x["labels"], x["boxes"], x["region_mask"])
    texts = batch.texts[:n] + hard
    y = to_device(replace(batch, texts=texts, scene_index=[0] * len(texts)), None, CPU)
    text = model.encode_text(y["input_ids"], y["attention_mask"])
    logits = image @ text.T / 0.07
    target = torch.arange(n)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits[:, :n].T, target)) / 2


def test_contrastive_loss_is_clip_infonce_with_the_added_negatives_as_columns():
    model, oracle = _model(), _batch("oracle")
    hard = [t for t, k in zip(oracle.texts, oracle.kinds, strict=True) if k in KINDS]
    assert hard and all(k in ("positive", "random", *KINDS) for k in oracle.kinds)
    with torch.no_grad():
        with_hard = contrastive_loss(model, oracle, CPU)
        plain = contrastive_loss(model, _batch("plain"), CPU)
        assert with_hard.item() == pytest.approx(_expected(model, oracle, hard).item(), rel=1e-5)
        assert plain.item() == pytest.approx(_expected(model, oracle, []).item(), rel=1e-5)
    assert with_hard.item() > plain.item()  # more columns, each with positive weight
    # plain's random rows are in-batch captions already: they add nothing
    n = len(oracle.scenes)
    bare = replace(
        oracle, texts=oracle.texts[:n], scene_index=list(range(n)), kinds=["positive"] * n
    )
    assert contrastive_loss(model, bare, CPU).item() == pytest.approx(plain.item(), rel=1e-6)
    # the gradient reaches both encoders and the temperature
    contrastive_loss(model, oracle, CPU).backward()
    for p in (model.word_embeddings.weight, model.box.weight, model.logit_scale):
        assert p.grad is not None and p.grad.abs().sum() > 0


def test_an_identical_caption_of_another_scene_is_no_negative():
    model, batch = _model(), _batch("plain", 4)
    texts = list(batch.texts)
    texts[1] = texts[0]  # scene 1's caption reads as scene 0's
    batch = replace(batch, texts=texts[:4], scene_index=[0, 1, 2, 3], kinds=["positive"] * 4)
    x = to_device(batch, None, CPU)
    with torch.no_grad():
        image = model.encode_image(x["labels"], x["boxes"], x["region_mask"])
        text = model.encode_text(x["input_ids"], x["attention_mask"])
        logits = image @ text.T / 0.07
        logits[0, 1] = logits[1, 0] = float("-inf")
        t = torch.arange(4)
        expected = (F.cross_entropy(logits, t) + F.cross_entropy(logits.T, t)) / 2
        assert contrastive_loss(model, batch, CPU).item() == pytest.approx(
            expected.item(), rel=1e-5
        )


def test_config_resolves_the_loss_per_variant_and_rejects_what_dual_lacks():
    assert TestbedConfig().loss == "itm"
    assert TestbedConfig(variant="dual").loss == "contrastive"
    assert TestbedConfig(variant="dual", loss="itm").loss == "itm"
    assert TestbedConfig(variant="dual").to_dict()["loss"] == "contrastive"
    bad = [
        dict(loss="contrastive"),  # the cross-encoder has no in-batch similarity
        dict(variant="dual", loss="hinge"),
        dict(variant="dual", negatives="istm"),
        dict(variant="dual", negatives="tags-dc"),
        dict(variant="dual", perception="pixels"),
        dict(variant="dual", embed="free"),
        dict(variant="dual", negatives="mined", miner="selhn", mined_loss="triplet"),
    ]
    for values in bad:
        with pytest.raises(ValueError):
            TestbedConfig(**values)
    config = TestbedConfig(variant="dual", hidden=32, layers=1, seed=3)
    a, b = training.initial_model(config), training.initial_model(config)
    assert isinstance(a, DualMatcher)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_a_tiny_dual_run_trains_and_writes_its_record(tmp_path):
    out = tmp_path / "dual.json"
    argv = ["--variant", "dual", "--negatives", "oracle", "--steps", "4", "--eval-every", "2"]
    argv += ["--batch-size", "8", "--eval-scenes", "12", "--hidden", "32", "--layers", "1"]
    assert headroom.main([*argv, "--device", "cpu", "--rsum", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["config"]["variant"] == "dual" and result["config"]["loss"] == "contrastive"
    assert [row["step"] for row in result["curve"]] == [0, 2, 4]
    assert all(0.0 <= result["final"][k] <= 1.0 for k in (*KINDS, "overall"))
    assert result["final"]["loss"] > 0 and result["final"]["retrieval"]["rsum"] > 0
    keep: dict = {}
    config = TestbedConfig(
        variant="dual", negatives="oracle", steps=2, batch_size=8, eval_scenes=12, hidden=32,
        layers=1, eval_every=2, device="cpu",
    )  # fmt: skip
    training.train(config, keep=keep, log=None)
    start = training.initial_model(config)
    trained = dict(keep["model"].named_parameters())
    moved = [n for n, p in start.named_parameters() if not torch.equal(p, trained[n])]
    assert "logit_scale" in moved and "word_embeddings.weight" in moved
    assert any(n.startswith("image_encoder.") for n in moved)
    assert any(n.startswith("text_encoder.") for n in moved)


def test_the_training_step_takes_the_configured_loss():
    batch = _batch("oracle")
    for loss in ("contrastive", "itm"):
        config = TestbedConfig(variant="dual", negatives="oracle", hidden=32, layers=1, loss=loss)
        model = training.initial_model(config)
        with torch.no_grad():
            if loss == "contrastive":
                expected = contrastive_loss(model, batch, CPU)
            else:
                target = torch.as_tensor(batch.targets)
                logits = model(**to_device(batch, None, CPU))
                expected = F.binary_cross_entropy_with_logits(logits, target)
        assert training._Step(config, model, CPU)(1, batch) == pytest.approx(expected.item())
