"""Image-text matching (ITM) head: one linear layer on the pooled output, sigmoid score."""

from __future__ import annotations

import torch
from torch import nn


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
        """Map ``[batch, hidden_size]`` to ``[batch]`` logits."""
        return self.classifier(self.dropout(pooled_output)).squeeze(-1)

    def score(self, pooled_output: torch.Tensor) -> torch.Tensor:
        """Matching probability in [0, 1], ``sigmoid(forward(pooled_output))``."""
        return torch.sigmoid(self.forward(pooled_output))
