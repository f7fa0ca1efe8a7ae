"""Word correction (WoC) head: predict the positive caption's token at each position."""

from __future__ import annotations

from heads.mlm import MLMHead


class WordCorrectionHead(MLMHead):
    """Per-token vocabulary logits for the correction task of TAGS-DC.

    Same layout as :class:`~heads.mlm.MLMHead` (the official TAGS code uses a second BERT MLM
    head, initialised from the MLM head and tied to the word embeddings), but its own transform
    and bias, so correction and refilling can diverge during training.
    """
