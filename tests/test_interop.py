"""Exports of `tags generate` output (NegCLIP CSV, SugarCrepe JSON, Parquet, datasets) round
trip through the `data.negatives` readers; external negatives train a recipe."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tags.cli import main
from tags.core.edits import diff_edits
from tags.core.types import apply_edits
from tags.data.captions import load_image_groups
from tags.data.negatives import (
    NegativePools,
    load_negative_pools,
    read_negative_rows,
)
from tags.negatives.exports import ExportOptions, by_caption, export_file, read_records

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
            "--k", "4", "--l", "4", "--top-m", "3", "--num-workers", "1",
            "--export", "negclip-csv", "--export", "sugarcrepe", "--image-root", ROOT,
            "--negatives-per-row", "2", "--adds"]  # fmt: skip
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
    with pytest.raises(ValueError, match=r"no negative of add_obj, add_att .*--adds"):
        export_file(src, "sugarcrepe", options=ExportOptions(by_type=True))
    assert not (tmp_path / "sub").exists() or not any((tmp_path / "sub").iterdir())
    options = ExportOptions(by_type=True, allow_empty=True)
    written = export_file(src, "sugarcrepe", options=options)
    names = {p.stem: json.loads(p.read_text()) for p in written}
    assert set(names) == {"replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att",
                          "swap_rel", "mixed", "add_obj", "add_att"}  # fmt: skip
    assert names["add_obj"] == names["add_att"] == {}  # SugarCrepe's seven files, always
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
    image = {"imgid": 0, "filepath": folder, "filename": file, "split": "test",
             "sentences": [{"sentid": 0, "raw": "p"}]}  # fmt: skip
    captions.write_text(json.dumps({"images": [image]}))
    src = tmp_path / "g.jsonl"
    src.write_text(json.dumps({"image_id": 0, "caption_id": 0, "positive": "p", "negative": "n"}))
    target = tmp_path / "g.csv"
    argv = ["export", str(src), "--format", "negclip-csv", "--out", str(target),
            "--captions", str(captions), "--image-root", ROOT]  # fmt: skip
    assert main(argv) == 2
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
    assert main(["export", str(src), "--format", "negclip-csv", "--out", str(src)]) == 2
    assert "is the input" in capsys.readouterr().err and src.read_bytes() == before
    same = tmp_path / "sub" / ".." / "g.jsonl"  # another spelling of the input
    (tmp_path / "sub").mkdir()
    argv = ["export", str(src), "--format", "negclip-csv", "--out", str(same), "--overwrite"]
    assert main(argv) == 2 and src.read_bytes() == before
    target = tmp_path / "g.csv"
    target.write_text("mine\n")
    argv = ["export", str(src), "--format", "negclip-csv"]
    assert main(argv) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert target.read_text() == "mine\n"
    assert main([*argv, "--overwrite"]) == 0
    assert target.read_text().splitlines()[0] == "title,filepath,neg_caption"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.csv", "g.jsonl", "sub"]  # no temp


def test_export_folders_replaced_only_when_they_hold_an_export(tmp_path, capsys):
    src = _one_record(tmp_path)
    options = ExportOptions(by_type=True, allow_empty=True)
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
            "--k", "2", "--l", "2", "--top-m", "2", "--num-workers", "1", "--export", "negclip-csv"]  # fmt: skip
    assert main(argv) == 2
    assert "--export negclip-csv" in capsys.readouterr().err and not out.exists()
    assert (tmp_path / "neg.csv").read_text() == "mine\n"
    assert main([*argv, "--overwrite"]) == 0
    assert (tmp_path / "neg.csv").read_text().startswith("title,filepath")


# ------------------------------------------------- the loading contracts of the tools people use
# Each contract below is the reading code of the tool, reproduced (nothing vendored):
# - NegCLIP (vinid/neg_clip, src/training/data.py CsvDataset): pd.read_csv(path, sep=sep,
#   converters={"neg_caption": ast.literal_eval, "neg_image": ast.literal_eval}), columns
#   img_key / caption_key / "neg_caption" / "neg_image"; __getitem__ picks a negative caption,
#   an index j of neg_image, and reads images[j], captions[j] and a negative of row j;
# - open_clip (open_clip_train/data.py CsvDataset): pd.read_csv(path, sep=sep), then
#   df[img_key].tolist() and df[caption_key].tolist() (defaults: tab, filepath, title);
# - SugarCrepe (main_eval.py): json.load of the seven files by name, each item's filename
#   (joined to the image root), caption and negative_caption.
NEGCLIP_CONVERTERS = ("neg_caption", "neg_image")


def read_table(path: Path, sep: str, converters: tuple[str, ...] = ()) -> dict[str, list]:
    """``pd.read_csv(path, sep=sep, converters={c: ast.literal_eval})`` as columns (pandas if
    installed, else the csv module with the same separator and quoting)."""
    import ast

    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with datasets
        with open(path, encoding="utf-8", newline="") as handle:
            records = list(csv.DictReader(handle, delimiter=sep))
        columns = {key: [r[key] for r in records] for key in (records[0] if records else {})}
        for name in converters:
            if name in columns:
                columns[name] = [ast.literal_eval(v) for v in columns[name]]
        return columns
    frame = pd.read_csv(path, sep=sep, converters={c: ast.literal_eval for c in converters})
    return {name: frame[name].tolist() for name in frame.columns}


def negclip_items(path: Path, sep: str = "\t") -> list[tuple]:
    """Every item NegCLIP's CsvDataset can draw: (filepath, title, neg_caption list, neg_image
    list), after checking what ``__getitem__`` does with each row."""
    table = read_table(path, sep, NEGCLIP_CONVERTERS)
    images, captions = table["filepath"], table["title"]
    hard_captions, hard_images = table["neg_caption"], table["neg_image"]
    for idx in range(len(captions)):
        assert hard_captions[idx] and all(isinstance(c, str) for c in hard_captions[idx])
        assert hard_images[idx], f"row {idx}: random.choice(neg_image) of an empty list"
        for j in hard_images[idx]:
            assert isinstance(j, int) and 0 <= j < len(images)
            assert images[j] != images[idx], f"row {idx}: neg_image {j} is its own image"
            assert isinstance(captions[j], str) and hard_captions[j]
    return list(zip(images, captions, hard_captions, hard_images))


def open_clip_rows(path: Path, sep: str = "\t", img_key: str = "filepath",
                   caption_key: str = "title") -> list[tuple[str, str]]:  # fmt: skip
    table = read_table(path, sep)
    return list(zip(table[img_key], table[caption_key]))


SUGARCREPE_NAMES = ("add_obj", "add_att", "replace_obj", "replace_att", "replace_rel",
                    "swap_obj", "swap_att")  # fmt: skip


def sugarcrepe_items(data_root: Path, image_root: str) -> dict[str, list[tuple]]:
    """main_eval.py: every one of the seven files opened by name and json.load-ed."""
    import os

    dataset = {}
    for name in SUGARCREPE_NAMES:
        with open(data_root / f"{name}.json", encoding="utf-8") as handle:
            dataset[name] = json.load(handle)
    return {
        name: [(os.path.join(image_root, d["filename"]), d["caption"], d["negative_caption"])
               for d in items.values()]
        for name, items in dataset.items()
    }  # fmt: skip


def _captions_and_records(tmp_path: Path, texts: list[list[str]]) -> tuple[Path, Path]:
    """A JSONL caption file (image i = ``img{i}.jpg``) and one negative per caption."""
    captions, records = [], []
    for image, group in enumerate(texts):
        for text in group:
            caption_id = len(captions)
            captions.append({"image_id": image, "caption": text, "filename": f"img{image}.jpg"})
            records.append({"image_id": image, "caption_id": caption_id, "positive": text,
                            "negative": text.replace("dog", "cat") + " (neg)", "edits": []})  # fmt: skip
    caption_file = tmp_path / "caps.jsonl"
    caption_file.write_text("".join(json.dumps(c) + "\n" for c in captions))
    src = tmp_path / "g.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    return caption_file, src


def test_negclip_export_loads_unchanged_in_negclips_loader(generated, tmp_path):
    target = tmp_path / "train_neg.tsv"
    argv = ["export", str(generated["out"]), "--format", "negclip", "--out", str(target),
            "--captions", str(generated["captions"]), "--image-root", ROOT]  # fmt: skip
    assert main(argv) == 0
    assert b"\r" not in target.read_bytes()
    items = negclip_items(target)  # NegCLIP's default separator: tab
    groups = list(by_caption(read_records(generated["out"])))
    assert [(p, t, n) for p, t, n, _ in items] == [
        (f"{ROOT}/{coco_path(g[0]['image_id'])}", g[0]["positive"], [r["negative"] for r in g])
        for g in groups
    ]
    assert all(len(others) == 3 for *_, others in items)  # --neg-images 3 (the default)
    assert triples(target) == [(p, t, n) for p, t, n, _ in items]  # tags' own reader too
    capped = tmp_path / "capped.tsv"
    assert main([*argv[:5], str(capped), *argv[6:], "--negatives-per-row", "2",
                 "--neg-images", "1"]) == 0  # fmt: skip
    assert [(n, len(o)) for *_, n, o in negclip_items(capped)] == [
        ([r["negative"] for r in g][:2], 1) for g in groups
    ]


def test_negclip_export_quotes_captions_with_quotes_commas_and_tabs(tmp_path):
    texts = [
        ['a dog says "hi", then\tleaves', "the dog's ball, red"],
        ["a dog on a sofa"],
        ["two dogs, one 'cat'", 'a "quoted" dog'],
    ]
    caption_file, src = _captions_and_records(tmp_path, texts)
    target = tmp_path / "t.tsv"
    argv = ["export", str(src), "--format", "negclip", "--out", str(target),
            "--captions", str(caption_file)]  # fmt: skip
    assert main(argv) == 0
    items = negclip_items(target)
    records = list(read_records(src))
    assert [(p, t, n) for p, t, n, _ in items] == [
        (f"img{r['image_id']}.jpg", r["positive"], [r["negative"]]) for r in records
    ]
    comma = tmp_path / "t.csv"  # another separator, named the same way to both tools
    assert main([*argv[:5], str(comma), *argv[6:], "--csv-separator", ","]) == 0
    assert negclip_items(comma, sep=",") == items


def test_negclip_neg_image_rows_are_the_most_similar_other_images(tmp_path):
    texts = [
        ["a giraffe eating leaves", "a tall giraffe near a tree"],
        ["a man riding a surfboard", "a surfer on a wave"],
        ["two giraffes eating leaves from a tree"],
        ["a surfer riding a big wave"],
    ]
    caption_file, src = _captions_and_records(tmp_path, texts)
    target = tmp_path / "t.tsv"
    assert main(["export", str(src), "--format", "negclip", "--out", str(target), "--captions",
                 str(caption_file), "--neg-images", "1"]) == 0  # fmt: skip
    items = negclip_items(target)
    image = [p for p, *_ in items]
    nearest = {image[i]: image[others[0]] for i, (*_, others) in enumerate(items)}
    assert nearest == {"img0.jpg": "img2.jpg", "img1.jpg": "img3.jpg", "img2.jpg": "img0.jpg",
                       "img3.jpg": "img1.jpg"}  # fmt: skip
    # of the chosen image, the caption row closest to this row's caption
    assert items[0][3] == [4] and items[1][3] == [4] and items[4][3] == [0]  # eating leaves
    one = tmp_path / "one.jsonl"
    one.write_text(src.read_text().splitlines()[0] + "\n")
    assert main(["export", str(one), "--format", "negclip", "--captions", str(caption_file)]) == 2


def test_open_clip_csvdataset_loads_the_documented_exports(generated, tmp_path):
    """open_clip's CsvDataset with the flags docs/generate.md gives for each export."""
    out, caps = generated["out"], generated["captions"]
    want = [(f"{ROOT}/{coco_path(g[0]['image_id'])}", g[0]["positive"])
            for g in by_caption(read_records(out))]  # fmt: skip
    base = ["export", str(out), "--captions", str(caps), "--image-root", ROOT]
    cases = [  # (export options, target, open_clip's --csv-separator)
        (["--format", "negclip-csv"], "c.tsv", "\t"),
        (["--format", "negclip-csv"], "d.csv", ","),  # --csv-separator ,
        (["--format", "negclip"], "a.negclip.tsv", "\t"),  # open_clip's defaults throughout
        (["--format", "negclip-csv", "--csv-separator", "tab"], "b.csv", "\t"),
    ]
    for options, name, sep in cases:
        target = tmp_path / name
        assert main([*base, *options, "--out", str(target)]) == 0
        assert b"\r" not in target.read_bytes(), name
        assert open_clip_rows(target, sep) == want, name


