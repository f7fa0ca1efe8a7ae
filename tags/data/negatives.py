"""Fixed negative pools for training (``data.negatives``), from tags' own or external files.

One reader registry, :data:`READERS`, keyed by format; every reader yields
:class:`NegativeRow` objects (image key, positive caption, negative captions, and, for tags'
own JSONL, the caption id and edits):

| format | file | columns / fields |
|---|---|---|
| ``tags-jsonl`` | ``tags generate`` ``.jsonl`` | ``caption_id``, ``positive``, ``negative``, ``edits`` |
| ``negclip-csv`` | ``.csv`` / ``.tsv`` (tab) | ``title``, ``filepath``, ``neg_caption`` (a string or NegCLIP's list literal) or ``neg_caption_1..k`` |
| ``sugarcrepe`` | ``.json`` or a folder of them | ``{id: {filename, caption, negative_caption}}`` |
| ``parquet`` | ``.parquet`` | any of the three column sets above |
| ``hf-dataset`` | a ``datasets.save_to_disk`` folder | any of the three column sets above |

:func:`load_negative_pools` matches the rows to the training set: by caption id when the row
has one, else by image (the path, its file name or stem against the group's ``filename`` or
id) and caption text (whitespace collapsed, case folded). Rows that match no training caption
raise a :class:`ValueError` naming their count and the first of them (``unmatched="skip"``
trains with the rest). Negatives made elsewhere get word-level edits from a diff
(:func:`tags.core.edits.diff_edits`), so WoD/WoC labels exist for them too.
"""

from __future__ import annotations

import ast
import csv
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tags.core.edits import edits_problem
from tags.core.types import Edit


@dataclass
class NegativeRow:
    """One positive caption with its negatives, as a file states them."""

    image: str | None
    positive: str
    negatives: list[str]
    caption_id: Any = None
    edits: list[tuple[Edit, ...]] | None = None
    where: str = ""


Reader = Callable[[Path], Iterator[NegativeRow]]
READERS: dict[str, Reader] = {}


def register_negatives_reader(name: str) -> Callable[[Reader], Reader]:
    """Register ``fn(path) -> Iterator[NegativeRow]`` as ``data.negatives`` format ``name``."""

    def wrap(fn: Reader) -> Reader:
        if name in READERS:
            raise ValueError(f"negatives reader {name!r} already registered")
        READERS[name] = fn
        return fn

    return wrap


def list_negative_formats() -> list[str]:
    return sorted(READERS)


def detect_negatives_format(path: str | Path) -> str:
    """The format of ``path`` from its name (a folder: a ``datasets`` folder or SugarCrepe)."""
    path = Path(path)
    if path.is_dir():
        if (path / "dataset_info.json").is_file() or (path / "state.json").is_file():
            return "hf-dataset"
        if any(path.glob("*.json")):
            return "sugarcrepe"
        raise ValueError(f"{path}: a folder that is neither a datasets folder nor SugarCrepe JSON")
    suffix = path.suffix.lower()
    by_suffix = {
        ".jsonl": "tags-jsonl",
        ".csv": "negclip-csv",
        ".tsv": "negclip-csv",
        ".json": "sugarcrepe",
        ".parquet": "parquet",
    }
    if suffix not in by_suffix:
        raise ValueError(
            f"{path}: unknown negatives format {suffix!r}; use .jsonl (tags generate), "
            ".csv/.tsv (NegCLIP), .json (SugarCrepe), .parquet or a datasets folder"
        )
    return by_suffix[suffix]


