"""TagsModel on tiny random configs: heads, gradients, serialization, padding, bad input."""

from __future__ import annotations

import pytest
import torch

from heads import ITMHead, MLMHead, WordCorrectionHead, WordDiscriminationHead
from tags.modeling import TagsConfig, TagsModel, expand_boxes, normalize_boxes

VOCAB, FEATURE, MASK = 99, 12, 4
ALL_HEADS = ("itm", "mlm", "wod", "woc")


def tiny_config(**overrides) -> TagsConfig:
    values = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=24,
        region_feature_size=FEATURE,
        max_regions=8,
        mask_token_id=MASK,
    )
    values.update(overrides)
    return TagsConfig(**values)


def make_model(**overrides) -> TagsModel:
    torch.manual_seed(0)
    return TagsModel(tiny_config(**overrides)).eval()


def random_boxes(*shape: int) -> torch.Tensor:
    corners = torch.rand(*shape, 2, 2).sort(dim=-2).values  # x1 <= x2, y1 <= y2
    return expand_boxes(torch.cat([corners[..., 0, :], corners[..., 1, :]], dim=-1))


def make_batch(batch: int = 3, text_len: int = 7, regions: int = 5, seed: int = 1) -> dict:
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, VOCAB, (batch, text_len), generator=generator)
    input_ids[:, 0] = 1  # [CLS]
    input_ids[:, 2] = MASK
    torch.manual_seed(seed)
    return dict(
        input_ids=input_ids,
        attention_mask=torch.ones(batch, text_len, dtype=torch.long),
        region_features=torch.randn(batch, regions, FEATURE, generator=generator),
        region_boxes=random_boxes(batch, regions),
        region_mask=torch.ones(batch, regions, dtype=torch.long),
    )


# ---------------------------------------------------------------------- forward / backward


def test_forward_all_heads_shapes_and_finite():
    model = make_model()
    batch = make_batch()
    out = model(**batch, heads=ALL_HEADS)
    assert out.last_hidden_state.shape == (3, 7 + 5, 32)
    assert out.text_hidden_state.shape == (3, 7, 32)
    assert out.region_hidden_state.shape == (3, 5, 32)
    assert out.pooler_output.shape == (3, 32)
    assert out.itm_logits.shape == out.itm_scores.shape == (3,)
    assert out.mlm_logits.shape == out.woc_logits.shape == (3, 7, VOCAB)
    assert out.wod_logits.shape == (3, 7, 2)
    for name, value in out.items():
        assert torch.isfinite(value).all(), name
    assert ((out.itm_scores >= 0) & (out.itm_scores <= 1)).all()
    torch.testing.assert_close(out.itm_scores, torch.sigmoid(out.itm_logits))


def test_heads_are_the_heads_package_modules_and_decoders_are_tied():
    model = make_model()
    assert isinstance(model.mlm_head, MLMHead)
    assert isinstance(model.itm_head, ITMHead)
    assert isinstance(model.wod_head, WordDiscriminationHead)
    assert isinstance(model.woc_head, WordCorrectionHead)
    embeddings = model.get_input_embeddings().weight
    assert model.mlm_head.decoder.weight is embeddings
    assert model.woc_head.decoder.weight is embeddings
    assert model.mlm_head.transform.dense.weight is not model.woc_head.transform.dense.weight


def test_backward_reaches_every_trainable_parameter():
    model = make_model().train()
    out = model(**make_batch(), heads=ALL_HEADS)
    loss = (
        out.itm_logits.sum() + out.mlm_logits.mean() + out.wod_logits.mean() + out.woc_logits.mean()
    )
    loss.backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, f"no gradient for {name}"
        assert torch.isfinite(parameter.grad).all(), name
        assert parameter.grad.abs().sum() > 0, f"zero gradient for {name}"


def test_gradient_checkpointing_gives_the_same_gradients():
    batch = make_batch()
    grads = []
    for checkpointing in (False, True):
        model = make_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).train()
        if checkpointing:
            enable_checkpointing(model)
        model(**batch, heads=("itm",)).itm_logits.sum().backward()
        grads.append(model.encoder.layer[0].attention.self.query.weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1])


