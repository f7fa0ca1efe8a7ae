"""Named config presets: each method's settings as its paper states them (``*-paper``) and,
where the official code differs, as that code runs (``*-official``).

A preset is a partial raw config (a mapping as in a YAML file). A config names presets with
a top-level ``preset:`` key (one name or a list), or ``preset=NAME`` on the command line;
:func:`apply_presets` lays them under the config, in order, and removes the key, so a
resolved config holds values only, never the preset's name. The config's own values win:
mappings merge key by key, and a list of mappings (``phases``) item by item, so a config can
give ``phases: [{steps: 1000}, {steps: 500}]`` on top of a preset's phase names and miners.
A preset may itself start from another (its own ``preset:`` key).

Every value below is quoted from its source (docs/training.md, "Settings and their sources");
what a paper leaves open (steps, batch size, learning rates of the VSE papers, paths) is not
in its preset. TAGS-DC's per-dataset values (Table 5) live in ``scripts/configs/tags_dc_*``.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PRESETS", "apply_presets", "get_preset", "list_presets", "register_preset"]

PRESETS: dict[str, dict[str, Any]] = {}
SOURCES: dict[str, str] = {}


def register_preset(name: str, fragment: dict[str, Any], source: str) -> None:
    """Register ``fragment`` under ``name`` (unique); ``source``: where its values come from."""
    if name in PRESETS:
        raise ValueError(f"preset {name!r} is already registered")
    PRESETS[name] = fragment
    SOURCES[name] = source


def list_presets() -> list[str]:
    """Sorted names of every registered preset."""
    return sorted(PRESETS)


def merge(base: Any, top: Any) -> Any:
    """``top`` laid over ``base``: mappings key by key, lists of mappings item by item (extra
    items of either kept), anything else replaced by ``top``."""
    if isinstance(base, dict) and isinstance(top, dict):
        out = dict(base)
        for key, value in top.items():
            out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (
        isinstance(base, list)
        and isinstance(top, list)
        and all(isinstance(v, dict) for v in base + top)
    ):
        out_list = [merge(b, t) for b, t in zip(base, top)]
        longer = base if len(base) > len(top) else top
        return out_list + copy.deepcopy(longer[len(out_list) :])
    return copy.deepcopy(top)


def get_preset(name: str) -> dict[str, Any]:
    """The raw fragment of preset ``name`` with the presets it starts from merged in."""
    if name not in PRESETS:
        from tags.core.errors import ConfigError

        raise ConfigError(f"unknown preset {name!r}; registered: {', '.join(list_presets())}")
    return apply_presets(copy.deepcopy(PRESETS[name]))


def apply_presets(data: dict[str, Any], extra: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """``data`` laid over its presets (its ``preset:`` key, then ``extra``), key removed."""
    data = dict(data)
    names = data.pop("preset", None) or []
    names = [names] if isinstance(names, str) else list(names)
    names += list(extra)
    if not all(isinstance(n, str) for n in names):
        from tags.core.errors import ConfigError

        raise ConfigError(f"preset: a name or a list of names, got {names!r}")
    base: dict[str, Any] = {}
    for name in names:
        base = merge(base, get_preset(name))
    return merge(base, data)


# --------------------------------------------------------------------------- TAGS-DC
register_preset(
    "tags-dc-paper",
    {
        "recipe": "tags-dc",
        "model": {"dropout": 0.1},
        "optim": {"betas": [0.9, 0.98], "warmup_ratio": 0.1},
        "tags_dc": {
            "itm_miner": {"name": "all", "kwargs": {"margin": 0.2}},
            "istm_miner": {"name": "all", "kwargs": {"margin": 0.2}},
            "retrieval": {"mode": "pool", "pool_size": 399, "num_negatives": 31},
            "synthetic": {
                "source": "dynamic",
                "masking": "unit",
                "num_copies": 20,
                "num_samples": 20,
                "temperature": 1.5,
                "mask_ratio": 0.15,
                "planner": False,
                "max_edits": None,
                "balance_types": False,
                "stratify_types": False,
                "swaps": False,
                "role_swaps": False,
            },
            "mlm_masking": "unit",
            "wod_class_weights": None,
            "woc_positions": "all",
        },
        "phases": [
            {"name": "nsg", "steps": 5000},
            {"name": "nsgdc", "steps": 1500, "init": "previous"},
        ],
    },
    "Fan et al. 2022: Algorithm 1, Sec. 4 and Table 5 (method settings shared by the four "
    "Table 5 columns; lr, |T-| and the loss weights are per dataset and size)",
)
register_preset(
    "tags-dc-official",
    {
        "preset": "tags-dc-paper",
        "tags_dc": {
            "wod_class_weights": [1.0, 0.11],
            "woc_positions": "edited",
            "synthetic": {"fn_filter": "official"},
        },
    },
    "LibertFan/TAGS model/nsgd2.py: WoD class weights (1.0, 0.11), WoC on the refilled "
    "positions only; model/nsgd.py: the false-negative filter drops only copies of the "
    "positive and duplicates; the run scripts' per-dataset values are quoted in scripts/configs",
)
register_preset(
    "tags-dc-planned",
    {"preset": "tags-dc-paper", "tags_dc": {"synthetic": {"planner": True}}},
    "tags (not a paper setting): the paper's method with refills limited to the edit "
    "planner's substitutes (docs/generate.md)",
)

# --------------------------------------------------------------------------- VSE miners
register_preset(
    "selhn-paper",
    {"recipe": "vse", "vse": {"miner": {"name": "selhn", "kwargs": {"margin": 0.2, "eps": 0.01}}}},
    "Li et al. 2023 (SelHN); the official AAA-Zheng/RVSEPP TripletSelHNLoss agrees",
)
_FNE = {"recipe": "vse", "vse": {"queue_size": 8192, "momentum": 0.995}}
register_preset(
    "fne-paper",
    merge(
        _FNE,
        {
            "vse": {
                "miner": {
                    "name": "fne",
                    "kwargs": {"preset": "paper", "margin": 0.2, "prior": 1e-4, "cut": False},
                }
            }
        },
    ),
    "Li et al. 2023 (FNE): exp(-P), threshold 0.01, prior 1e-4, momentum 0.995, queue 8192, "
    "no cut at mu+ - margin",
)
register_preset(
    "fne-official",
    merge(
        _FNE,
        {
            "vse": {
                "miner": {
                    "name": "fne",
                    "kwargs": {"preset": "official", "margin": 0.2, "prior": 1e-4, "cut": True},
                }
            }
        },
    ),
    "LuminosityX/FNE loss.py: exp(-0.5 P), threshold 1e-3 (false_margin 0.999), the cut at "
    "mu+ - margin; queue and momentum as the paper",
)
register_preset(
    "aoq-paper",
    {
        "recipe": "vse",
        "vse": {"miner": {"name": "hardest", "kwargs": {"margin": 0.2}}, "aoq": {"h": 300}},
        "phases": [
            {"name": "round1"},
            {"name": "round2", "miner": "aoq", "init": "initial"},
        ],
    },
    "Chen et al. 2020 (AOQ): round 1 hardest triplet, h = 300 (h/5 per caption), round 2 "
    "from scratch with Eq. 5 (alpha 0.3, beta 1.5: the aoq miner's defaults)",
)
register_preset(
    "ndgl-paper",
    {
        "recipe": "vse",
        "vse": {
            "miner": {
                "name": "ndgl",
                "kwargs": {
                    "margin": 0.2,
                    "gamma": 0.01,
                    "lambda_mr": 100.0,
                    "lambda_hnr": 0.5,
                    "kl_direction": "predicted||target",
                },
            }
        },
    },
    "Zhou et al. 2025 (NDGL): gamma 0.01, lambda_1 100, lambda_2 0.5, KL(P || Q) in the "
    "paper's argument order (no public code)",
)
