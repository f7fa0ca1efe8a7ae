"""Text-only baselines for positive/negative caption pairs: how much of a pair suite a model
that never sees the image can solve (SugarCrepe's check for text shortcuts).

- :class:`NgramLM`: an interpolated Kneser-Ney trigram language model fitted on captions
  (e.g. a benchmark's training captions); it picks the caption of higher log-probability.
- :class:`PairClassifier`: a logistic n-gram classifier fitted on training pairs (true,
  false); it learns which words and contexts mark false captions.

Both score a caption alone (``score(text) -> float``), so :func:`text_only_accuracy` treats
them like any scorer: a pair is won when the true caption scores strictly above the false
one. 50 % means no text prior.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch

_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
BOS, EOS = "<s>", "</s>"


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks."""
    return _TOKEN.findall(text.lower())


class NgramLM:
    """Interpolated Kneser-Ney trigram LM (absolute discount ``discount``); unseen words
    get a share of the unigram level's mass (``1 / (vocabulary + 1)``)."""

    def __init__(self, discount: float = 0.75) -> None:
        if not 0.0 < discount < 1.0:
            raise ValueError(f"discount must lie in (0, 1), got {discount}")
        self.discount = discount
        self.trigrams: Counter[tuple[str, str, str]] = Counter()
        self.context2: Counter[tuple[str, str]] = Counter()  # c(u v .)
        self.follow2: Counter[tuple[str, str]] = Counter()  # N1+(u v .)
        self.cont2: Counter[tuple[str, str]] = Counter()  # N1+(. v w)
        self.cont2_context: Counter[str] = Counter()  # N1+(. v .)
        self.follow1: Counter[str] = Counter()  # N1+(v .) among continuation bigrams
        self.cont1: Counter[str] = Counter()  # N1+(. w)
        self.bigram_types = 0

    def fit(self, captions: Iterable[str]) -> NgramLM:
        """Count the n-grams of ``captions`` (padded with two ``<s>`` and one ``</s>``)."""
        for caption in captions:
            tokens = [BOS, BOS, *tokenize(caption), EOS]
            for i in range(2, len(tokens)):
                self.trigrams[tuple(tokens[i - 2 : i + 1])] += 1
        if not self.trigrams:
            raise ValueError("no captions to fit the n-gram LM on")
        bigrams: set[tuple[str, str]] = set()
        for (u, v, w), n in self.trigrams.items():
            self.context2[(u, v)] += n
            self.follow2[(u, v)] += 1
            self.cont2[(v, w)] += 1
            bigrams.add((v, w))
        for v, w in bigrams:
            self.cont2_context[v] += self.cont2[(v, w)]
            self.follow1[v] += 1
            self.cont1[w] += 1
        self.bigram_types = len(bigrams)
        return self

    def _unigram(self, w: str) -> float:
        vocabulary = len(self.cont1) + 1
        return (self.cont1[w] + 1.0 / vocabulary) / (self.bigram_types + 1.0)

    def _bigram(self, v: str, w: str) -> float:
        total = self.cont2_context[v]
        if total == 0:
            return self._unigram(w)
        d = self.discount
        return (max(self.cont2[(v, w)] - d, 0.0) + d * self.follow1[v] * self._unigram(w)) / total

    def prob(self, u: str, v: str, w: str) -> float:
        """P(w | u v)."""
        total = self.context2[(u, v)]
        if total == 0:
            return self._bigram(v, w)
        d = self.discount
        seen = max(self.trigrams[(u, v, w)] - d, 0.0)
        return (seen + d * self.follow2[(u, v)] * self._bigram(v, w)) / total

    def score(self, text: str) -> float:
        """The caption's log-probability (with the end-of-sentence token)."""
        tokens = [BOS, BOS, *tokenize(text), EOS]
        return sum(math.log(self.prob(*tokens[i - 2 : i + 1])) for i in range(2, len(tokens)))


def ngrams(text: str, max_n: int) -> list[str]:
    """Every 1..``max_n``-gram of the padded caption, as strings."""
    tokens = [BOS, *tokenize(text), EOS]
    return [
        " ".join(tokens[i : i + n]) for n in range(1, max_n + 1) for i in range(len(tokens) - n + 1)
    ]


