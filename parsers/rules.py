"""The extraction rules: a parsed caption (spaCy ``Doc``) -> :class:`SceneGraph`.

They follow the FACTUAL annotation conventions: objects are nouns with their compound
modifiers; attributes are adjectival modifiers, copula complements, materials and counts;
relations are prepositions ("on", multi-word "on top of"), verbs with their particle or
preposition ("sit in"), passives turned active when they name an agent ("ground covered in
snow" -> snow, cover, ground), possessives and "X of Y" as "have", and "with"/"in" +
clothing as "wear". Lexical conventions come from :class:`LearnedLexicon`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from parsers.graph import Attribute, CharSpan, Entity, Relation, SceneGraph
from parsers.lexicon import (
    AGENTIVE_PASSIVES,
    ANIMATE,
    ATTRIBUTE_NORMAL,
    ATTRIBUTE_NOUNS,
    BASIC_COLOURS,
    CLOTHING,
    COLLECTIVES,
    COLOUR_DEGREES,
    DENOMINAL_ADJECTIVES,
    NOUN_NORMAL,
    NOUN_NORMAL_PLURAL,
    NUMBER_WORDS,
    POSSESSIVE_PRONOUNS,
    PREP_NORMAL,
    PREP_PREFIXES,
    PRONOUN_NAMES,
    QUANTIFIERS,
    RELATIONAL_NOUNS,
    VERB_PREP_NORMAL,
    LearnedLexicon,
)
from parsers.nlp import TAG_TO_POS, Lemmatizer
from parsers.tokens import LiteToken, snapshot

if TYPE_CHECKING:
    from spacy.tokens import Doc

Token = LiteToken  # the rules read parse snapshots (see parsers/tokens.py)

NOUN_TAGS = {"NN", "NNS", "NNP", "NNPS"}
SUBJECT_DEPS = {"nsubj", "nsubjpass", "csubj"}
NOUN_MODIFIER_DEPS = {"compound", "nmod", "amod"}
OBJECT_DEPS = {"dobj", "obj", "attr", "oprd"}
CLAUSE_DEPS = {"acl", "relcl"}
#: Dependents an -ing verb may have and still be a bare act of its subject (an attribute).
BARE_VERB_DEPS = frozenset({"nsubj", "aux", "punct", "cc", "conj", "mark"})
INHERIT_SUBJECT_DEPS = {"conj", "advcl", "xcomp", "ccomp", "pcomp"}
RELATIVE_PRONOUNS = {"who", "that", "which", "whom"}

LOCATING_PREPOSITIONS = {"on", "in", "under", "inside", "behind", "above", "over", "at", "near"}
STRANDED_PREPOSITIONS = {
    "on",
    "in",
    "under",
    "behind",
    "near",
    "above",
    "over",
    "at",
    "inside",
    "by",
}


def _number(token: Token) -> int | None:
    text = token.lower_.replace(",", "")
    if text.isdigit():
        return int(text)
    return NUMBER_WORDS.get(text)


@dataclass
class _Builder:
    """Accumulates one caption's graph while the rules walk its parse."""

    doc: Doc
    lemma: Lemmatizer
    lexicon: LearnedLexicon
    text: str
    graph: SceneGraph = field(init=False)
    entity_of: dict[int, int] = field(default_factory=dict)
    _relations: set[tuple[int, str, int]] = field(default_factory=set)
    _attributes: set[tuple[int, str]] = field(default_factory=set)
    attribute_tokens: set[int] = field(default_factory=set)  # tokens inside attributes

    def __post_init__(self) -> None:
        self.graph = SceneGraph(caption=self.text)

    # ----------------------------------------------------------------- helpers
    def lem(self, token: Token) -> str:
        return self.lemma.lemma(token.text, TAG_TO_POS.get(token.tag_, "X"))

    def add_entity(self, head: Token, words: list[Token], name: str | None = None) -> int:
        first = min([head, *words], key=lambda t: t.i)
        phrase = [t for t in head.subtree if t.dep_ in {"det", "amod", "compound", "nummod"}]
        phrase_first = min([first, *phrase], key=lambda t: t.i)
        text = self.graph.caption[first.idx : head.idx + len(head.text)]
        if name is None:
            glue = " "
            if (
                len(words) == 1
                and self.lexicon.compound(self.lem(words[0]), self.lem(head)) == "join"
            ):
                glue = ""  # "cell phone" -> cellphone
            head_name = self.lem(head)
            if not words and head_name not in NOUN_NORMAL:
                head_name = self.lexicon.spelling(head_name, self.lemma.nouns)
            name = glue.join([*(w.lower_ for w in words), head_name])
            if head.tag_ in {"NNS", "NNPS"} and name in NOUN_NORMAL_PLURAL:
                name = NOUN_NORMAL_PLURAL[name]
            name = NOUN_NORMAL.get(name, name)
        idx = len(self.graph.entities)
        self.graph.entities.append(
            Entity(
                name=name,
                text=text,
                head_span=(first.idx, head.idx + len(head.text)),
                span=(phrase_first.idx, head.idx + len(head.text)),
            )
        )
        self.entity_of[head.i] = idx
        return idx

    def set_quantity(self, entity: int, value: int, token: Token) -> None:
        e = self.graph.entities[entity]
        if e.quantity is None:
            self.graph.entities[entity] = Entity(
                e.name, e.text, e.head_span, e.span, value, (token.idx, token.idx + len(token))
            )

    def add_attribute(self, entity: int, tokens: Sequence[Token]) -> None:
        tokens = sorted(tokens, key=lambda t: t.i)
        start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1].text)
        text = self.graph.caption[start:end]
        value = " ".join(text.lower().split())
        value = ATTRIBUTE_NORMAL.get(value, value)
        words = value.split()
        if len(words) == 2 and words[1] in {"colored", "coloured"} and words[0] in BASIC_COLOURS:
            value = words[0]  # "white colored tub" -> tub is white ("salmon colored" stays)
        if (entity, value) in self._attributes:
            return
        self._attributes.add((entity, value))
        self.attribute_tokens.update(t.i for t in tokens)
        self.graph.attributes.append(Attribute(entity, value, text, (start, end)))

    def add_relation(self, subj: int, words: Sequence[Token], obj: int, predicate: str) -> None:
        if (subj, predicate, obj) in self._relations or (subj == obj and not predicate):
            return
        self._relations.add((subj, predicate, obj))
        self.graph.relations.append(Relation(subj, predicate, obj, _runs(words)))


