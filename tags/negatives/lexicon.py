"""Closed word classes: the grammar of an edit, not its vocabulary.

Small hand lists of words that belong to a closed class (pronouns, numbers, colours and
their families, gendered and aged person nouns, prepositions and their opposites, words
never edited) and the few functions that read them. Each list is written once: a noun by
its lemma, its plural derived (:func:`parsers.morphology.with_plurals`); the classes the
parser shares (cardinals, plural quantifiers, basic colours, materials) come from
:mod:`parsers.lexicon`. Open-class knowledge comes from the corpus
(:mod:`tags.negatives.scenes`) and WordNet (:mod:`tags.negatives.wordnet`).

Imports: :mod:`parsers.lexicon` and :mod:`parsers.morphology` only (and the standard library).
"""

from __future__ import annotations

from functools import lru_cache

from parsers.lexicon import BASIC_COLOURS, CARDINALS, MATERIALS, PLURAL_QUANTIFIERS, SHADES
from parsers.morphology import plural, with_plurals

# ---------------------------------------------------------------- words never edited
#: Words that are never edited and never used as substitutes: pronouns, quantifier and
#: measure nouns, time words, directions and parts of a frame ("the left", "the top").
NEVER_EDIT = with_plurals(
    ["one", "lot",
     # time, in either number ("several times", "in the old days")
     "day", "night", "time", "morning", "afternoon", "evening", "weekend", "week", "year",
     "moment", "summer", "winter", "season", "hour", "minute", "sunset", "sunrise",
     # quantity and measure nouns, in either number
     "group", "couple", "pair", "bunch", "variety", "kind", "type", "sort", "piece", "part",
     "number", "row", "line", "set", "series", "array", "amount"]
) | frozenset(
    {"it", "him", "her", "them", "he", "she", "they", "you", "me", "us", "something",
     "someone", "somebody", "anything", "anyone", "everything", "everyone", "nothing", "this",
     "that", "these", "those", "each", "other", "another", "who", "what", "which",
     # time
     "today", "tonight", "noon", "spring", "fall", "autumn", "dusk", "dawn", "daytime",
     # directions and parts of a frame
     "left", "right", "front", "back", "top", "bottom", "side", "middle", "center", "centre",
     "edge", "end", "distance", "background", "foreground", "area", "way",
     # quantity and measure nouns
     "half", "rest",
     # the picture itself and placeholders
     "view", "shot", "picture", "photo", "image", "photograph", "camera", "scene", "place",
     "spot", "thing", "stuff", "object", "item"}
)  # fmt: skip

#: The picture itself: its colour words say its style ("a black and white photo"), not a
#: colour a negative may change.
PICTURE_NOUNS = frozenset(["picture", "photo", "image", "photograph", "shot", "snapshot", "view"])

#: Nouns so generic that a more specific substitute may still be true ("people" -> "women").
GENERIC_NOUNS = with_plurals(
    ["person", "individual", "human", "adult", "figure", "child", "kid", "thing", "object",
     "outfit"]
) | frozenset(
    {"persons", "someone", "somebody", "crowd", "site", "area", "place", "spot", "location",
     "scene", "event", "stuff", "clothes", "clothing", "attire", "garb", "apparel", "gear",
     "equipment"}
)  # fmt: skip

# ---------------------------------------------------------------- people
#: Nouns that say a group is children: the children it names stay children.
CHILD_GROUP_NOUNS = with_plurals(["child", "kid"]) | {"youngsters"}

#: Attributes that make an age boundary fuzzy: a "young girl" may be a "young lady".
YOUTH_WORDS = frozenset(["young", "younger", "youngest", "little", "teenage", "teen", "youthful"])

#: Person nouns that say only gender or age: the only person nouns exchanged, and only
#: among themselves (a "player" may well be a woman; a "man" is not a woman).
PERSON_NOUNS = with_plurals(
    ["man", "woman", "boy", "girl", "lady", "gentleman", "baby", "toddler", "teenager"]
)

#: Person nouns of one gender; a caption that names something only one gender wears or
#: grows (a bikini, a beard) keeps its person nouns of that gender.
MALE_NOUNS = with_plurals(["man", "boy", "gentleman", "guy"])
FEMALE_NOUNS = with_plurals(["woman", "girl", "lady"])

