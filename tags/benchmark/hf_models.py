"""Hugging Face VL models pre-trained from scratch on the shapes benchmark (offline).

No pretrained CLIP or BLIP weights exist offline, so this module makes them: a small
``CLIPModel`` (or ``BlipForImageTextRetrieval``) built from a config, with a tokenizer whose
vocabulary holds every benchmark word as one token (:func:`benchmark_words`), pre-trained by
the project's training engine on the benchmark's rendered images (``tags make-benchmark
--save-images``): the ``vse`` recipe with the model's InfoNCE for CLIP, the ``pretrain``
recipe (ITM + MLM + ITC) for BLIP. The result is a plain transformers directory
(``CLIPModel.from_pretrained``, ``AutoProcessor.from_pretrained``) under ``OUT/model``.

:func:`pretrain_hf` caches like the benchmark build: ``OUT/manifest.json`` holds the
arguments, the benchmark's content hash and a SHA-256 of the model files; a second call with
the same arguments on the same benchmark reuses the model.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

FORMAT = "tags-hf-pretrain/1"
MANIFEST_FILE = "manifest.json"
MODEL_DIR = "model"
INIT_DIR = "init"
TRAIN_DIR = "train"
ITC_DIR = "itc"
_OWNED = {MANIFEST_FILE, MODEL_DIR, INIT_DIR, TRAIN_DIR, ITC_DIR}
FAMILIES: tuple[str, ...] = ("clip", "blip")
# BERT-style special tokens of the BLIP word vocabulary
_BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_PUNCTUATION = (",", ":")


# --------------------------------------------------------------------------- vocabulary
def benchmark_words() -> list[str]:
    """Every word the benchmark's captions and minimal pairs can hold (lower case, sorted):
    shapes, colours, sizes, relation words, template words, articles and numbers."""
    from tags.benchmark.captions import _NUMBERS, LIST_TEMPLATE, RELATION_TEMPLATES
    from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES

    words = {"a", "an", "and", *SHAPES, *COLORS, *SIZES, *_NUMBERS.values()}
    for phrase in (*RELATIONS, *RELATION_TEMPLATES, LIST_TEMPLATE):
        for word in phrase.replace(":", " ").split():
            if not word.startswith("{"):
                words.add(word)
    return sorted(words)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2 / CLIP byte -> printable character table."""
    bs = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def _bpe(symbols: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """Byte-pair encoding of one word: merge the lowest-ranked adjacent pair until none."""
    while len(symbols) > 1:
        pairs = [(ranks.get(p, math.inf), n) for n, p in enumerate(itertools.pairwise(symbols))]
        rank, n = min(pairs)
        if rank == math.inf:
            break
        symbols = [*symbols[:n], symbols[n] + symbols[n + 1], *symbols[n + 2 :]]
    return symbols


def clip_vocabulary(words: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """``(vocab, merges)`` of a CLIP byte-level BPE in which every word of ``words`` is one
    token; any other text falls back to single characters (never an unknown token).

    Merges are appended word by word: each word gets the merges that join its current
    segmentation left to right. Later merges rank below earlier ones, so they never change
    how an earlier word is encoded."""
    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    ranks: dict[tuple[str, str], int] = {}
    for word in words:
        symbols = _bpe([*word[:-1], word[-1] + "</w>"], ranks)
        while len(symbols) > 1:
            ranks[(symbols[0], symbols[1])] = len(ranks)
            vocab.setdefault(symbols[0] + symbols[1], len(vocab))
            symbols = _bpe(symbols, ranks)
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    return vocab, sorted(ranks, key=ranks.__getitem__)


def clip_tokenizer(words: list[str] | None = None, max_length: int = 32) -> Any:
    """A ``CLIPTokenizer`` with every benchmark word (or ``words``) as one token."""
    from transformers import CLIPTokenizer

    words = benchmark_words() if words is None else words
    vocab, merges = clip_vocabulary(words)
    # transformers 5 ignores vocab_file= / merges_file=: pass the mappings
    tokenizer = CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=max_length)
    if len(tokenizer) != len(vocab):
        raise RuntimeError(f"CLIPTokenizer has {len(tokenizer)} tokens, expected {len(vocab)}")
    _check_single_tokens(tokenizer, words)
    return tokenizer


def blip_tokenizer(words: list[str] | None = None, max_length: int = 32) -> Any:
    """A BERT word-level tokenizer: the special tokens, the punctuation and the words."""
    from transformers import BertTokenizer

    words = benchmark_words() if words is None else words
    tokens = [*_BERT_SPECIALS, *_PUNCTUATION, *words]
    tokenizer = BertTokenizer(
        vocab={w: i for i, w in enumerate(tokens)}, model_max_length=max_length
    )
    if len(tokenizer) != len(tokens):
        raise RuntimeError(f"BertTokenizer has {len(tokenizer)} tokens, expected {len(tokens)}")
    _check_single_tokens(tokenizer, words)
    return tokenizer


def _check_single_tokens(tokenizer: Any, words: list[str]) -> None:
    split = [w for w in words if len(tokenizer(w, add_special_tokens=False)["input_ids"]) != 1]
    if split:
        raise RuntimeError(f"words not one token: {', '.join(split)}")


# --------------------------------------------------------------------------- models
@dataclass(frozen=True)
class HFModelConfig:
    """The architecture (both towers share width and depth) and its random init."""

    family: str = "clip"  # clip | blip
    image_size: int = 64
    patch_size: int = 8
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    projection_dim: int = 64
    max_text_len: int = 32
    seed: int = 0
    # std of the random init (both towers); 0: the transformers default (0.02)
    init_std: float = 0.0

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if self.image_size % self.patch_size:
            raise ValueError("image_size must be a multiple of patch_size")
        if self.hidden_size % self.num_heads:
            raise ValueError("hidden_size must be a multiple of num_heads")


def _tower(config: HFModelConfig) -> dict[str, Any]:
    tower: dict[str, Any] = {
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": 4 * config.hidden_size,
    }
    if config.init_std:
        tower["initializer_range"] = config.init_std
    return tower


def _vision(config: HFModelConfig) -> dict[str, Any]:
    return {**_tower(config), "image_size": config.image_size, "patch_size": config.patch_size}


def image_processor_class(name: str) -> type:
    """transformers' image processor class ``name`` (e.g. ``"CLIPImageProcessor"``); where
    torchvision is not installed, its PIL twin ``<name>Pil``: the class transformers falls back
    to then, without the warning the fallback prints."""
    import importlib.util

    import transformers

    if importlib.util.find_spec("torchvision") is None:
        try:
            return getattr(transformers, f"{name}Pil")
        except (AttributeError, ImportError):
            pass
    return getattr(transformers, name)


def quiet_transformers() -> None:
    """Silence transformers' logging below errors and torchvision's absence warning."""
    from transformers.utils import logging

    logging.set_verbosity_error()
    warnings.filterwarnings("ignore", message=".*torchvision.*")


def build_clip(path: str | Path, config: HFModelConfig | None = None) -> Path:
    """A random ``CLIPModel`` + ``CLIPProcessor`` (benchmark tokenizer) saved to ``path``."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    config = config or HFModelConfig()
    quiet_transformers()
    torch.manual_seed(config.seed)
    tokenizer = clip_tokenizer(max_length=config.max_text_len)
    model_config = CLIPConfig(
        text_config={
            **_tower(config),
            "vocab_size": len(tokenizer),
            "max_position_embeddings": config.max_text_len,
            "eos_token_id": tokenizer.eos_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config=_vision(config),
        projection_dim=config.projection_dim,
    )
    CLIPModel(model_config).save_pretrained(path)
    side = config.image_size
    image_processor = image_processor_class("CLIPImageProcessor")(
        size={"shortest_edge": side}, crop_size={"height": side, "width": side}
    )
    CLIPProcessor(image_processor, tokenizer).save_pretrained(path)
    return Path(path)


def build_blip(path: str | Path, config: HFModelConfig | None = None) -> Path:
    """A random ``BlipForImageTextRetrieval`` + ``BlipProcessor`` saved to ``path``."""
    import torch
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipProcessor

    config = config or HFModelConfig(family="blip")
    quiet_transformers()
    torch.manual_seed(config.seed)
    tokenizer = blip_tokenizer(max_length=config.max_text_len)
    model_config = BlipConfig(
        text_config={
            **_tower(config),
            "vocab_size": len(tokenizer),
            "max_position_embeddings": config.max_text_len,
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.cls_token_id,
            "sep_token_id": tokenizer.sep_token_id,
        },
        # BLIP's vision default initializer_range is 1e-10: a random ViT would be constant
        vision_config={**_vision(config), "initializer_range": config.init_std or 0.02},
        projection_dim=config.projection_dim,
        image_text_hidden_size=config.projection_dim,
    )
    BlipForImageTextRetrieval(model_config).save_pretrained(path)
    side = config.image_size
    image_processor = image_processor_class("BlipImageProcessor")(
        size={"height": side, "width": side}
    )
    BlipProcessor(image_processor, tokenizer).save_pretrained(path)
    return Path(path)


BUILDERS = {"clip": build_clip, "blip": build_blip}


# --------------------------------------------------------------------------- pre-training
@dataclass(frozen=True)
class HFTrainConfig:
    """The pre-training run: ``tags train`` settings (one phase, CPU)."""

    steps: int = 1500
    batch_size: int = 64
    lr: float = 1e-3
    warmup_ratio: float = 0.05
    weight_decay: float = 0.1
    seed: int = 0
    split: str = "train"
    limit_images: int | None = None
    num_workers: int = 0
    # BLIP pretrain loss weights
    weights: dict[str, float] = field(default_factory=lambda: {"itm": 1.0, "mlm": 1.0, "itc": 1.0})
    # BLIP: a first stage of ITC alone (recipe vse, the model's contrastive loss) for this many
    # steps at itc_lr (0: lr) before the pretrain recipe (0: none)
    itc_steps: int = 0
    itc_lr: float = 0.0
    # BLIP: how the pretrain recipe draws each ITM negative (itc: by ITC similarity from the
    # batch, BLIP's; random: from the dataset, UNITER's)
    itm_sampling: str = "itc"
    # CLIP: NegCLIP-style from the first step: a ``tags generate`` JSONL of the training
    # captions (each caption's first ``negatives_per_caption`` are extra text columns) and
    # the vse recipe's hard-negative term at ``hard_negative`` (None: plain InfoNCE)
    negatives: str | None = None
    negatives_per_caption: int = 2
    hard_negative: float = 0.0


def train_config(
    model_path: str | Path,
    benchmark: str | Path,
    output_dir: str | Path,
    family: str,
    train: HFTrainConfig,
    max_text_len: int = 32,
    contrastive: bool = False,
) -> dict[str, Any]:
    """The ``tags train`` config (as a mapping) of a pre-training run: ``vse`` with the
    model's InfoNCE for CLIP (and for any model with ``contrastive``: BLIP's ITC stage),
    NegCLIP-style when ``train.negatives`` is set (CLIP only), ``pretrain`` (ITM + MLM +
    ITC) for BLIP."""
    benchmark = Path(benchmark)
    phase: dict[str, Any] = {"name": "main", "steps": train.steps, "lr": train.lr}
    config: dict[str, Any] = {
        "seed": train.seed,
        "output_dir": str(output_dir),
        "cpu": True,
        "batch_size": train.batch_size,
        "log_every": max(1, min(50, train.steps // 20)),
        "tensorboard": False,
        "progress_bar": False,
        "model": {"source": "backend", "path": str(model_path)},
        "data": {
            "captions": str(benchmark / "dataset_shapes.json"),
            "images": str(benchmark / "images"),
            "split": train.split,
            "limit_images": train.limit_images,
            "on_bad_image": "error",
            "max_text_len": max_text_len,
            "num_workers": train.num_workers,
        },
        "optim": {
            "optimizer": "adamw",
            "warmup_ratio": train.warmup_ratio,
            "weight_decay": train.weight_decay,
        },
    }
    if train.negatives and family != "clip":
        raise ValueError(f"negatives (NegCLIP-style pre-training) are for CLIP, not {family}")
    if family == "clip" or contrastive:
        config["recipe"] = "vse"
        config["vse"] = {"loss": "contrastive"}
        if train.negatives:
            config["data"]["negatives"] = str(train.negatives)
            config["vse"]["synthetic_negatives"] = train.negatives_per_caption
            if train.hard_negative:
                phase["weights"] = {"hard_negative": train.hard_negative}
    else:
        config["recipe"] = "pretrain"
        config["pretrain"] = {"itm_negatives": "both", "itm_sampling": train.itm_sampling}
        phase["weights"] = dict(train.weights)
    config["phases"] = [phase]
    return config


@dataclass
class HFPretrainResult:
    model_dir: Path
    reused: bool
    seconds: float
    manifest: dict[str, Any]


def _cache_key(model: HFModelConfig, train: HFTrainConfig, benchmark_hash: str) -> dict[str, Any]:
    settings = asdict(train)
    if not train.itc_steps:  # the key of a run without an ITC stage is as before it existed
        del settings["itc_steps"], settings["itc_lr"]
    if train.itm_sampling == "itc":
        del settings["itm_sampling"]
    if train.negatives:  # the file by content, not by path
        settings["negatives"] = _file_hash(train.negatives)
    else:  # the key of a run without negatives is as before they existed
        del settings["negatives"], settings["negatives_per_caption"], settings["hard_negative"]
    architecture = asdict(model)
    if not model.init_std:  # likewise without an init std
        del architecture["init_std"]
    return {"model": architecture, "train": settings, "benchmark": benchmark_hash}


def _file_hash(path: str | Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _benchmark_hash(benchmark: str | Path) -> str:
    from tags.benchmark.build import read_manifest

    manifest = read_manifest(benchmark)
    if not (Path(benchmark) / "images").is_dir():
        raise ValueError(
            f"{benchmark}: no images/ (build it with tags make-benchmark --save-images)"
        )
    return str(manifest["content_hash"])


def cached_pretrain(
    out: str | Path, model: HFModelConfig, train: HFTrainConfig, benchmark: str | Path
) -> dict[str, Any] | None:
    """The manifest of a finished pre-training with these arguments on this benchmark whose
    model files are unchanged, else None."""
    from tags.benchmark.build import content_hash

    path = Path(out) / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    key = _cache_key(model, train, _benchmark_hash(benchmark))
    if manifest.get("format") != FORMAT or manifest.get("key") != key:
        return None
    model_dir = Path(out) / MODEL_DIR
    if not model_dir.is_dir() or manifest.get("content_hash") != content_hash(model_dir):
        return None
    return manifest


def _clear(out: Path, force: bool) -> None:
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in _OWNED)
        if foreign and not force:
            raise ValueError(
                f"{out} is not a pre-training directory (holds {', '.join(foreign[:3])}); "
                "choose an empty or new directory"
            )
        for name in _OWNED:
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)


def pretrain_hf(
    out: str | Path,
    benchmark: str | Path,
    model: HFModelConfig | None = None,
    train: HFTrainConfig | None = None,
    *,
    force: bool = False,
    evaluate: bool = True,
    log: Any = print,
) -> HFPretrainResult:
    """Build a random model under ``OUT/init``, pre-train it on the benchmark's training
    images with ``tags train`` (run in ``OUT/train``) and keep the final model as
    ``OUT/model``; reused when ``OUT/manifest.json`` matches. ``evaluate`` adds the test
    split's retrieval and minimal-pair scores (:func:`evaluate_hf`) to the manifest."""
    from tags.benchmark.build import content_hash
    from tags.training import training_function
    from tags.training.config import config_from_dict

    model = model or HFModelConfig()
    train = train or HFTrainConfig()
    out = Path(out)
    start = time.perf_counter()
    if not force:
        manifest = cached_pretrain(out, model, train, benchmark)
        if manifest is not None:
            return HFPretrainResult(out / MODEL_DIR, True, time.perf_counter() - start, manifest)
    key = _cache_key(model, train, _benchmark_hash(benchmark))
    _clear(out, force)
    BUILDERS[model.family](out / INIT_DIR, model)
    train_start = time.perf_counter()
    start_from = out / INIT_DIR
    if train.itc_steps:
        # ITC alone first: the text encoder's first token learns to depend on the words
        # before ITM reads it
        itc = replace(train, steps=train.itc_steps, lr=train.itc_lr or train.lr)
        itc_config = train_config(start_from, benchmark, out / ITC_DIR, model.family, itc,
                                  model.max_text_len, contrastive=True)  # fmt: skip
        start_from = Path(training_function(config_from_dict(itc_config)).output_dir) / MODEL_DIR
    config = config_from_dict(
        train_config(start_from, benchmark, out / TRAIN_DIR, model.family, train,
                     model.max_text_len)
    )  # fmt: skip
    result = training_function(config)
    train_seconds = time.perf_counter() - train_start
    shutil.copytree(Path(result.output_dir) / MODEL_DIR, out / MODEL_DIR)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "key": key,
        "benchmark_dir": str(Path(benchmark).resolve()),
        "train_seconds": round(train_seconds, 1),
        "steps": result.state.step,
        "last_metrics": {k: float(v) for k, v in result.last_metrics.items()},
        "parameters": sum(p.numel() for p in result.model.parameters()),
    }
    if evaluate:
        eval_start = time.perf_counter()
        manifest["scores"] = evaluate_hf(out / MODEL_DIR, benchmark)
        manifest["eval_seconds"] = round(time.perf_counter() - eval_start, 1)
    manifest["content_hash"] = content_hash(out / MODEL_DIR)
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"{out}: pre-trained {model.family} in {train_seconds:.0f}s")
    return HFPretrainResult(out / MODEL_DIR, False, time.perf_counter() - start, manifest)


