"""Refilling generators: the dynamic one (the model's own MLM head) and a frozen static one.

The negative-generation engine only needs :class:`MaskedLMGenerator`: a ``masked_lm_logits``
call on a batch of (masked text, image regions). :class:`~tags.modeling.TagsModel` is the
dynamic generator itself; :class:`StaticMLMGenerator` wraps a separate frozen masked LM for
the TAGS ablation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from tags.core.checkpoints import load_model_dir, read_config
from tags.core.errors import BackendError
from tags.modeling.conversion import find_mask_token_id
from tags.modeling.loading import head_message, head_problem, load_checked
from tags.modeling.modeling_tags import TagsModel
from tags.modeling.outputs import TagsMaskedLMOutput


@runtime_checkable
class MaskedLMGenerator(Protocol):
    """Anything that gives MLM logits at masked positions of (masked text, regions) pairs."""

    def masked_lm_logits(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        region_features: torch.FloatTensor | None = None,
        region_boxes: torch.FloatTensor | None = None,
        region_mask: torch.Tensor | None = None,
        masked_positions: torch.BoolTensor | None = None,
    ) -> TagsMaskedLMOutput: ...


class StaticMLMGenerator(nn.Module):
    """A frozen masked LM used as the refilling generator (``generator="static"``).

    Wraps either a :class:`TagsModel` (image-conditioned refills) or a text-only
    ``*ForMaskedLM`` model such as ``BertForMaskedLM`` (regions are then ignored; see
    :attr:`conditions_on_image`). Parameters never require grad and the module stays in eval
    mode, whatever ``train()`` is called with.

    Args:
        model: The masked LM; it must share the tokenizer (vocabulary) of the trained model.
        mask_token_id: Default ``[MASK]`` id when ``masked_positions`` is not given.
    """

    def __init__(self, model: nn.Module, mask_token_id: int = 103):
        super().__init__()
        self.model = model.eval()
        self.model.requires_grad_(False)
        self.mask_token_id = getattr(getattr(model, "config", None), "mask_token_id", mask_token_id)

    @property
    def conditions_on_image(self) -> bool:
        """Whether refills see the image regions (True only for a wrapped TagsModel)."""
        return isinstance(self.model, TagsModel)

    @property
    def vocab_size(self) -> int:
        return self.model.config.vocab_size

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs) -> StaticMLMGenerator:
        """Load a local TagsModel or ``*ForMaskedLM`` directory as a frozen generator."""
        from transformers import AutoModelForMaskedLM

        path = Path(path)
        config_file = path / "config.json"
        if not config_file.is_file():
            raise FileNotFoundError(f"no config.json in {path}: not a local model directory")
        model_type = read_config(path).get("model_type")  # not JSON: one line naming it
        if model_type == "tags":
            model = load_checked(path, **kwargs)
            problem = head_problem(model, "mlm")
            if problem is not None:  # not built, not saved or untrained
                raise BackendError(
                    head_message("mlm", problem, "the static generator", "tags", path)
                )
        else:
            model = load_model_dir(
                path,
                lambda: AutoModelForMaskedLM.from_pretrained(path, local_files_only=True, **kwargs),
            )
            mask_token_id = find_mask_token_id(path)
            if mask_token_id is not None:
                return cls(model, mask_token_id=mask_token_id)
        return cls(model)

    def train(self, mode: bool = True) -> StaticMLMGenerator:
        """No-op: the static generator always stays in eval mode."""
        return super().train(False)

    @torch.no_grad()
    def masked_lm_logits(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        region_features: torch.FloatTensor | None = None,
        region_boxes: torch.FloatTensor | None = None,
        region_mask: torch.Tensor | None = None,
        masked_positions: torch.BoolTensor | None = None,
    ) -> TagsMaskedLMOutput:
        """Same contract as :meth:`TagsModel.masked_lm_logits`, without gradients."""
        if self.conditions_on_image:
            return self.model.masked_lm_logits(
                input_ids,
                attention_mask,
                region_features,
                region_boxes,
                region_mask,
                masked_positions=masked_positions,
            )
        if masked_positions is None:
            masked_positions = input_ids == self.mask_token_id
        masked_positions = masked_positions.to(torch.bool)
        if region_features is not None and input_ids.shape[0] == 1:
            batch = region_features.shape[0]  # keep the dynamic generator's broadcasting
            input_ids = input_ids.expand(batch, -1)
            masked_positions = masked_positions.expand(batch, -1)
            if attention_mask is not None:
                attention_mask = attention_mask.expand(batch, -1)
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
        return TagsMaskedLMOutput(
            logits=logits[masked_positions], masked_positions=masked_positions
        )


def build_generator(model: TagsModel) -> MaskedLMGenerator:
    """The generator selected by ``model.config.generator``.

    ``"dynamic"`` returns ``model`` itself (its shared MLM head); ``"static"`` loads
    ``config.static_generator_path`` as a frozen :class:`StaticMLMGenerator` on the model's
    device. Raises ``ValueError`` if the vocabularies differ or the MLM head is missing.
    """
    config = model.config
    if config.generator == "dynamic":
        if model.mlm_head is None:
            raise ValueError("the dynamic generator needs the MLM head (use_mlm_head=True)")
        return model
    generator = StaticMLMGenerator.from_pretrained(config.static_generator_path)
    if generator.vocab_size != config.vocab_size:
        raise ValueError(
            f"static generator vocabulary ({generator.vocab_size}) differs from the model's "
            f"({config.vocab_size}): they must share a tokenizer"
        )
    return generator.to(model.device)


__all__ = ["MaskedLMGenerator", "StaticMLMGenerator", "build_generator"]
