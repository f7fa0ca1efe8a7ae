"""Exports of `tags generate` output (NegCLIP CSV, SugarCrepe JSON, Parquet, datasets) round
trip through the `data.negatives` readers; external negatives train a recipe."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tags.cli import main
from tags.data.captions import load_image_groups
from tags.data.negatives import (
    NegativePools,
    load_negative_pools,
    read_negative_rows,
)
from tags.negatives.edits import diff_edits
from tags.negatives.exports import ExportOptions, by_caption, export_file, read_records
from tags.negatives.types import apply_edits

SAMPLE = Path(__file__).parent / "data" / "flickr30k_test_caps_sample.txt"
ROOT = "/data/coco"


def coco_path(image_id: int) -> str:
    return f"val2014/COCO_val2014_{image_id:012d}.jpg"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, Path]:
    """A real `tags generate` run on a COCO-style Karpathy file (filepath + filename), with
    the NegCLIP (k = 2) and SugarCrepe exports made at the end of the run."""
    root = tmp_path_factory.mktemp("gen")
    lines = SAMPLE.read_text().splitlines()[:60]
    images = [
        {"imgid": i, "filepath": "val2014", "filename": coco_path(i).split("/")[1],
         "split": "test",
         "sentences": [{"sentid": 5 * i + j, "raw": lines[5 * i + j]} for j in range(5)]}
        for i in range(12)
    ]  # fmt: skip
    captions = root / "dataset_coco.json"
    captions.write_text(json.dumps({"images": images}))
    out = root / "neg.jsonl"
    argv = ["generate", "--captions", str(captions), "--out", str(out), "--no-progress",
            "--k", "4", "--l", "4", "--top-m", "3", "--workers", "1",
            "--export", "negclip-csv", "--export", "sugarcrepe", "--image-root", ROOT,
            "--negatives-per-row", "2"]  # fmt: skip
    assert main(argv) == 0
    return {"captions": captions, "out": out, "root": root}


def expected_triples(out: Path, k: int, root: str = ROOT) -> list[tuple]:
    """(image path, positive, first k negatives) per caption with at least k negatives."""
    triples = []
    for group in by_caption(read_records(out)):
        if len(group) >= k:
            path = f"{root}/{coco_path(group[0]['image_id'])}" if root else None
            triples.append((path, group[0]["positive"], [r["negative"] for r in group[:k]]))
    return triples


def triples(path: Path, fmt: str | None = None) -> list[tuple]:
    return [(r.image, r.positive, r.negatives) for r in read_negative_rows(path, fmt)]


def test_negclip_csv_round_trip(generated):
    csv_path = generated["out"].with_suffix(".csv")
    with open(csv_path, newline="") as handle:
        header = next(csv.reader(handle))
    assert header == ["title", "filepath", "neg_caption_1", "neg_caption_2"]
    want = expected_triples(generated["out"], 2)
    assert want and triples(csv_path) == want
    # fewer negatives than k: the caption is left out, never padded
    assert len(want) < len(list(by_caption(read_records(generated["out"]))))


def test_negclip_one_column_and_list_layout(generated, tmp_path):
    one = tmp_path / "one.csv"
    argv = ["export", str(generated["out"]), "--format", "negclip-csv", "--out", str(one),
            "--captions", str(generated["captions"]), "--image-root", ROOT]  # fmt: skip
    assert main(argv) == 0
    assert one.read_text().splitlines()[0] == "title,filepath,neg_caption"
    assert triples(one) == expected_triples(generated["out"], 1)
    listed = tmp_path / "listed.tsv"  # NegCLIP's own layout: tabs, a list literal
    argv = [*argv[:5], str(listed), *argv[6:], "--neg-list", "--negatives-per-row", "3"]
    assert main(argv) == 0
    first = listed.read_text().splitlines()[1].split("\t")
    assert first[2].startswith("['") and len(first) == 3
    want = [(p, t, n[:3]) for p, t, n in expected_triples(generated["out"], 1)]
    assert triples(listed) == [
        (p, t, [r["negative"] for r in g][:3])
        for (p, t, _), g in zip(want, by_caption(read_records(generated["out"])))
    ]


def test_sugarcrepe_round_trip(generated):
    path = generated["out"].with_name("neg.sugarcrepe.json")
    data = json.loads(path.read_text())
    records = list(read_records(generated["out"]))
    assert list(data) == [str(i) for i in range(len(records))]
    assert all(set(item) == {"filename", "caption", "negative_caption"} for item in data.values())
    want = [(coco_path(r["image_id"]), r["positive"], [r["negative"]]) for r in records]
    assert triples(path) == want


def test_sugarcrepe_subsets_by_edit_type(tmp_path):
    def rec(i, *edits):
        return {"image_id": i, "caption_id": i, "positive": "p", "negative": f"n{i}",
                "edits": [{"type": t, "operation": o} for t, o in edits]}  # fmt: skip

    records = [
        rec(0, ("object", "replace")),
        rec(1, ("attribute", "antonym")),
        rec(2, ("relation", "flip")),
        rec(3, ("object", "swap"), ("object", "swap")),
        rec(4, ("attribute", "swap"), ("attribute", "swap")),
        rec(5, ("object", "replace"), ("attribute", "replace")),
        rec(6, ("relation", "replace")),
        rec(7, ("object", "replace")),
        rec(8, ("relation", "swap"), ("relation", "swap")),  # a role swap
    ]
    src = tmp_path / "g.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    written = export_file(src, "sugarcrepe", options=ExportOptions(by_type=True))
    names = {p.stem: json.loads(p.read_text()) for p in written}
    assert set(names) == {"replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att",
                          "swap_rel", "mixed"}  # fmt: skip
    assert [v["negative_caption"] for v in names["swap_rel"].values()] == ["n8"]
    assert [v["negative_caption"] for v in names["replace_obj"].values()] == ["n0", "n7"]
    assert [v["negative_caption"] for v in names["replace_rel"].values()] == ["n2", "n6"]
    assert names["replace_att"]["0"]["negative_caption"] == "n1"
    assert names["mixed"]["0"]["filename"] == "5"  # no caption file: the image id
    assert triples(written[0].parent) == [  # the folder reads as one set, files by name
        (str(r["image_id"]), "p", [r["negative"]])
        for name in sorted(names)
        for r in records
        if r["negative"] in [v["negative_caption"] for v in names[name].values()]
    ]


@pytest.mark.parametrize("kind", ["parquet", "dataset"])
def test_parquet_and_dataset_round_trip(generated, kind):
    (target,) = export_file(generated["out"], kind)
    records = list(read_records(generated["out"]))
    assert triples(target) == [
        (str(r["image_id"]), r["positive"], [r["negative"]]) for r in records
    ]


def test_pools_match_training_captions(generated):
    groups = load_image_groups(generated["captions"], split="test")
    pools = load_negative_pools(generated["out"].with_suffix(".csv"), groups)
    for path, positive, negatives in expected_triples(generated["out"], 2):
        caption_id = next(
            c.caption_id for g in groups for c in g.captions if c.text == positive
            and coco_path(g.image_id) == path.removeprefix(ROOT + "/")
        )  # fmt: skip
        pool = pools.get(caption_id)
        assert [text for text, _ in pool] == negatives
        assert all(apply_edits(positive, edits) == text for text, edits in pool)
    own = NegativePools.from_jsonl(generated["out"])  # tags' JSONL: by caption id
    assert len(own) == len(list(by_caption(read_records(generated["out"]))))


def test_unmatched_rows_are_named(tmp_path, generated, capsys):
    groups = load_image_groups(generated["captions"], split="test")
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "title,filepath,neg_caption\n"
        f"{groups[0].captions[0].text},x/{coco_path(0)},a negative\n"
        "a caption nobody wrote,x/elsewhere.jpg,another\n"
    )
    with pytest.raises(ValueError, match=r"1 of 2 rows match no training caption .*bad.csv:3"):
        load_negative_pools(bad, groups)
    pools = load_negative_pools(bad, groups, unmatched="skip")
    assert len(pools) == 1 and "skipped" in capsys.readouterr().err
    nothing = tmp_path / "none.json"
    nothing.write_text(json.dumps({"0": {"filename": "z.jpg", "caption": "c",
                                         "negative_caption": "d"}}))  # fmt: skip
    with pytest.raises(ValueError, match="1 of 1 rows"):
        load_negative_pools(nothing, groups, unmatched="skip")


def test_official_negclip_tsv_layout(tmp_path):
    """NegCLIP's published TSV: an unnamed index column, neg_caption as a list literal,
    neg_image indices."""
    path = tmp_path / "train_neg_clip.tsv"
    path.write_text(
        "\ttitle\tfilepath\tneg_caption\tneg_image\n"
        "0\tA child holding a red umbrella.\tcoco/val2014/x.jpg\t"
        "['A umbrella holding a red child .', \"A child 's red umbrella .\"]\t[3, 1]\n"
    )
    (row,) = read_negative_rows(path)
    assert row.image == "coco/val2014/x.jpg" and row.positive == "A child holding a red umbrella."
    assert row.negatives == ["A umbrella holding a red child .", "A child 's red umbrella ."]


@pytest.mark.parametrize(
    ("positive", "negative"),
    [
        ("a dog chasing a cat", "a cat chasing a dog"),
        ("a red car on the road.", "a car on the road."),
        ("a car on the road.", "a big red car on the road."),
        ("two men  riding horses", "two women riding horses"),
        ("A man sits.", "A man sits on a bench."),
        ("same", "same"),
    ],
)
def test_diff_edits_cover_whole_words(positive, negative):
    edits = diff_edits(positive, negative)
    assert apply_edits(positive, edits) == negative
    assert bool(edits) == (positive != negative)
    for e in edits:
        before, after = positive[e.start - 1 : e.start], positive[e.end : e.end + 1]
        assert not (before.isalnum() and e.original[:1].isalnum())
        assert not (after.isalnum() and e.original[-1:].isalnum())


def test_recipe_trains_on_negclip_csv(tmp_path, monkeypatch):
    """tags-dc with data.negatives = a NegCLIP CSV: the CSV's negatives reach the loss (two
    per caption), with word edits from the diff, and WoD/WoC train on them."""
    from _training_utils import tiny_config

    import tags.training.recipes.tags_dc as tags_dc
    from tags.training import training_function
    from tags.training.loop import _materialize_data

    probe = tiny_config("tags-dc", tmp_path / "probe")
    lines = Path(_materialize_data(probe, True).captions).read_text().splitlines()

    def swap(text: str, new: str) -> str:
        words = text.split()
        words[2] = new if words[2] != new else "zebra"
        return " ".join(words)

    table = tmp_path / "negclip.csv"
    with open(table, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["title", "filepath", "neg_caption_1", "neg_caption_2"])
        for n, text in enumerate(lines):
            writer.writerow([text, f"images/{n // 5}.jpg", swap(text, "boat"), swap(text, "kite")])
    seen: list = []
    label = tags_dc.label_negatives

    def spy(positives, negatives, tokenizer, max_length):
        seen.append((list(positives), negatives))
        return label(positives, negatives, tokenizer, max_length)

    monkeypatch.setattr(tags_dc, "label_negatives", spy)
    cfg = tiny_config(
        "tags-dc", tmp_path / "run", "phases.0.steps=2", f"data.negatives={table}",
        "tags_dc.synthetic.source=fixed", "phases.0.weights={wod: 1.0, woc: 1.0}",
    )  # fmt: skip
    training_function(cfg)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["synthetic/per_caption"] == 2.0 for r in rows)
    assert rows[0]["loss/wod"] > 0 and rows[0]["loss/woc"] > 0
    for positives, pools in seen:
        for positive, pool in zip(positives, pools):
            assert [t for t, _ in pool] == [swap(positive, "boat"), swap(positive, "kite")]
            for _, (edit,) in pool:
                assert edit.type == "word" and edit.original == positive.split()[2]
    with open(table, "a", newline="") as handle:
        csv.writer(handle).writerow(["a caption of no image", "images/99.jpg", "x", "y"])
    with pytest.raises(ValueError, match=r"1 of 41 rows match no training caption"):
        training_function(tiny_config(
            "tags-dc", tmp_path / "run2", "phases.0.steps=1", f"data.negatives={table}",
            "tags_dc.synthetic.source=fixed",
        ))  # fmt: skip


@pytest.mark.parametrize("name", ["/abs/images/x.jpg", "../x.jpg"])
def test_export_refuses_image_paths_outside_the_root_unless_allowed(tmp_path, capsys, name):
    """A caption file naming an absolute or ``..`` path: no ``ROOT//abs/...`` filepath."""
    folder, file = name.rsplit("/", 1)
    captions = tmp_path / "dataset.json"
    image = {"imgid": 0, "filepath": folder, "filename": file, "split": "test"}
    captions.write_text(json.dumps({"images": [image]}))
    src = tmp_path / "g.jsonl"
    src.write_text(json.dumps({"image_id": 0, "caption_id": 0, "positive": "p", "negative": "n"}))
    target = tmp_path / "g.csv"
    argv = ["export", str(src), "--format", "negclip-csv", "--out", str(target),
            "--captions", str(captions), "--image-root", ROOT]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{name!r} points outside the image root" in err and "--allow-outside-root" in err
    assert main([*argv, "--allow-outside-root"]) == 0
    with open(target, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["filepath"] == (name if name.startswith("/") else f"{ROOT}/{name}")


def _one_record(tmp_path: Path) -> Path:
    src = tmp_path / "g.jsonl"
    src.write_text(json.dumps({"image_id": 0, "caption_id": 0, "positive": "p", "negative": "n"}))
    return src


def test_export_never_overwrites_its_input_or_an_existing_file_unasked(tmp_path, capsys):
    src = _one_record(tmp_path)
    before = src.read_bytes()
    assert main(["export", str(src), "--format", "negclip-csv", "--out", str(src)]) == 1
    assert "is the input" in capsys.readouterr().err and src.read_bytes() == before
    same = tmp_path / "sub" / ".." / "g.jsonl"  # another spelling of the input
    (tmp_path / "sub").mkdir()
    argv = ["export", str(src), "--format", "negclip-csv", "--out", str(same), "--overwrite"]
    assert main(argv) == 1 and src.read_bytes() == before
    target = tmp_path / "g.csv"
    target.write_text("mine\n")
    argv = ["export", str(src), "--format", "negclip-csv"]
    assert main(argv) == 1
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert target.read_text() == "mine\n"
    assert main([*argv, "--overwrite"]) == 0
    assert target.read_text().splitlines()[0] == "title,filepath,neg_caption"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.csv", "g.jsonl", "sub"]  # no temp


def test_export_folders_replaced_only_when_they_hold_an_export(tmp_path, capsys):
    src = _one_record(tmp_path)
    options = ExportOptions(by_type=True)
    (folder,) = {p.parent for p in export_file(src, "sugarcrepe", options=options)}
    with pytest.raises(FileExistsError, match="--overwrite"):
        export_file(src, "sugarcrepe", options=options)
    export_file(src, "sugarcrepe", options=options, overwrite=True)  # a previous export
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a previous sugarcrepe export"):
        export_file(src, "sugarcrepe", options=options, overwrite=True)
    assert (folder / "notes.txt").read_text() == "keep me"
    with pytest.raises(ValueError, match="folder holding the input"):
        export_file(src, "dataset", tmp_path, overwrite=True)
    assert src.is_file()


def test_generate_export_refuses_an_existing_target_before_generating(tmp_path, capsys):
    captions = tmp_path / "caps.txt"
    captions.write_text("".join(f"{line}\n" for line in SAMPLE.read_text().splitlines()[:5]))
    out = tmp_path / "neg.jsonl"
    (tmp_path / "neg.csv").write_text("mine\n")
    argv = ["generate", "--captions", str(captions), "--out", str(out), "--no-progress",
            "--k", "2", "--l", "2", "--top-m", "2", "--workers", "1", "--export", "negclip-csv"]  # fmt: skip
    assert main(argv) == 2
    assert "--export negclip-csv" in capsys.readouterr().err and not out.exists()
    assert (tmp_path / "neg.csv").read_text() == "mine\n"
    assert main([*argv, "--overwrite"]) == 0
    assert (tmp_path / "neg.csv").read_text().startswith("title,filepath")