class PairClassifier:
    """Logistic regression over the n-grams (1..``max_n``) of a caption, fitted on
    ``(true, false)`` caption pairs so that ``score(true) > score(false)``: the text-only
    classifier of SugarCrepe's check. Full-batch Adam with L2 ``weight_decay``; seeded."""

    def __init__(
        self, max_n: int = 4, steps: int = 300, lr: float = 0.1, weight_decay: float = 1e-4,
        grams: Callable[[str], Sequence[str]] | None = None,
    ) -> None:  # fmt: skip
        """``grams``: a caption's n-grams as :func:`ngrams` gives them (e.g. remembered for
        captions scored by several classifiers); default :func:`ngrams` itself."""
        if max_n < 1 or steps < 1 or lr <= 0 or weight_decay < 0:
            raise ValueError("need max_n >= 1, steps >= 1, lr > 0 and weight_decay >= 0")
        self.max_n, self.steps, self.lr, self.weight_decay = max_n, steps, lr, weight_decay
        self.grams = grams or (lambda text: ngrams(text, max_n))
        self.index: dict[str, int] = {}
        self.weights = torch.zeros(0)

    def _rows(self, pairs: Sequence[tuple[str, str]]) -> torch.Tensor:
        """Each pair as the n-gram count difference (true minus false), a sparse CSR
        matrix ``[pairs, n-grams]``."""
        crow, cols, values = [0], [], []
        for true, false in pairs:
            diff: defaultdict[int, float] = defaultdict(float)
            for gram in self.grams(true):
                diff[self.index.setdefault(gram, len(self.index))] += 1.0
            for gram in self.grams(false):
                diff[self.index.setdefault(gram, len(self.index))] -= 1.0
            for c, v in sorted(diff.items()):
                if v:
                    cols.append(c)
                    values.append(v)
            crow.append(len(cols))
        with warnings.catch_warnings():  # "sparse CSR support is in beta"
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(
                torch.tensor(crow),
                torch.tensor(cols, dtype=torch.long),
                torch.tensor(values, dtype=torch.float32),
                (len(pairs), len(self.index)),
                check_invariants=True,
            )

    def fit(self, pairs: Sequence[tuple[str, str]], seed: int = 0) -> PairClassifier:
        """Fit on ``(true caption, false caption)`` pairs: minimise the mean of
        ``softplus(-(score(true) - score(false)))`` plus the L2 term."""
        if not pairs:
            raise ValueError("no training pairs for the text-only classifier")
        x = self._rows(pairs)
        xt = x.to_sparse_coo().t().to_sparse_csr()
        generator = torch.Generator().manual_seed(seed)
        w = 0.01 * torch.randn(len(self.index), 1, generator=generator)
        optimizer = torch.optim.Adam([w], lr=self.lr)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one summation order: the same weights on any machine
        try:
            for _ in range(self.steps):  # the gradient by hand: two sparse products a step
                margin = x @ w
                w.grad = xt @ (-torch.sigmoid(-margin) / len(pairs)) + 2 * self.weight_decay * w
                optimizer.step()
        finally:
            torch.set_num_threads(threads)
        self.weights = w[:, 0].clone()
        return self

    def score(self, text: str) -> float:
        """Sum of the weights of the caption's n-grams (unseen n-grams weigh 0)."""
        ids = [self.index[g] for g in self.grams(text) if g in self.index]
        return float(self.weights[ids].sum()) if ids else 0.0


def text_only_wins(score: Callable[[str], float], pairs: Sequence[tuple[str, str]]) -> list[bool]:
    """Per ``(true, false)`` pair: does the true caption score strictly above?"""
    return [score(true) > score(false) for true, false in pairs]


def text_only_accuracy(
    score: Callable[[str], float],
    pairs: Sequence[tuple[str, str]],
    groups: Sequence[str] | None = None,
) -> dict[str, float]:
    """Share of pairs won, ``overall`` and per group label (e.g. pair type or subset)."""
    if not pairs:
        raise ValueError("no pairs to score")
    wins = text_only_wins(score, pairs)
    result = {"overall": sum(wins) / len(wins)}
    if groups is not None:
        if len(groups) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs but {len(groups)} group labels")
        by_group: dict[str, list[bool]] = {}
        for group, win in zip(groups, wins):
            by_group.setdefault(group, []).append(win)
        result.update({g: sum(v) / len(v) for g, v in by_group.items()})
    return result


def held_out_pair_accuracy(
    pairs: Sequence[tuple[str, str]],
    keys: Sequence[object],
    splits: int = 3,
    seed: int = 0,
    max_n: int = 4,
) -> list[float]:
    """The trained text-only check of generated negatives: for each of ``splits`` seeded
    halvings of the distinct ``keys`` (one per pair, e.g. its caption id, so that no caption
    is on both sides), a :class:`PairClassifier` fitted on the ``(true, false)`` pairs of one
    half scores those of the other; the share it wins, per split (50 %: no text shortcut)."""
    if len(pairs) != len(keys):
        raise ValueError(f"{len(pairs)} pairs but {len(keys)} keys")
    distinct = sorted(set(keys), key=str)
    if len(distinct) < 2:
        raise ValueError("need pairs of at least two keys to hold half out")
    known: dict[str, list[str]] = {}  # each caption's n-grams, made once for every split

    def grams(text: str) -> list[str]:
        if text not in known:
            known[text] = ngrams(text, max_n)
        return known[text]

    accuracies = []
    for split in range(splits):
        order = list(distinct)
        random.Random(seed + split).shuffle(order)
        train_keys = set(order[: len(order) // 2])
        train = [p for p, k in zip(pairs, keys) if k in train_keys]
        test = [p for p, k in zip(pairs, keys) if k not in train_keys]
        model = PairClassifier(max_n=max_n, grams=grams).fit(train, seed=seed + split)
        wins = text_only_wins(model.score, test)
        accuracies.append(sum(wins) / len(wins))
    return accuracies


def training_captions(path: str | Path) -> list[str]:
    """Captions to fit a text-only model on: a Karpathy JSON's ``train`` and ``restval``
    images, a ``tags generate``-style JSONL's captions, or any other file's non-empty lines
    (one caption per line, e.g. SCAN ``train_caps.txt``)."""
    from tags.core.io import detect_format
    from tags.data.captions import load_image_groups

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such caption file")
    fmt = detect_format(path)
    if fmt in ("karpathy", "jsonl"):
        split = "train,restval" if fmt == "karpathy" else None
        groups = load_image_groups(path, fmt, split=split)
        return [c.text for g in groups for c in g.captions]
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file of captions ({err.reason})") from None
    captions = [line for line in lines if line]
    if not captions:
        raise ValueError(f"{path}: no captions")
    return captions


__all__ = [
    "NgramLM",
    "PairClassifier",
    "held_out_pair_accuracy",
    "ngrams",
    "text_only_accuracy",
    "text_only_wins",
    "tokenize",
    "training_captions",
]
