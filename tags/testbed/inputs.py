"""Model inputs of a batch's rows on a device, and the autocast context."""

from __future__ import annotations

from collections.abc import Sequence

from tags.testbed.vocab import tokenize
from tags.testbed.world import Batch

#: rows per inference forward on a GPU; on a CPU, :data:`CPU_INFERENCE_ROWS`
GPU_INFERENCE_ROWS = 1024
#: rows per inference forward on a CPU: the activations of 1,024 rows overflow its caches
#: (20 % more CPU time per row, measured on the held-out set)
CPU_INFERENCE_ROWS = 256


def inference_rows(device) -> int:
    """How many rows one inference forward scores on ``device`` (a name or torch device)."""
    kind = getattr(device, "type", str(device))
    return GPU_INFERENCE_ROWS if kind == "cuda" else CPU_INFERENCE_ROWS


def to_device(batch: Batch, rows: Sequence[int] | None, device):
    """Model inputs of ``batch`` (all rows, or ``rows``) on ``device``."""
    rows = range(len(batch.texts)) if rows is None else rows
    return inputs_of(
        [tokenize(batch.texts[r]) for r in rows], [batch.scene_index[r] for r in rows], batch,
        device,
    )  # fmt: skip


def inputs_of(token_ids: Sequence[list[int]], scenes: Sequence[int], batch: Batch, device):
    """Model inputs of captions given as ids, each with its scene (an index into ``batch``)."""
    import torch

    from tags.modeling.padding import pad_text

    ids, attn = pad_text(list(token_ids))
    idx = torch.as_tensor(list(scenes))
    return dict(
        input_ids=ids.to(device), attention_mask=attn.to(device),
        labels=(labels := torch.as_tensor(batch.labels))[idx.to(labels.device)].to(device),
        boxes=torch.as_tensor(batch.boxes)[idx].to(device),
        region_mask=torch.as_tensor(batch.region_mask)[idx].to(device),
    )  # fmt: skip


def autocast(device, bf16: bool):
    """bf16 autocast on CUDA when ``bf16``; otherwise a no-op context."""
    import contextlib

    import torch

    if bf16 and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
