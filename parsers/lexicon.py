"""Closed word classes: the lists that steer the rule-based parser, and the ones the whole
project shares.

The shared classes (cardinal numbers, vague plural quantifiers, basic colours, materials) are
written here once; :mod:`tags.negatives.lexicon` builds its classes from them. The parser's
own lists follow FACTUAL conventions, tuned on its train split. A list names a noun's lemma
once; the plurals it also matches come from :func:`parsers.morphology.with_plurals`.

Imports: :mod:`parsers.morphology` only (and the standard library).
"""

from __future__ import annotations

from parsers.morphology import plural, with_plurals

#: Cardinal number words by value.
CARDINALS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
}  # fmt: skip

#: Words that give a count: the cardinals and the counting nouns and determiners.
NUMBER_WORDS = {**CARDINALS, "dozen": 12, "both": 2, "pair": 2, "couple": 2}

#: Quantifiers that say "more than one" without a number.
PLURAL_QUANTIFIERS = frozenset({"several", "many", "few", "multiple", "numerous"})

#: "a group of people" -> people, with the attribute given here (None: no attribute); the
#: collectives of _PLURAL_COLLECTIVES also in the plural ("pieces of cake").
_PLURAL_COLLECTIVES = (
    "group", "piece", "slice", "pair", "bunch", "herd", "couple", "lot", "row", "stack",
    "pile", "team", "batch", "bit",
)  # fmt: skip
_COLLECTIVE_LEMMAS: dict[str, str | None] = {
    "group": "group of", "piece": "piece", "slice": "slice", "part": "part",
    "pair": None, "bunch": None, "herd": None, "couple": None, "lot": None, "flock": None,
    "set": None, "number": None, "row": None, "stack": None, "pile": None, "cluster": None,
    "crowd": None, "line": None, "team": None, "variety": None, "assortment": None,
    "collection": None, "kind": None, "type": None, "sort": None, "plenty": None,
    "handful": None, "bundle": None, "array": None, "series": None, "batch": None,
    "clump": None, "bit": None, "loaf": None, "bouquet": None, "amount": None, "half": None,
    "view": None, "scene": None, "depiction": None, "mass": None, "family": None,
    "grouping": "group of",
}  # fmt: skip
COLLECTIVES: dict[str, str | None] = {
    **_COLLECTIVE_LEMMAS,
    **{plural(w): _COLLECTIVE_LEMMAS[w] for w in _PLURAL_COLLECTIVES},
    "groups": None,  # "groups of people": FACTUAL writes no "group of" attribute
}

#: Nouns that turn "on top of", "in front of", "on the side of" into one preposition.
RELATIONAL_NOUNS = set(with_plurals(["side"])) | {
    "top", "front", "middle", "back", "edge", "bottom", "center", "centre", "corner", "left",
    "right", "end", "rear", "base", "inside", "outside", "surface", "underside", "part", "tip",
    "rest", "foot", "head", "face",
}  # fmt: skip

#: Prepositions that combine with a following preposition ("next to", "out of").
PREP_PREFIXES = {
    "next", "out", "close", "up", "down", "because", "ahead", "away", "instead", "apart",
    "inside", "outside", "off", "on", "in", "onto", "along", "together", "adjacent", "near",
}  # fmt: skip

CLOTHING = set(with_plurals(["glove"])) | {
    "shirt", "t-shirt", "tshirt", "jacket", "coat", "dress", "hat", "cap", "helmet", "pants",
    "jeans", "shorts", "suit", "sweater", "sweatshirt", "hoodie", "uniform", "skirt", "top",
    "tie", "glasses", "sunglasses", "goggles", "vest", "jersey", "outfit", "costume", "gown",
    "scarf", "boots", "shoes", "sneakers", "socks", "wetsuit", "bikini", "swimsuit", "trunks",
    "robe", "apron", "blouse", "overalls", "tank", "clothes", "clothing", "attire", "beanie",
    "headband", "bandana", "hood", "cloak", "sweats", "tuxedo", "mask", "raincoat",
    "windbreaker", "parka", "backpack", "visor", "wristband", "necklace",
}  # fmt: skip