def read_negative_rows(path: str | Path, fmt: str | None = None) -> Iterator[NegativeRow]:
    """The rows of a negatives file in the given (or detected) format."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data.negatives: {path} not found")
    fmt = fmt or detect_negatives_format(path)
    if fmt not in READERS:
        raise ValueError(f"unknown negatives format {fmt!r}; choose from {list_negative_formats()}")
    return READERS[fmt](path)


# ---------------------------------------------------------------------- readers
@register_negatives_reader("tags-jsonl")
def read_tags_jsonl(path: Path) -> Iterator[NegativeRow]:
    row: NegativeRow | None = None
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                edits = tuple(Edit.from_dict(e) for e in rec.get("edits", []))
                caption_id, positive, negative = rec["caption_id"], rec["positive"], rec["negative"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{line_no}: not a `tags generate` record ({err})") from err
            problem = edits_problem(str(positive), rec.get("edits", []))
            if problem is not None:  # e.g. an offset outside the caption: wrong WoD/WoC labels
                raise ValueError(f"{path}:{line_no}: not a `tags generate` record ({problem})")
            if row is None or str(row.caption_id) != str(caption_id):
                if row is not None:
                    yield row
                image = rec.get("image_id")
                row = NegativeRow(
                    None if image is None else str(image), positive, [], caption_id, [],
                    f"{path}:{line_no}",
                )  # fmt: skip
            row.negatives.append(negative)
            assert row.edits is not None
            row.edits.append(edits)
    if row is not None:
        yield row


def _negatives_cell(value: Any) -> list[str]:
    """A ``neg_caption`` cell: a string, a list, or NegCLIP's list literal ``"['a', 'b']"``."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v]
    text = str(value)
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return [str(v) for v in parsed if v]
    return [text] if text else []


def _numbered(columns: Iterable[str]) -> list[str]:
    found = [c for c in columns if c.startswith("neg_caption_") and c[12:].isdigit()]
    return sorted(found, key=lambda c: int(c[12:]))


def _row_from_mapping(record: dict[str, Any], where: str) -> NegativeRow:
    """A row from one record of any of the three column sets (NegCLIP, SugarCrepe, tags)."""
    if "title" in record:
        negatives = _negatives_cell(record.get("neg_caption"))
        for column in _numbered(record):
            negatives += _negatives_cell(record[column])
        image = record.get("filepath")
        positive = record["title"]
    elif "negative_caption" in record:
        negatives = _negatives_cell(record["negative_caption"])
        image, positive = record.get("filename"), record.get("caption")
    elif "negative" in record and "positive" in record:
        negatives = [record["negative"]]
        image, positive = record.get("image_id"), record["positive"]
    else:
        raise ValueError(
            f"{where}: columns {sorted(record)}: expected NegCLIP (title, filepath, "
            "neg_caption), SugarCrepe (filename, caption, negative_caption) or tags generate "
            "(positive, negative) columns"
        )
    if not isinstance(positive, str) or not positive:
        raise ValueError(f"{where}: no positive caption")
    image = None if image is None or image == "" else str(image)
    return NegativeRow(image, positive, negatives, record.get("caption_id"), None, where)


@register_negatives_reader("negclip-csv")
def read_negclip_csv(path: Path) -> Iterator[NegativeRow]:
    with open(path, encoding="utf-8", newline="") as handle:
        first = handle.readline()
        handle.seek(0)
        delimiter = "\t" if "\t" in first or path.suffix.lower() == ".tsv" else ","
        reader = csv.DictReader(handle, delimiter=delimiter)
        if not reader.fieldnames or "title" not in reader.fieldnames:
            raise ValueError(
                f"{path}: a NegCLIP CSV needs a header with title, filepath and neg_caption "
                f"(or neg_caption_1..k); found {reader.fieldnames}"
            )
        if "neg_caption" not in reader.fieldnames and not _numbered(reader.fieldnames):
            raise ValueError(f"{path}: no neg_caption or neg_caption_1..k column")
        for number, record in enumerate(reader, 2):
            yield _row_from_mapping(record, f"{path}:{number}")


@register_negatives_reader("sugarcrepe")
def read_sugarcrepe(path: Path) -> Iterator[NegativeRow]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{file}: not valid JSON ({err})") from err
        if not isinstance(data, dict):
            raise ValueError(f"{file}: expected {{id: {{filename, caption, negative_caption}}}}")
        for key, item in data.items():
            where = f"{file}[{key!r}]"
            if not isinstance(item, dict) or "caption" not in item:
                raise ValueError(f"{where}: expected filename, caption and negative_caption")
            yield _row_from_mapping(item, where)