def enable_checkpointing(model: TagsModel) -> None:
    """transformers >= 5.x renames gradient checkpointing to activation checkpointing."""
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable({"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable({"use_reentrant": False})
    assert all(layer.gradient_checkpointing for layer in model.encoder.layer)


@pytest.mark.parametrize("absent", ["mlm", "itm", "wod", "woc"])
def test_heads_can_be_left_out(absent, tmp_path):
    model = make_model(**{f"use_{absent}_head": False})
    assert getattr(model, f"{absent}_head") is None
    present = tuple(h for h in ALL_HEADS if h != absent)
    out = model(**make_batch(), heads=present)
    assert getattr(out, f"{absent}_logits") is None
    with pytest.raises(ValueError, match=f"without the {absent} head"):
        model(**make_batch(), heads=(absent,))
    model.save_pretrained(tmp_path)
    reloaded = TagsModel.from_pretrained(tmp_path)
    assert getattr(reloaded, f"{absent}_head") is None


# ---------------------------------------------------------------------- serialization


def test_save_and_from_pretrained_give_identical_scores(tmp_path):
    model = make_model()
    with torch.no_grad():  # make every head non-trivial before saving
        model.mlm_head.bias.normal_()
        model.itm_head.classifier.bias.fill_(0.3)
    batch = make_batch()
    with torch.no_grad():
        before = model(**batch, heads=ALL_HEADS)
    model.save_pretrained(tmp_path)
    reloaded = TagsModel.from_pretrained(tmp_path).eval()
    assert reloaded.config.to_dict() == model.config.to_dict() | {
        "_name_or_path": reloaded.config.to_dict()["_name_or_path"]
    }
    assert reloaded.mlm_head.decoder.weight is reloaded.embeddings.word_embeddings.weight
    saved, loaded = model.state_dict(), reloaded.state_dict()
    assert saved.keys() == loaded.keys()
    for key in saved:
        assert torch.equal(saved[key], loaded[key]), key
    with torch.no_grad():
        after = reloaded(**batch, heads=ALL_HEADS)
    for name in ("itm_scores", "mlm_logits", "wod_logits", "woc_logits"):
        # same weights; CPU kernels may round differently on differently aligned buffers
        torch.testing.assert_close(after[name], before[name], rtol=0, atol=1e-6)


def test_auto_model_opens_a_saved_directory(tmp_path):
    from transformers import AutoConfig, AutoModel

    make_model().save_pretrained(tmp_path)
    assert isinstance(AutoConfig.from_pretrained(tmp_path), TagsConfig)
    assert isinstance(AutoModel.from_pretrained(tmp_path), TagsModel)


# ---------------------------------------------------------------------- padding and attention


def pad_batch(batch: dict, extra_tokens: int, extra_regions: int) -> dict:
    """Append padding with garbage content (valid ranges) that the masks must hide."""
    size, text_len = batch["input_ids"].shape
    regions = batch["region_features"].shape[1]
    return dict(
        input_ids=torch.cat(
            [batch["input_ids"], torch.randint(5, VOCAB, (size, extra_tokens))], dim=1
        ),
        attention_mask=torch.cat(
            [batch["attention_mask"], torch.zeros(size, extra_tokens, dtype=torch.long)], dim=1
        ),
        region_features=torch.cat(
            [batch["region_features"], 5 * torch.randn(size, extra_regions, FEATURE)], dim=1
        ),
        region_boxes=torch.cat([batch["region_boxes"], random_boxes(size, extra_regions)], dim=1),
        region_mask=torch.cat(
            [batch["region_mask"], torch.zeros(size, extra_regions, dtype=torch.long)], dim=1
        ),
    ) | {"_shape": (text_len, regions)}


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
def test_padding_does_not_change_scores_or_logits(attn_implementation):
    model = make_model(attn_implementation=attn_implementation)
    assert model.config._attn_implementation == attn_implementation
    batch = make_batch()
    padded = pad_batch(batch, extra_tokens=4, extra_regions=3)
    text_len, _ = padded.pop("_shape")
    with torch.no_grad():
        plain = model(**batch, heads=ALL_HEADS)
        padded_out = model(**padded, heads=ALL_HEADS)
    torch.testing.assert_close(padded_out.itm_scores, plain.itm_scores, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        padded_out.mlm_logits[:, :text_len], plain.mlm_logits, atol=1e-4, rtol=1e-4
    )
    torch.testing.assert_close(
        padded_out.wod_logits[:, :text_len], plain.wod_logits, atol=1e-5, rtol=1e-5
    )


def test_rows_with_different_lengths_score_as_if_alone():
    model = make_model()
    batch = make_batch(batch=2)
    batch["attention_mask"][1, 5:] = 0
    batch["region_mask"][1, 3:] = 0
    with torch.no_grad():
        together = model.score_pairs(**batch).scores
        alone = model.score_pairs(
            input_ids=batch["input_ids"][1:, :5],
            region_features=batch["region_features"][1:, :3],
            region_boxes=batch["region_boxes"][1:, :3],
        ).scores
    torch.testing.assert_close(together[1:], alone, atol=1e-5, rtol=1e-5)


def test_sdpa_and_eager_agree():
    sdpa, eager = make_model(), make_model(attn_implementation="eager")
    eager.load_state_dict(sdpa.state_dict())
    batch = make_batch()
    batch["attention_mask"][0, 4:] = 0
    batch["region_mask"][2, 1:] = 0
    with torch.no_grad():
        torch.testing.assert_close(
            sdpa.score_pairs(**batch).logits,
            eager.score_pairs(**batch).logits,
            atol=1e-5,
            rtol=1e-5,
        )


def test_bf16_model_accepts_fp32_features_and_tracks_fp32():
    model = make_model()
    batch = make_batch()
    with torch.no_grad():
        reference = model(**batch).last_hidden_state
        half = model.to(torch.bfloat16)(**batch).last_hidden_state
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), reference, atol=0.1, rtol=0.05)