#: Materials things are made of ("a brick wall", "wooden chairs").
MATERIALS = frozenset(
    {"wood", "wooden", "metal", "brick", "stone", "glass", "plastic", "concrete", "steel",
     "iron", "leather", "paper", "cardboard", "ceramic", "marble", "denim", "cotton", "wool"}
)  # fmt: skip

#: Colour names FACTUAL writes alone ("white colored" -> white).
BASIC_COLOURS = {
    "white", "black", "blue", "red", "green", "yellow", "brown", "gray", "grey", "orange",
    "pink", "purple", "tan", "beige", "silver", "gold", "golden",
}  # fmt: skip

#: Colour names of a shade of a basic colour ("maroon", "navy", "teal").
SHADES = frozenset({"maroon", "navy", "teal"})

#: Modifiers that name a material, colour or kind: kept as attributes, never merged into the
#: object's name ("brick wall" -> wall, is brick).
ATTRIBUTE_NOUNS = (
    set(MATERIALS)
    | BASIC_COLOURS
    | SHADES
    | {
        "cement", "tile", "rubber", "cloth", "wicker", "straw", "granite", "chrome", "aluminum",
        "dirt", "gravel", "asphalt", "snow", "stainless", "porcelain", "dark", "light", "baby",
    }
)  # fmt: skip

#: Attribute spellings normalized as FACTUAL writes them.
ATTRIBUTE_NORMAL = {
    "wood": "wooden",
    "multi colored": "multi-colored",
    "multicolored": "multi-colored",
}

#: Degree words that stay part of a colour attribute ("dark blue", "light brown").
COLOUR_DEGREES = {"dark", "light", "bright", "pale", "deep", "navy", "baby", "hot", "royal", "neon"}

#: People and animals (heads of object names), for possessive pronouns' owners.
ANIMATE = set(with_plurals(["man", "woman", "person", "child"])) | {
    "boy", "girl", "kid", "lady", "baby", "adult", "player", "guy", "family", "crowd", "team",
    "dog", "cat", "horse", "elephant", "giraffe", "zebra", "bear", "bird", "cow", "sheep",
    "animal", "duck", "goat", "pig", "monkey", "calf", "lamb", "puppy", "kitten", "deer",
    "umpire", "catcher", "pitcher", "batter", "skier", "surfer", "chef", "officer", "cop",
}  # fmt: skip

#: Possessive pronouns: "his hand" -> (owner, have, hand).
POSSESSIVE_PRONOUNS = {"his", "her", "its", "their"}

#: Quantifiers that FACTUAL never writes as attributes.
QUANTIFIERS = set(PLURAL_QUANTIFIERS) | {
    "some", "other", "various", "each", "all", "any", "more", "most", "another", "lots", "much",
    "both",
}  # fmt: skip

#: Pronouns standing for people in captions; FACTUAL names them like this.
PRONOUN_NAMES = {"they": "people", "them": "people", "he": "man", "him": "man", "she": "woman"}

#: Verbs whose passive with these prepositions takes the prepositional object as agent
#: ("ground covered in snow" -> snow, cover, ground).
AGENTIVE_PASSIVES = {"cover": {"in", "with", "by"}, "surround": {"by", "with"}}

#: Adjectives made from nouns that FACTUAL writes as a part the object has:
#: "short sleeved shirt" -> (shirt, have, sleeve), (sleeve, is, short).
DENOMINAL_ADJECTIVES = {
    "sleeved": "sleeve", "legged": "legs", "haired": "hair", "bearded": "beard",
    "eyed": "eyes", "tailed": "tail", "horned": "horns", "headed": "head", "faced": "face",
    "roofed": "roof", "framed": "frame", "wheeled": "wheels", "handled": "handle",
    "winged": "wings", "necked": "neck", "sided": "sides", "doored": "doors",
    "windowed": "windows", "capped": "cap", "tiled": "tiles", "leaved": "leaves",
}  # fmt: skip

#: Object names FACTUAL writes in another form (by lemma; plural heads use the second map).
NOUN_NORMAL = {"guy": "person", "dude": "person", "tshirt": "t-shirt", "tee shirt": "t-shirt",
               "t shirt": "t-shirt", "tee": "t-shirt", "surf board": "surfboard",
               "someone": "person", "somebody": "person"}  # fmt: skip
