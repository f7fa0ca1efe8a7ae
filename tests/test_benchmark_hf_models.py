"""HF CLIP / BLIP built from configs and pre-trained on the shapes benchmark
(``tags.benchmark.hf_models``): tokenizers, round trips, the pre-training cache."""

from __future__ import annotations

import json

import pytest

from tags.benchmark.hf_models import (
    HFModelConfig,
    HFTrainConfig,
    benchmark_words,
    blip_tokenizer,
    build_blip,
    build_clip,
    chance_rsum,
    clip_tokenizer,
    clip_vocabulary,
    pretrain_hf,
)

TINY = {"image_size": 32, "patch_size": 8, "hidden_size": 32, "num_layers": 2, "num_heads": 4,
        "projection_dim": 16}  # fmt: skip
TINY_TRAIN = HFTrainConfig(steps=2, batch_size=4, lr=1e-3)


def _caption_words(root) -> set[str]:
    data = json.loads((root / "dataset_shapes.json").read_text())
    texts = [s["raw"] for im in data["images"] for s in im["sentences"]]
    texts += [
        json.loads(line)["negative"]
        for line in (root / "test_minimal_pairs.jsonl").read_text().splitlines()
    ]
    return {w for t in texts for w in t.replace(",", " ").replace(":", " ").split()}


def test_benchmark_words_cover_the_captions(shapes_benchmark):
    words = benchmark_words()
    assert _caption_words(shapes_benchmark) <= set(words)
    assert {"circle", "hexagon", "orange", "above", "next", "top", "shapes", "three"} <= set(words)


@pytest.mark.parametrize("make", [clip_tokenizer, blip_tokenizer])
def test_every_benchmark_word_is_one_token(make):
    tokenizer = make()
    ids = {}
    for word in benchmark_words():
        pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
        assert len(pieces) == 1, (word, tokenizer.convert_ids_to_tokens(pieces))
        ids[word] = pieces[0]
    assert len(set(ids.values())) == len(ids)  # distinct tokens
    assert tokenizer.unk_token_id not in ids.values()
    caption = "three shapes: a small red circle, a blue star and a large hexagon"
    tokens = tokenizer(caption, add_special_tokens=False)["input_ids"]
    assert len(tokens) == len(caption.replace(",", " ,").replace(":", " :").split())


def test_clip_vocabulary_resolves_merge_conflicts():
    # "orange" and "triangle" hold "an" (merged first for "and"), "green" and "three" hold
    # "re" (merged for "red"): a naive left-to-right chain of merges per word splits them
    words = ["and", "red", "the", "orange", "green", "triangle", "three", "there"]
    vocab, merges = clip_vocabulary(words)
    tokenizer = clip_tokenizer(words)
    assert len(tokenizer) == len(vocab)
    for word in words:
        assert tokenizer.tokenize(word) == [word + "</w>"]
    assert len(merges) == len(set(merges))
    # anything else falls back to characters, never to an unknown token
    assert tokenizer.tokenize("zebra") == ["z", "e", "b", "r", "a</w>"]


def test_build_clip_round_trip(tmp_path, shapes_benchmark):
    import torch
    from PIL import Image
    from transformers import AutoProcessor, CLIPModel, CLIPTokenizer

    path = build_clip(tmp_path / "clip", HFModelConfig(**TINY))
    model = CLIPModel.from_pretrained(path)
    processor = AutoProcessor.from_pretrained(path)
    assert isinstance(processor.tokenizer, CLIPTokenizer)
    assert len(processor.tokenizer) == len(clip_tokenizer())
    assert model.config.vision_config.image_size == 32
    assert model.config.text_config.vocab_size == len(processor.tokenizer)
    assert processor.tokenizer.tokenize("a purple diamond") == [
        "a</w>",
        "purple</w>",
        "diamond</w>",
    ]
    image = Image.open(next((shapes_benchmark / "images").glob("*.png"))).convert("RGB")
    inputs = processor(text=["a red circle", "two shapes"], images=[image], return_tensors="pt",
                       padding=True)  # fmt: skip
    assert inputs["pixel_values"].shape == (1, 3, 32, 32)
    with torch.no_grad():
        out = model(**inputs)
    assert out.logits_per_image.shape == (1, 2)


