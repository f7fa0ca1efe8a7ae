"""L_MLM on scene-graph-unit masked positives (``tags_dc.mlm_masking: unit``)."""

from __future__ import annotations

import json
import random

import pytest
import torch
from _training_utils import tiny_config

from tags.backends.masked_lm import load_tokenizer
from tags.modeling import tiny_mlm_path
from tags.training import training_function
from tags.training.losses import IGNORE_INDEX
from tags.training.unit_masking import UnitMLMMasker, choose_units, unit_positions


class FixedUnits:
    """A parser stand-in: the same units for every caption."""

    def __init__(self, units):
        self.units_ = units

    def parse(self, text):
        return type("Graph", (), {"units": lambda _self: self.units_})()


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(tiny_mlm_path())


def test_unit_positions_cover_whole_units_and_skip_special_tokens():
    offsets = [(0, 0), (0, 1), (2, 5), (6, 12), (13, 14), (15, 20), (0, 0)]  # a man riding a horse
    units = [("object", ((2, 5),)), ("relation", ((6, 12),)), ("object", ((15, 20),))]
    assert unit_positions(units, offsets) == [[2], [3], [5]]
    assert unit_positions([("object", ((2, 5),)), ("object", ((2, 5),))], offsets) == [[2]]
    rng = random.Random(0)
    assert len(choose_units([[2], [3], [5]], 1, rng)) == 1  # at least one, within the budget
    assert choose_units([[2, 3], [5]], 1, rng) in ([2, 3], [5])  # the first unit is always taken


def test_masker_masks_chosen_units_with_mask_and_labels_them(tokenizer):
    text = "a man riding a horse"
    units = [("object", ((2, 5),)), ("relation", ((6, 12),)), ("object", ((15, 20),))]
    masker = UnitMLMMasker(tokenizer, ratio=1.0, parser=FixedUnits(units))
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    mask_id = tokenizer.mask_token_id
    masked, labels, empty = masker(ids, [text], [0], 16, mask_id)
    words = tokenizer.convert_ids_to_tokens(labels[labels != IGNORE_INDEX].tolist())
    assert empty == [] and words == ["man", "riding", "horse"]  # budget 5 tokens: all units
    assert (masked[labels != IGNORE_INDEX] == mask_id).all()
    assert torch.equal(masked[labels == IGNORE_INDEX], ids[labels == IGNORE_INDEX])
    one = UnitMLMMasker(tokenizer, ratio=0.15, parser=FixedUnits(units))
    _, labels, _ = one(ids, [text], [3], 16, mask_id)
    assert (labels != IGNORE_INDEX).sum() == 1  # 15% of 5 tokens: one unit
    _, _, empty = UnitMLMMasker(tokenizer, parser=FixedUnits([]))(ids, [text], [0], 16, mask_id)
    assert empty == [0]  # no unit: the caller falls back to BERT masking


def test_training_with_unit_masked_mlm(tmp_path, monkeypatch):
    calls = []
    original = UnitMLMMasker.__call__

    def spy(self, input_ids, texts, seeds, max_length, mask_token_id):
        out = original(self, input_ids, texts, seeds, max_length, mask_token_id)
        calls.append((texts, out[1]))
        return out

    monkeypatch.setattr(UnitMLMMasker, "__call__", spy)
    run = tmp_path / "run"
    cfg = tiny_config(
        "tags-dc", run, "phases.0.steps=1", "tags_dc.mlm_masking=unit",
        "tags_dc.synthetic.source=none", "phases.0.weights={mlm: 1.0}",
    )  # fmt: skip
    training_function(cfg)
    ((texts, labels),) = calls
    tok = load_tokenizer(tiny_mlm_path())
    for text, row in zip(texts, labels):
        masked_words = tok.convert_ids_to_tokens(row[row != IGNORE_INDEX].tolist())
        assert masked_words and all(w.lstrip("#") in text for w in masked_words)
    row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert row["loss/mlm"] > 0
