"""Synthetic negatives inside a TAGS-DC step, behind one small interface.

A :class:`SyntheticSource` turns a :class:`SyntheticRequest` (the local batch's positive
captions, their images and the other captions of each image) into per-caption negatives,
each a ``(text, edits)`` pair; :func:`label_negatives` then tokenizes them with WoD labels and
WoC targets (``tags.negatives.token_labels``). Sources:

- :class:`EngineSource`: the generation engine of :mod:`tags.negatives` (mask scene-graph
  units or words, refill with an MLM, filter, top-m by ITM). ``dynamic``: the refills come
  from the model being trained (shared MLM head, image-conditioned), ``static``: from a frozen
  :class:`~tags.modeling.StaticMLMGenerator`. Selection scores always use the current model.
- :class:`FixedPoolSource`: pools read from a ``tags generate`` JSONL (the static setting).

All randomness derives from ``request.seed`` and the caption id (the engine's
``caption_seed``), so a caption gets the same negatives whatever process or batch holds it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from tags.core.types import Edit
from tags.data import NegativePools

Negatives = list[list[tuple[str, tuple[Edit, ...]]]]


@dataclass
class SyntheticRequest:
    """The positives of a local batch. Region tensors are padded ``[B, R, ...]``."""

    texts: list[str]
    caption_ids: list[Any]
    other_captions: list[list[str]]
    region_features: torch.Tensor | None
    region_boxes: torch.Tensor | None
    region_mask: torch.Tensor | None
    seed: int
    pixel_values: torch.Tensor | None = None  # issue 12: pixel backends (then regions None)

    @property
    def device(self) -> torch.device:
        anchor = self.pixel_values if self.pixel_values is not None else self.region_features
        return anchor.device


@runtime_checkable
class SyntheticSource(Protocol):
    """``source(model, request)`` -> one list of ``(negative text, edits)`` per positive."""

    def __call__(self, model: nn.Module, request: SyntheticRequest) -> Negatives: ...


@dataclass
class LabelledNegatives:
    """Tokenized negatives: ``owner[n]`` is the positive (batch row) of negative ``n``."""

    input_ids: list[list[int]]
    wod_labels: list[list[int]]
    woc_labels: list[list[int]]
    owner: list[int]
    edited: list[list[bool]] = field(default_factory=list)  # token inside an edit


def label_negatives(
    positives: Sequence[str], negatives: Negatives, tokenizer: Any, max_length: int
) -> LabelledNegatives:
    """WoD labels / WoC targets of every negative against its positive (truncated to
    ``max_length`` tokens, keeping the final ``[SEP]``)."""
    from tags.negatives import token_labels

    out = LabelledNegatives([], [], [], [])
    for i, (positive, pool) in enumerate(zip(positives, negatives)):
        for text, edits in pool:
            labels = token_labels(positive, text, edits, tokenizer)
            ids, wod, woc = labels.input_ids, labels.wod_labels, labels.woc_labels
            edited = labels.edited
            if len(ids) > max_length:
                ids = [*ids[: max_length - 1], ids[-1]]
                wod = [*wod[: max_length - 1], wod[-1]]
                woc = [*woc[: max_length - 1], woc[-1]]
                edited = [*edited[: max_length - 1], edited[-1]]
            out.input_ids.append(ids)
            out.wod_labels.append(wod)
            out.woc_labels.append(woc)
            out.edited.append(edited)
            out.owner.append(i)
    return out


class _BatchRegions:
    """A region store over the request's tensors; image id = batch row."""

    def __init__(self, request: SyntheticRequest) -> None:
        from tags.core.regions import Regions

        self.items = []
        for f, b, m in zip(request.region_features, request.region_boxes, request.region_mask):
            keep = m.bool()
            self.items.append(
                Regions(
                    f[keep].detach().float().cpu().numpy().astype(np.float32),
                    b[keep].detach().float().cpu().numpy().astype(np.float32),
                )
            )

    def get(self, image_id: Any, filename: str | None = None, position: int | None = None) -> Any:
        return self.items[int(image_id)]


def generation_config(config: Any, max_tokens: int, seed: int) -> Any:
    """The :class:`~tags.negatives.config.GenerationConfig` of a ``tags_dc.synthetic``
    section (its keys named as the config's fields; the recipe builds its own planner over
    the training captions, so no background): captions cut at ``max_tokens``, run ``seed``."""
    from tags.negatives.config import GenerationConfig

    return GenerationConfig.from_settings(config, max_tokens=max_tokens, seed=seed, background=None)


