"""The shared UNITER-style single-stream transformer and its four heads, as one HF model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.masking_utils import create_bidirectional_mask
from transformers.models.bert.modeling_bert import BertEmbeddings, BertEncoder, BertPooler

from heads import ITMHead, MLMHead, WordCorrectionHead, WordDiscriminationHead
from tags.modeling.configuration_tags import TagsConfig
from tags.modeling.embeddings import TagsImageEmbeddings
from tags.modeling.inputs import TagsInputs, prepare_inputs
from tags.modeling.outputs import TagsITMOutput, TagsMaskedLMOutput, TagsModelOutput

HEAD_NAMES = ("mlm", "itm", "wod", "woc")
VOCAB_HEADS = ("mlm", "woc")


def vocab_head_states(
    text_states: torch.Tensor,
    masked_positions: torch.Tensor | Mapping[str, torch.Tensor] | None,
    head: str,
) -> torch.Tensor:
    """The token states vocabulary head ``head`` reads: every position (``None``), those of
    one mask shared by the vocabulary heads, or those of the head's own mask in a
    ``{head: mask}`` mapping (a head missing from it reads every position)."""
    if isinstance(masked_positions, Mapping):
        masked_positions = masked_positions.get(head)
    if masked_positions is None:
        return text_states
    if masked_positions.shape[0] != text_states.shape[0]:
        masked_positions = masked_positions.expand(text_states.shape[0], -1)
    return text_states[masked_positions.bool()]


def _align_positions(
    masked_positions: torch.Tensor | Mapping[str, torch.Tensor], inputs: TagsInputs
) -> torch.BoolTensor | dict[str, torch.BoolTensor]:
    """Check ``masked_positions`` (one mask, or one per head) against the text and broadcast
    a batch of one."""
    if isinstance(masked_positions, Mapping):
        unknown = set(masked_positions) - set(VOCAB_HEADS)
        if unknown:
            raise ValueError(
                f"masked_positions for {sorted(unknown)}: only the vocabulary heads "
                f"{VOCAB_HEADS} read positions"
            )
        return {k: _align_positions(v, inputs) for k, v in masked_positions.items()}
    if inputs.input_ids is None:
        raise ValueError("masked_positions refer to text tokens: give input_ids")
    masked_positions = masked_positions.to(torch.bool)
    if masked_positions.shape[0] == 1:
        masked_positions = masked_positions.expand(inputs.input_ids.shape[0], -1)
    if masked_positions.shape != inputs.input_ids.shape:
        raise ValueError(
            f"masked_positions shape {tuple(masked_positions.shape)} does not match the text "
            f"{tuple(inputs.input_ids.shape)}"
        )
    return masked_positions


class TagsPreTrainedModel(PreTrainedModel):
    """Weight initialisation and `transformers` plumbing shared by the TAGS models."""

    config: TagsConfig
    config_class = TagsConfig
    base_model_prefix = "tags"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _supports_attention_backend = True
    _no_split_modules: ClassVar[list[str]] = ["BertEmbeddings", "BertLayer", "TagsImageEmbeddings"]

    @torch.no_grad()
    def _init_weights(self, module: torch.nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, MLMHead):
            init.zeros_(module.bias)
        elif isinstance(module, BertEmbeddings):
            init.copy_(
                module.position_ids, torch.arange(module.position_ids.shape[-1]).expand((1, -1))
            )
            init.zeros_(module.token_type_ids)


class TagsModel(TagsPreTrainedModel):
    """UNITER-style transformer over ``[text tokens ; image regions]`` with TAGS-DC heads.

    Text is embedded as in BERT, regions as in UNITER (feature + 7-d box + image token type);
    the concatenated sequence runs through a `transformers` BERT encoder (SDPA attention by
    default, ``attn_implementation="eager"`` selectable). The same weights serve four jobs:

    - joint scoring of (text, image) pairs: :meth:`score_pairs` (ITM head);
    - refilling masked text given an image (or text alone): :meth:`masked_lm_logits`;
    - word discrimination / correction of synthetic captions: ``forward(heads=("wod", "woc"))``;
    - dual-encoder embeddings of one modality: :meth:`encode_text`, :meth:`encode_image`.

    Text must be right-padded (``[CLS]`` first); padding of either modality is masked out.
    """

    def __init__(self, config: TagsConfig):
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.img_embeddings = TagsImageEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config)
        act, eps, hidden, vocab = (
            config.hidden_act,
            config.layer_norm_eps,
            config.hidden_size,
            config.vocab_size,
        )
        self.mlm_head = MLMHead(hidden, vocab, act, eps) if config.use_mlm_head else None
        self.itm_head = ITMHead(hidden, config.head_dropout) if config.use_itm_head else None
        self.wod_head = (
            WordDiscriminationHead(hidden, config.head_dropout) if config.use_wod_head else None
        )
        self.woc_head = WordCorrectionHead(hidden, vocab, act, eps) if config.use_woc_head else None
        self._tied_weights_keys = {
            f"{name}_head.decoder.weight": "embeddings.word_embeddings.weight"
            for name in VOCAB_HEADS
            if getattr(self, f"{name}_head") is not None
        }
        self.post_init()

    def get_input_embeddings(self) -> torch.nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: torch.nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    # ------------------------------------------------------------------ encoder

    def _embed(self, inputs: TagsInputs) -> torch.Tensor:
        parts = []
        if inputs.input_ids is not None:
            parts.append(
                self.embeddings(input_ids=inputs.input_ids, token_type_ids=inputs.token_type_ids)
            )
        if inputs.region_features is not None:
            type_embedding = self.embeddings.token_type_embeddings.weight[
                self.config.image_token_type_id
            ]
            parts.append(
                self.img_embeddings(
                    inputs.region_features.to(self.dtype),
                    inputs.region_boxes.to(self.dtype),
                    type_embedding,
                )
            )
        return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]

    def _encode(self, inputs: TagsInputs) -> torch.Tensor:
        hidden_states = self._embed(inputs)
        attention_mask = create_bidirectional_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=inputs.joint_mask()
        )
        return self.encoder(hidden_states, attention_mask=attention_mask).last_hidden_state

    def _head(self, name: str) -> torch.nn.Module:
        if name not in HEAD_NAMES:
            raise ValueError(f"unknown head {name!r}; choose from {HEAD_NAMES}")
        head = getattr(self, f"{name}_head")
        if head is None:
            raise ValueError(
                f"this model was built without the {name} head (use_{name}_head=False)"
            )
        return head

    # ------------------------------------------------------------------ forward

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        region_features: torch.FloatTensor | None = None,
        region_boxes: torch.FloatTensor | None = None,
        region_mask: torch.Tensor | None = None,
        heads: Iterable[str] | str = (),
        masked_positions: torch.BoolTensor | Mapping[str, torch.BoolTensor] | None = None,
    ) -> TagsModelOutput:
        r"""Encode text and/or regions in one pass and apply the requested heads.

        Args:
            input_ids: ``[batch, text_len]`` token ids, right-padded, ``[CLS]`` first.
            attention_mask: ``[batch, text_len]``, 1 for real tokens (default: all ones).
            token_type_ids: ``[batch, text_len]`` segment ids (default: zeros).
            region_features: ``[batch, regions, region_feature_size]`` detector features.
            region_boxes: ``[batch, regions, 7]`` normalised ``(x1, y1, x2, y2, w, h, area)``
                boxes (``[..., 4]`` is expanded).
            region_mask: ``[batch, regions]``, 1 for real regions (default: all ones).
            heads: Any of ``"itm"`` (needs text and regions), ``"mlm"``, ``"wod"``, ``"woc"``
                (need text); each adds its logits to the output.
            masked_positions: ``[batch, text_len]`` bool; when given, ``mlm_logits`` and
                ``woc_logits`` are computed at these positions only, as ``[num_true, vocab]``.
                A ``{"mlm": mask, "woc": mask}`` mapping gives each head its own positions
                (a recipe training both on different rows computes each only where needed).

        Either side may have a batch of one, which is broadcast against the other.

        Raises:
            ValueError: on malformed inputs (sizes, empty region sets, boxes outside [0, 1],
                over-long text, left padding) or a head the model does not have.
        """
        heads = (heads,) if isinstance(heads, str) else tuple(heads)
        for name in heads:
            self._head(name)
        inputs = prepare_inputs(
            self.config,
            input_ids,
            attention_mask,
            token_type_ids,
            region_features,
            region_boxes,
            region_mask,
        )
        if "itm" in heads and (inputs.input_ids is None or inputs.region_features is None):
            raise ValueError("the itm head scores (text, image) pairs: give both text and regions")
        if inputs.input_ids is None and any(name != "itm" for name in heads):
            raise ValueError(f"heads {heads} read text tokens: give input_ids")
        if masked_positions is not None:
            masked_positions = _align_positions(masked_positions, inputs)

        sequence_output = self._encode(inputs)
        text_length = inputs.text_length
        text_states = sequence_output[:, :text_length] if text_length else None
        region_states = sequence_output[:, text_length:] if inputs.num_regions else None
        output = TagsModelOutput(
            last_hidden_state=sequence_output,
            pooler_output=self.pooler(sequence_output),
            text_hidden_state=text_states,
            region_hidden_state=region_states,
        )
        if "itm" in heads:
            output.itm_logits = self.itm_head(output.pooler_output)
            # fp32 sigmoid: under bf16/fp16 autocast, logits past ~6 would all round to 1.0
            output.itm_scores = torch.sigmoid(output.itm_logits.float())
        if "wod" in heads:
            output.wod_logits = self.wod_head(text_states)
        if "mlm" in heads:
            output.mlm_logits = self.mlm_head(
                vocab_head_states(text_states, masked_positions, "mlm")
            )
        if "woc" in heads:
            output.woc_logits = self.woc_head(
                vocab_head_states(text_states, masked_positions, "woc")
            )
        return output

    @torch.no_grad()
    def init_woc_from_mlm(self) -> None:
        """Start the WoC head from the MLM head: copy its transform and output bias (the
        decoders are both tied to the word embeddings)."""
        if self.mlm_head is None or self.woc_head is None:
            raise ValueError("init_woc_from_mlm needs both the mlm and the woc head")
        self.woc_head.transform.load_state_dict(self.mlm_head.transform.state_dict())
        self.woc_head.bias.copy_(self.mlm_head.bias)

    # ------------------------------------------------------------------ task entry points

    def score_pairs(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        region_features: torch.FloatTensor | None = None,
        region_boxes: torch.FloatTensor | None = None,
        region_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
    ) -> TagsITMOutput:
        """ITM scores in [0, 1] (and logits) for row-aligned (text, image) pairs."""
        output = self(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            region_features=region_features,
            region_boxes=region_boxes,
            region_mask=region_mask,
            heads=("itm",),
        )
        return TagsITMOutput(scores=output.itm_scores, logits=output.itm_logits)

    def masked_lm_logits(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        region_features: torch.FloatTensor | None = None,
        region_boxes: torch.FloatTensor | None = None,
        region_mask: torch.Tensor | None = None,
        masked_positions: torch.BoolTensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
    ) -> TagsMaskedLMOutput:
        """MLM logits at the masked positions of (masked text, image regions) pairs.

        This is the dynamic generator: refills come from this model's own MLM head, so they
        follow the backbone as it trains. Leave the regions out for text-only refilling.

        Args:
            masked_positions: ``[batch, text_len]`` bool; defaults to
                ``input_ids == config.mask_token_id``.

        Returns:
            ``logits`` of shape ``[num_masked, vocab]`` in ``masked_positions.nonzero()`` order,
            and the ``masked_positions`` used.
        """
        if masked_positions is None:
            masked_positions = input_ids == self.config.mask_token_id
        masked_positions = masked_positions.to(torch.bool)
        output = self(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            region_features=region_features,
            region_boxes=region_boxes,
            region_mask=region_mask,
            heads=("mlm",),
            masked_positions=masked_positions,
        )
        batch = output.last_hidden_state.shape[0]
        if masked_positions.shape[0] != batch:  # one caption broadcast against several images
            masked_positions = masked_positions.expand(batch, -1)
        return TagsMaskedLMOutput(logits=output.mlm_logits, masked_positions=masked_positions)

    def encode_text(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
    ) -> torch.Tensor:
        """L2-normalised ``[batch, hidden]`` text embeddings (text alone, mean over tokens)."""
        inputs = prepare_inputs(self.config, input_ids, attention_mask, token_type_ids)
        return self._pool(self._encode(inputs), inputs.attention_mask)

    def encode_image(
        self,
        region_features: torch.FloatTensor,
        region_boxes: torch.FloatTensor,
        region_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """L2-normalised ``[batch, hidden]`` image embeddings (regions alone, mean over regions)."""
        inputs = prepare_inputs(
            self.config,
            region_features=region_features,
            region_boxes=region_boxes,
            region_mask=region_mask,
        )
        return self._pool(self._encode(inputs), inputs.region_mask)

    @staticmethod
    def _pool(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        weights = mask.to(hidden_states.dtype).unsqueeze(-1)
        mean = (hidden_states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return F.normalize(mean, dim=-1)

    # ------------------------------------------------------------------ loading

    @classmethod
    def from_text_pretrained(
        cls,
        pretrained_path: str | Path,
        *,
        output_loading_info: bool = False,
        **config_overrides: Any,
    ) -> TagsModel | tuple[TagsModel, Any]:
        """Build a model whose text side (and MLM head, when present) comes from a BERT checkpoint.

        Args:
            pretrained_path: Local directory of a BERT-family checkpoint (``BertModel``,
                ``BertForMaskedLM``, ``BertForPreTraining``); nothing is downloaded.
            output_loading_info: Also return the :class:`~tags.modeling.conversion.LoadingReport`.
            **config_overrides: :class:`TagsConfig` fields to set (e.g. ``region_feature_size``).

        Image embeddings, the ITM and WoD heads (and the pooler or MLM head if the checkpoint
        lacks them) keep their fresh initialisation; the WoC head starts as a copy of the MLM
        head, as in the official TAGS code.
        """
        from tags.modeling.conversion import load_text_checkpoint

        model, report = load_text_checkpoint(cls, pretrained_path, **config_overrides)
        return (model, report) if output_loading_info else model

    @classmethod
    def from_uniter_checkpoint(
        cls,
        checkpoint: str | Path | dict[str, torch.Tensor],
        config: TagsConfig | None = None,
        *,
        output_loading_info: bool = False,
        **config_overrides: Any,
    ) -> TagsModel | tuple[TagsModel, Any]:
        """Convert an original UNITER (or TAGS) checkpoint such as ``uniter-base.pt``.

        Args:
            checkpoint: Path to a ``.pt``/``.bin``/``.safetensors`` state dict, or the dict.
            config: Target configuration; inferred from tensor shapes when omitted (the number
                of attention heads then defaults to ``hidden_size // 64``).
            output_loading_info: Also return the :class:`~tags.modeling.conversion.LoadingReport`
                listing converted, derived, missing and unexpected keys.
        """
        from tags.modeling.conversion import load_uniter_checkpoint

        model, report = load_uniter_checkpoint(cls, checkpoint, config, **config_overrides)
        return (model, report) if output_loading_info else model


__all__ = ["TagsModel", "TagsPreTrainedModel", "vocab_head_states"]


def _register_auto_classes() -> None:
    """Let ``AutoModel`` open saved TagsModel directories (``AutoConfig`` knows TagsConfig
    from :mod:`~tags.modeling.configuration_tags`)."""
    from transformers import AutoModel

    AutoModel.register(TagsConfig, TagsModel, exist_ok=True)


_register_auto_classes()