# --------------------------------------------------------------------------- evaluation
def chance_rsum(txt2img: list[int]) -> float:
    """Expected RSum (percent) of a random ranking: image->text R@K is the chance that one
    of the image's captions is among K drawn without replacement; text->image is K / N."""
    from math import comb

    n_texts, n_images = len(txt2img), len(set(txt2img))
    counts: dict[int, int] = {}
    for image in txt2img:
        counts[image] = counts.get(image, 0) + 1
    total = 0.0
    for k in (1, 5, 10):
        draw = min(k, n_texts)
        i2t = sum(1 - comb(n_texts - m, draw) / comb(n_texts, draw) for m in counts.values())
        total += 100 * (i2t / n_images + min(k, n_images) / n_images)
    return total


def pair_scorer(backend: Any, images: Any, batch_size: int = 128) -> Any:
    """``score_fn(image_ids, captions)`` for :func:`minimal_pair_accuracy`: ITM log-odds
    when the backend has a cross-encoder, else the scaled cosine of cached embeddings."""
    import torch

    position = {image_id: n for n, image_id in enumerate(images.ids)}
    cross = backend.supports("itm")
    image_emb = None
    if not cross:
        with torch.no_grad():
            image_emb = torch.cat(
                [
                    backend.encode_image({"pixel_values": images.pixel_values[s : s + batch_size]})
                    for s in range(0, len(images), batch_size)
                ]
            )

    def score(image_ids: Any, captions: Any) -> Any:
        rows = torch.tensor([position[i] for i in image_ids])
        text = backend.text_inputs(list(captions))
        with torch.no_grad():
            if cross:
                return backend.score_pairs(text, {"pixel_values": images.pixel_values[rows]})
            return (backend.encode_text(text) * image_emb[rows]).sum(-1)

    return score


