"""Plain-Python snapshots of a parsed spaCy ``Doc`` for the rules.

spaCy builds a new ``Token`` object on every ``doc[i]``, ``token.head`` or child access and
decodes strings on every ``tag_``/``dep_`` read; the rules read those attributes many times
per token. :func:`snapshot` reads the parse once through ``Doc.to_array`` into
:class:`LiteToken` objects with the same attribute names the rules use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from spacy.tokens import Doc


class LiteToken:
    """The slice of ``spacy.tokens.Token`` the rules read; ``doc`` is the token list."""

    __slots__ = ("children", "dep_", "doc", "head", "i", "idx", "lower_", "tag_", "text")

    def __init__(self, i: int, text: str, lower: str, tag: str, dep: str, idx: int):
        self.i = i
        self.text = text
        self.lower_ = lower
        self.tag_ = tag
        self.dep_ = dep
        self.idx = idx
        self.head: LiteToken = self
        self.children: list[LiteToken] = []
        self.doc: list[LiteToken] = []

    def __len__(self) -> int:
        return len(self.text)

    def __repr__(self) -> str:
        return f"{self.text}/{self.tag_}/{self.dep_}<-{self.head.i}"

    @property
    def lefts(self) -> list[LiteToken]:
        return [c for c in self.children if c.i < self.i]

    @property
    def rights(self) -> list[LiteToken]:
        return [c for c in self.children if c.i > self.i]

    @property
    def subtree(self) -> Iterator[LiteToken]:
        """The token and its descendants, in sentence order."""
        nodes = [self]
        stack = list(self.children)
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(node.children)
        return iter(sorted(nodes, key=lambda t: t.i))


# String-store hashes are stable (a hash of the string), so decoded strings can be shared.
_STRINGS: dict[int, str] = {}


def snapshot(doc: Doc) -> list[LiteToken]:
    """The parse of ``doc`` as :class:`LiteToken` objects (heads and children linked)."""
    from spacy.attrs import DEP, HEAD, IDX, LOWER, ORTH, TAG

    if len(doc) == 0:
        return []
    rows = doc.to_array([ORTH, LOWER, TAG, DEP, HEAD, IDX])
    heads = rows[:, 4].view(np.int64)  # relative offsets, stored as uint64
    strings = doc.vocab.strings
    cache = _STRINGS

    def text(key: int) -> str:
        value = cache.get(key)
        if value is None:
            if len(cache) > 500_000:  # bounded on corpora with huge vocabularies
                cache.clear()
            value = cache[key] = strings[key]
        return value

    tokens = [
        LiteToken(i, text(orth), text(lower), text(tag), text(dep), idx)
        for i, (orth, lower, tag, dep, _, idx) in enumerate(rows.tolist())
    ]
    for token, offset in zip(tokens, heads.tolist()):
        token.doc = tokens
        if offset:
            head = tokens[token.i + offset]
            token.head = head
            head.children.append(token)
    return tokens
