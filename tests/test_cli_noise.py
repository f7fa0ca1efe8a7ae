"""What the CLI silences and how ``tags report`` names its columns: no transformers load bars,
Accelerate's "Removed shared tensor" note only for the decoders tied by design, distinct
column names for two folders that are both called ``model``."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch
from accelerate import PartialState
from accelerate.utils.other import clean_state_dict_for_safetensors
from research.hf_tiny import make_clip, render_images

from tags.cli import main
from tags.cli.report import column_names, distinct_suffixes
from tags.core.noise import TiedDecoderFilter, quiet_tied_weights


def one_item_suite(root):
    """A SugarCrepe folder of one item, with its image."""
    root.mkdir()
    render_images(1)[0].save(root / "0.jpg")
    item = {"filename": "0.jpg", "caption": "a red dog", "negative_caption": "a blue dog"}
    (root / "replace_obj.json").write_text(json.dumps({"0": item}))
    return root


def saved_warnings(caplog, names: list[str]) -> list[str]:
    """Accelerate's warnings when it saves ``names`` that share one tensor."""
    PartialState()
    shared = torch.zeros(3)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        clean_state_dict_for_safetensors(dict.fromkeys(names, shared))
    return [r.getMessage() for r in caplog.records if "Removed shared tensor" in r.getMessage()]


@pytest.fixture
def tied_filter():
    quiet_tied_weights()
    quiet_tied_weights()  # once only
    logger = logging.getLogger("accelerate.utils.other")
    assert sum(isinstance(f, TiedDecoderFilter) for f in logger.filters) == 1
    yield
    for f in [f for f in logger.filters if isinstance(f, TiedDecoderFilter)]:
        logger.removeFilter(f)


def test_the_tied_decoders_note_is_dropped_and_others_are_kept(caplog, tied_filter):
    tied = [
        "embeddings.word_embeddings.weight",
        "mlm_head.decoder.weight",
        "woc_head.decoder.weight",
    ]
    assert saved_warnings(caplog, tied) == []
    other = ["embeddings.word_embeddings.weight", "mlm_head.decoder.weight", "itm_head.fc.weight"]
    kept = saved_warnings(caplog, other)
    assert len(kept) == 1 and "itm_head.fc.weight" in kept[0]


def test_without_the_filter_accelerate_does_warn(caplog):
    tied = ["embeddings.word_embeddings.weight", "mlm_head.decoder.weight"]
    assert len(saved_warnings(caplog, tied)) == 1  # the filter above is what removes it


def test_model_loads_draw_no_transformers_bar(tmp_path, capsys):
    model = make_clip(tmp_path / "clip")
    suite = one_item_suite(tmp_path / "s")
    capsys.readouterr()
    argv = ["evaluate", "--model", str(model), "--suite", f"sugarcrepe={suite}", "--images"]
    assert main([*argv, str(suite), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "Loading weights" not in err, err


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["runs/a/model", "runs/b/model"], ["a/model", "b/model"]),
        (["x/run1/ckpt/model", "y/run1/ckpt/model"], ["x/run1/ckpt/model", "y/run1/ckpt/model"]),
        (["runs/model", "start"], ["model", "start"]),
        (["org/clip", "org/clip"], None),
    ],
)
def test_distinct_suffixes(paths, expected):
    assert distinct_suffixes(paths) == expected


def test_column_names():
    both = {"baseline": "runs/a/model", "model": "runs/b/model"}
    assert column_names(both, {}) == {"baseline": "a/model", "model": "b/model"}
    assert column_names(both, {"model": "tuned"}) == {"baseline": "model", "model": "tuned"}
    same = {"baseline": "runs/model", "model": "runs/model"}
    assert column_names(same, {}) == {"baseline": "baseline: model", "model": "model: model"}


def test_report_names_two_model_folders_apart(tmp_path):
    first = make_clip(tmp_path / "start" / "model")
    shutil.copytree(first, tmp_path / "tuned" / "model")
    suite = one_item_suite(tmp_path / "s")
    argv = ["report", "--model", str(tmp_path / "tuned" / "model"), "--baseline", str(first)]
    argv += ["--suite", f"sugarcrepe={suite}", "--images", str(suite)]
    argv += ["--out", str(tmp_path / "r"), "--quiet"]
    assert main(argv) == 0
    table = (tmp_path / "r" / "report.md").read_text()
    assert "# tuned/model vs start/model" in table
    assert "| start/model | tuned/model |" in table
