"""The testbed's word-level vocabulary: the benchmark grammar's words, one id each."""

from __future__ import annotations

from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES
from tags.benchmark.truth import normalize

SPECIAL: tuple[str, ...] = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")
_GRAMMAR = ["a", "an", "and", "there", "is", "shapes", "two", "three", "four", ",", ":"]
VOCAB: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *SPECIAL,
            *_GRAMMAR,
            *(w for r in RELATIONS for w in r.split()),
            *SHAPES,
            *COLORS,
            *SIZES,
        ]
    )
)
WORD_ID: dict[str, int] = {w: i for i, w in enumerate(VOCAB)}
#: the word classes of the scene-graph units: a masked unit's typed refills come from its class
WORD_CLASSES: tuple[tuple[str, ...], ...] = (tuple(SHAPES), tuple(COLORS), tuple(SIZES))
MASK_ID = WORD_ID["[MASK]"]
#: regions (objects) of a scene at most
MAX_REGIONS = 4
_PUNCTUATION = (",", ":")


def caption_words(text: str) -> list[str]:
    """The words of a caption as the testbed tokenizes it (``,`` and ``:`` apart)."""
    return normalize(text).replace(",", " ,").replace(":", " :").split()


def tokenize(text: str) -> list[int]:
    """``[CLS] words [SEP]`` ids of a caption of the benchmark's grammar."""
    return [1, *(WORD_ID[w] for w in caption_words(text)), 2]


def join_words(words: list[str] | tuple[str, ...]) -> tuple[str, list[tuple[int, int]]]:
    """The caption text of ``words`` and each word's character span in it."""
    text, spans = "", []
    for w in words:
        if text and w not in _PUNCTUATION:
            text += " "
        spans.append((len(text), len(text) + len(w)))
        text += w
    return text, spans