def _rows_from_table(table: Any, name: str) -> Iterator[NegativeRow]:
    for index, record in enumerate(table.to_pylist()):
        yield _row_from_mapping(record, f"{name} row {index}")


@register_negatives_reader("parquet")
def read_parquet(path: Path) -> Iterator[NegativeRow]:
    import pyarrow.parquet as pq

    return _rows_from_table(pq.read_table(path), str(path))


@register_negatives_reader("hf-dataset")
def read_hf_dataset(path: Path) -> Iterator[NegativeRow]:
    from datasets import load_from_disk

    dataset = load_from_disk(str(path))
    if hasattr(dataset, "keys"):  # a DatasetDict: its train split, else its only split
        splits = list(dataset.keys())
        dataset = dataset["train"] if "train" in splits else dataset[splits[0]]
    return _rows_from_table(dataset.data, str(path))


# ---------------------------------------------------------------------- matching
def normalize_caption(text: str) -> str:
    return " ".join(text.split()).casefold()


def _image_keys(name: str) -> list[str]:
    path = Path(name)
    return list(dict.fromkeys([name, path.name, path.stem]))


class CaptionIndex:
    """Training captions by ``(image key, normalised text)`` and by text alone."""

    def __init__(self, groups: Sequence[Any]) -> None:
        self.ids: set[str] = set()
        self.by_image: dict[str, dict[str, Any]] = {}
        self.by_text: dict[str, list[Any]] = {}
        for group in groups:
            texts = {normalize_caption(c.text): c.caption_id for c in group.captions}
            keys = [str(group.image_id)]
            if getattr(group, "filename", None):
                keys += _image_keys(group.filename)
            for key in keys:
                self.by_image.setdefault(key, {}).update(texts)
            for text, caption_id in texts.items():
                self.by_text.setdefault(text, []).append(caption_id)
            self.ids.update(str(c.caption_id) for c in group.captions)

    def find(self, row: NegativeRow) -> Any:
        """The training caption id of ``row``, or ``None``."""
        if row.caption_id is not None:
            return row.caption_id if str(row.caption_id) in self.ids else None
        text = normalize_caption(row.positive)
        if row.image is None:
            found = self.by_text.get(text, [])
            return found[0] if len(found) == 1 else None
        for key in _image_keys(row.image):
            if key in self.by_image:
                return self.by_image[key].get(text)
        return None


class NegativePools:
    """``caption_id -> [(negative, edits), ...]`` in file order (best first when the file was
    written with top-m selection). Keys are compared as strings, so ``3`` and ``"3"`` match."""

    def __init__(
        self,
        pools: dict[str, list[tuple[str, tuple[Edit, ...] | None]]],
        positives: dict[str, str] | None = None,
    ) -> None:
        self.pools = pools
        self.positives = positives or {}

    @classmethod
    def from_rows(
        cls, rows: Iterable[NegativeRow], index: CaptionIndex | None = None
    ) -> tuple[NegativePools, list[NegativeRow]]:
        """Pools from rows, keyed by the row's caption id or, with an ``index``, by the
        training caption it matches; returns ``(pools, rows that matched nothing)``. Rows
        without edits get them from a word diff when first asked for (:meth:`get`)."""
        pools: dict[str, list[tuple[str, tuple[Edit, ...] | None]]] = {}
        positives: dict[str, str] = {}
        unmatched: list[NegativeRow] = []
        for row in rows:
            caption_id = row.caption_id if index is None else index.find(row)
            if caption_id is None:
                unmatched.append(row)
                continue
            key = str(caption_id)
            pool = pools.setdefault(key, [])
            positives.setdefault(key, row.positive)
            for n, negative in enumerate(row.negatives):
                pool.append((negative, row.edits[n] if row.edits is not None else None))
        return cls(pools, positives), unmatched

    @classmethod
    def from_jsonl(cls, path: str | Path) -> NegativePools:
        return cls.from_rows(read_tags_jsonl(Path(path)))[0]

    def __len__(self) -> int:
        return len(self.pools)

    def positive(self, caption_id: object, default: str) -> str:
        """The positive text the edits refer to (``tags generate`` normalises whitespace)."""
        return self.positives.get(str(caption_id), default)

    def get(
        self, caption_id: object, limit: int | None = None
    ) -> list[tuple[str, tuple[Edit, ...]]]:
        from tags.core.edits import diff_edits

        key = str(caption_id)
        pool = self.pools.get(key, [])
        chosen = pool[:limit] if limit is not None else pool
        for n, (text, edits) in enumerate(chosen):
            if edits is None:  # computed once, on first use
                pool[n] = (text, diff_edits(self.positives[key], text))
        return pool[: len(chosen)]


