"""The training step's ITM pass over a batch's rows, in chunks of about one length."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tags.testbed.inputs import inputs_of, length_chunks, training_rows
from tags.testbed.self_negatives import Refilled, WordTerms, scored_with_words
from tags.testbed.vocab import tokenize
from tags.testbed.world import Batch


def itm_pass(
    model, batch: Batch, device, best: Sequence[Refilled] = (), positives=None
) -> tuple[torch.Tensor, WordTerms | None]:
    """The ITM logits of every row of ``batch`` (in row order, with gradients), the rows
    forwarded :func:`~tags.testbed.inputs.training_rows` at a time, shortest first (less
    padding; on a GPU all in one forward). ``best``: TAGS-DC's chosen negatives, the batch's
    last rows; their WoD and WoC terms are read off the same pass (``None`` when none is
    aligned with its positive, or without ``best``)."""
    tokens = [tokenize(t) for t in batch.texts]
    first = len(tokens) - len(best)
    logits, order, words = [], [], []
    for part in length_chunks(tokens, training_rows(device)):
        x = inputs_of(
            [tokens[k] for k in part], [batch.scene_index[k] for k in part], batch, device
        )
        rows = [(i, best[k - first]) for i, k in enumerate(part) if k >= first]
        part_logits, terms = scored_with_words(model, x, rows, positives)
        logits.append(part_logits)
        order.extend(part)
        if terms is not None:
            words.append(terms)
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.as_tensor(order)] = torch.arange(len(order))
    return torch.cat(logits)[inverse.to(logits[0].device)], WordTerms.cat(words)
