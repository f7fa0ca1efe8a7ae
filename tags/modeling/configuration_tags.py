"""Configuration of the shared UNITER-style backbone and its heads."""

from __future__ import annotations

from typing import Any, ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PretrainedConfig

GENERATOR_MODES = ("dynamic", "static")

# BertConfig fields that carry over to TagsConfig when starting from a BERT checkpoint.
BERT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
    "layer_norm_eps",
    "pad_token_id",
)


@strict
class TagsConfig(PretrainedConfig):
    r"""Configuration of [`TagsModel`]: a BERT encoder over text tokens and image regions.

    The BERT part has the same fields and defaults as `BertConfig` (bert-base-uncased). The
    image part follows UNITER: each region is a detector feature vector plus a 7-d box
    ``(x1, y1, x2, y2, w, h, w*h)`` normalised to [0, 1].

    Args:
        region_feature_size: Size of one region feature vector (2048 for bottom-up features).
        region_box_size: Size of the box input; UNITER uses 7 (4-d boxes are expanded).
        max_regions: Largest number of regions per image accepted by the model.
        image_token_type_id: Token type (segment) id whose embedding marks image regions.
        mask_token_id: Id of ``[MASK]``; used when masked positions are not given explicitly.
        use_mlm_head: Build the masked-LM head (refilling, dynamic generator).
        use_itm_head: Build the image-text matching head.
        use_wod_head: Build the word discrimination head.
        use_woc_head: Build the word correction head.
        tie_word_embeddings: Tie the MLM and WoC decoders to the word embeddings.
        trained_heads: The heads a training recipe trained (set by ``tags train``); ``None``
            when not recorded. ``tags explain`` / ``tags generate`` refuse a head missing here.
        head_dropout: Dropout before the ITM and WoD classifiers (UNITER: 0).
        generator: ``"dynamic"`` (refill with this model's MLM head, the TAGS default) or
            ``"static"`` (a separate frozen masked LM, for the ablation).
        static_generator_path: Local directory of the static generator (a `TagsModel` or any
            `*ForMaskedLM` checkpoint); required when ``generator="static"``.
        validate_inputs: Check shapes, box ranges and padding on every forward (one device
            sync); turn off in tight training loops once the data pipeline is trusted.

    Example:

    ```python
    >>> from tags import TagsConfig, TagsModel
    >>> config = TagsConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2)
    >>> model = TagsModel(config)
    ```
    """

    model_type = "tags"

    # BERT encoder
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float | int = 0.1
    attention_probs_dropout_prob: float | int = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int | None = 0
    # image regions
    region_feature_size: int = 2048
    region_box_size: int = 7
    max_regions: int = 100
    image_token_type_id: int = 1
    # heads
    mask_token_id: int = 103
    use_mlm_head: bool = True
    use_itm_head: bool = True
    use_wod_head: bool = True
    use_woc_head: bool = True
    tie_word_embeddings: bool = True
    trained_heads: list[str] | None = None
    head_dropout: float | int = 0.0
    # refilling generator
    generator: str = "dynamic"
    static_generator_path: str | None = None
    validate_inputs: bool = True

    # Read by the `transformers` BERT layers; fixed for this encoder-only model.
    is_decoder: ClassVar[bool] = False
    add_cross_attention: ClassVar[bool] = False

    def __post_init__(self, **kwargs: Any):
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if self.region_box_size != 7:
            raise ValueError(
                f"region_box_size must be 7 (UNITER boxes), got {self.region_box_size}"
            )
        if not 0 <= self.image_token_type_id < self.type_vocab_size:
            raise ValueError(
                f"image_token_type_id ({self.image_token_type_id}) must index the token type "
                f"embeddings (type_vocab_size={self.type_vocab_size})"
            )
        if self.generator not in GENERATOR_MODES:
            raise ValueError(f"generator must be one of {GENERATOR_MODES}, got {self.generator!r}")
        if self.static_generator_path is not None:  # accept a Path; the JSON file needs a str
            self.static_generator_path = str(self.static_generator_path)
        if self.generator == "static" and not self.static_generator_path:
            raise ValueError('generator="static" needs static_generator_path (a local directory)')
        if self.max_regions < 1:
            raise ValueError(f"max_regions must be positive, got {self.max_regions}")
        super().__post_init__(**kwargs)

    @property
    def head_names(self) -> tuple[str, ...]:
        """Names of the heads this configuration builds, in ``("mlm", "itm", "wod", "woc")`` order."""
        flags = {
            "mlm": self.use_mlm_head,
            "itm": self.use_itm_head,
            "wod": self.use_wod_head,
            "woc": self.use_woc_head,
        }
        return tuple(name for name, on in flags.items() if on)

    @classmethod
    def from_bert_config(cls, bert_config: PretrainedConfig, **overrides: Any) -> TagsConfig:
        """Copy the encoder settings of a BERT-family config; ``overrides`` win."""
        values = {
            name: getattr(bert_config, name) for name in BERT_FIELDS if hasattr(bert_config, name)
        }
        values.update(overrides)
        return cls(**values)


def _register_auto_config() -> None:
    """Let ``AutoConfig`` (and so ``AutoTokenizer``) read saved TagsModel directories."""
    from transformers import AutoConfig

    AutoConfig.register(TagsConfig.model_type, TagsConfig, exist_ok=True)


_register_auto_config()

__all__ = ["TagsConfig"]
