"""``tags evaluate --suite`` and ``tags report`` end to end: a tiny TagsModel on region
features (checked against the demo's independent minimal-pair scorers) and a tiny CLIP on
rendered images (checked against a per-pair loop over the backend)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from research.hf_tiny import make_clip, render_images
from transformers import BertTokenizer

from tags.backends import load_backend
from tags.benchmark.minimal_pairs import MinimalPair, minimal_pair_accuracy, write_pairs
from tags.cli import main
from tags.demo.evaluate import CrossPairScoreFn, DualPairScoreFn
from tags.evaluation.suites import BackendScorer, ImageRef, RegionSource, read_suite
from tags.evaluation.suites.evaluate import score_items
from tags.evaluation.suites.scoring import PixelSource

FEATURE, N_IMAGES = 12, 5
WORDS = [
    "a",
    "an",
    "the",
    "red",
    "blue",
    "green",
    "circle",
    "square",
    "star",
    "above",
    "below",
    "left",
    "of",
    "right",
    "to",
    "is",
]
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tags_model(path: Path, seed: int) -> Path:
    from tags.modeling import TagsConfig, TagsModel

    torch.manual_seed(seed)
    config = TagsConfig(
        vocab_size=len(TOKENS) + 3, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, max_position_embeddings=24, region_feature_size=FEATURE,
        max_regions=8, mask_token_id=4,
    )  # fmt: skip
    model = TagsModel(config).eval()
    with torch.no_grad():
        model.itm_head.classifier.weight.normal_(0.0, 10.0)
    model.save_pretrained(path)
    BertTokenizer(vocab={w: i for i, w in enumerate(TOKENS)}).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> dict[str, Path]:
    """A shapes-benchmark-like folder: Karpathy JSON, .npz features, minimal pairs."""
    root = tmp_path_factory.mktemp("suites")
    rng = np.random.default_rng(0)
    data = root / "data"
    (data / "features").mkdir(parents=True)
    images, pairs = [], []
    colors, shapes_ = ["red", "blue", "green"], ["circle", "square", "star"]
    for i in range(N_IMAGES):
        regions = 2 + i % 3
        xy = rng.uniform(0, 100, size=(regions, 2))
        np.savez(
            data / "features" / f"{i}.npz",
            features=rng.normal(size=(regions, FEATURE)).astype("f4"),
            boxes=np.concatenate([xy, xy + 20], axis=1).astype("f4"),
            image_w=192, image_h=192,
        )  # fmt: skip
        c, s = colors[i % 3], shapes_[i % 3]
        caption = f"a {c} {s} above a {colors[(i + 1) % 3]} star"
        sentences = [{"raw": caption}, {"raw": f"the {s} is {c}"}]
        images.append({"imgid": i, "filename": f"{i}.png", "split": "test",
                       "sentences": sentences})  # fmt: skip
        pairs += [
            MinimalPair(i, caption, caption.replace(c, colors[(i + 2) % 3], 1), "attribute", c, "x"),
            MinimalPair(i, caption, caption.replace(s, shapes_[(i + 1) % 3], 1), "object", s, "x"),
            MinimalPair(i, caption, caption.replace("above", "below"), "relation", "above", "below"),
        ]  # fmt: skip
    (data / "dataset_shapes.json").write_text(json.dumps({"images": images}))
    write_pairs(pairs, data / "test_minimal_pairs.jsonl")
    return {
        "root": root, "data": data, "pairs": pairs,
        "start": tags_model(root / "start", 0), "tuned": tags_model(root / "tuned", 1),
    }  # fmt: skip


def cli_json(argv: list[str], out: Path) -> dict:
    assert main([*argv, "--out", str(out), "--device=cpu"]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("mode", ["cross", "dual"])
def test_shapes_suite_matches_the_demo_scorers(shapes, mode):
    out = shapes["root"] / f"suite_{mode}.json"
    report = cli_json(
        ["evaluate", "--model", str(shapes["start"]), "--suite", f"shapes={shapes['data']}",
         "--mode", mode, "--batch-size", "4"], out,
    )  # fmt: skip
    result = report["suites"]["shapes"]
    backend = load_backend(shapes["start"])
    score_cls = CrossPairScoreFn if mode == "cross" else DualPairScoreFn
    fn = score_cls(backend.model, backend.tokenizer, shapes["data"] / "features", 24)
    expected = minimal_pair_accuracy(fn, shapes["pairs"])
    assert result["overall"]["accuracy"] == pytest.approx(100 * expected["overall"])
    for kind in ("attribute", "object", "relation"):
        assert result["subsets"][kind]["accuracy"] == pytest.approx(100 * expected[kind])
    assert result["n_items"] == 3 * N_IMAGES and report["backend"] == "tags"


def test_cross_scores_equal_a_per_pair_loop(shapes):
    backend = load_backend(shapes["start"])
    suite = read_suite("shapes", shapes["data"])
    source = RegionSource(shapes["data"] / "features")
    matrices = score_items(suite, BackendScorer(backend, source, "cross", batch_size=3))
    with torch.no_grad():
        for item, m in zip(suite.items[:6], matrices):
            image = backend.collate_images([source.load(item.images[0])])
            for c, caption in enumerate(item.captions):
                logit = backend.score_pairs(backend.text_inputs([caption]), image)
                assert m[0, c] == pytest.approx(float(logit), abs=1e-5)


def test_report_before_after(shapes):
    out = shapes["root"] / "report"
    argv = [
        "report", "--model", str(shapes["tuned"]), "--baseline", str(shapes["start"]),
        "--captions", str(shapes["data"] / "dataset_shapes.json"),
        "--features", str(shapes["data"] / "features"),
        "--suite", f"shapes={shapes['data']}", "--out", str(out), "--device=cpu",
    ]  # fmt: skip
    assert main(argv) == 0
    payload = json.loads((out / "report.json").read_text())
    assert (out / "report.png").stat().st_size > 0
    rows = {(r["section"], r["metric"]): r for r in payload["rows"]}
    for row in payload["rows"]:
        assert row["delta"] == pytest.approx(row["model"] - row["baseline"])
    alone = cli_json(
        ["evaluate", "--model", str(shapes["start"]), "--suite", f"shapes={shapes['data']}"],
        shapes["root"] / "start.json",
    )["suites"]["shapes"]
    assert rows[("shapes", "accuracy")]["baseline"] == alone["overall"]["accuracy"]
    retrieval = cli_json(
        ["evaluate", "--model", str(shapes["tuned"]), "--captions",
         str(shapes["data"] / "dataset_shapes.json"), "--features",
         str(shapes["data"] / "features")], shapes["root"] / "tuned_retrieval.json",
    )["metrics"]  # fmt: skip
    assert rows[("retrieval", "rsum")]["model"] == pytest.approx(retrieval["rsum"])
    markdown = (out / "report.md").read_text()
    assert "| shapes | accuracy |" in markdown and "![bars](report.png)" in markdown


def test_clip_on_rendered_sugarcrepe_winoground_and_vg(tmp_path):
    model = make_clip(tmp_path / "clip")
    images = tmp_path / "val2017"
    images.mkdir()
    for k, image in enumerate(render_images(4, size=(48, 40))):
        image.save(images / f"{k:012d}.jpg")
    sugar = tmp_path / "sugar-crepe"
    sugar.mkdir()
    (sugar / "replace_obj.json").write_text(json.dumps({
        str(k): {"filename": f"{k:012d}.jpg", "caption": f"a red square {k}",
                 "negative_caption": f"a blue circle {k}"} for k in range(4)
    }))  # fmt: skip
    wino = tmp_path / "winoground"
    (wino / "images").mkdir(parents=True)
    for k, image in enumerate(render_images(2, seed=1)):
        image.save(wino / "images" / f"ex_0_img_{k}.png")
    (wino / "examples.jsonl").write_text(json.dumps({
        "id": 0, "image_0": "ex_0_img_0", "image_1": "ex_0_img_1", "caption_0": "a dog on grass",
        "caption_1": "grass on a dog", "collapsed_tag": "Object"}) + "\n")  # fmt: skip
    aro = tmp_path / "aro"
    (aro / "images").mkdir(parents=True)
    render_images(1, seed=2, size=(64, 48))[0].save(aro / "images" / "9.jpg")
    (aro / "visual_genome_relation.json").write_text(json.dumps([{
        "image_path": "9.jpg", "bbox_x": 8, "bbox_y": 4, "bbox_w": 30, "bbox_h": 30,
        "true_caption": "the cat is on the table", "false_caption": "the table is on the cat",
        "relation_name": "on"}]))  # fmt: skip

    spec = f"sugarcrepe={sugar},winoground={wino}"
    report = cli_json(
        ["evaluate", "--model", str(model), "--suite", spec, "--suite", f"vg-relation={aro}",
         "--images", str(images)], tmp_path / "clip.json",
    )  # fmt: skip
    suites = report["suites"]
    assert set(suites) == {"sugarcrepe", "winoground", "vg-relation"}
    assert any("no cross-encoder" in n for n in suites["sugarcrepe"]["notes"])

    backend = load_backend(model)

    def score(root: Path, ref: ImageRef, caption: str) -> float:
        pixels = PixelSource(root, backend.image_inputs).load(ref)[None]
        with torch.no_grad():
            text = backend.text_inputs([caption])
            return float(backend.similarity(
                backend.encode_image({"pixel_values": pixels}), backend.encode_text(text))[0, 0])  # fmt: skip

    wins = [
        score(images, ImageRef(f"{k:012d}.jpg"), f"a red square {k}")
        > score(images, ImageRef(f"{k:012d}.jpg"), f"a blue circle {k}")
        for k in range(4)
    ]
    assert suites["sugarcrepe"]["subsets"]["replace_obj"]["accuracy"] == 25.0 * sum(wins)
    s = [[score(wino / "images", ImageRef(f"ex_0_img_{i}"), c)
          for c in ("a dog on grass", "grass on a dog")] for i in range(2)]  # fmt: skip
    text = s[0][0] > s[0][1] and s[1][1] > s[1][0]
    image = s[0][0] > s[1][0] and s[1][1] > s[0][1]
    assert suites["winoground"]["overall"] == {
        "text": 100.0 * text,
        "image": 100.0 * image,
        "group": 100.0 * (text and image),
    }
    box = ImageRef("9.jpg", (8.0, 4.0, 30.0, 30.0))
    right = score(aro / "images", box, "the cat is on the table") > score(
        aro / "images", box, "the table is on the cat"
    )
    assert suites["vg-relation"]["overall"]["accuracy"] == 100.0 * right


def test_missing_images_and_features_are_named(shapes, tmp_path, capsys):
    sugar = tmp_path / "s"
    sugar.mkdir()
    (sugar / "add_obj.json").write_text(json.dumps(
        {"1": {"filename": "x.jpg", "caption": "a", "negative_caption": "b"}}))  # fmt: skip
    argv = ["evaluate", "--model", str(shapes["start"]), "--suite", f"sugarcrepe={sugar}"]
    assert main([*argv, "--device=cpu"]) == 2
    assert "reads region features; give --features" in capsys.readouterr().err
    assert main(["evaluate", "--model", str(shapes["start"]), "--device=cpu"]) == 2


def test_text_baseline_is_scored_beside_the_model(shapes, tmp_path, capsys):
    """``--text-baseline CAPTIONS``: a trigram LM of the captions scores every options
    suite; captions that only ever say "above" give away every above -> below pair."""
    captions = tmp_path / "train_caps.txt"
    captions.write_text("\n".join(f"a {c} circle above a star" for c in ("red", "blue")) + "\n")
    argv = ["evaluate", "--model", str(shapes["start"]), "--suite", f"shapes={shapes['data']}"]
    report = cli_json([*argv, "--text-baseline", str(captions)], tmp_path / "r.json")
    text = report["suites"]["shapes"]["text_only"]
    assert text["subsets"]["relation"]["accuracy"] == 100.0
    assert set(text["subsets"]) == set(report["suites"]["shapes"]["subsets"])
    assert 0.0 <= text["overall"]["accuracy"] <= 100.0
    assert "text-only" in capsys.readouterr().out
    plain = cli_json(argv, tmp_path / "plain.json")
    assert plain["suites"]["shapes"]["text_only"] is None
    capsys.readouterr()
    assert main([*argv, "--text-baseline", str(tmp_path / "missing.txt"), "--device=cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.txt" in err[0]
