"""Backends: registry, adapters equal the models' own outputs, save/load round trip, errors."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from research.hf_tiny import MAKERS, make_blip, make_clip, render_images

from tags.backends import (
    BackendError,
    Blip2Backend,
    BlipBackend,
    ClipBackend,
    SiglipBackend,
    TagsBackend,
    as_backend,
    list_backends,
    load_backend,
)

CAPTIONS = ["a red dog runs on the grass", "two cats sit near a table", "a man holding a ball"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {name: make(root / name) for name, make in MAKERS.items()}


def test_registry_lists_every_family():
    assert list_backends() == {
        "blip": "blip",
        "blip-2": "blip-2",
        "clip": "clip",
        "siglip": "siglip",
        "tags": "tags",
    }


@pytest.mark.parametrize("name", ["blip", "blip-2", "clip", "siglip"])
def test_load_picks_backend_from_config(dirs, name):
    backend = load_backend(dirs[name])
    expected = {
        "blip": BlipBackend,
        "blip-2": Blip2Backend,
        "clip": ClipBackend,
        "siglip": SiglipBackend,
    }[name]
    assert type(backend) is expected
    assert backend.image_kind == "pixels"


def test_blip_adapter_equals_model_forward(dirs):
    backend = load_backend(dirs["blip"])
    model = backend.model.eval()
    images = render_images(3)
    inputs = backend.processor(images=images, text=CAPTIONS, return_tensors="pt", padding=True)
    text = backend.text_inputs(CAPTIONS)
    assert torch.equal(text["input_ids"], inputs["input_ids"])
    pixels = backend.image_inputs(images)
    with torch.no_grad():
        itm = model(**inputs, use_itm_head=True).itm_score
        itc = model(**inputs, use_itm_head=False).itm_score
        ours = backend.score_pairs(text, pixels)
        emb = backend.similarity(backend.encode_image(pixels), backend.encode_text(text))
        # one image broadcast against three captions = three copies of it
        one = backend.score_pairs(text, {"pixel_values": pixels["pixel_values"][:1]})
        rep = backend.score_pairs(
            text, {"pixel_values": pixels["pixel_values"][:1].repeat(3, 1, 1, 1)}
        )
    torch.testing.assert_close(ours, itm[:, 1] - itm[:, 0])
    torch.testing.assert_close(emb, itc)
    torch.testing.assert_close(one, rep)
    probs = backend.pair_probability(ours)
    torch.testing.assert_close(probs, itm.softmax(-1)[:, 1])
    states = backend.text_token_states(text, pixels)
    assert states.shape == (*text["input_ids"].shape, 32)
    assert backend.supports("itm") and not backend.supports("mlm")
    with pytest.raises(BackendError, match="mlm"):
        backend.mlm_logits(text, pixels, text["input_ids"] > 0)


def test_blip2_adapter_equals_model_forward_and_needs_qformer_text_input(dirs, tmp_path):
    backend = load_backend(dirs["blip-2"])
    model = backend.model.eval()
    text, pixels = backend.text_inputs(CAPTIONS), backend.image_inputs(render_images(3))
    inputs = {**text, **pixels}
    with torch.no_grad():
        itm = model(**inputs, use_image_text_matching_head=True).logits_per_image  # rows
        itc = model(**inputs, use_image_text_matching_head=False).logits_per_image
        torch.testing.assert_close(backend.score_pairs(text, pixels), itm[:, 1] - itm[:, 0])
        emb = backend.encode_image(pixels)
        assert emb.shape == (3, 4, 16)  # one embedding per query token
        torch.testing.assert_close(backend.similarity(emb, backend.encode_text(text)), itc)
        states = backend.text_token_states(text, pixels)
    assert states.shape == (*text["input_ids"].shape, 32)
    broken = tmp_path / "broken"
    shutil.copytree(dirs["blip-2"], broken)
    config = json.loads((broken / "config.json").read_text())
    config["qformer_config"]["use_qformer_text_input"] = False
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(BackendError, match="use_qformer_text_input"):
        load_backend(broken)


@pytest.mark.parametrize("name", ["clip", "siglip"])
def test_contrastive_adapter_equals_model_forward(dirs, name):
    backend = load_backend(dirs[name])
    model = backend.model.eval()
    images = render_images(3)
    padding = "max_length" if name == "siglip" else True
    inputs = backend.processor(
        images=images,
        text=CAPTIONS,
        return_tensors="pt",
        padding=padding,
        max_length=64,
        truncation=True,
    )
    text, pixels = backend.text_inputs(CAPTIONS), backend.image_inputs(images)
    with torch.no_grad():
        expected = model(**{k: v for k, v in inputs.items() if k != "token_type_ids"})
        logits = backend.contrastive_logits(backend.encode_image(pixels), backend.encode_text(text))
        pairs = backend.score_pairs(text, pixels)
    torch.testing.assert_close(logits, expected.logits_per_image)
    torch.testing.assert_close(pairs, expected.logits_per_image.diagonal())
    assert not backend.supports("itm") and not backend.supports("token_states")
    with pytest.raises(BackendError, match="token_states"):
        backend.text_token_states(text, pixels)


@pytest.mark.parametrize("name", ["blip", "blip-2", "clip", "siglip"])
def test_save_load_round_trip_identical_scores(dirs, tmp_path, name):
    backend = load_backend(dirs[name])
    backend.model.eval()
    with torch.no_grad():  # change the weights, so a reload of the original would differ
        for p in backend.model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    images = render_images(3, seed=1)
    text, pixels = backend.text_inputs(CAPTIONS), backend.image_inputs(images)
    with torch.no_grad():
        before = backend.score_pairs(text, pixels)
        emb_before = backend.encode_image(pixels)
    backend.save_pretrained(tmp_path / "saved")
    again = load_backend(tmp_path / "saved")
    again.model.eval()
    with torch.no_grad():
        after = again.score_pairs(again.text_inputs(CAPTIONS), again.image_inputs(images))
        original = load_backend(dirs[name]).model.eval()
        first = as_backend(original, processor=again.processor).score_pairs(text, pixels)
    assert torch.equal(before, after)
    assert torch.equal(emb_before, again.encode_image(pixels).detach())
    assert not torch.allclose(first, after)


def test_saved_hf_dirs_load_with_plain_transformers(dirs):
    from transformers import AutoProcessor, BlipForImageTextRetrieval, CLIPModel

    assert isinstance(BlipForImageTextRetrieval.from_pretrained(dirs["blip"]), torch.nn.Module)
    assert isinstance(CLIPModel.from_pretrained(dirs["clip"]), torch.nn.Module)
    assert AutoProcessor.from_pretrained(dirs["clip"]).tokenizer is not None


def test_tags_adapter_is_the_model_itself(tmp_path):
    from research.hf_tiny import WORDS
    from transformers import BertTokenizer

    from tags.modeling import TagsConfig, TagsModel

    torch.manual_seed(0)
    config = TagsConfig(
        vocab_size=len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=32,
        region_feature_size=8,
    )
    model = TagsModel(config).eval()
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)})
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    backend = load_backend(tmp_path)
    assert isinstance(backend, TagsBackend) and backend.image_kind == "regions"
    text = backend.text_inputs(["a red dog", "the cat sits on the table"])
    image = {
        "region_features": torch.randn(2, 3, 8),
        "region_boxes": torch.tensor([0.1, 0.2, 0.6, 0.9]).repeat(2, 3, 1),
        "region_mask": torch.ones(2, 3, dtype=torch.long),
    }
    with torch.no_grad():
        ours = backend.score_pairs(text, image)
        ref = backend.model.score_pairs(**text, **image).logits
        emb = backend.encode_image(image)
        ref_emb = backend.model.encode_image(image["region_features"], image["region_boxes"])
        original = model.score_pairs(**text, **image).logits
    assert torch.equal(ours, ref) and torch.equal(emb, ref_emb)
    torch.testing.assert_close(ours, original)
    with pytest.raises(BackendError, match="region features"):
        backend.image_inputs(render_images(1))


def test_bad_model_directories_name_what_is_missing(dirs, tmp_path):
    with pytest.raises(BackendError, match="not found"):
        load_backend(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendError, match=r"no config\.json"):
        load_backend(tmp_path / "empty")
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(BackendError, match="'gpt2' has no tags backend; supported: blip"):
        load_backend(odd)
    noweights = tmp_path / "noweights"
    noweights.mkdir()
    shutil.copy(dirs["clip"] / "config.json", noweights / "config.json")
    with pytest.raises(BackendError, match="no weights"):
        load_backend(noweights)
    noproc = tmp_path / "noproc"
    make_clip(noproc)
    (noproc / "preprocessor_config.json").unlink(missing_ok=True)
    (noproc / "processor_config.json").unlink(missing_ok=True)
    with pytest.raises(BackendError, match="no image processor"):
        load_backend(noproc)
    wrong = tmp_path / "wrong"
    make_blip(wrong)
    config = json.loads((wrong / "config.json").read_text())
    config["architectures"] = ["BlipForConditionalGeneration"]
    (wrong / "config.json").write_text(json.dumps(config))
    with pytest.raises(BackendError, match="needs BlipForImageTextRetrieval"):
        load_backend(wrong)
