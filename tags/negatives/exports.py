"""Exports of a finished ``tags generate`` output to the formats other tools read.

One registry, :data:`EXPORTERS`, keyed by format name; every exporter takes the output's
records and an :class:`ExportOptions` and returns the paths it wrote:

- ``parquet`` / ``dataset``: the records as they are (a Parquet file, a ``datasets`` folder);
- ``negclip-csv``: NegCLIP / open_clip CSV, one row per positive caption: ``title`` (the
  positive), ``filepath`` (the image under ``image_root``) and ``neg_caption`` (k = 1) or
  ``neg_caption_1`` .. ``neg_caption_k``; ``list_column`` writes NegCLIP's own layout instead
  (``neg_caption`` holds a Python list literal of up to k negatives, as its
  ``ast.literal_eval`` reader expects). A ``.tsv`` target is tab-separated, else commas;
- ``sugarcrepe``: SugarCrepe's ``{id: {filename, caption, negative_caption}}`` JSON, one item
  per negative, so a generated set is directly a test suite; ``by_type`` writes one file per
  edit kind (``replace_obj``, ``replace_att``, ``replace_rel``, ``swap_obj``, ``swap_att``,
  and ``swap_rel`` / ``mixed`` / ``replace_word`` for what SugarCrepe has no subset for).

Image paths come from the caption file the negatives were generated from
(:func:`image_paths`: Karpathy ``filepath/filename``, JSONL ``filename``); without one, or
for an image it does not name, the image id stands in for the file name.

Targets (:func:`check_target`): never the input itself nor a folder holding it; an existing
one only with ``overwrite`` (a folder only when it holds a previous export of that kind).
Every target is written to a temporary sibling and moved into place (``os.replace``), so a
failed export leaves nothing half-written and an old export stays until the new one is done.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tags._paths import leaves_root, outside_root_message

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
}


@dataclass
class ExportOptions:
    """Settings shared by the exporters (each reads the ones it needs)."""

    image_root: str = ""
    paths: dict[str, str] | None = None  # str(image_id) -> image path relative to the root
    negatives_per_row: int = 1  # negclip-csv: k
    list_column: bool = False  # negclip-csv: NegCLIP's list-literal neg_caption
    by_type: bool = False  # sugarcrepe: one file per edit kind
    allow_outside_root: bool = False  # image names that are absolute or hold ".."


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


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a ``tags generate`` JSON Lines file (a bad line raises, named)."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: invalid JSON ({err.msg})") from err
            if not isinstance(record, dict) or not {"image_id", "positive", "negative"} <= set(
                record
            ):
                raise ValueError(
                    f"{path}:{number}: not a `tags generate` record (needs image_id, "
                    "positive, negative)"
                )
            yield record


def image_paths(captions: str | Path, fmt: str | None = None) -> dict[str, str]:
    """``str(image_id) -> relative image path`` from a caption file: Karpathy
    ``filepath/filename`` (COCO's ``val2014/COCO_val2014_...jpg``; Flickr30K has no
    ``filepath``), JSONL ``filename``; precomp captions name no file (empty map)."""
    from tags.negatives.io import detect_format

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


def _relative(record: dict[str, Any], options: ExportOptions) -> str:
    """The record's image path relative to the image root; one that leaves it (absolute, or
    with ``..``) raises ``ValueError`` unless ``options.allow_outside_root``."""
    key = str(record["image_id"])
    name = (options.paths or {}).get(key) or record.get("filename") or key
    if leaves_root(name) and not options.allow_outside_root:
        raise ValueError(outside_root_message(name, options.image_root or "(the image root)"))
    return name


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
    names = {SUBSETS.get((e.get("operation", "replace"), e.get("type")), "") for e in edits}
    if len(names) != 1:
        return "mixed"
    return names.pop() or f"replace_{edits[0].get('type', 'word')}"


# ---------------------------------------------------------------------- exporters
@register_exporter("negclip-csv", ".csv")
def export_negclip(
    records: Iterable[dict[str, Any]], target: Path, options: ExportOptions
) -> list[Path]:
    k = options.negatives_per_row
    if k < 1:
        raise ValueError(f"negatives per row must be at least 1, got {k}")
    if options.list_column or k == 1:
        negative_columns = ["neg_caption"]
    else:
        negative_columns = [f"neg_caption_{i}" for i in range(1, k + 1)]
    delimiter = "\t" if target.suffix.lower() == ".tsv" else ","
    short = 0
    with open(target, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
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
        import sys

        print(
            f"negclip-csv: {short} captions with fewer than {k} negatives left out",
            file=sys.stderr,
        )
    return [target]


@register_exporter("sugarcrepe", ".sugarcrepe.json")
def export_sugarcrepe(
    records: Iterable[dict[str, Any]], target: Path, options: ExportOptions
) -> list[Path]:
    subsets: dict[str, dict[str, dict[str, str]]] = {}
    for record in records:
        name = subset_of(record.get("edits") or []) if options.by_type else ""
        items = subsets.setdefault(name, {})
        items[str(len(items))] = {
            "filename": _relative(record, options),
            "caption": record["positive"],
            "negative_caption": record["negative"],
        }
    if not options.by_type:
        target.write_text(json.dumps(subsets.get("", {}), ensure_ascii=False, indent=1))
        return [target]
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(subsets):
        path = target / f"{name}.json"
        path.write_text(json.dumps(subsets[name], ensure_ascii=False, indent=1))
        written.append(path)
    return written


def _with_table(jsonl: Path, write: Callable[[Any], Any]) -> None:
    """``write(dataset)`` with the JSON Lines file as a ``datasets.Dataset`` whose Arrow cache
    is a temporary folder (nothing is left in the user's datasets cache)."""
    import tempfile

    from datasets import Dataset

    with tempfile.TemporaryDirectory() as cache:
        write(Dataset.from_json(str(jsonl), cache_dir=cache))


@register_exporter("parquet", ".parquet")
def export_parquet(records: Any, target: Path, options: ExportOptions) -> list[Path]:
    _with_table(Path(records), lambda table: table.to_parquet(str(target)))
    return [target]


@register_exporter("dataset", "_dataset")
def export_dataset(records: Any, target: Path, options: ExportOptions) -> list[Path]:
    _with_table(Path(records), lambda table: table.save_to_disk(str(target)))
    return [target]


#: formats that read the JSON Lines file themselves (through ``datasets``)
_WHOLE_FILE = ("parquet", "dataset")


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


def export_file(
    jsonl: str | Path,
    kind: str,
    target: str | Path | None = None,
    options: ExportOptions | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Convert the ``tags generate`` output ``jsonl`` to ``kind``; returns the written paths.
    The target is checked (:func:`check_target`) and written atomically."""
    if kind not in EXPORTERS:
        raise ValueError(f"unknown export {kind!r}; choose from {', '.join(list_exporters())}")
    options = options or ExportOptions()
    target = Path(target) if target else default_target(jsonl, kind, options.by_type)
    check_target(jsonl, target, kind, overwrite)
    tmp = target.with_name(f".tmp-{os.getpid()}-{target.name}")  # same suffix (.tsv, ...)
    try:
        source = jsonl if kind in _WHOLE_FILE else read_records(jsonl)
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
    "SUBSETS",
    "ExportOptions",
    "by_caption",
    "check_target",
    "default_target",
    "export_file",
    "image_paths",
    "list_exporters",
    "read_records",
    "register_exporter",
    "subset_of",
]
