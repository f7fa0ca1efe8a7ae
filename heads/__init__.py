"""Task heads on top of the shared UNITER-style transformer.

Each head is a small ``nn.Module`` with one job; :class:`tags.modeling.TagsModel` owns and
wires them:

- :class:`MLMHead`: masked-token refilling (2-layer FFN, decoder tied to the word embeddings).
- :class:`ITMHead`: image-text matching score in [0, 1] from the pooled first token.
- :class:`WordDiscriminationHead`: per token, "does it match the positive caption" (2 classes).
- :class:`WordCorrectionHead`: per token, the positive caption's token (vocabulary logits).

Layer: the bottom, beside ``parsers``: imports nothing of ``tags`` (torch,
transformers).
"""

from heads.itm import ITMHead, fp32_linear
from heads.mlm import MLMHead, PredictionHeadTransform
from heads.word_correction import WordCorrectionHead
from heads.word_discrimination import WordDiscriminationHead

__all__ = [
    "ITMHead",
    "MLMHead",
    "PredictionHeadTransform",
    "WordCorrectionHead",
    "WordDiscriminationHead",
    "fp32_linear",
]