def test_sugarcrepe_by_type_loads_in_main_eval(generated, tmp_path, capsys):
    folder = tmp_path / "sc"
    argv = ["export", str(generated["out"]), "--format", "sugarcrepe", "--by-type",
            "--captions", str(generated["captions"]), "--out", str(folder)]  # fmt: skip
    code = main(argv)
    if code == 2:  # a subset these 60 captions give no negative of (a swap, say) is refused,
        # named in one line, nothing written: main_eval divides by every file's length
        err = capsys.readouterr().err
        assert "--allow-empty-subsets" in err and len(err.strip().splitlines()) == 1
        assert not folder.exists()
        assert main([*argv, "--allow-empty-subsets"]) == 0
    else:
        assert code == 0
    items = sugarcrepe_items(folder, ROOT)
    # add edits fill add_obj / add_att; an empty subset (written with the flag) is named
    assert items["add_obj"] and items["add_att"]
    empty = [name for name in SUGARCREPE_NAMES if not items[name]]
    err = capsys.readouterr().err
    assert all(name in err for name in empty) and ("written empty" in err) == bool(empty)
    assert "--adds" not in err  # the hint is for runs without add edits (below)
    records = list(read_records(generated["out"]))
    extra = [(f"{ROOT}/{v['filename']}", v["caption"], v["negative_caption"])
             for p in sorted(folder.glob("*.json")) if p.stem not in SUGARCREPE_NAMES
             for v in json.loads(p.read_text()).values()]  # fmt: skip
    got = sorted([i for name in SUGARCREPE_NAMES for i in items[name]] + extra)
    assert got == sorted(
        (f"{ROOT}/{coco_path(r['image_id'])}", r["positive"], r["negative"]) for r in records
    )
    assert all(path.endswith(".jpg") for path, *_ in got)


