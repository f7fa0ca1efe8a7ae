"""ARO's COCO-Order / Flickr-Order options: a caption and four word-order perturbations.

The four perturbations of the ARO loader (after O'Connor and Andreas 2021): shuffle the
nouns and, separately, the adjectives; shuffle everything but nouns and adjectives; shuffle
within each trigram; shuffle the trigrams. Parts of speech come from the project's spaCy
pipeline (Penn tags ``NN*`` / ``JJ*``); tokens for trigrams are words and punctuation. Every
option is normalised as BLIP's ``pre_caption`` does (lower case, ``.!"()*#:;~`` removed,
at most 30 words). The shuffles are seeded, so a file always gives the same options.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
ADJ_TAGS = frozenset({"JJ", "JJR", "JJS"})
MAX_WORDS = 30
_TOKEN = re.compile(r"\w+|[^\w\s]")


def normalize(caption: str, max_words: int = MAX_WORDS) -> str:
    """Lower case, drop ``.!"()*#:;~``, collapse spaces, keep ``max_words`` words."""
    caption = re.sub(r"([.!\"()*#:;~])", " ", caption.lower())
    caption = re.sub(r"\s{2,}", " ", caption).strip()
    return " ".join(caption.split(" ")[:max_words])


def _shuffled(tokens: list[str], index: list[int], rng: np.random.Generator) -> list[str]:
    out = list(tokens)
    for i, j in zip(index, rng.permutation(index).tolist()):
        out[i] = tokens[j]
    return out


def _trigrams(tokens: list[str]) -> list[list[str]]:
    return [tokens[i : i + 3] for i in range(0, len(tokens), 3)]


def pos_shuffles(tokens: list[str], tags: list[str], rng: np.random.Generator) -> list[list[str]]:
    """Nouns and (separately) adjectives shuffled; everything else shuffled."""
    nouns = [i for i, t in enumerate(tags) if t in NOUN_TAGS]
    adjectives = [i for i, t in enumerate(tags) if t in ADJ_TAGS]
    others = [i for i, t in enumerate(tags) if t not in NOUN_TAGS | ADJ_TAGS]
    return [
        _shuffled(_shuffled(tokens, nouns, rng), adjectives, rng),
        _shuffled(tokens, others, rng),
    ]


def trigram_shuffles(tokens: list[str], rng: np.random.Generator) -> list[list[str]]:
    """Shuffled within each trigram; trigrams shuffled."""
    trigrams = _trigrams(tokens)
    within = [w for tri in trigrams for w in rng.permutation(tri).tolist()]
    across = [w for k in rng.permutation(len(trigrams)).tolist() for w in trigrams[k]]
    return [within, across]


def order_options(captions: Sequence[str], seed: int = 0, nlp=None) -> list[list[str]]:
    """``[original, 4 perturbations]`` of every caption, normalised; the original first."""
    if nlp is None:
        from parsers.nlp import load_pipeline

        nlp = load_pipeline()
    rng = np.random.default_rng(seed)
    rows = []
    for caption, doc in zip(captions, nlp.pipe(list(captions), batch_size=256)):
        shuffled = pos_shuffles([t.text for t in doc], [t.tag_ for t in doc], rng)
        shuffled += trigram_shuffles(_TOKEN.findall(caption), rng)
        rows.append([normalize(caption)] + [normalize(" ".join(t)) for t in shuffled])
    return rows


__all__ = ["normalize", "order_options", "pos_shuffles", "trigram_shuffles"]
