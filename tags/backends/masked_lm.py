"""Adapters from concrete models to the engine's protocols.

- :class:`HFMaskedLM`: any local ``*ForMaskedLM`` checkpoint directory (text-only refills);
- :class:`TagsMaskedLM` / :class:`TagsPairScorer`: a :class:`~tags.modeling.TagsModel`'s
  MLM head (image-conditioned refills) and ITM head (selection scores), through its
  ``masked_lm_logits`` and ``score_pairs`` entry points.

Everything loads from local directories only; nothing is downloaded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from tags.core.regions import Regions


def bucket_length(length: int, multiple: int) -> int:
    """``length`` rounded up to a multiple of ``multiple`` (rows of one padded length)."""
    return int(math.ceil(length / multiple) * multiple)


def device_of(device: str | torch.device | None) -> torch.device:
    """``device``, or CUDA when available else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def load_tokenizer(path: str | Path) -> Any:
    """A fast tokenizer from a local directory (offsets are needed for masking); a damaged
    tokenizer file is a :class:`~tags.core.errors.CheckpointError` naming it."""
    from transformers import AutoTokenizer

    import tags.modeling.configuration_tags  # noqa: F401  AutoConfig reads a TagsModel's dir
    from tags.core.checkpoints import load_tokenizer_dir

    tokenizer = load_tokenizer_dir(
        path, lambda: AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    )
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{path}: a fast tokenizer (tokenizer.json) is needed for offsets")
    return tokenizer


class MaskedLMAdapter:
    """What every refill model of the engine shares (the :class:`~tags.negatives.refill.MaskedLM`
    protocol): the tokenizer's mask/pad ids, a device, and :meth:`logits_at`, which moves the
    inputs there and returns float32 CPU logits; subclasses compute them in :meth:`_logits`."""

    def __init__(self, tokenizer: Any, device: torch.device, conditions_on_image: bool) -> None:
        self.device = device
        self.mask_token_id = int(tokenizer.mask_token_id)
        self.pad_token_id = int(tokenizer.pad_token_id or 0)
        self.conditions_on_image = conditions_on_image

    @torch.no_grad()
    def logits_at(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        masked_positions: torch.Tensor,
        images: Sequence[Any] | None = None,
    ) -> torch.Tensor:
        """``[num_masked, vocab]`` logits at ``masked_positions`` (row-major order)."""
        logits = self._logits(
            input_ids.to(self.device),
            attention_mask.to(self.device),
            masked_positions.to(self.device),
            images,
        )
        return logits.float().cpu()

    def _logits(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        masked_positions: torch.Tensor,
        images: Sequence[Any] | None,
    ) -> torch.Tensor:
        raise NotImplementedError


class HFMaskedLM(MaskedLMAdapter):
    """A `transformers` masked LM, text only.

    The vocabulary projection runs on the masked positions only (for BERT- and RoBERTa-style
    heads), so memory does not grow with ``sequence length x vocabulary``.
    """

    def __init__(self, model: Any, tokenizer: Any, device: str | torch.device | None = None):
        super().__init__(tokenizer, device_of(device), conditions_on_image=False)
        self.model = model.to(self.device).eval()
        base = getattr(model, model.base_model_prefix, None)
        head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
        self._split = (base, head) if base is not None and head is not None else None

    @classmethod
    def from_pretrained(
        cls, path: str | Path, device: str | torch.device | None = None
    ) -> tuple[HFMaskedLM, Any]:
        """``(adapter, tokenizer)`` for a local ``*ForMaskedLM`` directory (a TagsModel
        folder is refused: it loads with ``--model``)."""
        from transformers import AutoModelForMaskedLM
        from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

        from tags.core.checkpoints import load_model_dir, read_config
        from tags.core.errors import BackendError

        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path}: no config.json (a local model directory is needed)")
        model_type = read_config(path).get("model_type")
        if model_type == "tags":
            raise BackendError(
                f"{path} is a TagsModel folder (config.json model_type 'tags'), not a plain "
                "masked LM: pass it with --model"
            )
        if model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
            raise BackendError(
                f"{path}: config.json model_type {model_type!r} has no masked-LM head in "
                "transformers; pass a *ForMaskedLM folder (BERT, RoBERTa, ...)"
            )
        tokenizer = load_tokenizer(path)
        model = load_model_dir(
            path, lambda: AutoModelForMaskedLM.from_pretrained(str(path), local_files_only=True)
        )
        return cls(model, tokenizer, device), tokenizer

    def _logits(self, input_ids, attention_mask, masked_positions, images):
        if self._split is not None:
            base, head = self._split
            hidden = base(input_ids=input_ids, attention_mask=attention_mask)[0]
            return head(hidden[masked_positions])
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
        return logits[masked_positions]


