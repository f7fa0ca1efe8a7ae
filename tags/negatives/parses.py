"""The counting pass's parses, kept for generation: one parse per caption per run.

``tags generate`` parses every caption twice: once in the counting pass (the corpus's scene
counts, which the planner needs before the first negative) and once per generation batch.
:class:`ParseCache` wraps the parser: the graphs :meth:`~ParseCache.pipe` yields (the
counting pass) are kept, pickled, up to ``max_bytes``; :meth:`~ParseCache.parse_batch` (the
generation batches) returns the kept graph of a caption text it has seen and parses only
the others. A kept graph is the one the parser made from the same text, so the output does
not change; each lookup unpickles a fresh copy, so no two captions share a graph object.
Captions past the budget, and texts the generator cut (``max_tokens``), are parsed again.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

#: The default budget of kept parses: about 350,000 Flickr30K captions (a pickled graph is
#: about 760 bytes, plus the text and the dictionary entry).
DEFAULT_MAX_BYTES = 256 * 2**20

#: Bytes counted per kept caption on top of its pickle and text (dictionary entry, objects).
_ENTRY_OVERHEAD = 200


class ParseCache:
    """A scene-graph parser that remembers what it parsed in :meth:`pipe` (the counting
    pass) and answers :meth:`parse_batch` (the generation batches) from it.

    Args:
        parser: a :class:`parsers.SceneGraphParser` (anything with ``pipe`` and
            ``parse_batch``); other attributes are read through to it.
        max_bytes: the most bytes the kept parses take (pickles, texts and an estimate of
            the dictionary's own); past it, further captions are not kept.
    """

    def __init__(self, parser: Any, max_bytes: int = DEFAULT_MAX_BYTES):
        self.parser = parser
        self.max_bytes = max_bytes
        self.size = 0  # bytes kept (estimate)
        self.hits = 0
        self._graphs: dict[str, bytes] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "parser":  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.parser, name)

    def __len__(self) -> int:
        return len(self._graphs)

    def pipe(self, captions: Iterable[str], **kwargs: Any) -> Iterator[Any]:
        """The parser's ``pipe``; each graph is kept under its caption text while the budget
        lasts."""
        texts: list[str] = []  # the captions handed to the parser, not yet matched

        def recorded() -> Iterator[str]:
            for text in captions:
                texts.append(text)
                yield text

        position = 0
        for graph in self.parser.pipe(recorded(), **kwargs):
            text = texts[position]
            position += 1
            if position > 4096:  # drop the matched head now and then: flat memory
                del texts[:position]
                position = 0
            self._keep(text, graph)
            yield graph

    def parse_batch(self, captions: Sequence[str], **kwargs: Any) -> list[Any]:
        """The graphs of ``captions``: kept ones unpickled, the others parsed in one batch."""
        graphs: list[Any] = [None] * len(captions)
        missing: list[int] = []
        for i, text in enumerate(captions):
            found = self._graphs.get(text)
            if found is None:
                missing.append(i)
            else:
                graphs[i] = pickle.loads(found)
        self.hits += len(captions) - len(missing)
        if missing:
            parsed = self.parser.parse_batch([captions[i] for i in missing], **kwargs)
            for i, graph in zip(missing, parsed):
                graphs[i] = graph
        return graphs

    def clear(self) -> None:
        """Forget every kept parse."""
        self._graphs.clear()
        self.size = 0

    def _keep(self, text: str, graph: Any) -> None:
        if text in self._graphs or self.size >= self.max_bytes:
            return
        data = pickle.dumps(graph, protocol=pickle.HIGHEST_PROTOCOL)
        cost = len(data) + len(text) + _ENTRY_OVERHEAD
        if self.size + cost > self.max_bytes:
            self.size = self.max_bytes  # full: keep no more
            return
        self._graphs[text] = data
        self.size += cost


__all__ = ["DEFAULT_MAX_BYTES", "ParseCache"]