def test_build_blip_round_trip(tmp_path):
    import torch
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    path = build_blip(tmp_path / "blip", HFModelConfig(family="blip", **TINY))
    model = BlipForImageTextRetrieval.from_pretrained(path)
    processor = AutoProcessor.from_pretrained(path)
    assert len(processor.tokenizer) == len(blip_tokenizer())
    caption = "a large star on top of a hexagon"
    assert processor.tokenizer.tokenize(caption) == caption.split()
    text = processor.tokenizer(["a red circle"], return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=text["input_ids"], pixel_values=torch.zeros(1, 3, 32, 32))
    assert out.itm_score.shape == (1, 2)


def test_chance_rsum_exact():
    # two images, one caption each: R@1 = 1/2 both ways, R@5 = R@10 = 1
    assert chance_rsum([0, 1]) == pytest.approx(500.0)
    # 500 images, 5 captions each: t2i = (1 + 5 + 10) / 500; i2t ~ the same for 5 of 2500
    assert chance_rsum([i for i in range(500) for _ in range(5)]) == pytest.approx(6.38, abs=0.01)


def test_clip_pretrain_cache(tmp_path, shapes_benchmark):
    from transformers import AutoProcessor, CLIPModel

    out = tmp_path / "clip"
    model = HFModelConfig(**TINY)
    first = pretrain_hf(out, shapes_benchmark, model, TINY_TRAIN, log=lambda *_: None)
    assert not first.reused and first.manifest["steps"] == 2
    scores = first.manifest["scores"]
    assert scores["chance_rsum"] == pytest.approx(
        chance_rsum([i for i in range(4) for _ in range(5)])
    )
    assert 0 <= scores["rsum"] <= 600 and 0 <= scores["mp"] <= 1 and scores["mp_pairs"] > 0
    CLIPModel.from_pretrained(first.model_dir)
    AutoProcessor.from_pretrained(first.model_dir)
    # trained: the weights moved away from the random init
    init = CLIPModel.from_pretrained(out / "init").state_dict()
    trained = CLIPModel.from_pretrained(first.model_dir).state_dict()
    assert any(not (init[k] == trained[k]).all() for k in init)

    again = pretrain_hf(out, shapes_benchmark, model, TINY_TRAIN, log=lambda *_: None)
    assert again.reused and again.manifest == first.manifest

    # a changed argument retrains
    other = pretrain_hf(out, shapes_benchmark, model, HFTrainConfig(steps=1, batch_size=4),
                        evaluate=False, log=lambda *_: None)  # fmt: skip
    assert not other.reused and other.manifest["steps"] == 1
    # a changed model file retrains
    (out / "model" / "config.json").write_text(
        (out / "model" / "config.json")
        .read_text()
        .replace('"projection_dim": 16', '"projection_dim": 16 ')
    )
    changed = pretrain_hf(out, shapes_benchmark, model, HFTrainConfig(steps=1, batch_size=4),
                          evaluate=False, log=lambda *_: None)  # fmt: skip
    assert not changed.reused


def test_pretrain_refuses_a_foreign_directory(tmp_path, shapes_benchmark):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a pre-training directory"):
        pretrain_hf(tmp_path, shapes_benchmark, HFModelConfig(**TINY), TINY_TRAIN)
    assert (tmp_path / "notes.txt").is_file()