# ---------------------------------------------------------------------- entry points


def test_masked_lm_logits_match_full_logits_at_mask_positions():
    model = make_model()
    batch = make_batch()
    batch["input_ids"][1, 5] = MASK
    with torch.no_grad():
        masked = model.masked_lm_logits(**batch)
        full = model(**batch, heads=("mlm",)).mlm_logits
    expected_positions = batch["input_ids"] == MASK
    assert torch.equal(masked.masked_positions, expected_positions)
    assert masked.logits.shape == (4, VOCAB)
    torch.testing.assert_close(masked.logits, full[expected_positions])


def test_each_vocabulary_head_reads_its_own_positions():
    model = make_model()
    batch = make_batch()
    mlm_rows = torch.zeros_like(batch["attention_mask"], dtype=torch.bool)
    woc_rows = torch.zeros_like(mlm_rows)
    mlm_rows[0, 1:3] = True
    woc_rows[1:, 2:4] = True
    both = mlm_rows | woc_rows
    heads = ("mlm", "woc")
    with torch.no_grad():
        shared = model(**batch, heads=heads, masked_positions=both)
        split = model(**batch, heads=heads, masked_positions={"mlm": mlm_rows, "woc": woc_rows})
    assert split.mlm_logits.shape == (2, VOCAB) and split.woc_logits.shape == (4, VOCAB)
    torch.testing.assert_close(split.mlm_logits, shared.mlm_logits[mlm_rows[both]])
    torch.testing.assert_close(split.woc_logits, shared.woc_logits[woc_rows[both]])
    with pytest.raises(ValueError, match="vocabulary heads"):
        model(**batch, heads=heads, masked_positions={"itm": both})
    with pytest.raises(ValueError, match="does not match"):
        model(**batch, heads=heads, masked_positions={"mlm": both[:, :3]})