def split_minimal_pairs(benchmark: str | Path, split: str) -> list[Any]:
    """The minimal pairs of ``split``: the build's test pairs for ``test``; for another
    split (``val``) the same sampler, seed and pairs per type as the test pairs, drawn from
    the split's scenes (``scenes.jsonl``), in memory (the benchmark folder is not touched)."""
    from tags.benchmark import oracle_negatives
    from tags.benchmark.build import PAIRS_FILE, SCENES_FILE, pair_sampler_of, read_manifest
    from tags.benchmark.minimal_pairs import read_pairs

    benchmark = Path(benchmark)
    if split == "test":
        return read_pairs(benchmark / PAIRS_FILE)
    manifest = read_manifest(benchmark)
    config = manifest.get("config", {})
    return oracle_negatives.split_minimal_pairs(
        benchmark / SCENES_FILE, split, int(config.get("seed", 0)),
        int(config.get("pairs_per_type", 1)), pair_sampler_of(manifest),
    )  # fmt: skip


def evaluate_hf(
    model_dir: str | Path,
    benchmark: str | Path,
    split: str = "test",
    mode: str = "dual",
    pairs: list[Any] | None = None,
    role_pairs: list[Any] | None = None,
) -> dict[str, float]:
    """Retrieval (R@1/5/10, ``rsum``, ``chance_rsum``) on ``split`` of the benchmark and
    minimal-pair accuracy (``mp``, ``mp_attribute``, ``mp_object``, ``mp_relation``) on the
    split's pairs (``pairs``, default :func:`split_minimal_pairs`); with ``role_pairs``
    (:func:`tags.benchmark.oracle_negatives.split_role_pairs`) also ``mp_role``, the
    accuracy on role swaps (not part of ``mp``)."""
    import torch

    from tags.backends import load_backend
    from tags.benchmark.minimal_pairs import minimal_pair_accuracy
    from tags.evaluation.images import load_image_retrieval_split
    from tags.evaluation.retrieval import evaluate_retrieval

    quiet_transformers()
    benchmark = Path(benchmark)
    backend = load_backend(str(model_dir))
    backend.model.eval()
    images, texts, _ = load_image_retrieval_split(
        benchmark / "dataset_shapes.json", benchmark / "images", backend, split=split
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate_retrieval(backend, images, texts, "full", mode)
    scores = {k: float(v) for k, v in result.metrics.items()}
    scores["chance_rsum"] = chance_rsum([int(i) for i in texts.txt2img])
    pairs = split_minimal_pairs(benchmark, split) if pairs is None else pairs
    scorer = pair_scorer(backend, images)
    with torch.no_grad():
        accuracy = minimal_pair_accuracy(scorer, pairs)
        if role_pairs:
            scores["mp_role"] = minimal_pair_accuracy(scorer, role_pairs)["overall"]
            scores["mp_role_pairs"] = len(role_pairs)
    scores["mp"] = accuracy.pop("overall")
    scores.update({f"mp_{k}": v for k, v in accuracy.items()})
    scores["mp_pairs"] = len(pairs)
    return scores


__all__ = [
    "BUILDERS",
    "FAMILIES",
    "HFModelConfig",
    "HFPretrainResult",
    "HFTrainConfig",
    "benchmark_words",
    "blip_tokenizer",
    "build_blip",
    "build_clip",
    "cached_pretrain",
    "chance_rsum",
    "clip_tokenizer",
    "clip_vocabulary",
    "evaluate_hf",
    "pair_scorer",
    "pretrain_hf",
    "quiet_transformers",
    "split_minimal_pairs",
    "train_config",
]
