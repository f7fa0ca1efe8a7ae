"""``tags generate --model DIR --images ROOT``: candidates ranked by the model's own pair
score against the real image (BLIP ITM / CLIP cosine), refills from its MLM head if any."""

from __future__ import annotations

import json

import pytest
import torch
from research.hf_tiny import MAKERS, render_images

from tags.cli import main

CAPTIONS = [
    "a red dog runs on the grass",
    "two cats sit near a table",
    "a man holding a small ball",
]
FAST = ["--k", "3", "--l", "3", "--top-m", "4", "--masking", "word", "--no-progress"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen")
    dirs = {name: MAKERS[name](root / name) for name in ("blip", "clip")}
    images = root / "images"
    images.mkdir()
    lines = []
    for k, image in enumerate(render_images(len(CAPTIONS), seed=5)):
        image.save(images / f"img{k}.png")
        lines.append({"image_id": k, "caption": CAPTIONS[k], "filename": f"img{k}.png"})
    captions = root / "caps.jsonl"
    captions.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return root, dirs, images, captions


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("name", ["blip", "clip"])
def test_vocab_refills_ranked_by_the_model_against_the_image(setup, name, tmp_path, capsys):
    from tags.backends import load_backend

    _, dirs, images, captions = setup
    out = tmp_path / "neg.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out), "--model", str(dirs[name])]
    assert main([*args, "--images", str(images), *FAST]) == 0
    assert "corpus vocabulary" in capsys.readouterr().err
    rows = records(out)
    assert rows and {r["caption_id"] for r in rows} <= {0, 1, 2}
    backend = load_backend(dirs[name])
    from PIL import Image

    for cid in {r["caption_id"] for r in rows}:
        mine = [r for r in rows if r["caption_id"] == cid]
        scores = [r["score"] for r in mine]
        assert scores == sorted(scores, reverse=True)
        # the stored score is the model's matching probability with this caption's image
        image = Image.open(images / f"img{cid}.png").convert("RGB")
        with torch.no_grad():
            expected = backend.pair_probability(
                backend.score_pairs(
                    backend.text_inputs([mine[0]["negative"]]), backend.image_inputs([image])
                )
            )
        assert mine[0]["score"] == pytest.approx(float(expected), abs=1e-5)


def test_trained_blip_heads_refill_and_missing_image_is_named(setup, tmp_path, capsys):
    from tags.backends import load_backend

    _, dirs, images, captions = setup
    backend = load_backend(dirs["blip"])
    backend.ensure_heads()
    backend.save_pretrained(tmp_path / "blip-heads")
    out = tmp_path / "neg.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out)]
    args += ["--model", str(tmp_path / "blip-heads"), "--images", str(images), *FAST]
    assert main(args) == 0
    assert "its MLM head" in capsys.readouterr().err
    assert records(out)
    (images / "img1.png").rename(tmp_path / "moved.png")
    try:
        assert main([*args, "--overwrite"]) == 2
        err = capsys.readouterr().err
        assert "image 1" in err and "img1.png" in err
    finally:
        (tmp_path / "moved.png").rename(images / "img1.png")


@pytest.mark.parametrize("where", ["dotdot", "absolute"])
def test_image_names_outside_the_root_are_refused_unless_allowed(setup, tmp_path, capsys, where):
    root, dirs, images, _ = setup
    outside = root / "outside.png"
    render_images(1, seed=9)[0].save(outside)
    name = "../outside.png" if where == "dotdot" else str(outside)
    lines = [{"image_id": 0, "caption": CAPTIONS[0], "filename": name}]
    captions = tmp_path / "caps.jsonl"
    captions.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "neg.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out)]
    args += ["--model", str(dirs["clip"]), "--images", str(images), *FAST]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"image file name {name!r} points outside the image root" in err
    assert "--allow-outside-root" in err and "Traceback" not in err
    assert main([*args, "--overwrite", "--allow-outside-root"]) == 0
    assert records(out)


def test_confine_to_root_refuses_a_symlink_out_of_the_images(setup, tmp_path, capsys):
    dirs = setup[1]
    secret = tmp_path / "secret.png"
    render_images(1, seed=8)[0].save(secret)
    tree = tmp_path / "untrusted"
    tree.mkdir()
    (tree / "leak.png").symlink_to(secret)
    lines = [{"image_id": 0, "caption": CAPTIONS[0], "filename": "leak.png"}]
    captions = tmp_path / "caps.jsonl"
    captions.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "neg.jsonl"
    args = ["generate", "--captions", str(captions), "--out", str(out)]
    args += ["--model", str(dirs["clip"]), "--images", str(tree), *FAST]
    assert main([*args, "--confine-to-root"]) == 2
    err = capsys.readouterr().err
    assert "'leak.png' leads outside the image root" in err and str(secret) in err
    assert "--confine-to-root" in err and "Traceback" not in err
    assert not out.exists()
    assert main(args) == 0  # followed by default (the user's own tree)
    assert records(out)


@pytest.mark.parametrize("command", ["generate", "evaluate", "report", "explain"])
def test_every_command_reading_images_can_confine_them(command):
    from tags.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]
    options = {o for action in sub._actions for o in action.option_strings}
    assert {"--images", "--confine-to-root"} <= options
