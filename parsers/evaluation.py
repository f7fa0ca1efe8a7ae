"""SPICE-style tuple F1 of predicted scene graphs against gold FACTUAL graphs.

Each graph becomes a set of tuples: objects ``(o,)``, attribute pairs ``(o, a)`` (counts as
``(o, "2")``) and relation triples ``(s, r, o)``. Every word is lower-cased, lemmatized
(objects as nouns, attributes as adjectives, the first word of a predicate as a verb) and
number words are written as digits. Reported: mean per-caption F1 over all tuples, micro
P/R/F1 per tuple type and overall, and set match (share of captions whose tuple sets are
identical). Exact lemma matching, no synonyms: stricter than SPICE's WordNet matching.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from parsers.graph import SceneGraph
from parsers.lexicon import NUMBER_WORDS

Tuple = tuple[str, ...]
LemmaFn = Callable[[str, str], str]


def _canon(text: str, pos: str, lemma: LemmaFn, first_pos: str | None = None) -> str:
    words = text.lower().replace(" 's", "'s").split()
    out = []
    for i, w in enumerate(words):
        if w in NUMBER_WORDS and NUMBER_WORDS[w] > 0 and pos != "VERB":
            out.append(str(NUMBER_WORDS[w]))
            continue
        p = first_pos if (i == 0 and first_pos) else pos
        out.append(lemma(w, p))
    return " ".join(out)


def graph_tuples(graph: SceneGraph, lemma: LemmaFn) -> dict[str, set[Tuple]]:
    """The graph's canonical tuples, by type ``object``/``attribute``/``relation``."""
    names = [_canon(e.name, "NOUN", lemma) for e in graph.entities]
    objects = {(n,) for n in names}
    attributes = {(names[a.entity], _canon(a.value, "ADJ", lemma)) for a in graph.attributes}
    for n, e in zip(names, graph.entities):
        if e.quantity is not None and e.quantity > 1:
            attributes.add((n, str(e.quantity)))
    relations = {
        (names[r.subject], _canon(r.predicate, "ADP", lemma, first_pos="VERB"), names[r.object])
        for r in graph.relations
    }
    return {"object": objects, "attribute": attributes, "relation": relations}


@dataclass
class _Counts:
    tp: int = 0
    pred: int = 0
    gold: int = 0

    def add(self, pred: set, gold: set) -> None:
        self.tp += len(pred & gold)
        self.pred += len(pred)
        self.gold += len(gold)

    def prf(self) -> dict[str, float]:
        p = self.tp / self.pred if self.pred else 0.0
        r = self.tp / self.gold if self.gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": 100 * p, "recall": 100 * r, "f1": 100 * f}


@dataclass
class ParserScores:
    """Scores in percent."""

    n: int = 0
    mean_f1: float = 0.0
    set_match: float = 0.0
    micro: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"n": self.n, "mean_f1": self.mean_f1, "set_match": self.set_match, **self.micro}

    def format(self) -> str:
        lines = [
            f"captions       {self.n}",
            f"mean F1        {self.mean_f1:6.2f}",
            f"set match      {self.set_match:6.2f}",
        ]
        for kind, prf in self.micro.items():
            lines.append(
                f"{kind:<14} P {prf['precision']:6.2f}  R {prf['recall']:6.2f}  F1 {prf['f1']:6.2f}"
            )
        return "\n".join(lines)


def caption_f1(pred: set, gold: set) -> float:
    if not pred and not gold:
        return 1.0
    tp = len(pred & gold)
    if tp == 0:
        return 0.0
    p, r = tp / len(pred), tp / len(gold)
    return 2 * p * r / (p + r)


def score_graphs(
    predicted: Sequence[SceneGraph], gold: Sequence[SceneGraph], lemma: LemmaFn
) -> ParserScores:
    """Compare predicted graphs with gold graphs, caption by caption."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted graphs for {len(gold)} gold graphs")
    counts = {k: _Counts() for k in ("object", "attribute", "relation", "all")}
    f1_sum = match = 0.0
    for p_graph, g_graph in zip(predicted, gold):
        p_t, g_t = graph_tuples(p_graph, lemma), graph_tuples(g_graph, lemma)
        p_all, g_all = set(), set()
        for kind in ("object", "attribute", "relation"):
            counts[kind].add(p_t[kind], g_t[kind])
            p_all |= {(kind, *t) for t in p_t[kind]}
            g_all |= {(kind, *t) for t in g_t[kind]}
        counts["all"].add(p_all, g_all)
        f1_sum += caption_f1(p_all, g_all)
        match += p_all == g_all
    n = len(gold)
    return ParserScores(
        n=n,
        mean_f1=100 * f1_sum / n if n else 0.0,
        set_match=100 * match / n if n else 0.0,
        micro={k: c.prf() for k, c in counts.items()},
    )
