"""Issue "every bad input": ``tags train`` on a damaged input exits 2 with one line naming
the file (or key) and what to do, no traceback (``tags --debug`` shows it), and a run that
failed its input leaves nothing in ``output_dir`` (the same command works once it is fixed)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from _training_utils import tiny_config

from tags.cli import main as cli_main
from tags.data import write_synthetic_dataset
from tags.training.config import to_dict
from tags.training.loop import CHECKPOINTS


def train(tmp_path: Path, capsys, *overrides: str, config: str | None = None) -> tuple[int, str]:
    """``tags train`` on the tiny vse config with ``output_dir`` tmp_path/run: (code, the
    one ``tags train:`` line of stderr)."""
    path = tmp_path / "c.yaml"
    if config is None:
        path.write_text(yaml.safe_dump(to_dict(tiny_config("vse", tmp_path / "run"))))
    else:
        path.write_text(config)
    code = cli_main(["train", "--config", str(path), *overrides])
    err = capsys.readouterr().err
    # (a third-party logger writing to a stream pytest closed reports a "Logging error")
    err = re.sub(r"--- Logging error ---\n.*?\nArguments: [^\n]*\n", "", err, flags=re.S)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("tags train:")]
    assert len(lines) == (1 if code else 0), err
    return code, lines[0] if lines else ""


def _precomp(edit: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], str]:
    def damage(features: Path) -> str:
        np.save(features, edit(np.load(features)))
        return str(features)

    return damage


def _truncate(path: Path) -> str:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return str(path)


def _npz(edit: Callable[[dict], None]) -> Callable[[Path], str]:
    def damage(features: Path) -> str:
        path = features / "3.npz"
        arrays = dict(np.load(path))
        edit(arrays)
        np.savez(path, **arrays)
        return str(path)

    return damage


def _nan(a: np.ndarray) -> np.ndarray:
    a[2, 0, 0] = np.nan
    return a


def _npz_nan(d: dict) -> None:
    d["features"][0, 0] = np.inf


def _npz_strings(d: dict) -> None:
    d["features"] = d["features"].astype("U8")


def _npz_empty(d: dict) -> None:
    d["features"], d["boxes"] = d["features"][:0], d["boxes"][:0]


FEATURE_DAMAGE = {
    "precomp truncated": ("precomp", _truncate, "not a readable .npy"),
    "precomp NaN": ("precomp", _precomp(_nan), "row 2: features hold NaN"),
    "precomp strings": ("precomp", _precomp(lambda a: a.astype("U8")), "expected float"),
    "precomp no regions": ("precomp", _precomp(lambda a: a[:, :0]), "R >= 1"),
    "npz missing": ("karpathy", lambda f: (f / "3.npz").unlink() or "3.npz", "no features file"),
    "npz truncated": ("karpathy", lambda f: _truncate(f / "3.npz"), "not a readable .npz"),
    "npz inf": ("karpathy", _npz(_npz_nan), "NaN or infinite"),
    "npz strings": ("karpathy", _npz(_npz_strings), "not floating point"),
    "npz no regions": ("karpathy", _npz(_npz_empty), "regions >= 1"),
}


@pytest.mark.parametrize("case", FEATURE_DAMAGE)
def test_damaged_feature_files_exit_2_in_one_line_and_leave_nothing(tmp_path, capsys, case):
    """Before: a traceback (BadZipFile, the model's "region_features contain NaN"), exit 1,
    and ``config.yaml`` left in ``output_dir`` (the next run was refused: another run)."""
    layout, damage, message = FEATURE_DAMAGE[case]
    paths = write_synthetic_dataset(tmp_path / "data", num_images=8, layout=layout)
    named = damage(paths["features"])
    data = (f"data.captions={paths['captions']}", f"data.features={paths['features']}")
    code, line = train(tmp_path, capsys, *data)
    assert code == 2 and message in line and named in line, line
    assert not (tmp_path / "run").exists()
    shutil.rmtree(tmp_path / "data")  # fixed: the same command runs
    write_synthetic_dataset(tmp_path / "data", num_images=8, layout=layout)
    assert train(tmp_path, capsys, *data)[0] == 0


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory) -> Path:
    from tags.backends.masked_lm import load_tokenizer
    from tags.modeling import TagsConfig, TagsModel, tiny_mlm_path

    tokenizer = load_tokenizer(tiny_mlm_path())
    path = tmp_path_factory.mktemp("model")
    TagsModel(
        TagsConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
            vocab_size=len(tokenizer), max_position_embeddings=64, region_feature_size=16,
            mask_token_id=tokenizer.mask_token_id,
        )
    ).save_pretrained(path)  # fmt: skip
    tokenizer.save_pretrained(path)
    return path


def _cut_weights(d: Path) -> None:
    _truncate(d / "model.safetensors")


def _wider_config(d: Path) -> None:
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "hidden_size": 64}))


MODEL_DAMAGE = {
    "truncated safetensors": (_cut_weights, "deserializing header"),
    "config.json sizes edited": (_wider_config, "config.json does not match the weights"),
    "garbage safetensors": (lambda d: (d / "model.safetensors").write_bytes(b"x" * 64), "header"),
    "config.json not JSON": (lambda d: (d / "config.json").write_text("{x"), "not valid JSON"),
    "config.json a list": (lambda d: (d / "config.json").write_text("[1]"), "not a JSON object"),
}


@pytest.mark.parametrize("case", MODEL_DAMAGE)
def test_damaged_model_directories_are_named(tmp_path, capsys, saved_model, case):
    damage, message = MODEL_DAMAGE[case]
    model = tmp_path / "model"
    shutil.copytree(saved_model, model)
    damage(model)
    args = ("model.source=tags", f"model.path={model}", "model.overrides={}")
    code, line = train(tmp_path, capsys, *args)
    assert code == 2 and f"model.path {model}" in line and message in line, line
    assert "save_pretrained" in line and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("model.dropout=2",), r"model.dropout must lie in [0, 1), got 2.0"),
        (("model.dropout=1",), r"model.dropout must lie in [0, 1)"),
        (("tags_dc.mlm_probability=1.5",), r"tags_dc.mlm_probability must lie in [0, 1]"),
        (("resume_from=/no/such/dir",), "resume_from: /no/such/dir is not a checkpoint dir"),
    ],
)
def test_bad_settings_are_one_line(tmp_path, capsys, overrides, message):
    code, line = train(tmp_path, capsys, *overrides)
    assert code == 2 and message in line, line
    assert not (tmp_path / "run").exists()


def test_resume_from_a_folder_that_is_not_a_complete_checkpoint(tmp_path, capsys):
    """Before: ``FileNotFoundError`` traceback, and ``config.yaml`` written first."""
    half = tmp_path / "other" / CHECKPOINTS / "step_00000002"
    half.mkdir(parents=True)  # killed while saving: no COMPLETE marker
    code, line = train(tmp_path, capsys, f"resume_from={half}")
    assert code == 2 and "not a complete checkpoint (no COMPLETE marker" in line, line
    assert "resume_from=latest" in line and not (tmp_path / "run").exists()


def test_unparseable_yaml_names_the_line(tmp_path, capsys):
    code, line = train(tmp_path, capsys, config="seed: 1\nphases: [a\n  b: :\n")
    assert code == 2 and "c.yaml:3: not valid YAML" in line, line
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert cli_main(["train", "--config", str(binary)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "binary.yaml: not a text (UTF-8) file" in err, err


@pytest.mark.parametrize(
    "content",
    [b"\x00\x01\xff\xfebinary", b'{"caption_id": 1}\n{not json\n'],
    ids=["binary", "json"],
)
def test_garbage_negatives_files_are_named(tmp_path, capsys, content):
    negatives = tmp_path / "negatives.jsonl"
    negatives.write_bytes(content)
    args = (f"data.negatives={negatives}", "vse.synthetic_negatives=1")
    code, line = train(tmp_path, capsys, *args)
    assert code == 2 and f"data.negatives: {negatives}" in line, line
    assert not (tmp_path / "run").exists()


def test_debug_shows_the_traceback(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(to_dict(tiny_config("vse", tmp_path / "run"))))
    from tags.training import ConfigError

    with pytest.raises(ConfigError, match=r"model\.dropout"):
        cli_main(["--debug", "train", "--config", str(path), "model.dropout=2"])


def test_backend_directories_and_images(tmp_path, capsys):
    """A CLIP directory without its processor or with cut weights, and unreadable images
    with ``on_bad_image=error``: one line each (the bad images listed on it)."""
    from research.hf_tiny import MAKERS

    good = MAKERS["clip"](tmp_path / "clip")
    images = tmp_path / "images"
    images.mkdir()
    for i in range(4):
        (images / f"{i}.jpg").write_bytes(b"not an image")
    captions = tmp_path / "caps.jsonl"
    rows = [{"image_id": i, "filename": f"{i}.jpg", "caption": f"a dog {i}"} for i in range(4)]
    captions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = (
        "model.source=backend", "model.overrides={}", f"data.captions={captions}",
        "data.format=jsonl", f"data.images={images}", "data.features=", "batch_size=2",
    )  # fmt: skip
    no_processor = tmp_path / "no_processor"
    shutil.copytree(good, no_processor)
    (no_processor / "processor_config.json").unlink()
    code, line = train(tmp_path, capsys, *base, f"model.path={no_processor}")
    assert code == 2 and "no image processor" in line and "{family}" not in line, line
    cut = tmp_path / "cut"
    shutil.copytree(good, cut)
    _cut_weights(cut)
    code, line = train(tmp_path, capsys, *base, f"model.path={cut}")
    assert code == 2 and f"model.path {cut}: cannot be read" in line, line
    edited = tmp_path / "edited"  # a config.json whose sizes do not match the weights
    shutil.copytree(good, edited)
    config = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, "projection_dim": 24}))
    code, line = train(tmp_path, capsys, *base, f"model.path={edited}")
    assert code == 2 and f"model.path {edited}: config.json does not match" in line, line
    code, line = train(tmp_path, capsys, *base, f"model.path={good}", "data.on_bad_image=error")
    assert code == 2 and "4 of 4 images could not be read" in line and "3.jpg" in line, line
    assert not (tmp_path / "run").exists()