def _runs(words: Sequence[Token]) -> tuple[CharSpan, ...]:
    """Character spans of runs of adjacent tokens."""
    spans: list[list[int]] = []
    last = None
    for t in sorted(set(words), key=lambda t: t.i):
        if last is not None and t.i == last + 1:
            spans[-1][1] = t.idx + len(t.text)
        else:
            spans.append([t.idx, t.idx + len(t.text)])
        last = t.i
    return tuple((s, e) for s, e in spans)


class _Rules:
    """The extraction rules for one parsed caption."""

    def __init__(self, doc: Doc, lemma: Lemmatizer, lexicon: LearnedLexicon, text: str):
        self.doc = doc
        self.tokens = snapshot(doc)  # plain-Python tokens: the rules read them many times
        self.has_reciprocal = any(t.lower_ in {"other", "another"} for t in self.tokens)
        self.extra_conj: dict[int, list[Token]] = {}  # clothing conjuncts moved to their list
        self.detached: set[int] = set()
        self._reattach_clothing()
        self.lexicon = lexicon
        self.b = _Builder(doc, lemma, lexicon, text)
        self.redirect: dict[int, int] = {}  # collective token -> member noun token
        self._reciprocal: dict[int, list[int]] = {}  # "each other" token -> its subjects

    def kids(self, t: Token) -> list[Token]:
        """``t``'s children, in sentence order."""
        return t.children

    # ------------------------------------------------------------- entities
    def is_noun(self, t: Token) -> bool:
        return t.tag_ in NOUN_TAGS

    def resolve(self, t: Token | None) -> int | None:
        """Entity index of token ``t`` (following collectives), if it names one."""
        seen = 0
        while t is not None and t.i in self.redirect and seen < 8:
            t = self.tokens[self.redirect[t.i]]
            seen += 1
        if t is None:
            return None
        return self.b.entity_of.get(t.i)

    def _reattach_clothing(self) -> None:
        """ "man in black shirt and shorts", "man wearing a hat and a shirt": the parser
        often hangs the last garment on the man; move it to the list of garments."""
        if not any(t.lower_ in CLOTHING for t in self.tokens):
            return
        for t in self.tokens:
            if not self.is_noun(t):
                continue
            garments = [
                o
                for x in self.kids(t)
                if x.dep_ in {"prep", "acl"}
                for o in self.kids(x)
                if o.dep_ in {"pobj", "dobj"} and o.lower_ in CLOTHING
            ]
            for c in self.kids(t):
                if c.dep_ in {"conj", "appos"} and c.lower_ in CLOTHING:
                    before = [o for o in garments if o.i < c.i]
                    if before:
                        self.extra_conj.setdefault(before[-1].i, []).append(c)
                        self.detached.add(c.i)

    def with_conjuncts(self, t: Token) -> list[Token]:
        out = [t]
        stack = [t]
        while stack:
            cur = stack.pop()
            for c in [*self.kids(cur), *self.extra_conj.get(cur.i, ())]:
                if c.i in self.detached and c not in self.extra_conj.get(cur.i, ()):
                    continue
                if c.dep_ in {"conj", "appos"} and (self.is_noun(c) or c.i in self.b.entity_of):
                    if c.dep_ == "appos" and c.i not in self.detached:
                        continue
                    out.append(c)
                    stack.append(c)
        return out

    def entities_of(self, t: Token | None) -> list[int]:
        if t is None:
            return []
        if t.lower_ in {"other", "another"} and t.dep_ == "pobj":
            # "next to each other" / "one another": the subject itself
            return self._reciprocal.get(t.i, [])
        out = []
        for c in self.with_conjuncts(t):
            e = self.resolve(c)
            if e is not None and e not in out:
                out.append(e)
        return out

    def collect_entities(self) -> None:
        for t in self.tokens:
            if (
                t.dep_ in NOUN_MODIFIER_DEPS
                and self.is_noun(t.head)
                and t.head.i > t.i
                and not (self.is_noun(t) and self.compound_kind(t) in {"have", "split"})
            ):
                continue  # a modifier: merged into the head's name or an attribute
            if (
                t.tag_ == "PRP"
                and t.lower_ in PRONOUN_NAMES
                and not (
                    t.lower_ == "them" and t.dep_ == "pobj"  # "liquid in them": things
                )
            ):
                self.b.add_entity(t, [], name=PRONOUN_NAMES[t.lower_])
                continue
            if not self.is_noun(t) or self.verb_after_to(t):
                continue
            lower = t.lower_
            of = next((c for c in self.kids(t) if c.dep_ == "prep" and c.lower_ == "of"), None)
            member = None
            if of is not None:
                member = next((c for c in self.kids(of) if c.dep_ == "pobj"), None)
            if lower in COLLECTIVES and member is not None and self.is_noun(member):
                self.redirect[t.i] = member.i
                continue
            if (
                lower in RELATIONAL_NOUNS
                and t.dep_ == "pobj"
                and t.head.dep_ == "prep"
                and member is not None
            ):
                continue  # "on top of X": part of a multi-word preposition
            words = self.compound_words(t)
            self.b.add_entity(t, words)

    def verb_after_to(self, t: Token) -> bool:
        """Whether noun-tagged ``t`` is a verb after "to" that takes its own object ("allows
        a girl to *pet* a small animal": the tagger reads "to" as a preposition); "to school",
        "next to a dog" are nouns."""
        doc = t.doc
        return (
            0 < t.i < len(doc) - 1
            and doc[t.i - 1].lower_ == "to"
            and doc[t.i + 1].tag_ in {"DT", "PRP$"}
        )

    def adjective_kind(self, a: Token) -> str:
        return self.lexicon.adjective(a.lower_, self.b.lem(a.head))

    def compound_kind(self, c: Token) -> str:
        """What FACTUAL makes of compound modifier ``c`` of its head (see LearnedLexicon)."""
        return self.lexicon.compound(self.b.lem(c), self.b.lem(c.head))

    def compound_words(self, head: Token) -> list[Token]:
        """Modifiers merged into the object's name ("tree trunk", "right leg")."""
        words: list[Token] = []
        for c in head.lefts:
            if c.dep_ == "amod" and not self.is_noun(c) and self.adjective_kind(c) == "merge":
                words.append(c)
            elif (
                c.dep_ in {"compound", "nmod", "amod"}
                and self.is_noun(c)
                and self.compound_kind(c) in {"merge", "join"}
            ):
                words.append(c)
                words.extend(self.compound_words(c))  # "tennis ball" in "tennis ball can"
        return sorted(words, key=lambda t: t.i)

    # ----------------------------------------------------------- attributes
    def collect_attributes(self) -> None:
        for t in self.tokens:
            e = self.b.entity_of.get(t.i)
            if e is None:
                continue
            merged = self.compound_words(t)
            merged_ids = {w.i for w in merged}
            for w in [t, *merged]:
                for c in self.kids(w):
                    if c.i not in merged_ids:
                        self.modifier(e, c)
        for collective, member in self.redirect.items():
            e = self.resolve(self.tokens[member])
            tok = self.tokens[collective]
            if e is None:
                continue
            attr = COLLECTIVES.get(tok.lower_)
            if attr:
                self.b.add_attribute(e, [tok, *[c for c in self.kids(tok) if c.lower_ == "of"]])
                self.b._attributes.discard((e, " ".join(attr.split())))
                self.b.graph.attributes[-1] = Attribute(
                    e, attr, self.b.graph.attributes[-1].text, self.b.graph.attributes[-1].span
                )
                self.b._attributes.add((e, attr))
            num = next((c for c in self.kids(tok) if c.dep_ == "nummod"), None)
            for c in self.kids(tok):
                if c.dep_ == "amod":
                    self.modifier(e, c)
            if num is not None and _number(num):
                self.b.set_quantity(e, _number(num) or 0, num)

    def modifier(self, e: int, c: Token) -> None:
        dep = c.dep_
        if dep in {"amod", "nmod", "compound", "npadvmod"} and c.lower_ in DENOMINAL_ADJECTIVES:
            self.denominal(e, c)
            return
        if _denominal_before(c):
            return  # "short" in "short sleeved": describes the sleeve
        if dep in {"amod", "compound", "nmod", "npadvmod"} and _degree_of(c) is not None:
            return  # "light" in "light brown", "salmon" in "salmon colored": the next one's
        if dep == "nummod" or (dep in {"det", "quantmod"} and _number(c) is not None):
            value = _number(c)
            if value is not None:
                self.b.set_quantity(e, value, c)
            return
        if dep in {"compound", "nmod", "amod"} and self.is_noun(c) and c.head.i > c.i:
            kind = self.compound_kind(c)
            if kind == "attr":
                self.attribute_tokens(e, c)
            elif kind == "have" and (owner := self.b.entity_of.get(c.i)) is not None:
                self.b.add_relation(owner, [], e, "have")
            if kind in {"attr", "drop"}:  # an adjective the tagger hung on the modifier
                for a in self.kids(c):  # describes the head ("a white utility truck")
                    if a.dep_ == "amod" and a.i < c.i:
                        self.modifier(e, a)
            return
        if dep == "compound" and c.lower_ in ATTRIBUTE_NOUNS:
            self.attribute_tokens(e, c)
            return
        if dep == "amod" or (dep in {"nmod", "npadvmod"} and c.tag_ in {"JJ", "VBN", "VBG"}):
            if c.lower_ in QUANTIFIERS:
                return
            if dep == "amod" and _degree_before(c) is None and self.adjective_kind(c) != "attr":
                return
            if c.tag_ in {"VBG", "VBN"} and any(
                x.dep_ in {"prep", "dobj", "agent"} for x in self.kids(c)
            ):
                return  # a reduced clause, handled as a relation
            self.attribute_tokens(e, c)

    def denominal(self, e: int, c: Token) -> None:
        """A part named by an adjective: "short sleeved shirt" -> shirt have sleeve, sleeve short."""
        part = self.b.add_entity(c, [], name=DENOMINAL_ADJECTIVES[c.lower_])
        self.b.add_relation(e, [], part, "have")
        mods = [m for m in self.kids(c) if m.dep_ in {"amod", "advmod", "npadvmod", "nummod"}]
        if c.i > 0:
            prev = self.tokens[c.i - 1]
            if prev.head == c.head and prev.dep_ in {"amod", "nummod", "compound", "nmod"}:
                mods.append(prev)
        for m in mods:
            value = _number(m)
            if value is not None:
                self.b.set_quantity(part, value, m)
            elif m.tag_ in {"JJ", "JJR", "NN", "VBN", "RB"}:
                self.attribute_tokens(part, m)

    def attribute_tokens(self, e: int, c: Token) -> None:
        """``c`` and its degree/hyphen modifiers as one attribute, plus its conjuncts."""
        if c.lower_ == "full":
            contents = [
                o
                for p in self.kids(c)
                if p.lower_ == "of"
                for o in self.kids(p)
                if o.dep_ == "pobj"
            ]
            if contents:  # "a plate full of fruits": FACTUAL writes plate, have, fruits
                for o in contents:
                    for y in self.entities_of(o):
                        self.b.add_relation(e, [c, *self.kids(c)], y, "have")
                return
        words = [c]
        degree = _degree_before(c)
        if degree is not None:
            words.append(degree)
        for m in self.kids(c):
            if m.dep_ in {"advmod", "npadvmod", "amod", "compound"} and (
                m.lower_ in COLOUR_DEGREES or _hyphenated(m, c)
            ):
                words.extend(m.subtree)
            elif m.dep_ in {"punct"} and m.text == "-":
                words.append(m)
        words = [w for w in words if w.dep_ not in {"cc", "conj"} or w == c]
        self.b.add_attribute(e, words)
        for m in self.kids(c):
            if m.dep_ == "conj" and m.tag_ in {"JJ", "NN", "VBN", "VBG"}:
                self.attribute_tokens(e, m)

    # ------------------------------------------------------------ relations
    def prep_phrase(self, prep: Token) -> tuple[list[Token], Token | None]:
        """Words of a (possibly multi-word) preposition and its object token."""
        words = [prep]
        cur = prep
        for _ in range(4):
            pobj = next((c for c in self.kids(cur) if c.dep_ in {"pobj", "pcomp"}), None)
            if pobj is not None and pobj.dep_ == "pcomp" and pobj.tag_ not in NOUN_TAGS:
                pobj = None
            inner = next((c for c in self.kids(cur) if c.dep_ == "prep"), None)
            if (
                pobj is None
                and inner is not None
                and (cur.lower_ in PREP_PREFIXES or cur.dep_ in {"advmod", "prep", "prt"})
            ):
                words.append(inner)
                cur = inner
                continue
            if (
                pobj is not None
                and pobj.lower_ in RELATIONAL_NOUNS
                and pobj.i not in (self.b.entity_of)
            ):
                of = next((c for c in self.kids(pobj) if c.dep_ == "prep"), None)
                if of is not None:
                    mods = [m for m in self.kids(pobj) if m.dep_ in {"amod", "det", "compound"}]
                    if not any(m.dep_ != "det" for m in mods):
                        mods = []
                    words.extend([*mods, pobj, of])
                    cur = of
                    continue
            return words, pobj
        return words, None

    def predicate(self, words: Iterable[Token]) -> str:
        """A preposition's words in order, in FACTUAL's spelling ("beneath" -> "under")."""
        text = " ".join(t.lower_ for t in sorted(set(words), key=lambda t: t.i))
        return PREP_NORMAL.get(text, text)

    def noun_preps(self) -> None:
        for t in self.tokens:
            subjects = self.subject_entities_for_noun(t)
            if not subjects:
                continue
            for c in self.kids(t):
                if c.dep_ == "poss" and c.lower_ in POSSESSIVE_PRONOUNS and t.dep_ == "pobj":
                    owner = self.pronoun_owner(t)
                    if owner is not None:
                        for o in subjects:
                            if o != owner:
                                self.b.add_relation(owner, [], o, "have")
                if c.dep_ == "poss" and self.resolve(c) is not None:
                    for s in self.entities_of(c):
                        for o in subjects:
                            self.b.add_relation(s, [], o, "have")
                if c.dep_ != "prep" and not (
                    c.dep_ == "advmod" and any(x.dep_ == "prep" for x in self.kids(c))
                ):
                    continue
                if t.i in self.redirect and c.lower_ == "of":
                    continue
                words, pobj = self.prep_phrase(c)
                if pobj is not None and c.lower_ == "with" and self.placed(pobj):
                    # "a wall with leaves on it" (leaves on wall), "a man with luggage under
                    # his arm" (luggage under arm): the located thing carries the relation
                    continue
                objects = self.entities_of(pobj)
                if pobj is not None and pobj.lower_ in {"it", "them"}:
                    objects = self.holder_of(t)
                if not objects:
                    continue
                pred = self.predicate(words)
                for s in subjects:
                    for o in objects:
                        self.noun_relation(s, words, o, pred, pobj)

    def placed(self, y: Token) -> bool:
        """``y`` carries a locating preposition: "(X with) Y on it / under his arm"."""
        return any(
            p.dep_ == "prep"
            and p.lower_ in LOCATING_PREPOSITIONS
            and any(o.dep_ == "pobj" for o in self.kids(p))
            for p in self.kids(y)
        )

    def placed_prep(self, v: Token, obj: Token) -> Token | None:
        """The preposition of "has Y on it" / "has Y in them", on the verb or on Y."""
        for p in [*self.kids(v), *self.kids(obj)]:
            if p.dep_ == "prep" and any(o.lower_ in {"it", "them"} for o in self.kids(p)):
                return p
        return None

    def holder_of(self, y: Token) -> list[int]:
        """X in "X with Y on it", the thing "it" refers to."""
        if y.dep_ == "pobj" and y.head.lower_ == "with" and self.is_noun(y.head.head):
            return self.entities_of(y.head.head)
        return []

    def pronoun_owner(self, t: Token) -> int | None:
        """Whom "his"/"her"/"its" in front of ``t`` refers to: the outermost entity before
        it on the path to the root (a clause's subject, or the noun the phrase hangs from)."""
        owner = None
        cur = t
        for _ in range(12):
            head = cur.head
            if head == cur:
                break
            if self.is_noun(head) and head.i in self.b.entity_of and head.i < t.i:
                owner = self.b.entity_of[head.i]
            elif head.tag_.startswith("VB"):
                subjects, _ = self.verb_subjects(head)
                if subjects:
                    owner = subjects[0]
            cur = head
        if owner is None or not is_animate(self.b.graph.entities[owner].name):
            return None  # "bracelets on his wrist": the bracelets own nothing
        return owner

    def subject_entities_for_noun(self, t: Token) -> list[int]:
        """The noun's entity, and its conjuncts' when the noun heads a coordination
        ("trees and bushes on street": the preposition belongs to both)."""
        e = self.resolve(t)
        if e is None:
            return []
        if t.dep_ == "conj":
            # "cereal and bowl on table": a preposition after the last conjunct of a bare
            # coordination belongs to all of them
            head = t.head
            while head.dep_ == "conj":
                head = head.head
            if self.is_noun(head) and t.i == max(c.i for c in self.with_conjuncts(head)):
                return self.entities_of(head)
            return [e]
        return self.entities_of(t)

    def noun_relation(self, s: int, words: list[Token], o: int, pred: str, pobj) -> None:
        learned = None
        if pobj is not None and len(words) == 1:
            subject = self.b.graph.entities[s].name
            learned = self.lexicon.preposition(pred, self.b.lem(pobj), subject)
        if learned is not None:
            label, reverse = learned
            if reverse:
                self.b.add_relation(o, words, s, label)
            else:
                self.b.add_relation(s, words, o, label)
            return
        if pred == "of":
            self.b.add_relation(o, words, s, "have")
            return
        if pred in {"with", "in"} and pobj is not None and pobj.lower_ in CLOTHING:
            self.b.add_relation(s, words, o, "wear")
            return
        self.b.add_relation(s, words, o, pred)

    def verb_subjects(self, v: Token) -> tuple[list[int], bool]:
        """Entities doing ``v`` and whether ``v`` is passive."""
        passive = any(c.dep_ in {"nsubjpass", "auxpass"} for c in self.kids(v))
        for c in self.kids(v):
            if c.dep_ in SUBJECT_DEPS or c.dep_ == "expl":
                if c.dep_ == "expl":
                    continue
                if c.lower_ in RELATIVE_PRONOUNS and v.dep_ == "relcl":
                    return self.entities_of(v.head), passive
                found = self.entities_of(c)
                if found:
                    return found, passive
        if v.dep_ in CLAUSE_DEPS:
            if v.tag_ == "VBN" and v.dep_ == "acl":
                passive = True
            head = v.head
            if (
                v.tag_ == "VBG"
                and head.dep_ == "pobj"
                and head.head.lower_ in {"with", "in"}
                and head.head.head != head.head
            ):
                # "girl with a hat riding a bike", "people sitting in bleachers watching
                # a game": the -ing clause belongs to whoever has the hat / sits there.
                holder = head.head.head
                if self.is_noun(holder):
                    return self.entities_of(holder), passive
                if holder.tag_.startswith("VB"):
                    return self.verb_subjects(holder)
            # conjuncts after the verb are its objects, not its subjects ("a man holding a
            # cup and a plate" is often parsed with "plate" conjoined to "man")
            before = [c for c in self.with_conjuncts(head) if c.i < v.i]
            return [e for c in before if (e := self.resolve(c)) is not None], passive
        if v.dep_ in INHERIT_SUBJECT_DEPS and v.head != v:
            subjects, head_passive = self.verb_subjects(v.head)
            if v.dep_ == "conj":
                passive = passive or (head_passive and v.tag_ == "VBN")
            return subjects, passive
        if v.dep_ == "amod":
            return self.entities_of(v.head), v.tag_ == "VBN"
        return [], passive

    def verbs(self) -> None:
        for v in self.tokens:
            if v.dep_ == "aux" and self.b.lem(v) == "have" and self.is_noun(v.head):
                # "the floor has carpet", parsed with "has" as an auxiliary of the noun
                for s in self.nsubj_entities(v.head) or self.nsubj_entities(v):
                    for o in self.entities_of(v.head):
                        self.b.add_relation(s, [v], o, "have")
                continue
            if not v.tag_.startswith("VB") or v.dep_ in {"aux", "auxpass"}:
                continue
            if v.i in self.b.entity_of:
                continue  # "sleeved" in "short sleeved shirt" already names a part
            subjects, passive = self.verb_subjects(v)
            if self.has_reciprocal:
                for c in v.subtree:
                    if c.lower_ in {"other", "another"} and c.dep_ == "pobj":
                        self._reciprocal[c.i] = subjects
            if self.b.lem(v) == "be":
                self.copula(v, subjects)
                continue
            if not subjects and not any(c.dep_ == "npadvmod" for c in v.lefts):
                continue
            self.verb_relations(v, subjects, passive)

    def copula(self, v: Token, subjects: list[int]) -> None:
        expl = any(c.dep_ == "expl" for c in self.kids(v))
        if expl:
            subjects = []
            for c in self.kids(v):
                if c.dep_ in {"attr", "nsubj"}:
                    subjects.extend(self.entities_of(c))
        if not subjects:
            return
        for c in self.kids(v):
            if (
                c.dep_ == "acomp"
                and c.lower_ in PREP_PREFIXES
                and any(x.dep_ == "prep" for x in self.kids(c))
            ):  # "the sink is next to the toilet"
                words, pobj = self.prep_phrase(c)
                for s in subjects:
                    for o in self.entities_of(pobj):
                        self.noun_relation(s, words, o, self.predicate(words), pobj)
            elif (
                v.dep_ == "relcl"
                and c.dep_ in {"advmod", "prt"}
                and c.lower_ in STRANDED_PREPOSITIONS
                and not any(True for _ in self.kids(c))
            ):  # "the desk the laptop is on", with "on" read as an adverb
                for s in subjects:
                    for o in self.entities_of(v.head):
                        self.b.add_relation(s, [c], o, c.lower_)
            elif c.dep_ in {"acomp"} or (c.dep_ == "advmod" and c.lower_ in {"inside", "outside"}):
                for s in subjects:
                    self.attribute_tokens(s, c)
            elif c.dep_ == "prep" or (
                c.dep_ == "advmod" and any(x.dep_ == "prep" for x in self.kids(c))
            ):
                words, pobj = self.prep_phrase(c)
                objects = self.entities_of(pobj)
                if pobj is None and v.dep_ == "relcl":
                    objects = self.entities_of(v.head)  # "the desk the laptop is on"
                for s in subjects:
                    for o in objects:
                        self.noun_relation(s, words, o, self.predicate(words), pobj)

    def verb_relations(self, v: Token, subjects: list[int], passive: bool) -> None:
        lemma = self.b.lem(v)
        agent = next((c for c in v.lefts if c.dep_ == "npadvmod" and self.is_noun(c)), None)
        if agent is not None and v.tag_ in {"VBN", "VBD"}:
            # "snow covered hillside", "oil covered road": the noun before the participle
            # does it to the noun it describes (or to its object)
            targets = self.entities_of(v.head) if v.dep_ == "amod" else []
            targets += [
                e for c in self.kids(v) if c.dep_ in OBJECT_DEPS for e in self.entities_of(c)
            ]
            for s in self.entities_of(agent):
                for o in targets:
                    self.b.add_relation(s, [v], o, lemma)
            if targets:
                return
        particles = [c for c in self.kids(v) if c.dep_ == "prt"]
        found = False
        late = []
        if v.dep_ == "acl":
            late = [c for c in self.with_conjuncts(v.head) if c.i > v.i]
        for c in self.kids(v):
            if c.dep_ in OBJECT_DEPS:
                if c.lower_ in RELATIVE_PRONOUNS and v.dep_ == "relcl":
                    continue  # the gapped object: handled below
                objects = self.entities_of(c) + [
                    e for x in late if (e := self.resolve(x)) is not None
                ]
                placed = self.placed_prep(v, c) if lemma == "have" else None
                for s in subjects:
                    for o in objects:
                        if placed is not None:  # "the plate has fruit on it": fruit on plate
                            self.b.add_relation(o, [placed], s, placed.lower_)
                        else:
                            self.b.add_relation(
                                s, [v, *particles], o, verb_predicate(lemma, particles)
                            )
                        found = True
            elif c.dep_ in {"prep", "agent"} or (
                c.dep_ in {"prt", "advmod"}
                and any(x.dep_ in {"prep", "pobj"} for x in self.kids(c))
            ):
                words, pobj = self.prep_phrase(c)
                if pobj is None and c.dep_ != "prt":
                    continue
                objects = self.entities_of(pobj)
                if v.dep_ == "relcl" and pobj is not None and pobj.lower_ in RELATIVE_PRONOUNS:
                    objects = self.entities_of(v.head)  # "the blanket that the cat sits on"
                prep_text = self.predicate(words)
                if c.dep_ == "agent" or (passive and prep_text in AGENTIVE_PASSIVES.get(lemma, ())):
                    for s in subjects:
                        for o in objects:
                            self.b.add_relation(o, [v, *words], s, lemma)
                            found = True
                    continue
                pred = VERB_PREP_NORMAL.get(f"{lemma} {prep_text}", f"{lemma} {prep_text}")
                spans = [v, *words]
                dobjs = [x for x in self.kids(v) if x.dep_ in OBJECT_DEPS and x.i < c.i]
                if dobjs and prep_text in {"in", "on"}:
                    # "woman holding papers in hand": the preposition places the object
                    for s in self.entities_of(dobjs[0]):
                        for o in objects:
                            self.b.add_relation(s, words, o, prep_text)
                    found = True
                    continue
                for s in subjects:
                    for o in objects:
                        self.b.add_relation(s, spans, o, pred)
                        found = True
        # small clause: "the elephant has its mouth open"
        if lemma == "have" and not found:
            for c in self.kids(v):
                if c.dep_ != "ccomp":
                    continue
                for o in self.nsubj_entities(c):
                    for s in subjects:
                        self.b.add_relation(s, [v], o, "have")
                        found = True
                    if c.tag_ in {"JJ", "VBN"}:
                        self.attribute_tokens(o, c)
        # stranded preposition in a relative clause: "the sofa the man is sitting on"
        if v.dep_ == "relcl":
            for c in self.kids(v):
                stranded = c.dep_ == "prep" or (
                    c.dep_ == "prt" and c.lower_ in STRANDED_PREPOSITIONS
                )  # "the blanket that the cat is sitting on", "on" read as a particle
                if stranded and not any(x.dep_ == "pobj" for x in self.kids(c)):
                    for s in self.nsubj_entities(v):
                        for o in self.entities_of(v.head):
                            self.b.add_relation(s, [v, c], o, f"{lemma} {c.lower_}")
                            found = True
        # object gapped in a relative clause: "the dress the girl is wearing"
        if (
            v.dep_ == "relcl"
            and not found
            and not any(
                (c.dep_ in OBJECT_DEPS and c.lower_ not in RELATIVE_PRONOUNS)
                or c.dep_ in {"prep", "prt"}
                for c in self.kids(v)
            )
        ):
            subj = self.nsubj_entities(v)
            if subj and not any(
                c.dep_ in SUBJECT_DEPS and c.lower_ in RELATIVE_PRONOUNS for c in self.kids(v)
            ):
                for s in subj:
                    for o in self.entities_of(v.head):
                        self.b.add_relation(s, [v], o, lemma)
                        found = True
        if (
            not found
            and v.tag_ in {"VBG", "VBN"}
            and v.i not in self.b.attribute_tokens  # "white colored": already one attribute
            and (passive or v.dep_ in CLAUSE_DEPS | {"amod"} or self.bare_progressive(v))
            and not any(c.dep_ in OBJECT_DEPS | {"prep", "agent"} for c in self.kids(v))
        ):
            for s in subjects:
                self.b.add_attribute(s, [v, *particles])

    def bare_progressive(self, v: Token) -> bool:
        """Whether ``v`` is an -ing verb said of its subject with nothing after it ("the boy
        is skating", "a woman sitting and smiling"): FACTUAL writes it as an attribute
        (``boy, is, skating``). A verb with a complement, an adverb or a particle is not
        ("leaning backward to kick", "holding on")."""
        return (
            v.tag_ == "VBG"
            and v.dep_ in {"ROOT", "conj"}
            and all(
                c.dep_ in BARE_VERB_DEPS
                # a clause of its own ("smiling while a woman sits"), not a purpose ("jumping
                # to make a shot": the act is for the shot)
                or (c.dep_ == "advcl" and any(m.dep_ == "mark" for m in c.children))
                for c in self.kids(v)
            )
        )

    def nsubj_entities(self, v: Token) -> list[int]:
        for c in self.kids(v):
            if c.dep_ in SUBJECT_DEPS:
                return self.entities_of(c)
        return []

    def run(self) -> SceneGraph:
        self.collect_entities()
        self.collect_attributes()
        self.noun_preps()
        self.verbs()
        graph = self.b.graph
        graph.tokens = [(t.idx, t.idx + len(t.text), t.tag_) for t in self.tokens]
        return graph


