"""Fine-tuning a pre-trained HF model (:mod:`tags.benchmark.hf_models`) on the shapes
benchmark: a dual encoder (CLIP) with plain in-batch InfoNCE, NegCLIP-style with weight-free
``tags generate`` negatives, or the hardest in-batch negative; a cross encoder (BLIP) with ITM
on retrieved hard negatives, TAGS or TAGS-DC; used by ``tags demo --backend clip|blip`` and
``scripts/benchmarks/hf_finetune.py`` (whose extra tables live in ``scripts/research``).

- :func:`generate_negatives`: weight-free negatives of the training captions, as ``tags
  generate`` writes them (vocabulary refills of the edit planner, the shapes one noun class);
- :func:`order_negatives`: each caption's negatives relation edits first (the trainer uses
  the first ``vse.synthetic_negatives`` of each caption);
- :func:`finetune_config` / :func:`run_finetune`: one ``tags train`` run (recipe ``vse``
  or ``tags-dc``, by :data:`VARIANT_BUILDERS`)
  and its evaluation (:func:`~tags.benchmark.hf_models.evaluate_hf`), cached in its
  directory's ``result.json``.

Nothing here branches on the model family: the pre-training base's recipe picks the
variants that apply, and the backend adapters do the rest (``tags.backends``).
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tags.core.errors import UserError

if TYPE_CHECKING:
    from tags.negatives.config import GenerationConfig

# a caption's negatives in this order of edit type (a negative of several types ranks by
# its first type in this order)
TYPE_ORDER = {"relation": 0, "object": 1, "attribute": 2}
ORDERS: tuple[str, ...] = ("generated", "relation-first")
RESULT_FILE = "result.json"


def generate_negatives(
    data: str | Path, out: str | Path, top_m: int, role_swaps: bool, log: Any = print
) -> Path:
    """The negatives ``tags generate --split train --refill vocab --background none
    --noun-classes <the six shapes as one class> --top-m M --seed 0 [--role-swaps]`` writes
    for the benchmark's training captions (weight-free: planner refills from the captions'
    own vocabulary), in ``OUT/negatives_top<M>[_roles].jsonl``, reused when present."""
    from tags.benchmark.scenes import SHAPES
    from tags.negatives.config import GenerationConfig

    data, out = Path(data), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"negatives_top{top_m}{'_roles' if role_swaps else ''}.jsonl"
    # (a killed ``tags generate`` run of an earlier version left its lock beside the file)
    if path.is_file() and path.stat().st_size and not path.with_suffix(".jsonl.lock").exists():
        return path
    config = GenerationConfig.from_preset(
        "minimal", top_m=top_m, role_swaps=role_swaps, seed=0, batch_size=256,
        background=None, noun_classes={"shape": list(SHAPES)},
    )  # fmt: skip
    start = time.perf_counter()
    _write_negatives(data / "dataset_shapes.json", "train", config, path)
    log(f"negatives: {path} ({time.perf_counter() - start:.0f}s)")
    return path


def _write_negatives(
    captions: str | Path, split: str, config: GenerationConfig, path: Path
) -> None:
    """The weight-free negatives of ``captions``' ``split`` with ``config``: byte for byte
    the JSON Lines ``tags generate`` writes (its vocabulary pass, refill and process count:
    2 on 2+ cores), to a temporary file renamed to ``path`` once complete."""
    from tags.core.io import JsonlWriter, read_captions
    from tags.negatives.counts import count_groups
    from tags.negatives.factory import create_generator

    processes = min(2, os.cpu_count() or 1)
    vocabulary = count_groups(read_captions(captions, split=split), n_process=processes)
    generator = create_generator(config, vocabulary=vocabulary, processes=processes)
    tmp = path.with_name(path.name + ".tmp")
    with JsonlWriter(tmp) as writer:
        writer.open()
        for result in generator.generate(read_captions(captions, split=split)):
            writer.write(record.to_dict() for record in result.records)
    tmp.replace(path)


def negatives_by_caption(path: str | Path) -> dict[tuple[Any, Any], list[dict[str, Any]]]:
    """The rows of a negatives JSONL grouped by ``(image_id, caption_id)``, in file order."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                groups.setdefault((row.get("image_id"), row["caption_id"]), []).append(row)
    return groups


