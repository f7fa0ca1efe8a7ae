"""Heads are never silently random: ``tags explain`` and ``tags generate --model`` refuse a
checkpoint whose needed heads (ITM, MLM, WoD, WoC) were not saved, or saved but never
trained, for TagsModel and BLIP alike, with one line naming the head and the recipe that
trains it; a tokenizer without a drawable token is refused before TAGS-DC training starts."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from research.hf_tiny import make_blip, make_tags, render_images
from safetensors.torch import load_file, save_file

from tags.backends.masked_lm import load_tokenizer
from tags.cli import main
from tags.modeling import tiny_mlm_path


def drop_weights(path: Path, prefix: str) -> None:
    """Remove a head's tensors from a saved checkpoint (as if it never had that head)."""
    file = path / "model.safetensors"
    state = load_file(str(file))
    assert any(k.startswith(prefix) for k in state)
    save_file(
        {k: v for k, v in state.items() if not k.startswith(prefix)}, str(file), {"format": "pt"}
    )


def one_error_line(err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith(("error:", "tags "))]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), lines[0]


# ---------------------------------------------------------------------- BLIP
@pytest.fixture(scope="module")
def blip_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("heads")
    make_blip(root / "blip")
    render_images(1, seed=3)[0].save(root / "img.png")
    return root


def blip_with_heads(root: Path, target: Path, names: tuple[str, ...], trained=None) -> Path:
    from tags.backends import load_backend

    backend = load_backend(root / "blip")
    backend.ensure_heads(names)
    if trained is not None:
        backend.mark_trained_heads(trained)
    backend.save_pretrained(target)
    return target


def explain_blip(model: Path, root: Path) -> list[str]:
    return ["explain", "--model", str(model), "--images", str(root / "img.png"), "--caption",
            "a red dog", "--device", "cpu"]  # fmt: skip


def test_explain_refuses_a_blip_pretrain_checkpoint_with_the_mlm_head_only(
    blip_root, tmp_path, capsys
):
    from tags.backends.heads import TagsHeads

    # what the pretrain recipe writes: the model and tags_heads.json listing only "mlm"
    model = tmp_path / "pre"
    from tags.backends import load_backend

    load_backend(blip_root / "blip").save_pretrained(model)
    TagsHeads(32, 30522, ("mlm",)).save(model)  # sizes are not read by the check
    assert json.loads((model / "tags_heads.json").read_text())["names"] == ["mlm"]
    assert main(explain_blip(model, blip_root)) == 2
    one_error_line(capsys.readouterr().err, "WOD head", "not saved", "mlm", "tags-dc", "wod > 0")


def test_explain_refuses_blip_heads_saved_but_never_trained(blip_root, tmp_path, capsys):
    nsg = blip_with_heads(blip_root, tmp_path / "nsg", ("mlm", "wod", "woc"), ("itm", "mlm"))
    record = json.loads((nsg / "tags_heads.json").read_text())
    assert record["names"] == ["mlm", "wod", "woc"] and record["trained"] == ["mlm"]
    assert main(explain_blip(nsg, blip_root)) == 2
    one_error_line(capsys.readouterr().err, "WOD head", "never trained", "tags-dc")
    full = blip_with_heads(blip_root, tmp_path / "dc", ("mlm", "wod", "woc"), ("mlm", "wod", "woc"))
    assert main(explain_blip(full, blip_root)) == 0


def test_generate_refuses_a_blip_checkpoint_without_itm_weights(blip_root, tmp_path, capsys):
    import shutil

    model = tmp_path / "no-itm"
    shutil.copytree(blip_root / "blip", model)
    drop_weights(model, "itm_head.")
    captions = tmp_path / "caps.jsonl"
    captions.write_text(
        json.dumps({"image_id": 0, "caption": "a red dog runs", "filename": "img.png"}) + "\n"
    )
    argv = ["generate", "--captions", str(captions), "--out", str(tmp_path / "neg.jsonl"),
            "--model", str(model), "--images", str(blip_root), "--k", "2", "--l", "2",
            "--masking", "word", "--no-progress"]  # fmt: skip
    assert main(argv) == 2  # a user error: one line, exit 2
    one_error_line(capsys.readouterr().err, "ITM head", "not in the checkpoint", "pretrain")


def test_trainable_module_still_adds_heads_for_training(blip_root):
    """Training creates missing heads on purpose: only the readers check."""
    from tags.backends import load_backend
    from tags.backends.heads import require_heads

    backend = load_backend(blip_root / "blip")
    backend.trainable_module()
    with pytest.raises(ValueError, match="randomly initialised"):  # fresh: never saved
        require_heads(backend, ("wod",), "explain")
    backend.mark_trained_heads(("wod",))
    require_heads(backend, ("wod",), "explain")


