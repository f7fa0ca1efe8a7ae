"""Model inputs of a batch's rows on a device, and the autocast context."""

from __future__ import annotations

from collections.abc import Sequence

from tags.testbed.vocab import tokenize
from tags.testbed.world import Batch

#: rows per inference forward on a GPU; on a CPU, :data:`CPU_INFERENCE_ROWS`
GPU_INFERENCE_ROWS = 1024
#: rows per inference forward on a CPU: the activations of 1,024 rows overflow its caches
#: (20 % more CPU time per row than 256, and 128 length-sorted rows 5-15 % less than 256,
#: measured on the held-out set)
CPU_INFERENCE_ROWS = 128


def inference_rows(device) -> int:
    """How many rows one inference forward scores on ``device`` (a name or torch device)."""
    kind = getattr(device, "type", str(device))
    return GPU_INFERENCE_ROWS if kind == "cuda" else CPU_INFERENCE_ROWS


#: rows per training forward on a CPU (a GPU takes a step's rows in one forward)
CPU_TRAINING_ROWS = 64


def training_rows(device) -> int | None:
    """How many rows one training forward takes on ``device``: ``None``, all of a step's."""
    kind = getattr(device, "type", str(device))
    return None if kind == "cuda" else CPU_TRAINING_ROWS


def length_chunks(token_ids: Sequence[Sequence[int]], size: int | None) -> list[list[int]]:
    """Row indices in chunks of at most ``size`` rows, shortest first (ties in row order), so
    that the rows of a chunk pad to about one length: on the testbed's captions a third less
    compute per row than chunks in row order. All rows in order when one chunk holds them
    (``size`` ``None``: always)."""
    if size is None or len(token_ids) <= size:
        return [list(range(len(token_ids)))]
    order = sorted(range(len(token_ids)), key=lambda k: len(token_ids[k]))
    return [order[start : start + size] for start in range(0, len(order), size)]


def itm_logits(
    model, token_ids: Sequence[list[int]], scenes: Sequence[int], batch: Batch, device,
    chunk: int | None = None,
):  # fmt: skip
    """The ITM logits (float, on the CPU, in row order) of captions given as ids, each with
    its scene (an index into ``batch``), scored ``chunk`` rows a forward (default
    :func:`inference_rows`) in :func:`length_chunks`. The caller sets eval mode and the
    no-grad context."""
    import torch

    out = torch.empty(len(token_ids))
    for part in length_chunks(token_ids, chunk or inference_rows(device)):
        x = inputs_of([token_ids[k] for k in part], [scenes[k] for k in part], batch, device)
        out[part] = model(**x).float().cpu()
    return out


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
