"""Exports of a finished ``tags generate`` output to the formats other tools read.

One registry, :data:`EXPORTERS`, keyed by format name; every exporter takes the output's
records and an :class:`ExportOptions` and returns the paths it wrote:

- ``negclip``: the table NegCLIP's trainer (vinid/neg_clip) reads unchanged, tab-separated
  (``separator``), one row per positive caption: ``filepath``, ``title``, ``neg_caption``
  (a Python list literal of the caption's negatives, up to k) and ``neg_image`` (a list
  literal of the row indices of other images' captions: :func:`similar_images`). Stock
  open_clip's ``CsvDataset`` reads its ``filepath`` and ``title`` with its default flags;
- ``negclip-csv``: one row per positive caption: ``title``, ``filepath`` and ``neg_caption``
  (k = 1) or ``neg_caption_1`` .. ``neg_caption_k``; ``list_column``: ``neg_caption`` holds
  a list literal of up to k negatives (no ``neg_image``: use ``negclip`` for NegCLIP). A
  ``.tsv`` target is tab-separated, else commas (``separator`` overrides);
- ``sugarcrepe``: SugarCrepe's ``{id: {filename, caption, negative_caption}}`` JSON, one item
  per negative; ``by_type`` writes SugarCrepe's seven subset files (:data:`SUGARCREPE_FILES`,
  always all seven, ``{}`` for a subset with no negative) plus ``swap_rel`` / ``mixed`` /
  ``replace_word`` for what SugarCrepe has no subset for;
- ``json`` / ``parquet`` / ``dataset``: the records (plus ``filename`` where the image file
  names are known) for ``datasets.load_dataset("json" / "parquet")`` / ``load_from_disk``.

Image paths come from the caption file the negatives were generated from
(:func:`image_paths`: Karpathy ``filepath/filename``, JSONL ``filename``); an image it does
not name is ``id + image_ext``, or the bare id unless ``bare_ids`` is off (``tags export``
and ``generate --export`` turn it off for :data:`NAMED_IMAGES`, whose readers open the
files by name; the datasets formats only write ``filename`` when some name is known).
:func:`caption_index` checks that the negatives came from that caption file.

Targets (:func:`check_target`): never the input itself nor a folder holding it; an existing
one only with ``overwrite`` (a folder only when it holds a previous export of that kind).
Every target is written to a temporary sibling and moved into place (``os.replace``), so a
failed export leaves nothing half-written and an old export stays until the new one is done.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tags.core.edits import edits_problem, unit_edits
from tags.core.io import json_lines
from tags.core.paths import leaves_root, outside_root_message

#: edit ``(operation, type)`` -> SugarCrepe subset name (flip = an opposite relation,
#: antonym = an opposite attribute: both are replacements in SugarCrepe's terms)
SUBSETS = {
    ("replace", "object"): "replace_obj",
    ("replace", "attribute"): "replace_att",
    ("replace", "relation"): "replace_rel",
    ("flip", "relation"): "replace_rel",
    ("antonym", "attribute"): "replace_att",
    ("swap", "object"): "swap_obj",
    ("swap", "attribute"): "swap_att",
    # a role swap (the noun phrases around a relation exchanged): no SugarCrepe subset,
    # ARO's VG-Relation kind of test
    ("swap", "relation"): "swap_rel",
    # SugarCrepe's add subsets (a unit inserted into the positive: tags.negatives.additions)
    ("add", "object"): "add_obj",
    ("add", "attribute"): "add_att",
}


#: SugarCrepe's seven subset files, the names its ``main_eval.py`` opens
SUGARCREPE_FILES = (
    "add_obj",
    "add_att",
    "replace_obj",
    "replace_att",
    "replace_rel",
    "swap_obj",
    "swap_att",
)


def normalize_space(text: str) -> str:
    """``text`` with runs of whitespace as one space, stripped (how generate reads captions)."""
    return " ".join(str(text).split())


@dataclass
class CaptionIndex:
    """The captions of the file the negatives should come from: ``str(caption_id) ->
    (str(image_id), text)`` and ``str(image_id) -> texts`` (whitespace normalised). A
    positive matches its caption when equal to it or to its beginning (``tags generate`` cuts
    a caption over ``--max-tokens``)."""

    source: str
    captions: dict[str, tuple[str, str]]
    images: dict[str, set[str]]

    def check(self, record: dict[str, Any]) -> None:
        """Raise ``ValueError`` (one line, naming the id and the file) for a record whose
        caption or image is not in the file, or whose positive is not the caption there."""
        image = str(record["image_id"])
        positive = normalize_space(record["positive"])
        caption_id = record.get("caption_id")
        if caption_id is None:
            texts = self.images.get(image)
            if texts is None:
                raise ValueError(f"image id {image} is not in the caption file {self.source}")
            if not any(_same(positive, text) for text in texts):
                raise ValueError(
                    f"image id {image}: positive {positive!r} is none of its captions in "
                    f"{self.source}"
                )
            return
        found = self.captions.get(str(caption_id))
        if found is None:
            raise ValueError(
                f"caption id {caption_id} (image id {image}) is not in the caption file "
                f"{self.source}: not the captions these negatives came from"
            )
        if found[0] != image:
            raise ValueError(
                f"caption id {caption_id} is of image id {found[0]} in {self.source}, the "
                f"negatives say image id {image}: not the captions these negatives came from"
            )
        if not _same(positive, found[1]):
            raise ValueError(
                f"caption id {caption_id} (image id {image}): the positive {positive!r} is not "
                f"the caption in {self.source} ({found[1]!r})"
            )


def _same(positive: str, caption: str) -> bool:
    """``positive`` is the (normalised) caption, or its beginning when generate cut it."""
    return bool(positive) and caption.startswith(positive)


def caption_index(captions: str | Path, fmt: str | None = None) -> CaptionIndex:
    """Every caption of a caption file (all splits), for :meth:`CaptionIndex.check`."""
    from tags.core.io import ErrorPolicy, read_captions

    by_id: dict[str, tuple[str, str]] = {}
    by_image: dict[str, set[str]] = {}
    for group in read_captions(captions, fmt, on_error=ErrorPolicy("skip")):
        texts = by_image.setdefault(str(group.image_id), set())
        for caption in group.captions:
            text = normalize_space(caption.text)
            by_id[str(caption.caption_id)] = (str(caption.image_id), text)
            texts.add(text)
    return CaptionIndex(str(captions), by_id, by_image)


#: formats whose readers open the image files by name: ``bare_ids=None`` refuses a bare id
NAMED_IMAGES = ("negclip", "sugarcrepe", "json", "parquet", "dataset")
#: formats with a row per image file: every image needs a name (the datasets formats only
#: add ``filename`` when some name is known)
NEEDS_NAMES = ("negclip", "sugarcrepe")


@dataclass
class ExportOptions:
    """Settings shared by the exporters (each reads the ones it needs)."""

    image_root: str = ""
    paths: dict[str, str] | None = None  # str(image_id) -> image path relative to the root
    negatives_per_row: int | None = None  # negclip-csv: k (default 1); negclip: up to k (all)
    list_column: bool = False  # negclip-csv: NegCLIP's list-literal neg_caption
    by_type: bool = False  # sugarcrepe: one file per edit kind
    allow_empty: bool = False  # sugarcrepe by_type: write a subset with no pair as {}
    allow_outside_root: bool = False  # image names that are absolute or hold ".."
    separator: str | None = None  # negclip: tab; negclip-csv: tab for .tsv, else comma
    image_ext: str = ""  # an image no caption file names: image id + this (".jpg")
    bare_ids: bool | None = True  # else no known file name is refused; None: NAMED_IMAGES
    neg_images: int = 3  # negclip: how many other images each row's neg_image lists
    captions: CaptionIndex | None = None  # every record is checked against it
    #: sugarcrepe: ``select(subset, records) -> the records to write`` per subset file (the
    #: subset is ``""`` without ``by_type``), e.g. ``tags export --refine``'s refinement
    select: Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]] | None = None


Exporter = Callable[[Iterable[dict[str, Any]], Path, ExportOptions], list[Path]]
EXPORTERS: dict[str, Exporter] = {}
#: default file name ending of each format, appended to the output's stem
SUFFIXES: dict[str, str] = {}


def register_exporter(name: str, suffix: str) -> Callable[[Exporter], Exporter]:
    """Register ``fn(records, target, options) -> written paths`` as export format ``name``."""

    def wrap(fn: Exporter) -> Exporter:
        if name in EXPORTERS:
            raise ValueError(f"exporter {name!r} already registered")
        EXPORTERS[name], SUFFIXES[name] = fn, suffix
        return fn

    return wrap


def list_exporters() -> list[str]:
    return sorted(EXPORTERS)


def read_records(path: str | Path, labels: bool = False) -> Iterator[dict[str, Any]]:
    """The records of a ``tags generate`` JSON Lines file (a bad line, undecodable or not a
    record, or edits that do not fit its caption, raises a ``ValueError`` naming the file
    and line). ``labels``: every edit must hold what WoD/WoC labels are made from."""
    for number, record in json_lines(path, "pass a `tags generate` .jsonl output"):
        if not isinstance(record, dict) or not {"image_id", "positive", "negative"} <= set(record):
            raise ValueError(
                f"{path}:{number}: not a `tags generate` record (needs image_id, "
                "positive, negative)"
            )
        problem = edits_problem(str(record["positive"]), record.get("edits", []), labels)
        if problem is not None:  # e.g. an offset outside the caption: labels would be wrong
            raise ValueError(
                f"{path}:{number}: {problem}; pass `tags generate` output as it was written"
            )
        yield record


def image_paths(captions: str | Path, fmt: str | None = None) -> dict[str, str]:
    """``str(image_id) -> relative image path`` from a caption file: Karpathy
    ``filepath/filename`` (COCO's ``val2014/COCO_val2014_...jpg``; Flickr30K has no
    ``filepath``), JSONL ``filename``; precomp captions name no file (empty map)."""
    from tags.core.io import detect_format

    fmt = fmt or detect_format(captions)
    paths: dict[str, str] = {}
    if fmt == "karpathy":
        data = json.loads(Path(captions).read_text(encoding="utf-8"))
        for index, image in enumerate(data.get("images", [])):
            name = image.get("filename")
            if name:
                folder = image.get("filepath") or ""
                paths[str(image.get("imgid", index))] = f"{folder}/{name}" if folder else name
    elif fmt == "jsonl":
        with open(captions, encoding="utf-8") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and record.get("filename"):
                    paths.setdefault(str(record.get("image_id")), str(record["filename"]))
    return paths


def _name(record: dict[str, Any], options: ExportOptions) -> str | None:
    """The image's file name relative to the root, ``None`` when nothing names it (no caption
    file entry, no ``filename`` in the record, no ``image_ext``)."""
    key = str(record["image_id"])
    name = (options.paths or {}).get(key) or record.get("filename")
    if not name and options.image_ext:
        ext = options.image_ext if options.image_ext.startswith(".") else f".{options.image_ext}"
        name = key + ext
    if name and leaves_root(name) and not options.allow_outside_root:
        raise ValueError(outside_root_message(name, options.image_root or "(the image root)"))
    return name or None


def _relative(record: dict[str, Any], options: ExportOptions) -> str:
    """The record's image path relative to the image root; one that leaves it (absolute, or
    with ``..``) raises ``ValueError`` unless ``options.allow_outside_root``; an image with no
    known file name is its bare id, or (``bare_ids`` off) a ``ValueError``."""
    name = _name(record, options)
    if name is not None:
        return name
    key = str(record["image_id"])
    if not options.bare_ids:
        raise ValueError(
            f"no image file name for image id {key} (no --captions, or the caption file "
            "names no file for it): the file would be the bare id; pass --captions with "
            "file names (Karpathy filename, JSONL filename) or --image-ext .jpg"
        )
    return key


def _filepath(record: dict[str, Any], options: ExportOptions) -> str:
    relative = _relative(record, options)
    if not options.image_root or Path(relative).is_absolute():  # allowed: as it is
        return relative
    return f"{options.image_root.rstrip('/')}/{relative}"


def by_caption(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Consecutive records of one caption (``tags generate`` writes them together)."""
    group: list[dict[str, Any]] = []
    for record in records:
        if group and str(record.get("caption_id")) != str(group[0].get("caption_id")):
            yield group
            group = []
        group.append(record)
    if group:
        yield group


