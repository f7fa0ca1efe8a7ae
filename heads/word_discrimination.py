"""Word discrimination (WoD) head: per token, does it match the positive caption."""

from __future__ import annotations

import torch
from torch import nn


class WordDiscriminationHead(nn.Module):
    """Two-class logits per token (class 1: the token equals the positive caption's token).

    Args:
        hidden_size: Width of the transformer.
        dropout: Dropout applied to the hidden states before the classifier.
    """

    num_classes = 2

    def __init__(self, hidden_size: int, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, self.num_classes)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """Map ``[..., hidden_size]`` token states to ``[..., 2]`` logits."""
        return self.classifier(self.dropout(hidden_states))