def is_animate(name: str) -> bool:
    """A person or an animal, who can own body parts and clothes ("his hand")."""
    head = name.split()[-1] if name else ""
    return head in ANIMATE or (head.endswith(("er", "or")) and head not in {"water", "paper"})


def verb_predicate(lemma: str, particles: Sequence[Token]) -> str:
    """A verb with its particles, in FACTUAL's spelling ("hold up" -> hold)."""
    text = " ".join([lemma, *(p.lower_ for p in particles)])
    return VERB_PREP_NORMAL.get(text, text)


def _denominal_before(t: Token) -> bool:
    """``t`` describes the part named by the next word ("short" in "short sleeved")."""
    if t.i + 1 >= len(t.doc):
        return False
    nxt = t.doc[t.i + 1]
    return nxt.lower_ in DENOMINAL_ADJECTIVES and nxt.head == t.head


def _degree_of(t: Token) -> Token | None:
    """The adjective right after degree word ``t`` that it belongs to ("light brown",
    "salmon colored"), when both modify the same noun or ``t`` modifies it."""
    if t.i + 1 >= len(t.doc):
        return None
    nxt = t.doc[t.i + 1]
    if t.lower_ not in COLOUR_DEGREES and nxt.lower_ not in {"colored", "coloured"}:
        return None
    if (
        (nxt.head == t.head or t.head == nxt)
        and nxt.dep_ in {"amod", "compound", "nmod"}
        and nxt.tag_ in {"JJ", "NN", "VBN"}
    ):
        return nxt
    return None


def _degree_before(t: Token) -> Token | None:
    if t.i == 0:
        return None
    prev = t.doc[t.i - 1]
    return prev if _degree_of(prev) == t else None


def _hyphenated(m: Token, c: Token) -> bool:
    lo, hi = (m, c) if m.i < c.i else (c, m)
    between = m.doc[lo.i + 1 : hi.i]
    return len(between) == 1 and between[0].text == "-"


def extract_graph(
    doc: Doc, lemmatizer: Lemmatizer, lexicon: LearnedLexicon, text: str | None = None
) -> SceneGraph:
    """Apply the rules to a tagged, parsed and repaired ``Doc`` (``text``: its text, when
    the caller has it; ``Doc.text`` is rebuilt from the tokens on every access)."""
    return _Rules(doc, lemmatizer, lexicon, doc.text if text is None else text).run()