def test_sugarcrepe_refuses_bare_image_ids_unless_an_extension_is_given(tmp_path, capsys):
    src = _one_record(tmp_path)
    folder = tmp_path / "sc"
    argv = ["export", str(src), "--format", "sugarcrepe", "--by-type", "--out", str(folder)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no image file name for image id 0" in err and "--image-ext" in err
    assert len(err.strip().splitlines()) == 1 and not folder.exists()
    assert main([*argv, "--image-ext", ".jpg"]) == 2  # six of the seven subsets are empty
    err = capsys.readouterr().err
    assert "add_obj/add_att come from `tags generate --adds`" in err and not folder.exists()
    assert main([*argv, "--image-ext", ".jpg", "--allow-empty-subsets"]) == 0
    assert all(items == [] for items in sugarcrepe_items(folder, "/coco").values())
    assert "add_obj/add_att come from `tags generate --adds`" in capsys.readouterr().err
    assert json.loads((folder / "mixed.json").read_text())["0"]["filename"] == "0.jpg"  # no edits
    assert main(["export", str(src), "--format", "negclip", "--out", str(tmp_path / "n.tsv")]) == 2
    assert "no image file name" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["json", "parquet", "dataset"])
def test_hf_datasets_exports_carry_the_image_file_name(generated, tmp_path, kind):
    import datasets

    target = tmp_path / f"out-{kind}"
    argv = ["export", str(generated["out"]), "--format", kind, "--out", str(target),
            "--captions", str(generated["captions"])]  # fmt: skip
    assert main(argv) == 0
    cache = str(tmp_path / "hf-cache")
    if kind == "dataset":
        table = datasets.load_from_disk(str(target))
    else:
        table = datasets.load_dataset(kind, data_files=str(target), split="train", cache_dir=cache)
    records = list(read_records(generated["out"]))
    assert table["filename"] == [coco_path(r["image_id"]) for r in records]
    assert table["negative"] == [r["negative"] for r in records]
    assert "score" not in table.column_names  # generate scored nothing (no --model)
    bare = tmp_path / f"bare-{kind}"  # without --captions: no file names, no column
    assert main(["export", str(generated["out"]), "--format", kind, "--out", str(bare)]) == 0