def _pad_regions(
    images: Sequence[Regions], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stack per-row regions into ``features [B, R, D]``, ``boxes [B, R, 7]``, ``mask [B, R]``."""
    count = max(r.features.shape[0] for r in images)
    dim = images[0].features.shape[1]
    features = torch.zeros(len(images), count, dim)
    boxes = torch.zeros(len(images), count, 7)
    mask = torch.zeros(len(images), count, dtype=torch.long)
    for i, regions in enumerate(images):
        n = regions.features.shape[0]
        features[i, :n] = torch.from_numpy(regions.features)
        boxes[i, :n] = torch.from_numpy(regions.boxes)
        mask[i, :n] = 1
    return features.to(device), boxes.to(device), mask.to(device)


class TagsMaskedLM(MaskedLMAdapter):
    """A TagsModel's MLM head as the refill model; image-conditioned when ``use_image``.

    ``model`` may be anything with TagsModel's ``masked_lm_logits`` (the
    ``tags.modeling.MaskedLMGenerator`` protocol), e.g. a ``StaticMLMGenerator``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str | torch.device | None = None,
        use_image: bool = True,
    ):
        super().__init__(tokenizer, device_of(device), conditions_on_image=use_image)
        self.model = model.to(self.device).eval()

    def _logits(
        self, input_ids, attention_mask, masked_positions, images: Sequence[Regions] | None
    ):
        regions: dict[str, torch.Tensor] = {}
        if images is not None:
            features, boxes, mask = _pad_regions(images, self.device)
            regions = {"region_features": features, "region_boxes": boxes, "region_mask": mask}
        output = self.model.masked_lm_logits(
            input_ids, attention_mask, masked_positions=masked_positions, **regions
        )
        return output.logits


class TagsPairScorer:
    """ITM scores of captions against one image with a TagsModel's ITM head
    (``use_logits``: the pre-sigmoid logits, which do not saturate to ties in fp32)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str | torch.device | None = None,
        batch_size: int = 256,
        max_length: int = 128,
        use_logits: bool = False,
    ):
        self.use_logits = use_logits
        self.device = device_of(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = max_length

    def score(self, texts: Sequence[str], image: Regions) -> list[float]:
        return self.score_many([(texts, image)])[0]

    @torch.no_grad()
    def score_many(self, groups: Sequence[tuple[Sequence[str], Regions]]) -> list[list[float]]:
        """Scores of several ``(texts, image)`` groups in shared forwards.

        Rows are bucketed by padded text length (a multiple of 16 tokens) and region count,
        so a row's score does not depend on which other rows share its forward.
        """

        pad_id = self.tokenizer.pad_token_id or 0
        buckets: dict[tuple[int, int], list[tuple[int, int, list[int]]]] = {}
        for g, (texts, image) in enumerate(groups):
            if not texts:
                continue
            encoded = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)
            for t, ids in enumerate(encoded["input_ids"]):
                key = (bucket_length(len(ids), 16), image.features.shape[0])
                buckets.setdefault(key, []).append((g, t, ids))
        tensors: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        out = [[0.0] * len(texts) for texts, _ in groups]
        for (length, _), rows in buckets.items():
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start : start + self.batch_size]
                input_ids = torch.full((len(chunk), length), pad_id, dtype=torch.long)
                attention = torch.zeros((len(chunk), length), dtype=torch.long)
                for r, (_, _, ids) in enumerate(chunk):
                    input_ids[r, : len(ids)] = torch.tensor(ids)
                    attention[r, : len(ids)] = 1
                for g, _, _ in chunk:
                    if g not in tensors:
                        image = groups[g][1]
                        tensors[g] = (
                            torch.from_numpy(image.features).float(),
                            torch.from_numpy(image.boxes).float(),
                        )
                features = torch.stack([tensors[g][0] for g, _, _ in chunk]).to(self.device)
                boxes = torch.stack([tensors[g][1] for g, _, _ in chunk]).to(self.device)
                output = self.model.score_pairs(
                    input_ids.to(self.device),
                    attention.to(self.device),
                    region_features=features,
                    region_boxes=boxes,
                    region_mask=torch.ones(features.shape[:2], dtype=torch.long).to(self.device),
                )
                values = output.logits if self.use_logits else output.scores
                for (g, t, _), value in zip(chunk, values.float().cpu().reshape(-1).tolist()):
                    out[g][t] = value
        return out


__all__ = [
    "HFMaskedLM",
    "MaskedLMAdapter",
    "TagsMaskedLM",
    "TagsPairScorer",
    "load_tokenizer",
]