class EngineSource:
    """Negatives from :class:`tags.negatives.NegativeGenerator` with the current model.

    Args:
        tokenizer: the training (fast) tokenizer.
        config: :class:`~tags.training.config.SyntheticConfig`.
        max_length: caption length cap in tokens (the engine cuts at word boundaries).
        static_generator: a frozen MLM for the ``static`` ablation (``None``: dynamic).
    """

    def __init__(
        self,
        tokenizer: Any,
        config: Any,
        max_length: int = 40,
        static_generator: nn.Module | None = None,
        corpus: Sequence[str] | None = None,
        planner_cache: str | Path | None = None,
    ) -> None:
        from tags.core.errors import ConfigError
        from tags.negatives.refill import piece_decoder

        try:  # up front: a tokenizer without a drawable token fails every refill
            piece_decoder(tokenizer)
        except ValueError as err:
            raise ConfigError(f"tags_dc.synthetic: {err}") from err
        self.tokenizer = tokenizer
        self.config = config
        self.max_length = max_length
        self.static_generator = static_generator
        self.parser = None
        self.planner = None
        if config.masking == "unit":
            from tags.negatives.parses import ParseCache
            from tags.negatives.pipeline import default_parser

            # the planner's parses of the training captions serve the steps' captions
            # (the same graphs, one parse per caption; tags.negatives.parses)
            self.parser = ParseCache(default_parser())
            if getattr(config, "planner", False) and corpus:
                classes = getattr(config, "noun_classes", None)
                self.planner = build_planner(self.parser, corpus, planner_cache, classes)
        self.stats = None

    @torch.no_grad()
    def __call__(self, model: nn.Module, request: SyntheticRequest) -> Negatives:
        from tags.backends import as_backend
        from tags.backends.adapters import PixelImageStore
        from tags.core.types import Caption, ImageGroup
        from tags.negatives.factory import create_generator
        from tags.negatives.refill import MLMRefiller

        cfg = self.config
        device = request.device
        backend = as_backend(model, self.tokenizer)  # TagsModel, or a pixel backend
        model = backend.model
        was_training = model.training
        try:
            if self.static_generator is not None:
                from tags.backends.masked_lm import TagsMaskedLM

                conditions = bool(getattr(self.static_generator, "conditions_on_image", True))
                mlm = TagsMaskedLM(
                    self.static_generator, self.tokenizer, device, use_image=conditions
                )
            else:
                mlm = backend.masked_lm_adapter(self.tokenizer, device)
            scorer = backend.pair_scorer(self.tokenizer, device, max_length=self.max_length)
            refiller = MLMRefiller(
                mlm,
                self.tokenizer,
                num_samples=cfg.num_samples,
                temperature=cfg.temperature,
                max_length=self.max_length,
            )
            engine = create_generator(
                generation_config(cfg, max(self.max_length - 2, 1), request.seed),
                refiller=refiller,
                parser=self.parser,
                planner=self.planner,
                scorer=scorer,
                regions=_BatchRegions(request)
                if request.pixel_values is None
                else PixelImageStore(request.pixel_values),
            )
            # fn_filter "official": no check against the image's other captions
            checks_siblings = getattr(cfg, "fn_filter", "paper") == "paper"
            items = []
            for i, (text, caption_id) in enumerate(zip(request.texts, request.caption_ids)):
                others = [
                    Caption(i, f"__other_{j}__", t)
                    for j, t in enumerate(request.other_captions[i])
                    if checks_siblings
                ]
                caption = Caption(i, caption_id, text)
                items.append((caption, ImageGroup(i, [*others, caption])))
            out: Negatives = []
            # the whole batch at once: one parse, one MLM pass and one ITM pass per step
            for i, result in enumerate(engine.generate_for(items)):
                out.append([(r.negative, tuple(r.edits)) for r in result.records])
                # the engine may cut long captions: labels must use the text it edited
                if result.records:
                    request.texts[i] = result.records[0].positive
            self.stats = engine.stats
            return out
        finally:
            model.train(was_training)


_PLANNERS: dict[tuple[int, str, str], Any] = {}


def build_planner(
    parser: Any,
    corpus: Sequence[str],
    cache: str | Path | None = None,
    noun_classes: dict[str, list[str]] | None = None,
) -> Any:
    """An :class:`~tags.negatives.planner.EditPlanner` over the scene graphs of ``corpus``
    (the training captions), so refills stay inside what those captions attest
    (``noun_classes``: see :class:`~tags.negatives.planner.EditPlanner`).

    The planner of the last corpus is kept for the process (the demo's training and its
    sample negatives share one). With ``cache``, the corpus's counts are read from that JSON
    file when it was written for the same captions (a SHA-256 of them), else parsed and
    written there: a resumed run and the other processes of a distributed run skip the
    parse."""
    from tags.negatives.planner import EditPlanner
    from tags.negatives.scenes import SceneCounts
    from tags.negatives.vocabulary import SceneGraphVocabulary

    texts = [" ".join(t.split()) for t in corpus]
    digest = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()
    # a ParseCache shares the planner of the parser it wraps
    key = (id(getattr(parser, "parser", parser)), digest, json.dumps(noun_classes, sort_keys=True))
    if key in _PLANNERS:
        return _PLANNERS[key]
    path = Path(cache) if cache is not None else None
    scenes = None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if data.get("corpus_sha256") == digest:
            scenes = SceneCounts.from_dict(data["scenes"])
    if scenes is None:
        scenes = SceneGraphVocabulary().update(parser.pipe(texts)).scenes
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            payload = {"corpus_sha256": digest, "scenes": scenes.to_dict()}
            tmp.write_text(json.dumps(payload), encoding="utf-8")
            os.replace(tmp, path)
    _PLANNERS.clear()
    _PLANNERS[key] = EditPlanner(scenes, noun_classes=noun_classes)
    return _PLANNERS[key]


class FixedPoolSource:
    """Pools of a ``tags generate`` JSONL, looked up by caption id (first ``top_m``)."""

    def __init__(self, pools: NegativePools, top_m: int | None = None) -> None:
        self.pools = pools
        self.top_m = top_m

    def __call__(self, model: nn.Module, request: SyntheticRequest) -> Negatives:
        for i, cid in enumerate(request.caption_ids):
            request.texts[i] = self.pools.positive(cid, request.texts[i])
        return [self.pools.get(cid, self.top_m) for cid in request.caption_ids]


__all__ = [
    "EngineSource",
    "FixedPoolSource",
    "LabelledNegatives",
    "Negatives",
    "SyntheticRequest",
    "SyntheticSource",
    "generation_config",
    "label_negatives",
]