# ---------------------------------------------------------------------- TagsModel
@pytest.fixture
def tags_dir(tmp_path) -> Path:
    path = make_tags(tmp_path / "tags")
    feats = tmp_path / "feats"
    feats.mkdir()
    np.savez(feats / "0.npz", features=np.ones((3, 8), np.float32),
             boxes=np.array([[0, 0, 10, 10]] * 3, np.float32), width=20, height=20)  # fmt: skip
    return path


def explain_tags(model: Path) -> list[str]:
    return ["explain", "--model", str(model), "--features", str(model.parent / "feats"),
            "--image-id", "0", "--caption", "a red dog", "--device", "cpu"]  # fmt: skip


def test_explain_refuses_a_tags_model_whose_wod_and_woc_were_never_trained(tags_dir, capsys):
    config = json.loads((tags_dir / "config.json").read_text())
    config["trained_heads"] = ["itm", "mlm"]  # what a pretrain run records
    (tags_dir / "config.json").write_text(json.dumps(config))
    assert main(explain_tags(tags_dir)) == 2
    one_error_line(capsys.readouterr().err, "WOD head", "never trained", "trained_heads: itm, mlm")


def test_explain_refuses_a_tags_model_missing_woc_weights(tags_dir, capsys):
    assert main(explain_tags(tags_dir)) == 0  # no record: the saved heads are trusted
    capsys.readouterr()
    drop_weights(tags_dir, "woc_head.")
    assert main(explain_tags(tags_dir)) == 2
    one_error_line(capsys.readouterr().err, "WOC head", "not in the checkpoint", "woc > 0")


def test_generate_refuses_a_tags_model_without_mlm_weights(tags_dir):
    from tags.backends import BackendError
    from tags.backends.tags_model import load_tags_model

    load_tags_model(tags_dir, "cpu")
    drop_weights(tags_dir, "mlm_head.")
    with pytest.raises(BackendError, match=r"MLM head.*not in the checkpoint.*pretrain recipe"):
        load_tags_model(tags_dir, "cpu")


def test_static_generator_refuses_a_tags_model_without_mlm_weights(tags_dir):
    from tags.modeling import StaticMLMGenerator

    StaticMLMGenerator.from_pretrained(tags_dir)
    drop_weights(tags_dir, "mlm_head.")
    with pytest.raises(ValueError, match=r"static generator needs a trained MLM head"):
        StaticMLMGenerator.from_pretrained(tags_dir)


def test_recipes_record_the_heads_their_phases_train(tags_dir):
    from tags.backends import load_backend
    from tags.backends.heads import require_heads
    from tags.training.recipes.pretrain import PretrainRecipe
    from tags.training.recipes.tags_dc import TagsDCRecipe

    def record(recipe: type, phases: list[dict], index: int) -> list[str] | None:
        backend = load_backend(tags_dir)
        fake = SimpleNamespace(
            config=SimpleNamespace(phases=[SimpleNamespace(weights=w) for w in phases]),
            backend=backend,
            head_terms=recipe.head_terms,
            weights=lambda phase: {**recipe.default_weights, **phase.weights},
        )
        recipe.record_trained_heads(fake, index)
        return backend.model.config.trained_heads

    assert record(PretrainRecipe, [{}], 0) == ["itm", "mlm"]
    nsg, nsgdc = {}, {"wod": 1e-3, "woc": 1e-3}
    assert record(TagsDCRecipe, [nsg, nsgdc], 0) == ["itm", "mlm"]
    assert record(TagsDCRecipe, [nsg, nsgdc], 1) == ["itm", "mlm", "wod", "woc"]
    backend = load_backend(tags_dir)
    backend.mark_trained_heads(("itm", "mlm"))
    backend.model.save_pretrained(tags_dir)
    with pytest.raises(ValueError, match="WOD head"):
        require_heads(load_backend(tags_dir), ("itm", "wod"), "explain")


# ---------------------------------------------------------------------- tokenizer
def degenerate_tokenizer(path: Path):
    from transformers import BertTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "[unused0]": 5}
    BertTokenizerFast(vocab=vocab).save_pretrained(path)
    return load_tokenizer(path)


def test_a_tokenizer_without_a_drawable_token_is_named_before_training(tmp_path):
    from tags.training.config import ConfigError
    from tags.training.synthetic import EngineSource

    tokenizer = degenerate_tokenizer(tmp_path / "tok")
    config = SimpleNamespace(masking="word")
    with pytest.raises(ConfigError, match=f"{tmp_path / 'tok'}.*no token a refill may draw"):
        EngineSource(tokenizer, config)
    EngineSource(load_tokenizer(tiny_mlm_path()), config)  # a real vocabulary is fine