def subset_of(edits: list[dict[str, Any]]) -> str:
    """The SugarCrepe subset of a negative's edits (``mixed`` when they differ)."""
    edits = unit_edits(edits)  # "his" -> "her" follows "man" -> "woman"
    names = {SUBSETS.get((e.get("operation", "replace"), e.get("type")), "") for e in edits}
    if len(names) != 1:
        return "mixed"
    return names.pop() or f"replace_{edits[0].get('type', 'word')}"


_WORD = re.compile(r"[^\W_]+")


def similar_images(
    titles: list[str], images: list[str], n: int = 3, candidates: int = 64
) -> list[list[int]]:
    """NegCLIP's ``neg_image`` for rows ``(title, image key)``: for each row, one row of each
    of the ``n`` other images most similar to its image, most similar first, never its own.

    An image is the set of words of its rows' titles; similarity is the cosine of IDF-weighted
    word sets (a word on every image weighs 0). Candidates are the images sharing the image's
    rarest words (at most ``candidates``, rarest word first), so the cost stays linear in the
    rows; too few candidates (no shared word) are filled with the next images in row order.
    Of each chosen image, the row whose title shares the most IDF weight with this row's
    title (the first on ties)."""
    order: dict[str, int] = {}
    rows_of: list[list[int]] = []
    image_of: list[int] = []
    for row, key in enumerate(images):
        index = order.setdefault(key, len(order))
        if index == len(rows_of):
            rows_of.append([])
        rows_of[index].append(row)
        image_of.append(index)
    count = len(rows_of)
    if count < 2:
        raise ValueError(
            f"negclip: neg_image needs the captions of at least two images; the export has {count}"
        )
    words = [frozenset(_WORD.findall(title.lower())) for title in titles]
    docs = [frozenset().union(*(words[r] for r in rows)) for rows in rows_of]
    df: dict[str, int] = {}
    for doc in docs:
        for word in doc:
            df[word] = df.get(word, 0) + 1
    weight = {w: math.log(count / c) ** 2 for w, c in df.items()}
    postings: dict[str, list[int]] = {}
    for index, doc in enumerate(docs):
        for word in doc:
            if df[word] > 1:
                postings.setdefault(word, []).append(index)
    norms = [math.sqrt(sum(weight[w] for w in doc)) or 1.0 for doc in docs]
    n = min(n, count - 1)
    chosen: list[list[int]] = []
    for index, doc in enumerate(docs):
        found: dict[int, None] = {}
        for word in sorted((w for w in doc if df[w] > 1), key=lambda w: (df[w], w)):
            for other in postings[word]:
                if other != index:
                    found.setdefault(other)
                    if len(found) >= candidates:
                        break
            if len(found) >= candidates:
                break
        scored = sorted(
            found, key=lambda j: (-sum(weight[w] for w in doc & docs[j]) / norms[j], j)
        )[:n]
        step = 1
        while len(scored) < n:  # no shared word: the next images in row order
            other = (index + step) % count
            if other not in scored:
                scored.append(other)
            step += 1
        chosen.append(scored)
    result = []
    for row, title_words in enumerate(words):
        result.append(
            [
                max(rows_of[j], key=lambda r: (sum(weight[w] for w in title_words & words[r]), -r))
                for j in chosen[image_of[row]]
            ]
        )
    return result