def test_hf_datasets_score_column_when_a_record_has_a_score(tmp_path):
    import datasets

    caption_file, src = _captions_and_records(tmp_path, [["a dog", "a big dog"], ["a red dog"]])
    records = [json.loads(line) for line in src.read_text().splitlines()]
    records[1]["score"] = 0.75  # a scored record after an unscored one
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    target = tmp_path / "t.parquet"
    argv = ["export", str(src), "--format", "parquet", "--out", str(target),
            "--captions", str(caption_file)]  # fmt: skip
    assert main(argv) == 0
    table = datasets.load_dataset("parquet", data_files=str(target), split="train",
                                  cache_dir=str(tmp_path / "c"))  # fmt: skip
    assert table["score"] == [None, 0.75, None]
    assert table["filename"] == ["img0.jpg", "img0.jpg", "img1.jpg"]


def test_export_checks_the_captions_against_the_negatives(generated, tmp_path, capsys):
    out = generated["out"]
    first = next(read_records(out))
    # another dataset's captions: same ids, other texts
    other = json.loads(generated["captions"].read_text())
    for image in other["images"]:
        for sentence in image["sentences"]:
            sentence["raw"] = "an unrelated caption"
    wrong = tmp_path / "other.json"
    wrong.write_text(json.dumps(other))
    for kind in ("negclip-csv", "sugarcrepe", "parquet", "negclip"):
        target = tmp_path / f"x-{kind}"
        argv = ["export", str(out), "--format", kind, "--captions", str(wrong), "--out",
                str(target)]  # fmt: skip
        assert main(argv) == 2, kind
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(wrong) in err, err
        assert f"caption id {first['caption_id']} " in err and "is not the caption" in err
        assert not target.exists()
    # an image id the caption file does not have: never silently the path
    fewer = json.loads(generated["captions"].read_text())
    fewer["images"] = [i for i in fewer["images"] if i["imgid"] != first["image_id"]]
    missing = tmp_path / "fewer.json"
    missing.write_text(json.dumps(fewer))
    argv = ["export", str(out), "--format", "negclip-csv", "--captions", str(missing), "--out",
            str(tmp_path / "y.csv")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"caption id {first['caption_id']} (image id {first['image_id']}) is not in" in err
    assert str(missing) in err


def test_export_caption_check_accepts_a_positive_cut_by_generate(tmp_path, capsys):
    """generate cuts a caption over --max-tokens at a word: its beginning still matches."""
    caption_file, src = _captions_and_records(tmp_path, [["a dog runs on the long beach"], ["x"]])
    records = [json.loads(line) for line in src.read_text().splitlines()]
    records[0]["positive"] = "a dog runs on"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = ["export", str(src), "--format", "sugarcrepe", "--captions", str(caption_file)]
    assert main(argv) == 0
    records[0]["positive"] = "a cat runs on"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main([*argv, "--overwrite"]) == 2
    assert "caption id 0 (image id 0): the positive 'a cat runs on'" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["negclip", "negclip-csv", "sugarcrepe", "json", "parquet"])
def test_export_of_an_empty_or_binary_file_is_one_line_naming_it(tmp_path, capsys, kind):
    empty, binary = tmp_path / "empty.jsonl", tmp_path / "binary.jsonl"
    empty.write_text("\n")
    record = {"image_id": 0, "caption_id": 0, "positive": "p", "negative": "n"}
    binary.write_bytes(json.dumps(record).encode() + b"\n" + bytes(range(128, 256)))
    for src, words in ((empty, "no records"), (binary, ":2: not UTF-8 text")):
        target = tmp_path / f"out-{kind}"
        argv = ["export", str(src), "--format", kind, "--out", str(target), "--image-ext", ".jpg"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"tags export: {src}"), err
        assert words in err, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["binary.jsonl", "empty.jsonl"]