def test_blip_pretrain_two_steps(tmp_path, shapes_benchmark):
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    result = pretrain_hf(tmp_path / "blip", shapes_benchmark, HFModelConfig(family="blip", **TINY),
                         TINY_TRAIN, log=lambda *_: None)  # fmt: skip
    metrics = result.manifest["last_metrics"]
    assert result.manifest["steps"] == 2
    assert any(k.startswith("loss/") for k in metrics)
    BlipForImageTextRetrieval.from_pretrained(result.model_dir)
    AutoProcessor.from_pretrained(result.model_dir)
    assert (result.model_dir / "tags_heads.json").is_file()  # the pretrain MLM head
    assert 0 <= result.manifest["scores"]["mp"] <= 1


def test_blip_itc_stage_then_pretrain(tmp_path, shapes_benchmark):
    from transformers import BlipForImageTextRetrieval

    train = HFTrainConfig(steps=1, batch_size=4, lr=1e-3, itc_steps=2)
    result = pretrain_hf(tmp_path / "blip", shapes_benchmark, HFModelConfig(family="blip", **TINY),
                         train, evaluate=False, log=lambda *_: None)  # fmt: skip
    itc_rows = (tmp_path / "blip" / "itc" / "metrics.jsonl").read_text().splitlines()
    assert json.loads(itc_rows[-1])["step"] == 2 and "loss/infonce_i2t" in itc_rows[-1]
    assert result.manifest["steps"] == 1 and "loss/itm" in result.manifest["last_metrics"]
    # the pretrain stage started from the ITC stage's weights, not from the random init
    config = (tmp_path / "blip" / "train" / "config.yaml").read_text()
    assert str(tmp_path / "blip" / "itc" / "model") in config
    BlipForImageTextRetrieval.from_pretrained(result.model_dir)
    # a run without the stage keeps the cache key it had before the option existed
    key = result.manifest["key"]["train"]
    assert key["itc_steps"] == 2
    plain = pretrain_hf(tmp_path / "b2", shapes_benchmark, HFModelConfig(family="blip", **TINY),
                        HFTrainConfig(steps=1, batch_size=4), evaluate=False,
                        log=lambda *_: None)  # fmt: skip
    assert "itc_steps" not in plain.manifest["key"]["train"]


def test_init_std_sets_both_towers_and_keeps_old_cache_keys(tmp_path):
    from transformers import BlipConfig, CLIPConfig

    from tags.benchmark.hf_models import _cache_key

    blip = BlipConfig.from_pretrained(
        build_blip(tmp_path / "blip", HFModelConfig(family="blip", init_std=0.08, **TINY))
    )
    assert blip.text_config.initializer_range == 0.08
    assert blip.vision_config.initializer_range == 0.08
    clip = CLIPConfig.from_pretrained(build_clip(tmp_path / "clip", HFModelConfig(**TINY)))
    assert clip.text_config.initializer_range == 0.02  # 0: the transformers default
    assert "init_std" not in _cache_key(HFModelConfig(**TINY), TINY_TRAIN, "h")["model"]
    assert _cache_key(HFModelConfig(init_std=0.08, **TINY), TINY_TRAIN, "h")["model"]["init_std"]


def test_itm_sampling_reaches_the_pretrain_config_and_keeps_old_keys():
    from tags.benchmark.hf_models import _cache_key, train_config

    random = HFTrainConfig(steps=1, itm_sampling="random")
    assert train_config("m", "b", "o", "blip", random)["pretrain"]["itm_sampling"] == "random"
    assert train_config("m", "b", "o", "blip", TINY_TRAIN)["pretrain"]["itm_sampling"] == "itc"
    assert "itm_sampling" not in _cache_key(HFModelConfig(**TINY), TINY_TRAIN, "h")["train"]
    assert _cache_key(HFModelConfig(**TINY), random, "h")["train"]["itm_sampling"] == "random"
    # the ITC stage of BLIP is the vse recipe on the model's contrastive loss
    itc = train_config("m", "b", "o", "blip", TINY_TRAIN, contrastive=True)
    assert itc["recipe"] == "vse" and itc["vse"] == {"loss": "contrastive"}


