"""Parse snapshots (parsers/tokens.py) mirror the spaCy tokens the rules read."""

import pytest

from parsers.tokens import snapshot


@pytest.fixture(scope="module")
def nlp(parser):
    """The spaCy pipeline of the session's default parser (tests/conftest.py), as
    ``load_pipeline()`` gives it."""
    return parser.nlp


@pytest.mark.parametrize(
    "caption",
    [
        "two brown dogs sitting in bleachers watching a baseball game",
        "A man, who is riding a horse, waves at the crowd .",
        "the sofa the man is sitting on is brown",
        "",
    ],
)
def test_snapshot_matches_spacy(nlp, caption):
    doc = nlp(caption)
    lite = snapshot(doc)
    assert len(lite) == len(doc)
    for tok, mine in zip(doc, lite):
        assert (mine.i, mine.text, mine.lower_, mine.tag_, mine.dep_, mine.idx) == (
            tok.i, tok.text, tok.lower_, tok.tag_, tok.dep_, tok.idx,
        )  # fmt: skip
        assert mine.head.i == tok.head.i
        assert [c.i for c in mine.children] == [c.i for c in tok.children]
        assert [c.i for c in mine.lefts] == [c.i for c in tok.lefts]
        assert [c.i for c in mine.rights] == [c.i for c in tok.rights]
        assert [c.i for c in mine.subtree] == [c.i for c in tok.subtree]
        assert len(mine) == len(tok)
        assert mine.doc is lite