def _rank(row: dict[str, Any]) -> int:
    ranks = [TYPE_ORDER.get(e.get("type"), len(TYPE_ORDER)) for e in row.get("edits", [])]
    return min(ranks, default=len(TYPE_ORDER))


def order_negatives(path: str | Path, order: str) -> Path:
    """``path`` itself (``generated``) or a copy ``<stem>.relation-first.jsonl`` whose rows
    are, per caption, sorted by edit type (relation, object, attribute; stable)."""
    path = Path(path)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if order == "generated":
        return path
    target = path.with_name(f"{path.stem}.{order}.jsonl")
    if target.is_file() and target.stat().st_mtime >= path.stat().st_mtime:
        return target
    tmp = target.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for rows in negatives_by_caption(path).values():
            for row in sorted(rows, key=_rank):
                f.write(json.dumps(row) + "\n")
    tmp.replace(target)
    return target


def negatives_mix(path: str | Path, per_caption: int) -> dict[str, float]:
    """Edit-type shares (percent of edits) of the negatives the trainer uses (the first
    ``per_caption`` of each caption) and the share of captions with a relation negative."""
    groups = negatives_by_caption(path)
    counts = {"attribute": 0, "object": 0, "relation": 0}
    with_relation = 0
    for rows in groups.values():
        types = [{e.get("type") for e in r.get("edits", [])} for r in rows[:per_caption]]
        with_relation += any("relation" in t for t in types)
        for kinds in types:
            for kind in kinds & set(counts):
                counts[kind] += 1
    total = sum(counts.values()) or 1
    mix = {k: round(100 * v / total, 1) for k, v in counts.items()}
    mix["captions_with_relation"] = round(100 * with_relation / max(1, len(groups)), 1)
    return mix


def _plain(config: dict[str, Any], settings: dict[str, Any]) -> None:
    config["vse"] = {"loss": "contrastive"}


def _negclip(config: dict[str, Any], settings: dict[str, Any]) -> None:
    if settings["negatives"] is None:
        raise ValueError("variant negclip needs a negatives file")
    config["vse"] = {"loss": "contrastive", "synthetic_negatives": settings["per_caption"]}
    config["data"]["negatives"] = str(settings["negatives"])
    if settings["hn_weight"]:
        for phase in config["phases"]:
            phase["weights"] = {**phase.get("weights", {}), "hard_negative": settings["hn_weight"]}


def _hardest(config: dict[str, Any], settings: dict[str, Any]) -> None:
    config["vse"] = {"loss": "miner", "miner": {"name": "hardest", "kwargs": {"margin": 0.2}}}