def _write_negatives(root, path) -> None:
    """One ``tags generate`` record per training caption (its last word replaced)."""
    data = json.loads((root / "dataset_shapes.json").read_text())
    rows = []
    for im in data["images"]:
        for s in im["sentences"] if im["split"] == "train" else []:
            head, last = s["raw"].rsplit(" ", 1)
            edit = {
                "type": "object",
                "original": last,
                "replacement": "x",
                "start": len(head) + 1,
                "end": len(s["raw"]),
                "operation": "replace",
            }
            rows.append({"image_id": im["imgid"], "caption_id": s["sentid"],
                         "positive": s["raw"], "negative": head + " x", "edits": [edit],
                         "negative_index": 0, "num_negatives": 1})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_clip_pretrain_with_negatives_from_the_first_step(tmp_path, shapes_benchmark):
    from tags.benchmark.hf_models import _cache_key, train_config

    negatives = tmp_path / "neg.jsonl"
    _write_negatives(shapes_benchmark, negatives)
    train = HFTrainConfig(steps=2, batch_size=4, lr=1e-3, negatives=str(negatives),
                          negatives_per_caption=1, hard_negative=2.0)  # fmt: skip
    config = train_config("m", shapes_benchmark, "o", "clip", train)
    assert config["data"]["negatives"] == str(negatives)
    assert config["vse"] == {"loss": "contrastive", "synthetic_negatives": 1}
    assert config["phases"][0]["weights"] == {"hard_negative": 2.0}
    result = pretrain_hf(tmp_path / "clip", shapes_benchmark, HFModelConfig(**TINY), train,
                         evaluate=False, log=lambda *_: None)  # fmt: skip
    rows = [
        json.loads(r)
        for r in (tmp_path / "clip" / "train" / "metrics.jsonl").read_text().splitlines()
    ]
    assert all("loss/hard_negative" in r and "contrastive/pos_beats_synthetic" in r for r in rows)
    # the key holds the file's content, so an edited negatives file retrains
    key = result.manifest["key"]["train"]
    assert key["negatives"] != str(negatives) and len(key["negatives"]) == 64
    negatives.write_text(negatives.read_text().replace(" x", " y"))
    assert _cache_key(HFModelConfig(**TINY), train, "h")["train"]["negatives"] != key["negatives"]
    # without negatives: plain InfoNCE and the key it had before the option existed
    plain = train_config("m", shapes_benchmark, "o", "clip", TINY_TRAIN)
    assert plain["vse"] == {"loss": "contrastive"} and "negatives" not in plain["data"]
    assert "weights" not in plain["phases"][0]
    assert not {"negatives", "negatives_per_caption", "hard_negative"} & set(
        _cache_key(HFModelConfig(**TINY), TINY_TRAIN, "h")["train"]
    )
    with pytest.raises(ValueError, match="for CLIP, not blip"):
        train_config("m", shapes_benchmark, "o", "blip", train)


def test_building_and_loading_prints_no_torchvision_fallback_note(tmp_path):
    """Without torchvision, transformers falls back to an image processor's PIL twin and
    says so; the builders pick that class themselves (a fresh process: the note is printed
    once per process)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tags.benchmark.hf_models import HFModelConfig, build_blip, build_clip\n"
        f"tiny = {TINY!r}\n"
        "build_clip(sys.argv[1] + '/clip', HFModelConfig(**tiny))\n"
        "build_blip(sys.argv[1] + '/blip', HFModelConfig(family='blip', **tiny))\n"
        "from tags.backends.blip import load_processor\n"
        "for family in ('clip', 'blip'):\n"
        "    load_processor(sys.argv[1] + '/' + family, family)\n"
        "print('built')\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0 and run.stdout.strip() == "built", run.stderr[-2000:]
    assert "torchvision" not in run.stderr
