"""``tags evaluate --images`` on raw images with BLIP / CLIP / SigLIP directories."""

from __future__ import annotations

import json

import pytest
import torch
from research.hf_tiny import MAKERS, render_images

from tags.cli import main
from tags.evaluation import retrieval_metrics

CAPTIONS = [
    ["a red dog runs on the grass", "a dog on grass"],
    ["two cats sit near a table", "cats near a table", "a small cat"],
    ["a man holding a ball", "a man with a ball"],
    ["a blue car on the street", "a car"],
    ["a woman is holding a green ball", "a woman with a ball"],
]


def write_coco_like(root, split="test"):
    """COCO layout: ROOT/val2014/<file>, Karpathy JSON naming the file only."""
    (root / "val2014").mkdir(parents=True)
    images = []
    for k, image in enumerate(render_images(len(CAPTIONS))):
        name = f"COCO_val2014_{k:012d}.jpg"
        image.save(root / "val2014" / name)
        images.append(
            {
                "imgid": k,
                "split": split,
                "filepath": "val2014",
                "filename": name,
                "sentences": [{"raw": c} for c in CAPTIONS[k]],
            }
        )
    path = root / "dataset_coco.json"
    path.write_text(json.dumps({"images": images}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("evimg")
    dirs = {name: make(root / name) for name, make in MAKERS.items()}
    captions = write_coco_like(root / "coco")
    return root, dirs, captions


def expected_matrix(name, model_dir, image_dir):
    """All-pairs score matrix straight from the HF model's own forward (same files)."""
    from PIL import Image

    from tags.backends import load_backend

    backend = load_backend(model_dir)
    model = backend.model.eval()
    texts = [c for group in CAPTIONS for c in group]
    files = sorted(image_dir.glob("*.jpg"))
    pixels = backend.image_inputs([Image.open(f).convert("RGB") for f in files])["pixel_values"]
    tok = backend.text_inputs(texts)
    with torch.no_grad():
        if name in ("blip", "blip-2"):
            rows = []
            for i in range(pixels.shape[0]):
                images = pixels[i : i + 1].expand(len(texts), -1, -1, -1)
                if name == "blip":
                    out = model(**tok, pixel_values=images).itm_score
                else:
                    out = model(
                        **tok, pixel_values=images, use_image_text_matching_head=True
                    ).logits_per_image
                rows.append(out[:, 1] - out[:, 0])
            return torch.stack(rows)
        return model(pixel_values=pixels, **tok).logits_per_image


def run_cli(setup, name, mode, tmp_path, *extra):
    root, dirs, captions = setup
    out = tmp_path / f"{name}-{mode}.json"
    code = main(
        [
            "evaluate", "--model", str(dirs[name]), "--captions", str(captions),
            "--images", str(root / "coco"), "--split", "test", "--mode", mode,
            "--device=cpu", "--out", str(out), *extra,
        ]
    )  # fmt: skip
    return code, out


@pytest.mark.parametrize("name", ["blip", "blip-2", "clip", "siglip"])
def test_cross_scores_equal_model_forward_and_cli_reports_them(setup, name, tmp_path):
    from tags.backends import load_backend
    from tags.evaluation.images import load_image_retrieval_split
    from tags.evaluation.scoring import compute_scores

    root, dirs, captions = setup
    backend = load_backend(dirs[name])
    images, texts, notes = load_image_retrieval_split(captions, root / "coco", backend)
    assert notes == [] and (len(images), len(texts)) == (5, 11)
    sims, _ = compute_scores(backend, images, texts, "cross", batch_size=4)
    expected = expected_matrix(name, dirs[name], root / "coco" / "val2014")
    torch.testing.assert_close(sims, expected, rtol=1e-4, atol=1e-5)

    code, out = run_cli(setup, name, "cross", tmp_path, "--batch-size", "4")
    assert code == 0
    report = json.loads(out.read_text())
    assert report["backend"] == name and report["n_images"] == 5 and report["n_texts"] == 11
    assert report["metrics"] == pytest.approx(retrieval_metrics(sims, texts.txt2img))


def test_blip_two_stage_full_topk_equals_cross_and_dual_differs(setup, tmp_path):
    _, cross = run_cli(setup, "blip", "cross", tmp_path)
    _, two = run_cli(setup, "blip", "two-stage", tmp_path, "--topk", "20")
    _, dual = run_cli(setup, "blip", "dual", tmp_path)
    cross, two, dual = (json.loads(p.read_text())["metrics"] for p in (cross, two, dual))
    assert two == pytest.approx(cross)
    assert dual["i2t_meanr"] != cross["i2t_meanr"] or dual["t2i_meanr"] != cross["t2i_meanr"]


def test_blip2_dual_equals_model_itc(setup, tmp_path):
    from tags.backends import load_backend
    from tags.evaluation.images import load_image_retrieval_split
    from tags.evaluation.scoring import compute_scores

    root, dirs, captions = setup
    backend = load_backend(dirs["blip-2"])
    images, texts, _ = load_image_retrieval_split(captions, root / "coco", backend)
    sims, _ = compute_scores(backend, images, texts, "dual", batch_size=4)
    with torch.no_grad():
        itc = backend.model.eval()(
            pixel_values=images.pixel_values,
            input_ids=texts.input_ids,
            attention_mask=texts.attention_mask,
            use_image_text_matching_head=False,
        ).logits_per_image
    torch.testing.assert_close(sims, itc, rtol=1e-4, atol=1e-5)
    code, out = run_cli(setup, "blip-2", "two-stage", tmp_path, "--topk", "3")
    assert code == 0 and json.loads(out.read_text())["backend"] == "blip-2"


def test_clip_cross_and_two_stage_rank_like_dual(setup, tmp_path, capsys):
    _, dual = run_cli(setup, "clip", "dual", tmp_path)
    _, two = run_cli(setup, "clip", "two-stage", tmp_path, "--topk", "2")
    assert "no cross-encoder" in capsys.readouterr().out
    assert json.loads(two.read_text())["metrics"] == pytest.approx(
        json.loads(dual.read_text())["metrics"]
    )


def test_bad_images_are_named_then_skipped(setup, tmp_path, capsys):
    _, dirs, _ = setup
    captions = write_coco_like(tmp_path / "coco")
    (tmp_path / "coco" / "val2014" / "COCO_val2014_000000000001.jpg").write_bytes(b"not a jpeg")
    (tmp_path / "coco" / "val2014" / "COCO_val2014_000000000003.jpg").unlink()
    args = [
        "evaluate", "--model", str(dirs["clip"]), "--captions", str(captions),
        "--images", str(tmp_path / "coco"), "--mode", "dual", "--device=cpu",
    ]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "2 of 5 images could not be read" in err
    assert "COCO_val2014_000000000001.jpg" in err and "COCO_val2014_000000000003.jpg" in err
    out = tmp_path / "m.json"
    assert main([*args, "--on-bad-image", "skip", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert (report["n_images"], report["n_texts"]) == (3, 6)
    assert sum("skipped image 1" in n for n in report["notes"]) == 1


def test_wrong_inputs_give_clear_errors(setup, tmp_path, capsys):
    root, dirs, captions = setup
    base = ["evaluate", "--model", str(dirs["blip"]), "--captions", str(captions), "--device=cpu"]
    assert main(base) == 2
    assert "exactly one of --features and --images" in capsys.readouterr().err
    assert main([*base, "--images", str(tmp_path / "none")]) == 2
    assert "image directory not found" in capsys.readouterr().err
    missing = ["evaluate", "--model", str(tmp_path), "--captions", str(captions), "--device=cpu"]
    assert main([*missing, "--images", str(root / "coco")]) == 2
    assert "no config.json" in capsys.readouterr().err


def test_image_names_outside_the_root_are_refused_unless_allowed(setup, tmp_path, capsys):
    """A caption file naming ``../elsewhere/...`` must not read outside ``--images``."""
    _, dirs, _ = setup
    captions = write_coco_like(tmp_path / "coco")
    data = json.loads(captions.read_text())
    name = data["images"][2]["filename"]
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "coco" / "val2014" / name).rename(tmp_path / "elsewhere" / name)
    data["images"][2]["filename"] = f"../elsewhere/{name}"
    captions.write_text(json.dumps(data), encoding="utf-8")
    args = [
        "evaluate", "--model", str(dirs["clip"]), "--captions", str(captions),
        "--images", str(tmp_path / "coco"), "--mode", "dual", "--device=cpu",
    ]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"'../elsewhere/{name}'" in err and "--allow-outside-root" in err
    assert "Traceback" not in err
    out = tmp_path / "m.json"
    assert main([*args, "--allow-outside-root", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["n_images"] == 5
