"""Caption tables as columns: what the engine-neutral batch functions read and write.

A batch is a table of rows in any of the layouts data engines hand to a batched map: a
mapping of column name -> list or NumPy array (Hugging Face ``datasets``, Ray's
``"numpy"`` format), a ``pandas.DataFrame`` or a ``pyarrow.Table``. Input rows come in one
of two layouts:

- **image rows** (``captions`` column): one row per image, with ``image_id``, ``captions``
  (list of strings) and ``caption_ids`` (list, one id per caption); the other captions of
  the image serve the false-negative rule and the counting pass's per-image counts, as the
  caption groups of ``tags generate`` do;
- **caption rows** (``caption`` column): one row per image with a single caption, with
  ``image_id`` and ``caption_id`` (CC3M, CC12M or LAION style).

:func:`caption_columns` reads any caption file of ``tags generate`` into image rows.
Output rows are the JSON Lines records of ``tags generate`` (:data:`RECORD_COLUMNS`), one
per negative, in the layout of the input batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tags.core.io import ErrorPolicy, InputError, read_captions
from tags.core.types import Caption, ImageGroup

#: Output columns, in the order of a ``tags generate`` record.
RECORD_COLUMNS = (
    "image_id",
    "caption_id",
    "positive",
    "negative",
    "edits",
    "negative_index",
    "num_negatives",
)
#: Extra output columns when a tokenizer is given (WoD/WoC labels).
LABEL_COLUMNS = ("input_ids", "wod_labels", "woc_labels")


def _plain(value: Any) -> Any:
    """A NumPy scalar or array (as pandas and Ray hand them out) as plain Python."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def to_lists(batch: Any) -> tuple[dict[str, list], str]:
    """``(columns as plain Python lists, layout)``; layout is ``"pyarrow"``, ``"pandas"``
    or ``"mapping"``."""
    if hasattr(batch, "to_pydict") and hasattr(batch, "schema"):
        return batch.to_pydict(), "pyarrow"
    if hasattr(batch, "iloc") and hasattr(batch, "columns"):
        return {str(c): [_plain(v) for v in batch[c].tolist()] for c in batch.columns}, "pandas"
    if isinstance(batch, Mapping):
        return {str(k): [_plain(v) for v in batch[k]] for k in batch}, "mapping"
    raise TypeError(
        f"a batch is a mapping of columns, a pandas.DataFrame or a pyarrow.Table, not "
        f"{type(batch).__name__}"
    )


def _column(columns: dict[str, list], name: str) -> list:
    if name not in columns:
        found = ", ".join(sorted(columns)) or "none"
        raise InputError(
            f"batch column {name!r} missing (columns: {found}); image rows need image_id, "
            "captions, caption_ids; caption rows need image_id, caption, caption_id"
        )
    return columns[name]


def groups_of(columns: dict[str, list]) -> list[ImageGroup]:
    """The image groups of a batch's rows (one group per row), in row order."""
    layout = "captions" if "captions" in columns else "caption"
    image_ids = _column(columns, "image_id")
    if layout == "captions":
        texts = _column(columns, "captions")
        ids = _column(columns, "caption_ids")
    else:
        texts = [[t] for t in _column(columns, "caption")]
        ids = [[i] for i in _column(columns, "caption_id")]
    groups = []
    for row, (image_id, row_texts, row_ids) in enumerate(zip(image_ids, texts, ids)):
        if len(row_texts) != len(row_ids):
            raise InputError(
                f"batch row {row} (image {image_id!r}): {len(row_texts)} captions but "
                f"{len(row_ids)} caption_ids"
            )
        if not all(isinstance(text, str) for text in row_texts):
            raise InputError(f"batch row {row} (image {image_id!r}): a caption is not a string")
        captions = [Caption(image_id, cid, text) for cid, text in zip(row_ids, row_texts)]
        groups.append(ImageGroup(image_id, captions))
    return groups


def caption_items(groups: Iterable[ImageGroup]) -> Iterator[tuple[Caption, ImageGroup]]:
    """Every caption of ``groups`` with its group, in order."""
    for group in groups:
        for caption in group.captions:
            yield caption, group


def from_lists(columns: dict[str, list], layout: str, like: Any = None) -> Any:
    """``columns`` in ``layout`` (see :func:`to_lists`); for ``"pyarrow"`` the id columns
    take their type from the input table ``like`` (a batch without any negative has
    typed, empty columns)."""
    if layout == "mapping":
        return columns
    if layout == "pandas":
        import pandas as pd

        return pd.DataFrame(columns)
    import pyarrow as pa

    return pa.Table.from_pydict(columns, schema=_schema(columns, like))


def _schema(columns: dict[str, list], like: Any) -> Any:
    import pyarrow as pa

    def id_type(name: str, inner: str | None = None) -> Any:
        if like is None or name not in like.column_names:
            return pa.int64()
        kind = like.schema.field(name).type
        return kind.value_type if inner else kind

    caption_id = id_type("caption_ids", "list") if "captions" in like.column_names else None
    edit = pa.struct(
        [
            ("type", pa.string()),
            ("original", pa.string()),
            ("replacement", pa.string()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("operation", pa.string()),
        ]
    )
    types = {
        "image_id": id_type("image_id"),
        "caption_id": caption_id or id_type("caption_id"),
        "positive": pa.string(),
        "negative": pa.string(),
        "edits": pa.list_(edit),
        "negative_index": pa.int64(),
        "num_negatives": pa.int64(),
        "score": pa.float64(),
        **{name: pa.list_(pa.int64()) for name in LABEL_COLUMNS},
    }
    return pa.schema([(name, types[name]) for name in columns])


def caption_columns(
    path: str | Path, fmt: str | None = None, *, split: str | None = None, on_error: str = "stop"
) -> dict[str, list]:
    """A caption file of ``tags generate`` (precomp, Karpathy JSON or JSON Lines) as image
    rows: ``{"image_id": [...], "captions": [[...], ...], "caption_ids": [[...], ...]}``
    (e.g. for ``datasets.Dataset.from_dict``). Images without a caption are left out."""
    columns: dict[str, list] = {"image_id": [], "captions": [], "caption_ids": []}
    for group in read_captions(path, fmt, on_error=ErrorPolicy(on_error), split=split):
        if group.captions:
            columns["image_id"].append(group.image_id)
            columns["captions"].append([c.text for c in group.captions])
            columns["caption_ids"].append([c.caption_id for c in group.captions])
    return columns


__all__ = [
    "LABEL_COLUMNS",
    "RECORD_COLUMNS",
    "caption_columns",
    "caption_items",
    "from_lists",
    "groups_of",
    "to_lists",
]
