"""Hugging Face CLIP and BLIP on the testbed (``variant`` ``hf-clip`` / ``hf-blip``).

The testbed's scenes go in as **rendered whole images** (:func:`tags.benchmark.render.render_scene`,
resized to the model's side: :class:`SceneImages`) and its captions as strings, through the
project's backend interface (:mod:`tags.backends`): :class:`HFMatcher` is an adapter with the
testbed models' signature, so the training loop, the evaluator, retrieval and the methods
(plain, oracle, mined, tags negatives) run it unchanged:

- ``forward(input_ids, attention_mask, labels, boxes, region_mask)``: the ``[N]`` pair scores
  of the rows; ``input_ids`` are the testbed vocabulary's (:mod:`tags.testbed.vocab`), turned
  back into caption text for the model's own tokenizer; ``labels`` are each row's pixels. A
  backend with an ITM head (BLIP) scores a row by its match log-odds (binary ITM: the
  sigmoid of the log-odds is BLIP's two-way softmax); one without (CLIP) by its scaled
  cosine. The vision tower runs once per distinct image of the rows;
- ``encode_text`` / ``encode_image`` / ``scale``: what :func:`~tags.testbed.dual.contrastive_loss`
  reads (CLIP's InfoNCE, the method's added negatives as extra text columns: NegCLIP);
- ``cnn``: the frozen perception the training loop applies once per batch
  (:func:`~tags.testbed.pixels.pixel_features`): :class:`ImagePixels`, uint8 images to the
  processor's normalised ``pixel_values``.

Models come from a local directory (``hf_model``, any checkpoint
:func:`~tags.backends.load_backend` reads) or, by default, from the benchmark's builders
(:func:`tags.benchmark.hf_models.build_clip` / ``build_blip``: random init, a tokenizer with
every benchmark word as one token) at ``hidden`` x ``layers``, ``image_size`` px in
``patch_size`` patches, seeded by ``seed``. Nothing is downloaded.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tags.benchmark.scenes import Scene
from tags.testbed.dual import MAX_SCALE
from tags.testbed.vocab import SPECIAL, VOCAB, join_words

#: the testbed variants served by a Hugging Face backend, and their builder's family
HF_FAMILIES: dict[str, str] = {"hf-clip": "clip", "hf-blip": "blip"}
#: what each variant needs of its backend: CLIP's embeddings, BLIP's ITM head
HF_CAPABILITY: dict[str, str] = {"hf-clip": "itc", "hf-blip": "itm"}
#: the longest testbed caption is 24 tokens with its two specials
MAX_TEXT_LEN = 32
_SPECIAL_IDS = frozenset(range(len(SPECIAL)))


@dataclass(frozen=True)
class SceneImages:
    """``scenes`` -> uint8 ``[S, side, side, 3]``: each scene rendered whole
    (:func:`~tags.benchmark.render.render_scene`) and resized (bicubic) to ``side``."""

    side: int = 64

    def __call__(self, scenes: Sequence[Scene]) -> np.ndarray:
        from PIL import Image

        from tags.benchmark.render import render_scene

        out = np.zeros((len(scenes), self.side, self.side, 3), np.uint8)
        for i, scene in enumerate(scenes):
            image = render_scene(scene)
            if image.size != (self.side, self.side):
                image = image.resize((self.side, self.side), Image.Resampling.BICUBIC)
            out[i] = np.asarray(image)
        return out


class ImagePixels(nn.Module):
    """uint8 images ``[..., H, W, 3]`` -> the processor's ``pixel_values`` ``[..., 3, s, s]``
    (rescaled to [0, 1], resized to the model's side ``s`` when ``H`` differs, normalised by
    the processor's mean and std). No parameters: the training loop's frozen perception."""

    def __init__(self, side: int, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.side = side
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(3, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(3, 1, 1))

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        lead = images.shape[:-3]
        x = images.reshape(-1, *images.shape[-3:]).permute(0, 3, 1, 2).float() / 255.0
        if x.shape[-1] != self.side or x.shape[-2] != self.side:
            x = F.interpolate(x, (self.side, self.side), mode="bicubic", antialias=True)
        x = (x.clamp(0.0, 1.0) - self.mean) / self.std
        return x.reshape(*lead, 3, self.side, self.side)


def _image_processor(backend: Any) -> Any:
    return getattr(backend.processor, "image_processor", backend.processor)


def processor_side(backend: Any) -> int:
    """The side of the images the backend's processor makes (its crop, else its size)."""
    processor = _image_processor(backend)
    for size in (getattr(processor, "crop_size", None), getattr(processor, "size", None)):
        if isinstance(size, dict) and size.get("height"):
            return int(size["height"])
        if isinstance(size, dict) and size.get("shortest_edge"):
            return int(size["shortest_edge"])
    return int(backend.model.config.vision_config.image_size)


class HFMatcher(nn.Module):
    """A Hugging Face backend as a testbed model (see the module's notes)."""

    def __init__(self, backend: Any, variant: str) -> None:
        super().__init__()
        backend.require(HF_CAPABILITY[variant], f"the testbed's {variant}")
        self.backend, self.variant = backend, variant
        self.model = backend.model  # its parameters: the module's, moved by ``.to``
        processor = _image_processor(backend)
        self.cnn = ImagePixels(processor_side(backend), processor.image_mean, processor.image_std)

    @staticmethod
    def captions(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[str]:
        """The caption text of testbed-vocabulary rows (specials and padding dropped)."""
        rows = input_ids.masked_fill(~attention_mask.bool(), 0).tolist()
        return [join_words([VOCAB[i] for i in row if i not in _SPECIAL_IDS])[0] for row in rows]

    def text(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> dict:
        """The backend's text inputs of testbed-vocabulary rows, on the model's device."""
        inputs = self.backend.text_inputs(self.captions(input_ids, attention_mask))
        return {k: v.to(input_ids.device) for k, v in inputs.items()}

    def scale(self) -> torch.Tensor:
        """CLIP's logit scale, ``exp(logit_scale)`` capped at 100 (as the dual encoder's)."""
        return self.backend.logit_params()["scale"].clamp(max=MAX_SCALE)

    def encode_text(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``[N, D]`` unit text embeddings."""
        return self.backend.encode_text(self.text(input_ids, attention_mask))

    def encode_image(self, labels: torch.Tensor, boxes=None, region_mask=None) -> torch.Tensor:
        """``[N, D]`` unit image embeddings of ``pixel_values`` ``[N, 3, s, s]`` (boxes and
        region mask, the testbed's symbolic inputs, are not read)."""
        return self.backend.encode_image({"pixel_values": labels})

    def forward(self, input_ids, attention_mask, labels, boxes=None, region_mask=None):
        """``[N]`` scores of (caption, image) rows: ITM log-odds, else the scaled cosine."""
        images, index = torch.unique(labels.flatten(1), dim=0, return_inverse=True)
        images = images.view(-1, *labels.shape[1:])
        text = self.text(input_ids, attention_mask)
        if self.backend.supports("itm"):
            return self.backend.score_pairs(text, {"pixel_values": images, "image_index": index})
        text_emb = self.backend.encode_text(text).float()
        image_emb = self.backend.encode_image({"pixel_values": images}).float()[index]
        return self.scale() * (text_emb * image_emb).sum(-1)


def hf_backend(config: Any) -> Any:
    """The backend of ``config.hf_model`` or of the builder of the variant's family."""
    from transformers.utils import logging

    from tags.backends import load_backend

    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # a bar per saved and loaded model
    try:
        return _load_or_build(config, load_backend)
    finally:
        if shown:
            logging.enable_progress_bar()


def _load_or_build(config: Any, load_backend) -> Any:
    if config.hf_model:
        return load_backend(config.hf_model)
    from tags.benchmark.hf_models import BUILDERS, HFModelConfig

    family = HF_FAMILIES[config.variant]
    shape = HFModelConfig(
        family=family, image_size=config.image_size, patch_size=config.patch_size,
        hidden_size=config.hidden, num_layers=config.layers, num_heads=4,
        projection_dim=min(64, config.hidden), max_text_len=MAX_TEXT_LEN, seed=config.seed,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix=f"testbed-{family}-") as folder:
        return load_backend(BUILDERS[family](folder, shape))


def hf_matcher(config: Any) -> HFMatcher:
    """The run's :class:`HFMatcher` at step 0 (``variant`` ``hf-clip`` or ``hf-blip``)."""
    return HFMatcher(hf_backend(config), config.variant)


__all__ = [
    "HF_FAMILIES",
    "HFMatcher",
    "ImagePixels",
    "SceneImages",
    "hf_backend",
    "hf_matcher",
    "processor_side",
]