@dataclass
class MatchReport:
    rows: int = 0
    matched: int = 0
    unmatched: list[NegativeRow] = field(default_factory=list)

    def describe(self, limit: int = 3) -> str:
        shown = "; ".join(
            f"{r.where}: image {r.image!r}, caption {r.positive[:60]!r}"
            for r in self.unmatched[:limit]
        )
        return f"{len(self.unmatched)} of {self.rows} rows match no training caption ({shown})"


def load_negative_pools(
    path: str | Path,
    groups: Sequence[Any],
    fmt: str | None = None,
    unmatched: str = "error",
) -> NegativePools:
    """Pools of a negatives file (any registered format) matched to the training ``groups``.

    ``unmatched``: ``error`` (default) raises a ``ValueError`` naming the unmatched rows'
    count and the first of them; ``skip`` warns and keeps the matched rows. No match at all
    always raises."""
    if unmatched not in ("error", "skip"):
        raise ValueError(f"unmatched must be 'error' or 'skip', got {unmatched!r}")
    rows = list(read_negative_rows(path, fmt))
    pools, missing = NegativePools.from_rows(rows, CaptionIndex(groups))
    report = MatchReport(len(rows), len(rows) - len(missing), missing)
    if not rows:
        raise ValueError(f"data.negatives {path}: no rows")
    if missing and (unmatched == "error" or not report.matched):
        hint = "" if not report.matched else " (data.negatives_unmatched=skip trains with the rest)"
        raise ValueError(f"data.negatives {path}: {report.describe()}{hint}")
    if missing:
        print(f"warning: data.negatives {path}: {report.describe()}; skipped", file=sys.stderr)
    return pools


def pools_for(data_config: Any, dataset: Any) -> NegativePools:
    """``data.negatives`` (with ``negatives_format`` / ``negatives_unmatched``) matched to the
    image groups of the training ``dataset``; a file that cannot be read is a ``ConfigError``
    naming it."""
    import csv

    from tags.core.errors import ConfigError

    try:
        return load_negative_pools(
            data_config.negatives,
            dataset.groups,
            data_config.negatives_format,
            data_config.negatives_unmatched,
        )
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"data.negatives: {data_config.negatives} is not UTF-8 text ({err.reason} at byte "
            f"{err.start}); pass a tags generate JSONL, NegCLIP CSV/TSV, SugarCrepe JSON, "
            "parquet or datasets folder"
        ) from None
    except (OSError, ValueError, csv.Error) as err:
        if isinstance(err, ConfigError):
            raise
        message = str(err)
        if not message.startswith("data.negatives"):
            message = f"data.negatives: {message}"
        raise ConfigError(message) from None


__all__ = [
    "READERS",
    "CaptionIndex",
    "NegativePools",
    "NegativeRow",
    "detect_negatives_format",
    "list_negative_formats",
    "load_negative_pools",
    "normalize_caption",
    "pools_for",
    "read_negative_rows",
    "register_negatives_reader",
]
