"""Load foreign checkpoints into :class:`~tags.modeling.TagsModel`: BERT text encoders and UNITER.

Both paths rename keys, load with ``strict=False`` and return a :class:`LoadingReport`, so
nothing is silently dropped: every checkpoint tensor is either loaded, derived into another
parameter, or listed as unexpected; every model parameter left at its initialisation is
listed as missing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch

from tags.modeling.configuration_tags import TagsConfig

#: the model class a loader builds (:class:`~tags.modeling.TagsModel`, passed by the caller)
ModelT = TypeVar("ModelT")

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# Non-persistent buffers some checkpoints still carry; they are rebuilt, not loaded.
BUFFER_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
# Checkpoint model types whose key layout convert_bert_state_dict understands.
BERT_FAMILY = ("bert",)


@dataclass
class LoadingReport:
    """What a conversion did with each tensor.

    Attributes:
        source: Where the weights came from.
        loaded: Model keys filled from the checkpoint.
        derived: Model key -> how it was computed from checkpoint tensors.
        missing: Model keys left at their fresh initialisation.
        unexpected: Checkpoint keys that were not used.
    """

    source: str
    loaded: list[str] = field(default_factory=list)
    derived: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"Loaded {len(self.loaded)} tensors from {self.source}"]
        if self.derived:
            lines.append(f"derived ({len(self.derived)}):")
            lines += [f"  {key} <- {how}" for key, how in sorted(self.derived.items())]
        for title, keys in (("missing", self.missing), ("unexpected", self.unexpected)):
            if keys:
                lines.append(f"{title} ({len(keys)}): {', '.join(_summarize(keys))}")
        return "\n".join(lines)


def _summarize(keys: list[str]) -> list[str]:
    """Collapse per-layer keys (``encoder.layer.3.x``) into ``encoder.layer.*.x (xN)`` groups."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(re.sub(r"\.\d+\.", ".*.", key), []).append(key)
    return sorted(f"{p} (x{len(ks)})" if len(ks) > 1 else ks[0] for p, ks in groups.items())


# ---------------------------------------------------------------------- reading


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a state dict from a weights file or a checkpoint directory (safetensors or torch).

    Directories may hold ``model.safetensors``, ``pytorch_model.bin`` or a sharded index.
    Torch files are read with ``weights_only=True``; a ``{"model": state_dict}`` or
    ``{"state_dict": ...}`` wrapper is unwrapped.
    """
    path = Path(path)
    if path.is_dir():
        for name in SHARD_INDEXES:
            if (path / name).is_file():
                index = json.loads((path / name).read_text())
                state: dict[str, torch.Tensor] = {}
                for shard in sorted(set(index["weight_map"].values())):
                    state.update(read_state_dict(path / shard))
                return state
        for name in WEIGHT_FILES:
            if (path / name).is_file():
                return read_state_dict(path / name)
        raise FileNotFoundError(f"no weights ({', '.join(WEIGHT_FILES)}) in {path}")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    state = torch.load(path, map_location="cpu", weights_only=True)
    for wrapper in ("model", "state_dict"):
        if isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    return dict(state)


def _rename_legacy(key: str) -> str:
    """TF-era LayerNorm names (``gamma``/``beta``) and DDP's ``module.`` prefix."""
    key = key.removeprefix("module.")
    if ".LayerNorm." in key or "layer_norm." in key:
        key = re.sub(r"\.gamma$", ".weight", key)
        key = re.sub(r"\.beta$", ".bias", key)
    return key


def _is_buffer(key: str) -> bool:
    return key.endswith(BUFFER_SUFFIXES)


# ---------------------------------------------------------------------- key maps


