"""Word vectors for how well an object substitute fits the other words of its caption.

A table shipped with the package (``data/word_vectors.npz``, built by
``scripts/build_word_vectors.py`` from the installed MiniLM-L6 sentence encoder: one vector a
word or name, 128 principal components, int8) gives each object name, verb lemma and
attribute value of the background and of Flickr30K dev a unit vector; no model is loaded at
generation time. A name outside the table takes its last word's vector ("work truck" ->
"truck"); a word with neither is not judged.

:func:`context_misfit` is the object operator's ``word_context`` rule: the substitute must
keep up with the original on the caption's other words (its other objects, verbs and the
object's own attributes), on average and on the word most tied to the original ("brushing
her teeth with a toothbrush" -> not "with a tennis racquet"; "a bird on the feeder" -> not
"a giraffe").

Imports numpy only (nothing of the project above it).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

#: The shipped table.
TABLE = Path(__file__).parent / "data" / "word_vectors.npz"
#: Components kept per vector.
DIMENSIONS = 128
#: A substitute whose mean cosine with the caption's other words is this much below the
#: original's is refused ...
MIN_MEAN_DELTA = -0.25
#: ... and so is one that falls this far below the original on the caption word most similar
#: to the original, when that word is at least ``CUE_SIMILARITY`` similar to it (a strong cue:
#: "brush" for "toothbrush", "feeder" for "bird").
CUE_SIMILARITY = 0.45
MIN_CUE_DELTA = -0.2


class WordVectors:
    """Unit word vectors by word (see the module docstring)."""

    def __init__(self, words: Sequence[str], vectors: np.ndarray):
        self.index = {w: i for i, w in enumerate(words)}
        self.vectors = vectors.astype(np.float32) / 127.0
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
        self.vectors /= np.where(norms > 0, norms, 1.0)
        self._memo: dict[str, np.ndarray | None] = {}

    @classmethod
    def load(cls, path: Path = TABLE) -> WordVectors:
        with np.load(path) as data:
            return cls([str(w) for w in data["words"]], data["vectors"])

    def vector(self, name: str) -> np.ndarray | None:
        """The unit vector of ``name`` (lower case), of its last word, or ``None``."""
        found = self._memo.get(name, False)
        if found is False:
            i = self.index.get(name)
            if i is None and " " in name:
                i = self.index.get(name.rsplit(" ", 1)[1])
            found = self._memo[name] = None if i is None else self.vectors[i]
        return found

    def similarity(self, a: str, b: str) -> float | None:
        va, vb = self.vector(a), self.vector(b)
        return None if va is None or vb is None else float(va @ vb)


@lru_cache(maxsize=1)
def word_vectors() -> WordVectors | None:
    """The shipped table (loaded once per process), or ``None`` when it is missing."""
    return WordVectors.load() if TABLE.exists() else None


def context_misfit(
    vectors: WordVectors | None, original: str, substitute: str, context: Sequence[str]
) -> bool:
    """Whether ``substitute`` fits the caption's other ``context`` words clearly worse than
    ``original`` does: its mean cosine with them at least :data:`MIN_MEAN_DELTA` lower, or on
    the context word most similar to the original (when that one is at least
    :data:`CUE_SIMILARITY` similar) at least :data:`MIN_CUE_DELTA` lower. ``False`` (not
    judged) without a table, without a vector of either noun, or without context words that
    have one. :class:`ContextFit` asks the same of many substitutes of one original."""
    return ContextFit(vectors, original, context).misfit(substitute)


class ContextFit:
    """:func:`context_misfit` for one original and its context, asked of many substitutes:
    the context's vectors and their cosines with the original are computed once, on the
    first question."""

    def __init__(self, vectors: WordVectors | None, original: str, context: Sequence[str]):
        self.vectors, self.original, self.context = vectors, original, context
        self._ready = False

    def _prepare(self) -> None:
        self._ready = True
        self.words: list[str] = []
        self.matrix = self.to_original = None
        vectors = self.vectors
        vo = None if vectors is None else vectors.vector(self.original)
        if vo is None:
            return
        rows = []
        for c in dict.fromkeys(self.context):
            v = vectors.vector(c) if c != self.original else None
            if v is not None:
                rows.append(v)
                self.words.append(c)
        if rows:
            self.matrix = np.stack(rows)
            self.to_original = self.matrix @ vo

    def misfit(self, substitute: str) -> bool:
        if not self._ready:
            self._prepare()
        if self.matrix is None:
            return False
        vs = self.vectors.vector(substitute)
        if vs is None:
            return False
        to_original, to_substitute = self.to_original, self.matrix @ vs
        if substitute in self.words:  # the substitute is not its own context
            keep = np.array([w != substitute for w in self.words])
            if not keep.any():
                return False
            to_original, to_substitute = to_original[keep], to_substitute[keep]
        if float(to_substitute.mean() - to_original.mean()) <= MIN_MEAN_DELTA:
            return True
        cue = int(np.argmax(to_original))
        return bool(
            to_original[cue] >= CUE_SIMILARITY
            and to_substitute[cue] - to_original[cue] <= MIN_CUE_DELTA
        )


__all__ = [
    "CUE_SIMILARITY",
    "DIMENSIONS",
    "MIN_CUE_DELTA",
    "MIN_MEAN_DELTA",
    "TABLE",
    "ContextFit",
    "WordVectors",
    "context_misfit",
    "word_vectors",
]