def _cross(config: dict[str, Any], settings: dict[str, Any], synthetic: bool, dc: bool) -> None:
    """Recipe ``tags-dc`` as the demo's cross-encoder methods (``tags.demo.methods``):
    ITM with the hardest of ``num_negatives`` retrieved from a ``pool_size`` pool (margin
    0.2), MLM 0.1; with ``synthetic`` + L_ISTM on dynamic planner refills (scene-graph unit
    masking, the six shapes one noun class); with ``dc`` the last ``dc_steps`` run NSGDC
    (+ WoD/WoC 0.1, half the lr, from NSG's weights). ``itm_bce`` / ``istm_bce`` > 0 add
    the recipe's level terms (BLIP's ITM cross-entropy on the retrieved / synthetic
    negatives; ``istm_bce`` only where there are synthetic negatives)."""
    from tags.benchmark.scenes import SHAPES

    s = settings
    config.pop("pretrain", None)
    config["recipe"] = "tags-dc"
    config["tags_dc"] = {
        "itm_miner": {"name": "hardest", "kwargs": {"margin": 0.2}},
        "istm_miner": {"name": "all", "kwargs": {"margin": 0.2}},
        "retrieval": {"mode": "pool", "pool_size": s["pool_size"],
                      "num_negatives": s["num_negatives"], "score_batch_size": 256},
        "synthetic": {
            "source": "dynamic" if synthetic else "none",
            "masking": "unit", "num_copies": s["num_copies"], "num_samples": s["num_copies"],
            "top_m": s["top_m"], "noun_classes": {"shape": list(SHAPES)},
        },
    }  # fmt: skip
    main = config["phases"][0]
    weights = {"itm": 1.0, "mlm": 0.1, **({"istm": s["istm_weight"]} if synthetic else {})}
    if s["itm_bce"]:
        weights["itm_bce"] = s["itm_bce"]
    if s["istm_bce"] and synthetic:
        weights["istm_bce"] = s["istm_bce"]
    steps, lr = main["steps"], main["lr"]
    if not dc:
        config["phases"] = [{"name": "nsg" if synthetic else "main", "steps": steps, "lr": lr,
                             "weights": weights}]  # fmt: skip
        return
    if not 0 < s["dc_steps"] < steps:
        raise ValueError(f"variant tags-dc needs 0 < dc_steps < steps, got {s['dc_steps']}")
    config["phases"] = [
        {"name": "nsg", "steps": steps - s["dc_steps"], "lr": lr, "weights": weights},
        {"name": "nsgdc", "steps": s["dc_steps"], "lr": lr / 2, "init": "previous",
         "weights": {**weights, "wod": 0.1, "woc": 0.1}},
    ]  # fmt: skip


#: variant -> (the base's recipe it applies to, how it rewrites the config): dual-encoder
#: variants on a ``vse`` base (CLIP), cross-encoder ones on a ``pretrain`` base (BLIP)
VARIANT_BUILDERS: dict[str, tuple[str, Any]] = {
    "plain": ("vse", _plain),
    "negclip": ("vse", _negclip),
    "hardest": ("vse", _hardest),
    "itm-hardest": ("pretrain", lambda c, s: _cross(c, s, synthetic=False, dc=False)),
    "tags": ("pretrain", lambda c, s: _cross(c, s, synthetic=True, dc=False)),
    "tags-dc": ("pretrain", lambda c, s: _cross(c, s, synthetic=True, dc=True)),
}
VARIANTS: tuple[str, ...] = tuple(VARIANT_BUILDERS)
CROSS_DEFAULTS: dict[str, Any] = {
    "pool_size": 15, "num_negatives": 7, "num_copies": 4, "top_m": 7, "istm_weight": 1.0,
    "dc_steps": 50, "itm_bce": 0.0, "istm_bce": 0.0,
}  # fmt: skip


def finetune_config(
    base: dict[str, Any],
    variant: str,
    negatives: str | Path | None = None,
    per_caption: int = 1,
    hn_weight: float = 0.0,
    **cross: Any,
) -> dict[str, Any]:
    """The ``tags train`` mapping of one variant from a pre-training base
    (:func:`~tags.benchmark.hf_models.train_config`). On a ``vse`` base (CLIP): ``plain``
    (the model's InfoNCE), ``negclip`` (+ ``per_caption`` synthetic columns from
    ``negatives`` and the ``hard_negative`` term at ``hn_weight``), ``hardest`` (VSE++
    hinge, margin 0.2). On a ``pretrain`` base (BLIP), recipe ``tags-dc``: ``itm-hardest``
    (ITM on the hardest retrieved negative), ``tags`` (+ L_ISTM on dynamic synthetic
    negatives), ``tags-dc`` (NSG then NSGDC); ``cross`` overrides
    :data:`CROSS_DEFAULTS`."""
    if variant not in VARIANT_BUILDERS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    recipe, build = VARIANT_BUILDERS[variant]
    if base.get("recipe") != recipe:
        raise ValueError(
            f"variant {variant} fine-tunes a {recipe} base, got recipe {base.get('recipe')!r}"
        )
    unknown = set(cross) - set(CROSS_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(sorted(unknown))}")
    config = copy.deepcopy(base)
    settings = {"negatives": negatives, "per_caption": per_caption, "hn_weight": hn_weight,
                **CROSS_DEFAULTS, **cross}  # fmt: skip
    build(config, settings)
    return config