def _separator(options: ExportOptions, default: str) -> str:
    sep = options.separator or default
    if len(sep) != 1 or sep in '"\r\n':
        raise ValueError(
            f"CSV separator must be one character other than a quote or newline, got {sep!r}"
        )
    return sep


# ---------------------------------------------------------------------- exporters
@register_exporter("negclip", ".negclip.tsv")
def export_negclip_table(
    records: Iterable[dict[str, Any]], target: Path, options: ExportOptions
) -> list[Path]:
    """NegCLIP's training table: ``filepath, title, neg_caption, neg_image`` (list literals),
    tab-separated unless ``options.separator``, ``\\n`` line ends."""
    k = options.negatives_per_row
    if k is not None and k < 1:
        raise ValueError(f"negatives per row must be at least 1, got {k}")
    if options.neg_images < 1:
        raise ValueError(f"--neg-images must be at least 1, got {options.neg_images}")
    sep = _separator(options, "\t")
    rows: list[tuple[str, str, list[str]]] = []
    keys: list[str] = []
    for group in by_caption(records):
        negatives = [r["negative"] for r in group][:k]
        rows.append((_filepath(group[0], options), group[0]["positive"], negatives))
        keys.append(str(group[0]["image_id"]))
    neighbours = similar_images([title for _, title, _ in rows], keys, options.neg_images)
    with open(target, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=sep, lineterminator="\n")
        writer.writerow(["filepath", "title", "neg_caption", "neg_image"])
        for (path, title, negatives), others in zip(rows, neighbours):
            writer.writerow([path, title, repr(negatives), repr(others)])
    return [target]