def convert_bert_state_dict(
    state_dict: dict[str, torch.Tensor],
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Rename a BERT (``BertModel``/``BertForMaskedLM``) state dict to TagsModel keys.

    Returns:
        The converted tensors and the checkpoint keys that have no place in the model
        (e.g. ``cls.seq_relationship``). A decoder tied to the word embeddings is not listed.
    """
    converted: dict[str, torch.Tensor] = {}
    unexpected: list[str] = []
    tied: dict[str, torch.Tensor] = {}
    for original, tensor in state_dict.items():
        key = _rename_legacy(original)
        if _is_buffer(key):
            continue
        key = key.removeprefix("bert.")
        if key.startswith(("embeddings.", "encoder.layer.", "pooler.")):
            converted[key] = tensor
        elif key.startswith("cls.predictions.decoder."):
            tied[original] = tensor
        elif key.startswith("cls.predictions."):
            converted["mlm_head." + key.removeprefix("cls.predictions.")] = tensor
        else:
            unexpected.append(original)
    unexpected += _untied_decoder_keys(tied, converted)
    return converted, unexpected


def _untied_decoder_keys(
    decoder: dict[str, torch.Tensor], converted: dict[str, torch.Tensor]
) -> list[str]:
    """Decoder tensors that differ from what the tied model will use (word embeddings, bias)."""
    unexpected = []
    for key, tensor in decoder.items():
        reference = (
            converted.get("embeddings.word_embeddings.weight")
            if key.endswith("weight")
            else converted.get("mlm_head.bias")
        )
        if (
            reference is None
            or reference.shape != tensor.shape
            or not torch.equal(reference, tensor)
        ):
            unexpected.append(key)
    return unexpected


UNITER_PREFIXES = {
    "uniter.embeddings.": "embeddings.",
    "uniter.img_embeddings.": "img_embeddings.",
    "uniter.encoder.layer.": "encoder.layer.",
    "uniter.pooler.": "pooler.",
    "cls.predictions.": "mlm_head.",
    "correction_output.predictions.": "woc_head.",
    "rank_output.": "itm_head.classifier.",
    "disc_output.": "wod_head.classifier.",
}


def convert_uniter_state_dict(
    state_dict: dict[str, torch.Tensor],
) -> tuple[dict[str, torch.Tensor], list[str], dict[str, str]]:
    """Rename an original UNITER / TAGS state dict to TagsModel keys.

    Key map (ChenRocks/UNITER ``model/*.py``, LibertFan/TAGS ``model/nsgd2.py``):

    - ``uniter.embeddings.*``, ``uniter.img_embeddings.*``, ``uniter.encoder.layer.N.*``,
      ``uniter.pooler.*``: same names without the ``uniter.`` prefix;
    - ``cls.predictions.*`` -> ``mlm_head.*`` (the decoder is tied to the word embeddings);
    - ``rank_output`` (1 logit, ITR fine-tuning) -> ``itm_head.classifier``; otherwise the
      pretraining ``itm_output`` (2 logits) becomes ``w[1] - w[0]``, ``b[1] - b[0]``, so
      ``sigmoid`` of the new logit equals UNITER's softmax probability of "match";
    - ``disc_output`` -> ``wod_head.classifier``, else a copy of ``itm_output`` (TAGS init);
    - ``correction_output.predictions.*`` -> ``woc_head.*``, else a copy of the MLM head.

    ``img_embeddings.mask_embedding``, ``feat_regress``, ``region_classifier`` (masked region
    modelling) and anything unknown are returned as unexpected.

    Returns:
        Converted tensors, unexpected checkpoint keys, and derived model keys with their recipe.
    """
    converted: dict[str, torch.Tensor] = {}
    unexpected: list[str] = []
    derived: dict[str, str] = {}
    decoder: dict[str, torch.Tensor] = {}
    itm_output: dict[str, torch.Tensor] = {}
    for original, tensor in state_dict.items():
        key = _rename_legacy(original)
        if _is_buffer(key):
            continue
        if key.startswith(("cls.predictions.decoder.", "correction_output.predictions.decoder.")):
            decoder[original] = tensor
            continue
        if key.startswith("itm_output."):
            itm_output[key.removeprefix("itm_output.")] = tensor
            continue
        prefix = next((p for p in UNITER_PREFIXES if key.startswith(p)), None)
        if prefix is None or key.startswith("uniter.img_embeddings.mask_embedding."):
            unexpected.append(original)
            continue
        converted[UNITER_PREFIXES[prefix] + key.removeprefix(prefix)] = tensor

    if itm_output:
        weight, bias = itm_output.get("weight"), itm_output.get("bias")
        if weight is None or bias is None or weight.shape[0] != 2:
            unexpected += [f"itm_output.{name}" for name in itm_output]
        else:
            if "itm_head.classifier.weight" not in converted:
                converted["itm_head.classifier.weight"] = (weight[1] - weight[0]).unsqueeze(0)
                converted["itm_head.classifier.bias"] = (bias[1] - bias[0]).unsqueeze(0)
                derived["itm_head.classifier.*"] = "itm_output row 1 - row 0"
            if "wod_head.classifier.weight" not in converted:
                converted["wod_head.classifier.weight"] = weight.clone()
                converted["wod_head.classifier.bias"] = bias.clone()
                derived["wod_head.classifier.*"] = "copy of itm_output (TAGS init_output)"
    if not any(key.startswith("woc_head.") for key in converted):
        for key in [k for k in converted if k.startswith("mlm_head.")]:
            converted["woc_head." + key.removeprefix("mlm_head.")] = converted[key].clone()
        if any(key.startswith("mlm_head.") for key in converted):
            derived["woc_head.*"] = "copy of cls.predictions (TAGS init_output)"
    for key, tensor in decoder.items():
        head = "mlm_head" if key.startswith("cls.") else "woc_head"
        reference = (
            converted.get("embeddings.word_embeddings.weight")
            if key.endswith("weight")
            else converted.get(f"{head}.bias")
        )
        if (
            reference is None
            or reference.shape != tensor.shape
            or not torch.equal(reference, tensor)
        ):
            unexpected.append(key)
    return converted, unexpected, derived


def infer_uniter_config(state_dict: dict[str, torch.Tensor], **overrides: Any) -> TagsConfig:
    """Read a :class:`TagsConfig` off the tensor shapes of a UNITER state dict.

    The number of attention heads cannot be seen in the weights: it defaults to
    ``hidden_size // 64`` (12 for base, 16 for large); pass it in ``overrides`` otherwise.
    """
    state = {_rename_legacy(k): v for k, v in state_dict.items()}
    try:
        words = state["uniter.embeddings.word_embeddings.weight"]
        positions = state["uniter.embeddings.position_embeddings.weight"]
        types = state["uniter.embeddings.token_type_embeddings.weight"]
        img_linear = state["uniter.img_embeddings.img_linear.weight"]
        intermediate = state["uniter.encoder.layer.0.intermediate.dense.weight"]
    except KeyError as error:
        raise ValueError(
            f"not a UNITER state dict: missing {error.args[0]!r}; pass config= explicitly"
        ) from None
    layers = {
        int(m.group(1)) for k in state if (m := re.match(r"uniter\.encoder\.layer\.(\d+)\.", k))
    }
    values: dict[str, Any] = {
        "vocab_size": words.shape[0],
        "hidden_size": words.shape[1],
        "num_hidden_layers": max(layers) + 1,
        "num_attention_heads": max(words.shape[1] // 64, 1),
        "intermediate_size": intermediate.shape[0],
        "max_position_embeddings": positions.shape[0],
        "type_vocab_size": types.shape[0],
        "region_feature_size": img_linear.shape[1],
        "use_mlm_head": any(k.startswith("cls.predictions.") for k in state),
    }
    values.update(overrides)
    return TagsConfig(**values)


# ---------------------------------------------------------------------- loading


def load_converted(
    model: torch.nn.Module,
    converted: dict[str, torch.Tensor],
    unexpected: list[str],
    derived: dict[str, str],
    source: str,
) -> LoadingReport:
    """Copy converted tensors into ``model`` and report what happened to every key.

    Raises:
        ValueError: if a tensor's shape disagrees with the model (wrong config for the
            checkpoint), naming the key and both shapes.
    """
    expected = model.state_dict()
    tied_targets = set(getattr(model, "all_tied_weights_keys", {}) or {})
    usable: dict[str, torch.Tensor] = {}
    unexpected = list(unexpected)
    derived_prefixes = tuple(d.rstrip("*") for d in derived)
    for key, tensor in converted.items():
        if key not in expected:
            if not key.startswith(derived_prefixes):  # copies for a head the model lacks
                unexpected.append(key)
            continue
        if expected[key].shape != tensor.shape:
            raise ValueError(
                f"{source}: {key} has shape {tuple(tensor.shape)} but the model expects "
                f"{tuple(expected[key].shape)}; check the config against the checkpoint"
            )
        usable[key] = tensor
    result = model.load_state_dict(usable, strict=False)
    derived_keys = {k for k in usable if k.startswith(derived_prefixes)}
    return LoadingReport(
        source=source,
        loaded=sorted(set(usable) - derived_keys),
        derived={
            d: how for d, how in derived.items() if any(k.startswith(d.rstrip("*")) for k in usable)
        },
        missing=sorted(k for k in result.missing_keys if k not in tied_targets),
        unexpected=sorted(unexpected),
    )


def find_mask_token_id(path: Path) -> int | None:
    """Id of ``[MASK]`` from a local ``vocab.txt`` or ``tokenizer.json``, if present."""
    vocab_file = path / "vocab.txt"
    if vocab_file.is_file():
        for index, token in enumerate(vocab_file.read_text(encoding="utf-8").splitlines()):
            if token == "[MASK]":
                return index
    tokenizer_file = path / "tokenizer.json"
    if tokenizer_file.is_file():
        tokenizer = json.loads(tokenizer_file.read_text(encoding="utf-8"))
        for token in tokenizer.get("added_tokens", []):
            if token.get("content") == "[MASK]":
                return int(token["id"])
        vocab = tokenizer.get("model", {}).get("vocab")
        if isinstance(vocab, dict) and "[MASK]" in vocab:
            return int(vocab["[MASK]"])
    return None


def load_text_checkpoint(
    model_class: type[ModelT], path: str | Path, **config_overrides: Any
) -> tuple[ModelT, LoadingReport]:
    """Build ``model_class`` from a local BERT-family checkpoint directory (text side + MLM head)."""
    from transformers import AutoConfig

    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(
            f"{path} is not a local checkpoint directory (nothing is downloaded from a hub)"
        )
    text_config = AutoConfig.from_pretrained(path, local_files_only=True)
    if text_config.model_type not in BERT_FAMILY:
        raise ValueError(
            f"{path} holds a {text_config.model_type!r} model; from_text_pretrained reads "
            f"BERT-layout checkpoints ({', '.join(BERT_FAMILY)})"
        )
    mask_token_id = find_mask_token_id(path)
    if mask_token_id is not None:
        config_overrides.setdefault("mask_token_id", mask_token_id)
    config = TagsConfig.from_bert_config(text_config, **config_overrides)
    model = model_class(config)
    converted, unexpected = convert_bert_state_dict(read_state_dict(path))
    derived: dict[str, str] = {}
    if config.use_woc_head and any(k.startswith("mlm_head.") for k in converted):
        for key in [k for k in converted if k.startswith("mlm_head.")]:
            converted["woc_head." + key.removeprefix("mlm_head.")] = converted[key].clone()
        derived["woc_head.*"] = "copy of cls.predictions (TAGS init_output)"
    report = load_converted(model, converted, unexpected, derived, str(path))
    model.config.name_or_path = str(path)
    model.eval()
    return model, report


def load_uniter_checkpoint(
    model_class: type[ModelT],
    checkpoint: str | Path | dict[str, torch.Tensor],
    config: TagsConfig | None = None,
    **config_overrides: Any,
) -> tuple[ModelT, LoadingReport]:
    """Build ``model_class`` from an original UNITER / TAGS state dict."""
    if isinstance(checkpoint, dict):
        state_dict, source = checkpoint, "<state dict>"
    else:
        state_dict, source = read_state_dict(checkpoint), str(checkpoint)
    if config is None:
        config = infer_uniter_config(state_dict, **config_overrides)
    elif config_overrides:
        config = TagsConfig.from_dict({**config.to_dict(), **config_overrides})
    model = model_class(config)
    converted, unexpected, derived = convert_uniter_state_dict(state_dict)
    report = load_converted(model, converted, unexpected, derived, source)
    model.eval()
    return model, report


__all__ = [
    "LoadingReport",
    "convert_bert_state_dict",
    "convert_uniter_state_dict",
    "find_mask_token_id",
    "infer_uniter_config",
    "load_converted",
    "read_state_dict",
]