#: Age classes of :data:`PERSON_NOUNS` (0 infant, 1 child, 2 teen, 3 adult). Neighbouring
#: classes overlap ("a boy" may be a toddler or a teenager), so a person noun without a
#: gender changes only to one two classes away ("toddler" -> "man", not -> "girl").
PERSON_AGES = {
    word: age
    for lemma, age in {
        "baby": 0, "toddler": 0, "boy": 1, "girl": 1, "teenager": 2, "man": 3, "woman": 3,
        "lady": 3, "gentleman": 3, "guy": 3,
    }.items()
    for word in (lemma, plural(lemma))
}  # fmt: skip


_GENDERED_NOUNS = MALE_NOUNS | FEMALE_NOUNS

#: The person noun of the other gender and the same age (the written noun, singular or
#: plural -> the substitute's lemma): what a gender edit writes. Gender is not evidence a
#: corpus must attest for a verb or a scene ("a man sharpening a knife" -> "a woman": no
#: caption of the corpus need show a woman doing it); the caption's own gender words
#: (pronouns, beards, bikinis) still decide.
_LEMMA_COUNTERPARTS = {
    "man": "woman", "woman": "man", "boy": "girl", "girl": "boy", "lady": "man",
    "gentleman": "lady", "guy": "woman",
}  # fmt: skip
GENDER_COUNTERPARTS = {
    **_LEMMA_COUNTERPARTS,
    **{plural(noun): other for noun, other in _LEMMA_COUNTERPARTS.items()},
}
#: The adults a child is not (written noun -> substitute lemmas): what an age edit writes
#: for a noun that names only an age ("a child standing on a post" -> "a man").
AGE_COUNTERPARTS = {
    noun: ("man", "woman") for lemma in ("child", "kid") for noun in (lemma, plural(lemma))
}
#: ... and of a gender adjective on a person ("a male volleyball player" -> "a female").
GENDER_ADJECTIVE_COUNTERPARTS = {"male": "female", "female": "male"}
_GIRLS = with_plurals(["girl"])
_WOMEN = with_plurals(["woman", "lady"])


def persons_exclusive(a: str, b: str) -> bool:
    """Whether person nouns ``a`` and ``b`` cannot name the same person: different
    genders, or (when either has no gender) ages two classes apart."""
    if {a, b} & _GIRLS and {a, b} & _WOMEN:
        return False  # captions call young women girls (blind reads 101, 104, 108)
    if a in _GENDERED_NOUNS and b in _GENDERED_NOUNS:
        if (a in MALE_NOUNS) != (b in MALE_NOUNS):
            return True  # another gender
        # the same gender at another age ("boy" -> "man"), not "guy" -> "man"
        return PERSON_AGES.get(a, 3) != PERSON_AGES.get(b, 3)
    if a not in PERSON_AGES or b not in PERSON_AGES:
        return False
    return abs(PERSON_AGES[a] - PERSON_AGES[b]) >= 2


