"""Image-text matching (ITM) head: one linear layer on the pooled output, sigmoid score."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def fp32_linear(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``linear(x)`` in fp32, outside any autocast (for the last layer of a score that is
    ranked: its cost is one ``[batch, hidden]`` product)."""
    bias = None if linear.bias is None else linear.bias.float()
    with torch.autocast(x.device.type, enabled=False):
        return F.linear(x.float(), linear.weight.float(), bias)


class ITMHead(nn.Module):
    """Matching logit (and sigmoid score in [0, 1]) for each pooled (text, image) pair.

    This is UNITER's ``rank_output``: ``Linear(hidden_size, 1)``; the score is
    ``sigmoid(logit)``, used by the triplet losses and by negative selection.

    Args:
        hidden_size: Width of the pooled vector.
        dropout: Dropout applied to the pooled vector before the classifier.
    """

    def __init__(self, hidden_size: int, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, 1)

    def forward(self, pooled_output: torch.Tensor) -> torch.Tensor:
        """Map ``[batch, hidden_size]`` to ``[batch]`` logits, in fp32 whatever the autocast
        or the weights' dtype (bf16 logits are 3 significant digits: ranked pairs would tie);
        an fp32 model computes exactly what ``self.classifier`` computes."""
        return fp32_linear(self.classifier, self.dropout(pooled_output)).squeeze(-1)

    def score(self, pooled_output: torch.Tensor) -> torch.Tensor:
        """Matching probability in [0, 1], ``sigmoid(forward(pooled_output))``."""
        return torch.sigmoid(self.forward(pooled_output))
