"""Masked language modelling head: a 2-layer FFN whose decoder is tied to the word embeddings."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN


class PredictionHeadTransform(nn.Module):
    """``LayerNorm(act(dense(x)))``: the first layer of BERT's vocabulary heads."""

    def __init__(self, hidden_size: int, hidden_act: str = "gelu", layer_norm_eps: float = 1e-12):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.transform_act_fn = ACT2FN[hidden_act]
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))


class MLMHead(nn.Module):
    """Vocabulary logits for every input vector (BERT/UNITER ``cls.predictions`` layout).

    ``decoder.weight`` is meant to be tied to the word embedding matrix by the owning model;
    the output bias is a separate parameter, as in BERT and UNITER.

    Args:
        hidden_size: Width of the transformer.
        vocab_size: Number of output tokens.
        hidden_act: Activation of the transform layer.
        layer_norm_eps: Epsilon of the transform LayerNorm.
    """

    def __init__(
        self,
        hidden_size: int,
        vocab_size: int,
        hidden_act: str = "gelu",
        layer_norm_eps: float = 1e-12,
    ):
        super().__init__()
        self.transform = PredictionHeadTransform(hidden_size, hidden_act, layer_norm_eps)
        self.decoder = nn.Linear(hidden_size, vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """Map ``[..., hidden_size]`` to ``[..., vocab_size]`` logits."""
        # the bias inside the GEMM: one [rows, vocab] tensor instead of two
        return F.linear(self.transform(hidden_states), self.decoder.weight, self.bias)