def ages_overlap(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same gender, one as a child and one as an adult
    ("man" / "boy", "woman" / "girl"): captions call young men boys and young women girls, so
    a replacement from one to the other may still be true (24 of 30 "man" -> "boy" edits
    read good, against 82 of 82 gender edits). A role swap of the two stays exclusive: a
    caption naming both means two people (:func:`persons_exclusive`)."""
    if a not in _GENDERED_NOUNS or b not in _GENDERED_NOUNS:
        return False
    return (a in MALE_NOUNS) == (b in MALE_NOUNS) and {
        PERSON_AGES.get(a, 3),
        PERSON_AGES.get(b, 3),
    } == {1, 3}


#: Things only one gender wears or grows: a caption naming one keeps its person nouns.
FEMALE_MARKERS = with_plurals(["bikini", "dress", "skirt", "gown"]) | frozenset(
    {"bra", "blouse", "purse", "handbag", "heels", "lipstick", "pregnant", "bride", "tutu",
     "leotard"}
)  # fmt: skip
MALE_MARKERS = with_plurals(["beard", "mustache", "moustache", "goatee", "tuxedo"]) | frozenset(
    {"bearded", "mustached", "groom", "shirtless"}
)

#: Nouns that already say a person's age: an age attribute on them is not edited
#: ("young children" -> "old children").
AGED_NOUNS = with_plurals(
    ["child", "kid", "baby", "toddler", "boy", "girl", "teenager", "infant", "student"]
) | {"schoolchildren"}

# ---------------------------------------------------------------- states and things
#: Adjectives that say a place or a container holds nothing: such a value is never
#: written where the caption puts something in, on or at the noun ("a crowd on a busy
#: street" -> not "on an empty street").
EMPTY_WORDS = frozenset({"empty", "vacant", "deserted", "unoccupied", "uninhabited"})

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
    {"pants", "jeans", "shorts", "trousers", "slacks", "khakis", "overalls", "pajamas",
     "tights", "leggings", "sweatpants", "glasses", "sunglasses", "goggles", "headphones",
     "earphones", "scissors", "binoculars", "trunks", "briefs", "boxers", "capris"}
)  # fmt: skip

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
        "shirt,top,tee,t-shirt,blouse",
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


@lru_cache(maxsize=1 << 16)
def near_synonyms(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same thing in :data:`NEAR_SYNONYMS` (head words,
    singular or plural)."""

    fa, fb = set(_name_forms(a)), set(_name_forms(b))
    return any(fa & group and fb & group for group in NEAR_SYNONYMS)


# ---------------------------------------------------------------- verbs and relations
#: Verbs of posture and locomotion: mutually exclusive at one moment ("sitting" vs
#: "standing"), so one may replace another on the corpus's pair counts alone ("lay": how
#: captions often write "lying", "a dog laying on the couch").
EXCLUSIVE_VERBS = frozenset(
    {"sit", "stand", "lie", "lay", "walk", "run", "jump", "ride", "swim", "climb", "kneel",
     "squat", "crawl", "dive", "fly", "skate", "ski", "surf"}
)  # fmt: skip

#: Verb lemmas that say nothing about the objects around them (auxiliaries, copulas).
AUXILIARY_VERBS = frozenset({"be", "have", "do", "'s", "’s"})

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


#: Verbs whose opposite is a matter of viewpoint ("skiers coming down a hill" are going down
#: it; "bring" / "take"): their WordNet antonyms are no flip.
VIEWPOINT_VERBS = frozenset({"come", "go", "bring", "take"})
#: Words that make an animal (or a person) a thing: "a stuffed animal sitting on the ground"
#: does not walk, "a toy dog" does not run (its posture only places it).
MADE_LIKENESS_WORDS = frozenset(
    {"stuffed", "toy", "plush", "fake", "plastic", "inflatable", "ceramic", "porcelain",
     "wooden", "stone", "metal", "bronze", "glass", "paper", "cardboard", "statue", "figurine",
     "cartoon", "carved", "miniature"}
)  # fmt: skip

#: Verbs a bird does alike, pairwise: on a perch ("a bird sitting on a roof" is standing on
#: it) and on water ("birds swimming in water" sit in it): not exchanged for a bird.
BIRD_ALIKE = frozenset(
    frozenset(pair)
    for pair in (("sit", "stand"), ("sit", "perch"), ("stand", "perch"), ("sit", "swim"),
                 ("sit", "float"), ("swim", "float"))
)  # fmt: skip
#: Verbs a hoofed animal does alike: a cow, sheep or giraffe lying down is said to sit ("cows
#: laying on a dirt ground" -> not "sitting on"), and a grazing herd walks and stands at
#: once ("zebras walking in the woods" -> not "standing": one reader of two, 4 of 5 reads).
UNGULATE_ALIKE = frozenset({frozenset(("sit", "lie")), frozenset(("walk", "stand"))})
#: Acts one moment may show together, for any subject: a jump is made riding a wave or skis,
#: and a jumping rider is in the air ("riding the wave" -> not "jumping", "jumping in the
#: air on his dirt bike" -> not "flying in the air").
COMPATIBLE_ACTS = frozenset(frozenset(pair) for pair in (("ride", "jump"), ("jump", "fly")))
#: Per WordNet kind (the word naming a hypernym of the subject's first sense), the verb
#: pairs not exchanged for a subject of that kind.
ALIKE_FOR_KIND = {"bird": BIRD_ALIKE, "ungulate": UNGULATE_ALIKE}

#: Opposite or exclusive prepositions. Not "on" -> "beside" / "next to": a thing on another
#: is also beside it (blind readers read "work crew on the tracks" -> "next to the tracks",
#: "water on the rocks" -> "next to" as may-be-true).
PREPOSITION_OPPOSITES: dict[str, tuple[str, ...]] = {
    "on": ("under",),
    "onto": ("off",),
    "on top of": ("under", "below", "underneath"),
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
    # not "behind" / "in front of": a thing next to another may also be in front of it
    # ("a couch next to a chair" -> "in front of a chair"; blind read 1202)
    "next to": ("across from",),
    "beside": ("across from",),
    "with": ("without",),
    "without": ("with",),
    "toward": ("away from",),
    "towards": ("away from",),
    "away from": ("toward",),
    "up": ("down",),
    "down": ("up",),
    # not "along" / "across": walking across a field may take one along it, a sign across
    # the street stands along it too (blind readers, two reads: "near-synonyms", "vague")
    "left of": ("right of",),
    "right of": ("left of",),
    "to the left of": ("to the right of",),
    "to the right of": ("to the left of",),
    "to left of": ("to right of",),  # the parser's pieces of "to the left of"
    "to right of": ("to left of",),
}

# ---------------------------------------------------------------- attributes
#: Materials a photo does not tell apart: "a brick wall" -> "a stone wall", "brick buildings"
#: -> "stone buildings" read as may-be-true (blind reads, 2 of 3 failed).
LOOKALIKE_MATERIALS = frozenset({frozenset({"brick", "stone"})})
#: Hair colours: an added colour of this kind only goes to hair ("a blond dog").
HAIR_COLOURS = frozenset({"blond", "blonde", "brunette"})

#: Attribute classes: a substitute stays in the class of the original.
ATTRIBUTE_CLASSES: dict[str, frozenset[str]] = {
    "colour": frozenset(BASIC_COLOURS | SHADES | HAIR_COLOURS | {"turquoise"}),
    "size": frozenset(["big", "small", "large", "little", "tiny", "huge", "giant"]),
    "length": frozenset(["long", "short"]),
    "height": frozenset(["tall"]),
    "age": frozenset(["young", "old", "elderly", "older", "younger"]),
    "material": MATERIALS | {"metallic"},
    "pattern": frozenset(
        ["striped", "plaid", "spotted", "checkered", "floral", "patterned", "polka"]
    ),
    "state": frozenset(STATE_OPPOSITES) | {"lit"},
    "number": frozenset(w for w, v in CARDINALS.items() if v <= 12) | PLURAL_QUANTIFIERS,
}

#: The side of its scale each size and age word is on: a substitute on the same side says
#: the same thing to a reader ("giant" -> "huge", "old" -> "elderly"), so a size or age is
#: only replaced across its scale.
SCALE_SIDES: dict[str, int] = {
    **dict.fromkeys(["big", "large", "huge", "giant"], 1),
    **dict.fromkeys(["small", "little", "tiny"], -1),
    **dict.fromkeys(["old", "elderly", "older"], 1),
    **dict.fromkeys(["young", "younger"], -1),
}

#: Number words by value (for number agreement: only plural quantities are exchanged).
NUMBER_VALUES = {w: v for w, v in CARDINALS.items() if 2 <= v <= 12}

#: Words before a zero-plural noun (:data:`parsers.morphology.ZERO_PLURALS`) that make it
#: plural: quantifiers and collectives before "of" ("several sheep", "a herd of sheep").
PLURAL_CUES = (
    PLURAL_QUANTIFIERS
    | with_plurals(["group", "lot"])
    | {"these", "those", "both", "herd", "flock", "bunch", "pack", "school", "couple", "pair",
       "number", "crowd", "family", "line", "row"}
)  # fmt: skip


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
HAIR_NOUNS = with_plurals(["eyebrow"]) | {"hair", "beard", "mustache", "moustache", "fur"}
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
#: Neighbouring hues: orange, the hue between red and yellow, is either to some writers ("an
#: orange bus" -> not "a yellow bus", "a yellow and red train" -> not "a yellow and orange
#: train"). Unlike :data:`ADJACENT_SHADES` they are still two substitutes of a third colour
#: ("a blue shirt" -> "a red shirt", "an orange shirt"). Pink and purple flowers, too, are
#: one colour to some readers (a blind read of fresh COCO captions).
NEIGHBOUR_HUES = frozenset(
    frozenset(pair.split("/")) for pair in ("orange/red", "orange/yellow", "pink/purple")
)


def neighbour_hues(a: str, b: str, noun: str | None = None) -> bool:
    """Whether colour values ``a`` and ``b`` may name the same colour (:func:`same_colour`)
    or neighbouring hues (:data:`NEIGHBOUR_HUES`): not a substitute for each other."""
    if same_colour(a, b, noun):
        return True
    return frozenset(colour_family(v) for v in (a, b)) in NEIGHBOUR_HUES


#: Words that, right before a colour, name one shade with it ("army green", "sky blue",
#: "hot pink"): the colour is not replaced alone ("army green" -> not "army white").
# fmt: off
SHADE_WORDS = frozenset([
    "army", "navy", "forest", "lime", "olive", "sky", "sea", "hunter", "royal", "kelly",
    "baby", "mint", "blood", "cherry", "jet", "pitch", "snow", "bone", "ice", "powder",
    "neon", "emerald", "jade", "lemon", "mustard", "wine", "brick", "rust", "sand", "slate",
    "steel", "charcoal", "chocolate", "coffee", "cream", "ivory", "pearl", "salmon", "peach",
    "rose", "hot", "fire", "apple", "midnight", "electric", "candy", "bubblegum", "burnt",
    "dusty",
])
# fmt: on

#: Traffic signals, and the colours they show: "a red stop light" -> "a green stop light",
#: not "a white stop light" (read as odd twice in a blind read); a bare "light" with a
#: signal colour is one too ("an intersection with red light").
SIGNAL_NOUNS = frozenset(["traffic light", "stop light", "stoplight", "traffic signal"])
SIGNAL_COLOURS = frozenset(["red", "green", "yellow", "orange"])


def signal_colours_only(value: str, noun: str) -> bool:
    """Whether ``noun`` with colour ``value`` is a traffic signal, whose colour can only be
    another signal colour (:data:`SIGNAL_NOUNS`, :data:`SIGNAL_COLOURS`)."""
    noun = noun.lower()
    if noun in SIGNAL_NOUNS:
        return True
    return noun == "light" and colour_family(value) in SIGNAL_COLOURS


def same_colour(a: str, b: str, noun: str | None = None) -> bool:
    """Whether colour values ``a`` and ``b`` may name the same colour: one family
    (:func:`colour_family`) or adjacent shades (:data:`ADJACENT_SHADES`)."""
    if colour_family(a, noun) == colour_family(b, noun):
        return True
    last = frozenset(v.lower().split()[-1] for v in (a, b) if v.split())
    return last in ADJACENT_SHADES


@lru_cache(maxsize=1 << 15)
def attribute_class(value: str) -> str | None:
    """The class of an attribute value ("navy blue" -> colour), or ``None`` (cached)."""
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


#: Pronouns that fix a person's gender elsewhere in the caption.
HE_PRONOUNS = frozenset(["he", "him", "his", "himself"])
SHE_PRONOUNS = frozenset(["she", "her", "hers", "herself"])
GENDERED_PRONOUNS = HE_PRONOUNS | SHE_PRONOUNS
GENDERED_NOUNS = MALE_NOUNS | FEMALE_NOUNS

#: Parts whose count its owner fixes (a zebra has four legs, a bicycle two wheels, a person
#: two eyes, a thing two halves): a number before one is never edited ("four legs" -> not "two legs"). Parts
#: people show a few of by choice ("holding up two fingers") are not listed.
FIXED_COUNT_PARTS = with_plurals(
    ["leg", "arm", "hand", "eye", "ear", "wing", "wheel", "horn", "tusk", "paw", "hoof",
     "antenna", "nostril", "headlight"]
) | frozenset({"foot", "feet", "hooves", "halves"})  # fmt: skip

#: Adjectives that say a gender (WordNet antonyms of each other), fixed like person nouns.
GENDER_ADJECTIVES = frozenset({"male", "female", "masculine", "feminine"})

#: Person words WordNet files elsewhere ("person" is a top category, "female" an animal).
PEOPLE_WORDS = with_plurals(["person", "female", "male"]) | {"persons"}

#: Phrases that pin a count elsewhere in the caption ("one ... the other": two).
COUNT_ANCHORS = ("the other", "each other", "one another", "both", "head-to-head", "pair")

#: Predicates never edited: copulas, possession and clothing read from "in"/"with".
FIXED_PREDICATES = frozenset({"be", "have", "wear", "of", "contain", "include", "show"})

#: Words that already give an object a colour without naming one ("a rainbow colored kite").
COLOURED_WORDS = frozenset(
    {"colorful", "colourful", "colored", "coloured", "multicolored", "multicoloured", "multi"}
)

#: Words after a singular noun phrase that agree with it alone ("a dog and a cat is").
SINGULAR_VERB_WORDS = frozenset({"is", "was", "has", "does", "'s", "’s"})
#: Words after a noun phrase that bind to it alone (a relative clause, "of", a possessive).
BINDING_WORDS = frozenset({"of", "that", "which", "who", "whose", "'s", "’s", "'"})
#: Words that coordinate noun phrases.
COORDINATORS = frozenset({"and", "or", "&", ","})


__all__ = [
    "ADJACENT_SHADES",
    "AGED_NOUNS",
    "AGE_COUNTERPARTS",
    "ATTRIBUTE_CLASSES",
    "AUXILIARY_VERBS",
    "BINDING_WORDS",
    "CHILD_GROUP_NOUNS",
    "COLOURED_WORDS",
    "COLOUR_FAMILIES",
    "COMPATIBLE_ACTS",
    "COORDINATORS",
    "COUNT_ANCHORS",
    "EXCLUSIVE_VERBS",
    "FEMALE_MARKERS",
    "FEMALE_NOUNS",
    "FIXED_COUNT_PARTS",
    "FIXED_PREDICATES",
    "GARMENT_SLOTS",
    "GENDERED_NOUNS",
    "GENDERED_PRONOUNS",
    "GENDER_ADJECTIVES",
    "GENDER_ADJECTIVE_COUNTERPARTS",
    "GENDER_COUNTERPARTS",
    "GENERIC_NOUNS",
    "HAIR_COLOURS",
    "HAIR_NOUNS",
    "HE_PRONOUNS",
    "MADE_LIKENESS_WORDS",
    "MALE_MARKERS",
    "MALE_NOUNS",
    "NEAR_SYNONYMS",
    "NEGATORS",
    "NEIGHBOUR_HUES",
    "NEVER_EDIT",
    "NUMBER_VALUES",
    "PEOPLE_WORDS",
    "PERSON_AGES",
    "PERSON_NOUNS",
    "PICTURE_NOUNS",
    "PLURALIA_TANTUM",
    "PLURAL_CUES",
    "PREPOSITION_OPPOSITES",
    "SCALE_SIDES",
    "SHADE_WORDS",
    "SHE_PRONOUNS",
    "SIGNAL_COLOURS",
    "SIGNAL_NOUNS",
    "SINGULAR_VERB_WORDS",
    "STATE_OPPOSITES",
    "SYMMETRIC_PREPOSITIONS",
    "SYMMETRIC_VERBS",
    "YOUTH_WORDS",
    "ages_overlap",
    "attribute_class",
    "colour_family",
    "editable_words",
    "garment_slot",
    "near_synonyms",
    "neighbour_hues",
    "person_kind",
    "persons_exclusive",
    "same_colour",
    "signal_colours_only",
    "symmetric",
]


def editable_words(text: str) -> bool:
    """Whether ``text`` has words and none of them is never edited (:data:`NEVER_EDIT`)."""
    words = text.split()
    return bool(words) and not any(w in NEVER_EDIT for w in words)


def person_kind(noun: str) -> tuple[str | None, int | None]:
    """(gender, age class) of a person noun ("lady" and "women": female adults)."""
    gender = "m" if noun in MALE_NOUNS else "f" if noun in FEMALE_NOUNS else None
    return gender, PERSON_AGES.get(noun)
