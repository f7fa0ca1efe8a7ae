"""Lexical knowledge for edits, kept for imports: the closed word classes now live in
:mod:`tags.negatives.lexicon`, the WordNet queries in :mod:`tags.negatives.wordnet`."""

from __future__ import annotations

from tags.negatives.lexicon import *  # noqa: F403
from tags.negatives.lexicon import __all__ as _lexicon_all
from tags.negatives.wordnet import WordNet, wordnet

__all__ = [*_lexicon_all, "WordNet", "wordnet"]