@register_exporter("negclip-csv", ".csv")
def export_negclip(
    records: Iterable[dict[str, Any]], target: Path, options: ExportOptions
) -> list[Path]:
    k = options.negatives_per_row or 1
    if k < 1:
        raise ValueError(f"negatives per row must be at least 1, got {k}")
    if options.list_column or k == 1:
        negative_columns = ["neg_caption"]
    else:
        negative_columns = [f"neg_caption_{i}" for i in range(1, k + 1)]
    delimiter = _separator(options, "\t" if target.suffix.lower() == ".tsv" else ",")
    short = 0
    with open(target, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter, lineterminator="\n")
        writer.writerow(["title", "filepath", *negative_columns])
        for group in by_caption(records):
            negatives = [r["negative"] for r in group[:k]]
            if options.list_column:
                cells = [repr(negatives)]
            elif len(negatives) < k:
                short += 1  # a row needs k negatives: the caption is left out
                continue
            else:
                cells = negatives
            writer.writerow([group[0]["positive"], _filepath(group[0], options), *cells])
    if short:
        print(
            f"negclip-csv: {short} captions with fewer than {k} negatives left out",
            file=sys.stderr,
        )
    return [target]


@register_exporter("sugarcrepe", ".sugarcrepe.json")
def export_sugarcrepe(
    records: Iterable[dict[str, Any]], target: Path, options: ExportOptions
) -> list[Path]:
    subsets: dict[str, dict[str, dict[str, str]]] = (
        {name: {} for name in SUGARCREPE_FILES} if options.by_type else {}
    )
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        name = subset_of(record.get("edits") or []) if options.by_type else ""
        grouped.setdefault(name, []).append(record)
    for name, group in grouped.items():
        items = subsets.setdefault(name, {})
        for record in options.select(name, group) if options.select else group:
            items[str(len(items))] = {
                "filename": _relative(record, options),
                "caption": record["positive"],
                "negative_caption": record["negative"],
            }
    if not options.by_type:
        target.write_text(json.dumps(subsets.get("", {}), ensure_ascii=False, indent=1))
        return [target]
    empty = [name for name in SUGARCREPE_FILES if not subsets[name]]
    emptied = [name for name in empty if grouped.get(name)]  # the selection kept none
    absent = [name for name in empty if name not in emptied]
    adds = " (add_obj/add_att come from `tags generate --adds`)"
    adds = adds if {"add_obj", "add_att"} & set(absent) else ""
    why = [f"no negative of {', '.join(absent)}{adds}"] if absent else []
    if emptied:
        why.append(
            f"the refinement (--refine) kept no pair of {', '.join(emptied)} (no pair a "
            "text-only scorer prefers the negative of, to match the others with)"
        )
    if empty and not options.allow_empty:
        raise ValueError(
            f"sugarcrepe --by-type: {'; '.join(why)}; SugarCrepe's main_eval.py divides by "
            "the size of each of its seven files, so it would stop on an empty one: export "
            "without --by-type, or pass --allow-empty-subsets to write them as {} and leave "
            "them out of its data_dict"
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(subsets):
        path = target / f"{name}.json"
        path.write_text(json.dumps(subsets[name], ensure_ascii=False, indent=1))
        written.append(path)
    if empty:
        print(
            f"sugarcrepe: {', '.join(empty)} written empty ({{}}: {'; '.join(why)}); "
            "SugarCrepe's main_eval.py divides by each file's size, so leave them out of its "
            "data_dict",
            file=sys.stderr,
        )
    return written


def _with_table(
    records: Iterable[dict[str, Any]], options: ExportOptions, write: Callable[[Any], Any]
) -> None:
    """``write(dataset)`` with the records (plus ``filename`` when the image file names are
    known: ``options.paths`` or ``options.image_ext``) as a ``datasets.Dataset``; every row
    has every column (``None`` where a record lacks one, e.g. ``score``); the Arrow cache is
    a temporary folder (nothing is left in the user's datasets cache)."""
    import tempfile

    from datasets import Dataset

    named = bool(options.paths) or bool(options.image_ext)
    with tempfile.TemporaryDirectory() as cache:
        rows = Path(cache) / "rows.jsonl"
        columns: dict[str, None] = {}
        ragged = False
        with open(rows, "w", encoding="utf-8") as out:
            for record in records:
                if named:
                    record = {**record, "filename": _relative(record, options)}
                if columns and record.keys() != columns.keys():
                    ragged = True
                columns.update(dict.fromkeys(record))
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        if ragged:  # one schema for every block the JSON reader infers
            full = Path(cache) / "full.jsonl"
            with open(rows, encoding="utf-8") as src, open(full, "w", encoding="utf-8") as out:
                for line in src:
                    record = json.loads(line)
                    out.write(json.dumps({c: record.get(c) for c in columns}) + "\n")
            rows = full
        write(Dataset.from_json(str(rows), cache_dir=str(Path(cache) / "arrow")))


@register_exporter("json", ".hf.jsonl")
def export_json(records: Any, target: Path, options: ExportOptions) -> list[Path]:
    _with_table(records, options, lambda table: table.to_json(str(target), force_ascii=False))
    return [target]


@register_exporter("parquet", ".parquet")
def export_parquet(records: Any, target: Path, options: ExportOptions) -> list[Path]:
    _with_table(records, options, lambda table: table.to_parquet(str(target)))
    return [target]


@register_exporter("dataset", "_dataset")
def export_dataset(records: Any, target: Path, options: ExportOptions) -> list[Path]:
    _with_table(records, options, lambda table: table.save_to_disk(str(target)))
    return [target]


def checked(records: Iterable[dict[str, Any]], index: CaptionIndex) -> Iterator[dict[str, Any]]:
    """The records, each checked against the caption file first (:meth:`CaptionIndex.check`)."""
    for record in records:
        index.check(record)
        yield record


def default_target(jsonl: str | Path, kind: str, by_type: bool = False) -> Path:
    """``OUT.jsonl`` -> ``OUT.csv`` / ``OUT.sugarcrepe.json`` / ``OUT_sugarcrepe/`` ..."""
    jsonl = Path(jsonl)
    stem = jsonl.with_suffix("")
    if kind == "sugarcrepe" and by_type:
        return stem.with_name(stem.name + "_sugarcrepe")
    return stem.with_name(stem.name + SUFFIXES[kind])


#: what a previous export folder may hold (``overwrite`` replaces only such a folder)
_EXPORT_FOLDER = {
    "sugarcrepe": re.compile(r"^[a-z_]+\.json$"),
    "dataset": re.compile(r"^(data-\d+-of-\d+\.arrow|dataset_info\.json|state\.json)$"),
}


def check_target(jsonl: str | Path, target: str | Path, kind: str, overwrite: bool) -> None:
    """Refuse (``ValueError`` / ``FileExistsError``, one line) a target that is the input or
    a folder holding it, and an existing target unless ``overwrite``; an existing folder is
    replaced only when it holds a previous export of ``kind``, never anything else."""
    source, target = Path(jsonl).resolve(), Path(target)
    if target.resolve() == source:
        raise ValueError(f"export target {target} is the input {jsonl}: choose another --out")
    if source.is_relative_to(target.resolve()):
        raise ValueError(f"export target {target} is a folder holding the input {jsonl}")
    if not (target.exists() or target.is_symlink()):
        return
    if not overwrite:
        raise FileExistsError(f"{target} exists; pass --overwrite to replace it")
    if target.is_dir() and not target.is_symlink():
        pattern = _EXPORT_FOLDER.get(kind)
        entries = list(target.iterdir())
        if pattern is None or not all(e.is_file() and pattern.match(e.name) for e in entries):
            raise FileExistsError(
                f"{target} is a folder that is not a previous {kind} export: not replaced; "
                "remove it yourself or choose another --out"
            )


def _move_into_place(tmp: Path, target: Path) -> None:
    """``tmp`` -> ``target`` (a file atomically; a folder replaces the checked old one)."""
    if target.is_dir() and not target.is_symlink():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old)
        return
    if tmp.is_dir() and (target.exists() or target.is_symlink()):
        target.unlink()
    os.replace(tmp, target)