def test_mlm_depends_on_the_image_and_works_text_only():
    model = make_model()
    batch = make_batch()
    other = make_batch(seed=7)
    with torch.no_grad():
        with_image = model.masked_lm_logits(**batch).logits
        with_other_image = model.masked_lm_logits(
            **(batch | {k: other[k] for k in ("region_features", "region_boxes")})
        ).logits
        text_only = model.masked_lm_logits(batch["input_ids"], batch["attention_mask"]).logits
    assert text_only.shape == with_image.shape
    assert torch.isfinite(text_only).all()
    assert not torch.allclose(with_image, with_other_image)
    assert not torch.allclose(with_image, text_only)


def test_one_image_broadcasts_against_many_captions():
    model = make_model()
    batch = make_batch(batch=4)
    one_image = {k: batch[k][:1] for k in ("region_features", "region_boxes", "region_mask")}
    expanded = {k: v.expand(4, *v.shape[1:]) for k, v in one_image.items()}
    captions = {k: batch[k] for k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        broadcast = model.score_pairs(**captions, **one_image).scores
        explicit = model.score_pairs(**captions, **expanded).scores
        mlm = model.masked_lm_logits(**captions, **one_image)
    assert broadcast.shape == (4,)
    torch.testing.assert_close(broadcast, explicit)
    assert mlm.logits.shape == (4, VOCAB) and mlm.masked_positions.shape == (4, 7)


def test_one_caption_broadcasts_against_many_images_for_refilling():
    model = make_model()
    batch = make_batch(batch=3)
    with torch.no_grad():
        out = model.masked_lm_logits(
            batch["input_ids"][:1], **{k: batch[k] for k in ("region_features", "region_boxes")}
        )
    assert out.masked_positions.shape == (3, 7)
    assert out.logits.shape == (3, VOCAB)


def test_dual_embeddings_are_unit_norm_and_padding_invariant():
    model = make_model()
    batch = make_batch()
    padded = pad_batch(batch, extra_tokens=3, extra_regions=2)
    with torch.no_grad():
        text = model.encode_text(batch["input_ids"], batch["attention_mask"])
        image = model.encode_image(batch["region_features"], batch["region_boxes"])
        text_padded = model.encode_text(padded["input_ids"], padded["attention_mask"])
        image_padded = model.encode_image(
            padded["region_features"], padded["region_boxes"], padded["region_mask"]
        )
    assert text.shape == image.shape == (3, 32)
    torch.testing.assert_close(text.norm(dim=-1), torch.ones(3))
    torch.testing.assert_close(image.norm(dim=-1), torch.ones(3))
    torch.testing.assert_close(text_padded, text, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(image_padded, image, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(text[0], text[1])


def test_four_dim_boxes_equal_their_seven_dim_expansion():
    model = make_model()
    batch = make_batch()
    four = batch | {"region_boxes": batch["region_boxes"][..., :4]}
    with torch.no_grad():
        torch.testing.assert_close(
            model.score_pairs(**four).scores, model.score_pairs(**batch).scores
        )


def test_normalize_boxes_builds_unit_range_uniter_features():
    boxes = torch.tensor([[10.0, 20.0, 110.0, 70.0], [-2.0, 0.0, 205.0, 100.0]])
    features = normalize_boxes(boxes, image_width=200, image_height=100)
    torch.testing.assert_close(features[0], torch.tensor([0.05, 0.2, 0.55, 0.7, 0.5, 0.5, 0.25]))
    torch.testing.assert_close(features[1], torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]))


# ---------------------------------------------------------------------- bad input


def _bad(batch: dict, **changes) -> dict:
    return batch | changes


BAD_INPUTS = {
    "feature size": (
        lambda b: _bad(b, region_features=torch.randn(3, 5, FEATURE + 1)),
        "region_feature_size",
    ),
    "box above one": (
        lambda b: _bad(b, region_boxes=b["region_boxes"] * 640),
        r"outside \[0, 1\]",
    ),
    "negative box": (lambda b: _bad(b, region_boxes=b["region_boxes"] - 0.5), r"outside \[0, 1\]"),
    "nan box": (
        lambda b: _bad(b, region_boxes=b["region_boxes"].clone().fill_(float("nan"))),
        r"outside \[0, 1\]",
    ),
    "empty region set": (
        lambda b: _bad(
            b,
            region_features=torch.zeros(3, 0, FEATURE),
            region_boxes=torch.zeros(3, 0, 7),
            region_mask=torch.zeros(3, 0),
        ),
        "empty region set",
    ),
    "all regions masked": (
        lambda b: _bad(b, region_mask=torch.zeros(3, 5, dtype=torch.long)),
        "empty region set",
    ),
    "too many regions": (
        lambda b: _bad(
            b,
            region_features=torch.randn(3, 9, FEATURE),
            region_boxes=random_boxes(3, 9),
            region_mask=None,
        ),
        "max_regions",
    ),
    "text too long": (
        lambda b: _bad(b, input_ids=torch.ones(3, 25, dtype=torch.long), attention_mask=None),
        "max_position_embeddings",
    ),
    "left padding": (
        lambda b: _bad(b, attention_mask=torch.tensor([[0] * 2 + [1] * 5] * 3)),
        "right-padded",
    ),
    "token outside vocabulary": (
        lambda b: _bad(b, input_ids=b["input_ids"] + VOCAB),
        "outside the vocabulary",
    ),
    "batch mismatch": (
        lambda b: _bad(
            b,
            region_features=b["region_features"][:2],
            region_boxes=b["region_boxes"][:2],
            region_mask=None,
        ),
        "batch sizes differ",
    ),
    "box shape": (lambda b: _bad(b, region_boxes=b["region_boxes"][..., :5]), "4 .* or 7"),
    "nan feature": (
        lambda b: _bad(b, region_features=b["region_features"].clone().fill_(float("nan"))),
        "NaN",
    ),
    "mask shape": (lambda b: _bad(b, attention_mask=torch.ones(3, 6)), "attention_mask shape"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_raise_clear_value_errors(case):
    model = make_model()
    build, message = BAD_INPUTS[case]
    with pytest.raises(ValueError, match=message):
        model.score_pairs(**build(make_batch()))


def test_itm_needs_both_modalities_and_unknown_heads_are_rejected():
    model = make_model()
    batch = make_batch()
    with pytest.raises(ValueError, match="give both text and regions"):
        model(input_ids=batch["input_ids"], heads=("itm",))
    with pytest.raises(ValueError, match="unknown head"):
        model(**batch, heads=("nsp",))
    with pytest.raises(ValueError, match="give input_ids"):
        model(
            region_features=batch["region_features"],
            region_boxes=batch["region_boxes"],
            heads=("mlm",),
        )
    with pytest.raises(ValueError, match="give text"):
        model()


def test_validation_can_be_switched_off():
    model = make_model(validate_inputs=False)
    batch = make_batch()
    scores = model.score_pairs(**(batch | {"region_boxes": batch["region_boxes"] * 2})).scores
    assert torch.isfinite(scores).all()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"generator": "frozen"}, "generator must be one of"),
        ({"generator": "static"}, "static_generator_path"),
        ({"hidden_size": 30}, "multiple of num_attention_heads"),
        ({"image_token_type_id": 2}, "image_token_type_id"),
        ({"region_box_size": 4}, "region_box_size must be 7"),
    ],
)
def test_config_rejects_inconsistent_settings(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**overrides)


@pytest.mark.slow
def test_import_tags_stays_light_and_exports_lazily(fresh_import_of_tags):
    # a fresh interpreter (conftest's EARLY_COMMANDS, started with the session): `import
    # tags` loads no torch, `from tags import TagsModel, TagsConfig` loads them lazily
    assert fresh_import_of_tags.returncode == 0, fresh_import_of_tags.stderr
