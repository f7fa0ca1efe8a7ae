"""BLIP-2 retrieval backend: ``Blip2ForImageTextRetrieval`` (Q-Former ITM + ITC) on pixels.

As ``Blip2ForImageTextRetrieval.forward`` computes them:

- ``score_pairs``: ITM log-odds, the ITM head averaged over the query positions of the
  Q-Former run on ``[queries ; text]`` with cross-attention to the ViT states;
- ``encode_image``: one L2-normalised embedding per query ``[B, Q, D]``; ``encode_text``:
  the projected first text token ``[B, D]``; :meth:`similarity` (and its text-first and
  row-aligned forms) is the max over queries, so the ``vse`` recipe and its miners, the
  FNE queue and AOQ's ranking work on it unchanged;
- ``text_token_states``: the text part of the ITM Q-Former states; the TAGS heads (MLM tied
  to the Q-Former word embeddings, WoD, WoC) sit on them, saved beside the model, as for
  BLIP (:class:`~tags.backends.blip.BlipBackend`, whose head handling this class shares).

The checkpoint needs ``qformer_config.use_qformer_text_input=True`` (transformers'
default crashes on text); a directory without it is refused with that message. The
captions are tokenized without the image placeholder tokens (the forward strips them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from heads import fp32_linear
from tags.backends.base import broadcast_pair, normalize
from tags.backends.blip import BlipBackend, check_architecture, load_processor
from tags.backends.registry import register_backend
from tags.core.errors import BackendError


@register_backend("blip-2")
class Blip2Backend(BlipBackend):
    name = "blip-2"
    image_kind = "pixels"
    capabilities = frozenset({"itm", "itc", "token_states"})
    contrastive_loss = "infonce"
    architectures = ("Blip2ForImageTextRetrieval",)

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> Blip2Backend:
        from transformers import AutoConfig, Blip2ForImageTextRetrieval

        config = AutoConfig.from_pretrained(path, local_files_only=True)
        check_architecture(config, cls.architectures, path)
        if not getattr(config.qformer_config, "use_qformer_text_input", False):
            raise BackendError(
                f"{path}: qformer_config.use_qformer_text_input is false; BLIP-2 retrieval "
                "needs it true (set it in config.json)"
            )
        processor = load_processor(path, cls.name)
        model, info = Blip2ForImageTextRetrieval.from_pretrained(
            path, local_files_only=True, output_loading_info=True, **kwargs
        )
        return cls.loaded(model, processor, path, info)

    def _heads_parts(self):
        return self.model.get_input_embeddings(), self.model.config.qformer_config

    @property
    def max_text_length(self) -> int:
        return int(self.model.config.qformer_config.max_position_embeddings)

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.image_text_hidden_size)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.qformer_config.vocab_size)

    @property
    def num_queries(self) -> int:
        return int(self.model.query_tokens.shape[1])

    def image_states(self, image: dict[str, torch.Tensor]) -> torch.Tensor:
        pixels = image["pixel_values"].to(self.model.dtype)
        states = self.model.vision_model(pixel_values=pixels).last_hidden_state
        if "image_index" in image:
            states = states[image["image_index"]]
        return states

    def _itm_states(self, text, image) -> torch.Tensor:
        """``[B, Q + L, H]`` Q-Former states of ``[queries ; text]`` attending to the image."""
        states = self.image_states(image)
        input_ids, states = broadcast_pair(text["input_ids"], states)
        mask = text.get("attention_mask")
        mask = torch.ones_like(input_ids) if mask is None else mask.expand(input_ids.shape[0], -1)
        queries = self.model.query_tokens.expand(states.shape[0], -1, -1)
        embeds = self.model.embeddings(input_ids=input_ids, query_embeds=queries)
        query_mask = torch.ones(queries.shape[:2], dtype=mask.dtype, device=mask.device)
        image_mask = torch.ones(states.shape[:2], dtype=torch.long, device=states.device)
        return self.model.qformer(
            query_embeds=embeds,
            query_length=queries.shape[1],
            attention_mask=torch.cat([query_mask, mask], dim=1),
            encoder_hidden_states=states,
            encoder_attention_mask=image_mask,
        ).last_hidden_state

    def itm_head_logits(self, states: torch.Tensor) -> torch.Tensor:
        q = self.num_queries
        logits = fp32_linear(self.model.itm_head, states[:, :q, :])
        logits = logits.mean(dim=1)
        return logits[:, 1] - logits[:, 0]

    def itm_logits(self, text, image) -> torch.Tensor:
        """``[B, 2]`` ITM logits averaged over the query positions."""
        states = self._itm_states(text, image)[:, : self.num_queries, :]
        return fp32_linear(self.model.itm_head, states).mean(dim=1)

    def score_pairs(self, text, image):
        return self.itm_head_logits(self._itm_states(text, image))

    def text_token_states(self, text, image):
        return self._itm_states(text, image)[:, self.num_queries :, :]

    def encode_text(self, text):
        embeds = self.model.embeddings(input_ids=text["input_ids"])
        states = self.model.qformer(
            query_embeds=embeds, query_length=0, attention_mask=text.get("attention_mask")
        ).last_hidden_state
        states = states.to(self.model.text_projection.weight.dtype)
        return normalize(self.model.text_projection(states[:, 0, :]))

    def encode_image(self, image):
        states = self.image_states(image)
        queries = self.model.query_tokens.expand(states.shape[0], -1, -1)
        image_mask = torch.ones(states.shape[:2], dtype=torch.long, device=states.device)
        out = self.model.qformer(
            query_embeds=queries, encoder_hidden_states=states, encoder_attention_mask=image_mask
        ).last_hidden_state
        out = out.to(self.model.vision_projection.weight.dtype)
        return normalize(self.model.vision_projection(out))

    @property
    def image_embedding_shape(self) -> tuple[int, ...]:
        return (self.num_queries, self.embedding_dim)

    def similarity(self, image_emb, text_emb):
        """Max over the query embeddings of each image: ``[I, T]`` (as the model's ITC)."""
        return torch.einsum("iqd,td->iqt", image_emb, text_emb).max(dim=1).values

    def text_similarity(self, text_emb, image_emb):
        return self.similarity(image_emb, text_emb).T

    def pair_similarity(self, image_emb, text_emb):
        """Max over the queries of each row's image against its text: ``[B]``."""
        return torch.einsum("bqd,bd->bq", image_emb, text_emb).max(dim=1).values


__all__ = ["Blip2Backend"]
