"""The word layer's interfaces: the WordNet service and its stand-in, the one verb
lemmatizer, the plural rule and the hand lists written once by lemma."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from parsers.morphology import Lemmatizer, plural, with_plurals
from tags.negatives.wordnet import WordNet, WordNetService, _NoWordNet, verb_lemma, wordnet

#: A word WordNet has no sense of, in an "-ing" form.
UNKNOWN = "zzqxqing"


def _protocol_methods(protocol: type) -> list[str]:
    """The public methods a protocol declares (its own and its bases')."""
    names = set()
    for klass in protocol.__mro__:
        if klass in (object,) or not getattr(klass, "_is_protocol", False):
            continue
        names |= {n for n, v in vars(klass).items() if callable(v) and not n.startswith("_")}
    return sorted(names)


METHODS = _protocol_methods(WordNetService)

#: Arguments for each method of the protocol, and the stand-in's (neutral) answer.
CALLS = {
    "after_fork": ((), None),
    "lemma": (("Throwing", "verb"), "throwing"),
    "related": (("dog", "puppy"), False),
    "category": (("dog",), None),
    "lexname": (("dog",), None),
    "depth": (("dog",), None),
    "category_parent": (("partition.n.01",), None),
    "antonyms": (("empty",), ()),
    "verb_antonyms": (("push",), ()),
    "verb_class": (("ride",), None),
    "is_activity": (("table",), False),
    "is_name": (("paris",), False),
    "is_body_part": (("hand",), False),
    "is_artifact": (("chair",), False),
    "is_place": (("park",), False),
    "is_animate": (("dog",), False),
    "is_level_way": (("street",), False),
    "is_kind_of": (("vehicle", "car"), False),
    "hypernym_names": (("blouse",), frozenset()),
    "part_related": (("keyboard", "computer"), False),
    "for_one": (("chair",), False),
    "for_children": (("crib",), False),
    "way_of": (("surf", "ride"), False),
    "warm": ((["dog"], ["empty"], ["push"]), None),
}


def test_protocol_lists_the_queries_operators_ask():
    assert set(METHODS) == set(CALLS)
    assert {"is_activity", "for_one", "way_of", "lemma"} <= set(METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_both_implementations_have_every_method(name):
    real = WordNet(reader=None)  # the cached queries are built in __init__, no data read
    for service in (real, _NoWordNet()):
        assert callable(getattr(service, name, None)), (type(service).__name__, name)
    assert isinstance(real, WordNetService)
    assert isinstance(_NoWordNet(), WordNetService)


def test_stand_in_has_the_methods_operators_call():
    """evidence.py, replace_object.py and replace_relation.py call these on whatever
    :func:`wordnet` returns; the stand-in once lacked them (AttributeError without data)."""
    stand_in = _NoWordNet()
    assert stand_in.is_activity("singing") is True  # unknown to it: an act, as WordNet says
    assert stand_in.is_activity("table") is False
    assert stand_in.for_one("chair") is False
    assert stand_in.way_of("surf", "ride") is False


@pytest.mark.parametrize("name", sorted(CALLS))
def test_stand_in_answers_are_neutral(name):
    args, expected = CALLS[name]
    assert getattr(_NoWordNet(), name)(*args) == expected


def test_stand_in_signatures_match_the_protocol():
    for name in METHODS:
        wanted = list(inspect.signature(getattr(WordNetService, name)).parameters)[1:]
        got = list(inspect.signature(getattr(_NoWordNet(), name)).parameters)
        assert got == wanted, name


def test_stand_in_answers_as_wordnet_does_for_an_unknown_word():
    service = wordnet()
    if not isinstance(service, WordNet):
        pytest.skip("WordNet data not installed")
    stand_in = _NoWordNet()
    for name, (args, _) in CALLS.items():
        if name == "after_fork":
            continue
        unknown = tuple(UNKNOWN if isinstance(a, str) and a != "verb" else a for a in args)
        assert getattr(stand_in, name)(*unknown) == getattr(service, name)(*unknown), name


def test_warm_reads_the_words_senses_once_and_answers_alike():
    shared = wordnet()
    if not isinstance(shared, WordNet):
        pytest.skip("WordNet data not installed")
    cold, warm = WordNet(shared.reader), WordNet(shared.reader)
    warm.warm(["dog", "chair"], ["empty"], ["push"])
    assert warm.antonyms.cache_info().currsize == 1
    assert warm.verb_antonyms.cache_info().currsize == 1
    assert warm._closure.cache_info().currsize == 3  # two nouns' and one verb's
    hits = warm.verb_antonyms.cache_info().hits
    assert warm.verb_antonyms("push") == cold.verb_antonyms("push") == ("pull",)
    assert warm.verb_antonyms.cache_info().hits == hits + 1  # answered from what was read
    assert warm.antonyms("empty") == cold.antonyms("empty")
    assert warm.related("dog", "chair") == cold.related("dog", "chair") is False


def test_planner_prepare_warms_the_corpus_words(parser, monkeypatch):
    from tests._planning import corpus_evidence

    evidence = corpus_evidence(
        parser, ["a dog pulling a red skateboard", "two dogs pushing a red cart"]
    )
    asked = []
    monkeypatch.setattr(evidence.wordnet, "warm", lambda *words: asked.append(words))
    evidence.prepare()
    ((nouns, adjectives, verbs),) = asked
    assert {"dog", "skateboard", "cart"} <= set(nouns)
    assert "red" in adjectives
    assert {"pull", "push"} <= set(verbs)


def test_one_verb_lemmatizer():
    import tags.negatives.scenes as scenes

    assert scenes.verb_lemma is verb_lemma
    assert verb_lemma("Throwing") == wordnet().lemma("throwing", "verb")
    if isinstance(wordnet(), WordNet):
        assert {verb_lemma(w) for w in ("throws", "threw", "throwing", "thrown")} == {"throw"}
        assert wordnet().lemma("dogs", "noun") == "dog"
    assert wordnet().lemma("Dogs", "det") == "dogs"  # no WordNet part of speech


def test_both_lemmatizers_share_one_interface():
    from parsers.nlp import Lemmatizer as SpacyLemmatizer

    spacy_tables = SpacyLemmatizer(SimpleNamespace(component_names=[]))  # no tables
    assert isinstance(spacy_tables, Lemmatizer)
    assert isinstance(wordnet(), Lemmatizer)
    assert spacy_tables.lemma("Dogs", "noun") == "dogs"


@pytest.mark.parametrize(
    ("noun", "expected"),
    [
        ("dog", "dogs"),
        ("dress", "dresses"),
        ("bunch", "bunches"),
        ("baby", "babies"),
        ("guy", "guys"),
        ("man", "men"),
        ("gentleman", "gentlemen"),
        ("human", "humans"),
        ("person", "people"),
        ("child", "children"),
        ("sheep", "sheep"),
        ("tuxedo", "tuxedos"),
    ],
)
def test_plural(noun, expected):
    assert plural(noun) == expected


def test_lists_written_by_lemma_hold_both_numbers():
    from parsers.lexicon import ANIMATE, COLLECTIVES, NUMBER_WORDS
    from tags.negatives import lexicon

    assert with_plurals(["lady"]) == {"lady", "ladies"}
    assert {
        "man", "men", "woman", "women", "boy", "boys", "girl", "girls", "lady", "ladies",
        "gentleman", "gentlemen", "baby", "babies", "toddler", "toddlers", "teenager",
        "teenagers",
    } == lexicon.PERSON_NOUNS  # fmt: skip
    assert lexicon.GENDER_COUNTERPARTS["gentlemen"] == "lady"
    assert lexicon.GENDER_COUNTERPARTS["guys"] == "woman"
    assert lexicon.PERSON_AGES["babies"] == 0 and lexicon.PERSON_AGES["guys"] == 3
    assert {"person", "people", "persons", "outfits"} <= lexicon.GENERIC_NOUNS
    assert {"man", "men", "child", "children", "person", "people"} <= ANIMATE
    assert "boys" not in ANIMATE
    assert COLLECTIVES["pieces"] == "piece" and COLLECTIVES["groups"] is None
    assert COLLECTIVES["group"] == "group of"
    # the shared closed classes: number words written once, in parsers.lexicon
    assert {w: NUMBER_WORDS[w] for w in lexicon.NUMBER_VALUES} == lexicon.NUMBER_VALUES
    assert list(lexicon.NUMBER_VALUES) == [
        "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ]  # fmt: skip
    assert {"one", "twelve", "several"} <= lexicon.ATTRIBUTE_CLASSES["number"]
    assert "thirteen" not in lexicon.ATTRIBUTE_CLASSES["number"]
