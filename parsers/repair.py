"""Repairs applied to a spaCy parse before the rules: tagger slips and split words.

Region captions are mostly bare noun phrases ("helmet on player 's head"), which the
English models, trained on full sentences, often tag as verbs or adjectives. The repairs
only relabel tags (and a few dependency labels) or merge tokens; offsets stay valid.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from parsers.lexicon import LearnedLexicon
from parsers.nlp import Lemmatizer
from parsers.rules import NOUN_TAGS

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token


#: Forms of "be": never nouns ("There is a ..." is sometimes tagged "There/EX is/NNS").
_COPULAS = {"is": "VBZ", "are": "VBP", "was": "VBD", "were": "VBD", "am": "VBP", "be": "VB"}
_NOT_NOUNS = {"inside", "outside", "here", "there", "up", "down", "out", "other", "another"}
_VERB_LIKE_DEPS = {"nsubj", "nsubjpass", "csubj", "aux", "auxpass", "dobj", "neg", "acomp"}


def _common_word(token: Token, lexicon: LearnedLexicon) -> None:
    """A lower-case word tagged a proper noun ("in orange/NNP vest", "a green jersey/NNP",
    "a white teddy/NNP bear"): the tagger reads capital-free captions poorly. A word FACTUAL
    writes as an adjective before a noun becomes one (JJ) when a noun follows; a word it
    writes as an object or merges into a compound becomes a common noun; any other stays a
    name ("the virgin mary", "pepsi")."""
    word, following = token.lower_, token.nbor() if token.i + 1 < len(token.doc) else None
    as_modifier = lexicon.amod_mod.get(word) or lexicon.mod.get(word)
    if (
        as_modifier
        and as_modifier[0] == "attr"
        and following is not None
        and following.tag_ in NOUN_TAGS
    ):
        token.tag_ = "JJ"
        return
    if word in lexicon.objects or (as_modifier and as_modifier[0] == "merge"):
        token.tag_ = "NNS" if token.tag_ == "NNPS" else "NN"


def repair_tags(doc: Doc, lexicon: LearnedLexicon | None = None) -> None:
    """Repair frequent tagging slips of region captions, which are mostly bare noun phrases: a head noun read as a verb or adjective
    ("pancakes on a plate", "helmet on player 's head", "jeep on beach", "drawing on door")
    and a noun after a preposition read as a gerund or adjective ("roof on building")."""
    for t in doc:
        if t.tag_ == "XX":  # unknown word, mostly nouns in captions
            t.tag_ = "NN"
        if t.tag_ in {"NNP", "NNPS"} and t.text.islower() and lexicon is not None:
            _common_word(t, lexicon)
        if (
            t.tag_ == "NNS"
            and t.dep_ == "ROOT"
            and any(c.dep_ == "compound" and c.tag_ == "NN" for c in t.children)
            and any(
                d.lower_ in {"a", "an"}
                for c in t.children
                for d in (c, *c.children)
                if c.dep_ in {"det", "compound"}
            )
        ):
            # "a dog runs": a singular determiner cannot take a plural head, so the
            # "plural noun" is a verb and the compound its subject
            t.tag_ = "VBZ"
            for c in t.children:
                if c.dep_ == "compound":
                    c.dep_ = "nsubj"
        if (
            t.tag_ == "NN"
            and t.lower_.endswith("ing")
            and not (lexicon is not None and t.lower_ in lexicon.objects)  # "brick building"
            and t.dep_ == "ROOT"
            and any(c.dep_ == "prep" or c.dep_ == "dobj" for c in t.children)
        ):
            # "a lady surfing in the ocean" read as the compound noun "lady surfing"
            subject = [c for c in t.children if c.dep_ == "compound" and c.tag_ in NOUN_TAGS]
            if subject:
                t.tag_ = "VBG"
                subject[-1].dep_ = "nsubj"
        tag = t.tag_
        head_like = t.dep_ == "ROOT" or t.i == 0
        if tag == "VBG":
            head_like = t.dep_ == "ROOT" and t.i == 0
        if tag in {"VB", "VBZ", "VBP", "VBG", "JJ"} and head_like:
            deps = {c.dep_ for c in t.children}
            if not deps & _VERB_LIKE_DEPS and (
                "prep" in deps or (t.dep_ == "ROOT" and t.i == len(doc) - 1)
            ):
                t.tag_ = "NNS" if tag == "VBZ" and t.lower_.endswith("s") else "NN"
            elif t.i == 0 and tag in {"VB", "VBZ", "VBP"} and not deps & _VERB_LIKE_DEPS:
                # "pan holding a pizza", "towel that the cat is lying on": a bare noun
                # followed by a clause about it
                clause = [c for c in t.children if c.dep_ in {"xcomp", "ccomp"} and c.tag_ == "VBG"]
                if clause:
                    t.tag_ = "NNS" if tag == "VBZ" and t.lower_.endswith("s") else "NN"
                    clause[0].dep_ = (
                        "relcl"
                        if any(c.dep_ in {"nsubj", "nsubjpass"} for c in clause[0].children)
                        else "acl"
                    )
        elif (
            tag in {"VBG", "VBN", "JJ"}
            and t.dep_ in {"pcomp", "pobj"}
            and t.lower_ not in _NOT_NOUNS
            and all(c.dep_ in {"prep", "det", "amod", "compound"} for c in t.children)
        ):
            t.tag_ = "NN"
        elif (
            tag in {"VB", "VBP"}
            and t.dep_ == "conj"
            and t.head.tag_ in NOUN_TAGS
            and not any(c.dep_ in _VERB_LIKE_DEPS for c in t.children)
        ):  # "knife and fork", "food and drink": a conjoined noun read as a verb
            t.tag_ = "NN"
        elif (
            tag in {"RB", "JJ", "VB", "VBZ", "VBP", "VBN"}
            and t.dep_ in {"nsubj", "nsubjpass", "dobj", "pobj"}
            and all(c.dep_ in {"det", "amod", "compound", "prep", "poss"} for c in t.children)
            and t.lower_ not in _NOT_NOUNS
        ):  # "skateboard has wheels": a subject or object is a noun
            t.tag_ = "NNS" if tag == "VBZ" and t.lower_.endswith("s") else "NN"
    for t in doc:  # forms of "be" are never nouns, whatever the rules above concluded
        if t.tag_ in NOUN_TAGS and t.lower_ in _COPULAS:
            t.tag_ = _COPULAS[t.lower_]


def merge_split_words(doc: Doc, lemmatizer: Lemmatizer, lexicon: LearnedLexicon) -> None:
    """Re-join words the tokenizer or tagger split: hyphenated words ("counter-top",
    "t-shirt") and known compound nouns ("fire hydrant") read as a noun and an
    adjective or verb, so each becomes one object as FACTUAL writes it."""
    toks = list(doc)
    n = len(toks)
    spans = []
    i = 0
    has_hyphen = any(t.text == "-" for t in toks)
    while has_hyphen and i < n:
        # a maximal run word-word(-word...) written without spaces: "black-and-white"
        j = i
        while (
            j + 2 < n
            and toks[j].is_alpha
            and toks[j + 1].text == "-"
            and toks[j + 2].is_alpha
            and not toks[j].whitespace_
            and not toks[j + 1].whitespace_
        ):
            j += 2
        if j > i:
            spans.append(doc[i : j + 1])
            i = j + 1
        else:
            i += 1
    lemma = lemmatizer.lemma
    for a, b in itertools.pairwise(toks):
        if not a.is_alpha:
            continue
        hit = lexicon.pair.get(f"{lemma(a.text, 'NOUN')} {lemma(b.text, 'NOUN')}")
        if hit and hit[0] == "merge" and hit[1] >= 2:
            if b.tag_ in NOUN_TAGS and a.head.i == b.i:
                continue  # already parsed as a compound
            spans.append(doc[a.i : b.i + 1])
    if not spans:
        return
    taken: set[int] = set()
    with doc.retokenize() as retok:
        for span in sorted(spans, key=lambda sp: sp.start):
            if taken & set(range(span.start, span.end)):
                continue
            taken.update(range(span.start, span.end))
            last = span[-1]
            if span[1].text == "-":  # hyphenated: keep the head word's reading
                retok.merge(span, attrs={"TAG": last.tag_})
            else:
                tag = "NNS" if last.tag_ in {"NNS", "VBZ"} else "NN"
                retok.merge(span, attrs={"TAG": tag, "POS": "NOUN"})
