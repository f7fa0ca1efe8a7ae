"""TAGS-DC heads for backends that lack them (BLIP): MLM, WoD and WoC on the image-grounded
text encoder's token states, saved beside the model.

- MLM and WoC are BERT-layout prediction heads (:mod:`heads`) whose decoders are tied to the
  text encoder's word embeddings (as in TagsModel and the official TAGS code); WoC starts as
  a copy of the MLM head's transform;
- WoD is the two-class per-token head.

Files: ``tags_heads.json`` (sizes, which heads, and which of them a recipe trained) and
``tags_heads.safetensors`` (weights without the tied decoders), next to the model's own files.
Plain transformers ignores them, so the directory still loads with
``BlipForImageTextRetrieval.from_pretrained``.

:func:`require_heads` is the check of every command that reads a head (``tags explain``,
``tags generate --model``): a head that was not saved with the checkpoint, or saved but never
trained, is refused with a one-line error naming the head and the recipe that trains it,
instead of scoring with random weights.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from heads import MLMHead, WordCorrectionHead, WordDiscriminationHead
from tags.core.errors import BackendError
from tags.modeling.loading import HEAD_TRAINING, head_message, missing_head_weights
from tags.modeling.modeling_tags import vocab_head_states

HEADS_CONFIG = "tags_heads.json"
HEADS_WEIGHTS = "tags_heads.safetensors"
HEAD_NAMES = ("mlm", "wod", "woc")


def require_heads(
    backend: Any, names: Iterable[str], purpose: str, path: str | Path | None = None
) -> None:
    """Raise :class:`BackendError` unless every head of ``names`` (``itm``, ``mlm``, ``wod``,
    ``woc``) was saved with the model and, where the checkpoint records it, trained."""
    for name in names:
        problem = backend.head_problem(name)
        if problem is not None:
            raise BackendError(head_message(name, problem, purpose, backend.name, path))


class TagsHeads(nn.Module):
    """``mlm`` / ``wod`` / ``woc`` heads over ``[..., hidden]`` token states."""

    def __init__(
        self,
        hidden_size: int,
        vocab_size: int,
        names: tuple[str, ...] = HEAD_NAMES,
        hidden_act: str = "gelu",
        layer_norm_eps: float = 1e-12,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        unknown = set(names) - set(HEAD_NAMES)
        if unknown:
            raise ValueError(f"unknown heads {sorted(unknown)}; choose from {HEAD_NAMES}")
        self.settings = {
            "hidden_size": hidden_size,
            "vocab_size": vocab_size,
            "names": list(names),
            "hidden_act": hidden_act,
            "layer_norm_eps": layer_norm_eps,
            "dropout": dropout,
        }
        self.mlm = self.woc = self.wod = None
        self.settings["names"] = []
        #: heads created here and neither loaded nor trained since (random weights)
        self.fresh: set[str] = set()
        self.add(names)

    @property
    def trained(self) -> list[str] | None:
        """Heads a recipe trained (``None``: not recorded, e.g. heads saved before the
        record existed)."""
        return self.settings.get("trained")

    def mark_trained(self, names: Iterable[str]) -> None:
        """Record that a recipe trains the heads of ``names`` (saved in ``tags_heads.json``)."""
        names = [n for n in names if n in self.settings["names"]]
        self.fresh -= set(names)
        done = set(self.trained or []) | set(names)
        self.settings["trained"] = [n for n in HEAD_NAMES if n in done]

    def add(self, names: tuple[str, ...]) -> list[str]:
        """Create the heads of ``names`` that are missing (e.g. WoD/WoC for TAGS-DC after a
        ``pretrain`` run that trained the MLM head only); returns the new ones. A new WoC
        starts as a copy of the MLM head's transform; call :meth:`tie` afterwards."""
        s = self.settings
        size, vocab, act, eps = (
            s["hidden_size"],
            s["vocab_size"],
            s["hidden_act"],
            s["layer_norm_eps"],
        )
        new = [n for n in HEAD_NAMES if n in names and getattr(self, n) is None]
        for name in new:
            if name == "mlm":
                self.mlm = MLMHead(size, vocab, act, eps)
            elif name == "woc":
                self.woc = WordCorrectionHead(size, vocab, act, eps)
            else:
                self.wod = WordDiscriminationHead(size, s["dropout"])
        if "woc" in new and self.mlm is not None:
            self.woc.transform.load_state_dict(self.mlm.transform.state_dict())
        s["names"] = [n for n in HEAD_NAMES if getattr(self, n) is not None]
        self.fresh |= set(new)
        return new

    def tie(self, word_embeddings: nn.Embedding) -> None:
        """Tie the vocabulary heads' decoders to ``word_embeddings`` (call after loading)."""
        for head in (self.mlm, self.woc):
            if head is not None:
                head.decoder.weight = word_embeddings.weight

    def head(self, name: str) -> nn.Module:
        head = getattr(self, name, None) if name in HEAD_NAMES else None
        if head is None:
            raise ValueError(f"no {name} head here (heads: {self.settings['names']})")
        return head

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {
            k: v.detach().contiguous().cpu()
            for k, v in self.state_dict().items()
            if not k.endswith("decoder.weight")
        }
        save_file(state, str(path / HEADS_WEIGHTS))
        (path / HEADS_CONFIG).write_text(json.dumps(self.settings, indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> TagsHeads | None:
        """The heads saved in ``path``, or ``None`` when it has none."""
        from safetensors.torch import load_file

        path = Path(path)
        if not (path / HEADS_CONFIG).is_file():
            return None
        settings: dict[str, Any] = json.loads((path / HEADS_CONFIG).read_text())
        settings["names"] = tuple(settings["names"])
        trained = settings.pop("trained", None)
        heads = cls(**settings)
        heads.fresh = set()
        if trained is not None:
            heads.settings["trained"] = [n for n in HEAD_NAMES if n in trained]
        if not (path / HEADS_WEIGHTS).is_file():
            raise FileNotFoundError(f"{path}: {HEADS_CONFIG} without {HEADS_WEIGHTS}")
        missing, unexpected = heads.load_state_dict(
            load_file(str(path / HEADS_WEIGHTS)), strict=False
        )
        if unexpected or [k for k in missing if not k.endswith("decoder.weight")]:
            raise ValueError(f"{path / HEADS_WEIGHTS}: {missing=} {unexpected=}")
        return heads


class BackendOutput(dict):
    """Attribute access over the requested outputs (``itm_logits``, ``itm_scores``,
    ``mlm_logits``, ``wod_logits``, ``woc_logits``), like TagsModel's output."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


class TrainableBackend(nn.Module):
    """One ``nn.Module`` (one DDP call) over a pixel backend's model and its TAGS heads, with
    TagsModel's ``forward(input_ids, attention_mask, heads=..., masked_positions=...)``.

    Images are ``pixel_values`` ``[n_images, 3, H, W]`` plus ``image_index`` ``[rows]``
    (the image of each text row): the vision tower runs once per distinct image.
    """

    def __init__(self, backend: Any) -> None:
        super().__init__()
        self.model = backend.model
        self.heads = backend.heads
        self.backend = backend

    @property
    def hf_model(self) -> nn.Module:
        return self.model

    @torch.no_grad()
    def init_woc_from_mlm(self) -> None:
        """Start the WoC head from the MLM head (TagsModel's method of the same name)."""
        mlm, woc = self.heads.head("mlm"), self.heads.head("woc")
        woc.transform.load_state_dict(mlm.transform.state_dict())
        woc.bias.copy_(mlm.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        heads: tuple[str, ...] = ("itm",),
        masked_positions: torch.Tensor | Mapping[str, torch.Tensor] | None = None,
        **image: torch.Tensor,
    ) -> BackendOutput:
        text = {"input_ids": input_ids, "attention_mask": attention_mask}
        states = self.backend.text_token_states(text, image)
        out = BackendOutput(text_hidden_state=states)
        if "itm" in heads:
            logits = self.backend.itm_head_logits(states)
            out["itm_logits"] = logits
            out["itm_scores"] = self.backend.pair_probability(logits)
        if "wod" in heads:
            out["wod_logits"] = self.heads.head("wod")(states)
        for name in ("mlm", "woc"):
            if name in heads:
                rows = vocab_head_states(states, masked_positions, name)
                out[f"{name}_logits"] = self.heads.head(name)(rows)
        return out


__all__ = [
    "HEADS_CONFIG",
    "HEADS_WEIGHTS",
    "HEAD_TRAINING",
    "BackendOutput",
    "TagsHeads",
    "TrainableBackend",
    "missing_head_weights",
    "require_heads",
]