def _not_empty(records: Iterator[dict[str, Any]], jsonl: str | Path) -> Iterator[dict[str, Any]]:
    """``records`` unchanged; a ``ValueError`` naming ``jsonl`` when it holds none (before any
    exporter runs: an empty table trains or tests nothing)."""
    first = next(records, None)
    if first is None:
        raise ValueError(
            f"{jsonl}: no records (an empty `tags generate` output): nothing to export"
        )
    return itertools.chain([first], records)


def export_file(
    jsonl: str | Path,
    kind: str,
    target: str | Path | None = None,
    options: ExportOptions | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Convert the ``tags generate`` output ``jsonl`` to ``kind``; returns the written paths.
    The target is checked (:func:`check_target`) and written atomically; an input with no
    records is refused (``ValueError``), nothing written."""
    if kind not in EXPORTERS:
        raise ValueError(f"unknown export {kind!r}; choose from {', '.join(list_exporters())}")
    options = options or ExportOptions()
    if options.bare_ids is None:
        options = replace(options, bare_ids=kind not in NAMED_IMAGES)
    target = Path(target) if target else default_target(jsonl, kind, options.by_type)
    check_target(jsonl, target, kind, overwrite)
    tmp = target.with_name(f".tmp-{os.getpid()}-{target.name}")  # same suffix (.tsv, ...)
    try:
        source = _not_empty(read_records(jsonl), jsonl)
        if options.captions is not None:
            source = checked(source, options.captions)
        written = EXPORTERS[kind](source, tmp, options)
        _move_into_place(tmp, target)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
    return [target / p.relative_to(tmp) if p != tmp else target for p in written]


__all__ = [
    "EXPORTERS",
    "NAMED_IMAGES",
    "NEEDS_NAMES",
    "SUBSETS",
    "SUGARCREPE_FILES",
    "CaptionIndex",
    "ExportOptions",
    "by_caption",
    "caption_index",
    "check_target",
    "checked",
    "default_target",
    "export_file",
    "image_paths",
    "list_exporters",
    "normalize_space",
    "read_records",
    "register_exporter",
    "similar_images",
    "subset_of",
]