class SettingsChangedError(UserError, ValueError):
    """A run folder already holds a finished run of another config."""


def config_differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two configs (``phases.0.lr``), sorted."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new), key=str)
        return [
            d for k in keys for d in config_differences(old.get(k), new.get(k), f"{prefix}{k}.")
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            d
            for i, (a, b) in enumerate(zip(old, new))
            for d in config_differences(a, b, f"{prefix}{i}.")
        ]
    return [] if old == new else [prefix.rstrip(".") or "(config)"]


def run_finetune(
    config: dict[str, Any],
    run_dir: str | Path,
    data: str | Path,
    splits: tuple[str, ...] = ("test",),
    pairs: dict[str, list[Any]] | None = None,
    role_pairs: dict[str, list[Any]] | None = None,
    replace_other_settings: bool = True,
) -> dict[str, Any]:
    """Train ``config`` (its ``output_dir`` is ``RUN/train``) unless ``RUN/result.json``
    holds the same config and the model exists, then evaluate each of ``splits`` not scored
    yet (``pairs`` / ``role_pairs``: per split, see
    :func:`~tags.benchmark.hf_models.evaluate_hf`); returns ``{"config", "train_seconds", "last_metrics", "scores": {split: ...}}``.

    Raises:
        SettingsChangedError: ``RUN`` holds a finished run of another config and
            ``replace_other_settings`` is false (nothing is touched).
    """
    from tags.benchmark.hf_models import evaluate_hf
    from tags.training import training_function
    from tags.training.config import config_from_dict
    from tags.training.rundir import clear_run

    run_dir = Path(run_dir)
    result_path = run_dir / RESULT_FILE
    model_dir = Path(config["output_dir"]) / "model"
    record: dict[str, Any] | None = None
    if result_path.is_file():
        cached = json.loads(result_path.read_text())
        if cached.get("config") == config and model_dir.is_dir():
            record = cached
        elif not replace_other_settings:
            changed = ", ".join(config_differences(cached.get("config") or {}, config))
            raise SettingsChangedError(
                f"{run_dir} holds a run with other settings (differs in: {changed}); give "
                "another --out to keep both, or remove that folder to replace it"
            )
    if record is None:
        clear_run(Path(config["output_dir"]))
        start = time.perf_counter()
        result = training_function(config_from_dict(config))
        record = {
            "config": config,
            "train_seconds": round(time.perf_counter() - start, 1),
            "last_metrics": {k: float(v) for k, v in result.last_metrics.items()},
            "scores": {},
        }
    for split in splits:
        roles = (role_pairs or {}).get(split)
        scored = record["scores"].get(split)
        if scored is None or (roles and "mp_role" not in scored):
            start = time.perf_counter()
            chosen = (pairs or {}).get(split)
            record["scores"][split] = evaluate_hf(
                model_dir, data, split, pairs=chosen, role_pairs=roles
            )
            record.setdefault("eval_seconds", {})[split] = round(time.perf_counter() - start, 1)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(result_path)
    return record


__all__ = [
    "CROSS_DEFAULTS",
    "ORDERS",
    "TYPE_ORDER",
    "VARIANTS",
    "VARIANT_BUILDERS",
    "SettingsChangedError",
    "config_differences",
    "finetune_config",
    "generate_negatives",
    "negatives_by_caption",
    "negatives_mix",
    "order_negatives",
    "run_finetune",
]
