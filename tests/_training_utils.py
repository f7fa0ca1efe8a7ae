"""Shared helpers of the training tests: tiny configs and a minimal synthetic source."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from tags.core.types import Edit
from tags.training import config_from_dict

TINY_MODEL = {
    "source": "scratch",
    "tokenizer": "tiny-mlm",
    "dropout": 0.0,
    "overrides": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 37,
        "max_position_embeddings": 64,
        "max_regions": 8,
    },
}


def tiny_config(recipe: str, output_dir: Path, *overrides: str, **sections: Any):
    """A tiny CPU config on the synthetic corpus (8 images x 5 captions)."""
    data: dict[str, Any] = {
        "recipe": recipe,
        "seed": 0,
        "output_dir": str(output_dir),
        "cpu": True,
        "batch_size": 8,
        "log_every": 1,
        "progress_bar": False,
        "tensorboard": False,
        "model": TINY_MODEL,
        "data": {"captions": "synthetic", "synthetic_images": 8, "max_text_len": 20},
        "phases": [{"name": "main", "steps": 4, "lr": 1.0e-3}],
    }
    if recipe == "tags-dc":
        data["batch_size"] = 4
        data["tags_dc"] = {
            "retrieval": {"pool_size": 6, "num_negatives": 2, "score_batch_size": 64},
            "synthetic": {
                "source": "dynamic",
                "masking": "word",
                "num_copies": 2,
                "num_samples": 2,
                "top_m": 2,
            },
        }
    data.update(sections)
    return config_from_dict(data, list(overrides))


class SwapNouns:
    """Minimal synthetic source: replace the first known noun by each of two others."""

    NOUNS = ("dog", "man", "woman", "child", "horse", "car", "bird", "cat")

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self, model: torch.nn.Module, request: Any
    ) -> list[list[tuple[str, tuple[Edit, ...]]]]:
        self.calls += 1
        out = []
        for text in request.texts:
            match = next((m for m in re.finditer(r"\w+", text) if m.group() in self.NOUNS), None)
            if match is None:
                out.append([])
                continue
            others = [n for n in self.NOUNS if n != match.group()][:2]
            negs = []
            for noun in others:
                edit = Edit("object", match.group(), noun, match.start(), match.end())
                negs.append((text[: match.start()] + noun + text[match.end() :], (edit,)))
            out.append(negs)
        return out


def state_dict_close(a: torch.nn.Module, b: torch.nn.Module, atol: float = 1e-5) -> float:
    """Largest absolute parameter difference (asserted below ``atol``)."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    worst = max((sa[k].float() - sb[k].float()).abs().max().item() for k in sa)
    assert worst <= atol, worst
    return worst