NOUN_NORMAL_PLURAL = {"guy": "people", "dude": "people"}

#: Prepositions FACTUAL writes in another form.
PREP_NORMAL = {
    "underneath": "under", "beneath": "under", "below": "under", "inside of": "inside",
    "in between": "between", "atop": "on top of", "on front of": "in front of",
    "in middle of": "on middle of", "on the middle of": "on middle of",
    "in the middle of": "on middle of", "outside of": "outside", "close to": "near",
}  # fmt: skip

#: Verb + preposition predicates FACTUAL writes differently.
VERB_PREP_NORMAL = {
    "dress in": "wear", "dress with": "wear", "clothe in": "wear", "hold onto": "hold",
    "hold on to": "hold", "hold up": "hold",
}  # fmt: skip


class LearnedLexicon:
    """Tables learned from FACTUAL train by ``scripts/build_parser_lexicon.py``."""

    def __init__(self, data: dict | None = None):
        data = data or {}
        compound = data.get("compound", {})
        self.pair = compound.get("pair", {})
        self.mod = compound.get("mod", {})
        self.head = compound.get("head", {})
        self.prep = data.get("prep", {})
        self.objects: dict[str, int] = data.get("objects", {})
        self.prep_subject = data.get("prep_subject", {})
        amod = data.get("amod", {})
        self.amod_pair = amod.get("pair", {})
        self.amod_mod = amod.get("mod", {})

    @classmethod
    def load(cls, path: str | None = None) -> LearnedLexicon:
        import json
        from pathlib import Path

        file = Path(path) if path else Path(__file__).with_name("data") / "lexicon.json"
        if not file.exists():
            return cls()
        return cls(json.loads(file.read_text()))

    def compound(self, modifier: str, head: str) -> str:
        """merge / join / attr / have / split / drop for the compound "modifier head"."""
        for table, key in (
            (self.pair, f"{modifier} {head}"),
            (self.mod, modifier),
            (self.head, head),
        ):
            hit = table.get(key)
            if hit is not None and (table is self.pair or hit[1] / hit[2] >= 0.5):
                return hit[0]
        return "attr" if modifier in ATTRIBUTE_NOUNS else "merge"

    def spelling(self, word: str, known: frozenset[str] | set[str]) -> str:
        """``word``, or the most frequent FACTUAL object one edit away when ``word`` is
        neither a FACTUAL object nor in ``known`` (e.g. the lemmatizer's noun index)."""
        if word in self.objects or word in known or len(word) < 4 or not word.isalpha():
            return word
        letters = "abcdefghijklmnopqrstuvwxyz"
        splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
        edits = {a + b[1:] for a, b in splits if b}
        edits |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        edits |= {a + c + b[1:] for a, b in splits if b for c in letters}
        edits |= {a + c + b for a, b in splits for c in letters}
        found = [(self.objects[e], e) for e in edits if e in self.objects]
        return max(found)[1] if found else word

    def adjective(self, adjective: str, head: str) -> str:
        """merge / attr / drop for the adjectival modifier "adjective head"."""
        hit = self.amod_pair.get(f"{adjective} {head}")
        if hit is not None and hit[1] / hit[2] > 0.5:
            return hit[0]
        hit = self.amod_mod.get(adjective)
        if hit is not None and hit[0] != "merge" and hit[1] / hit[2] >= 0.6:
            return hit[0]
        return "attr"

    def preposition(self, prep: str, obj: str, subject: str = "") -> tuple[str, bool] | None:
        """(predicate, reversed) FACTUAL writes for "subject prep obj", if learned: by the
        object first ("with hair" -> have), then by the subject ("plate of" -> have)."""
        # the subject back-off only for "of", whose head noun decides ("plate of", "roof
        # of"); "man in X" depends on X (wear for clothes, in for places)
        by_subject = self.prep_subject.get(f"{subject} {prep}") if prep == "of" else None
        for hit in (self.prep.get(f"{prep} {obj}"), by_subject):
            if hit is not None and hit[1] / hit[2] >= 0.5:
                return hit[0][:-1], hit[0].endswith("<")
        return None
