"""Small file helpers shared by the suite readers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tags.core.errors import first_line
from tags.core.io import InputError, json_lines
from tags.evaluation.suites.base import SuiteError


def find_file(path: Path, names: tuple[str, ...], suite: str) -> Path:
    """``path`` itself when it is a file, else the first of ``names`` inside it (or in its
    ``data/`` folder, the layout of the published repositories)."""
    if path.is_file():
        return path
    for folder in (path, path / "data"):
        for name in names:
            if (folder / name).is_file():
                return folder / name
    raise SuiteError(f"suite {suite}: none of {', '.join(names)} in {path}")


def load_json(path: Path, suite: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SuiteError(f"suite {suite}: {path} is not valid JSON ({first_line(err)})") from None


def iter_records(path: Path, suite: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(location, record)`` of a JSON list or a JSON Lines file of objects."""
    if path.suffix == ".jsonl":
        try:  # a line that is not UTF-8 or not JSON: named with the file and line
            for line_no, record in json_lines(path, name=f"suite {suite}: {path}"):
                yield f"{path}:{line_no}", _object(record, f"{path}:{line_no}", suite)
        except InputError as err:
            raise SuiteError(str(err)) from None
        return
    data = load_json(path, suite)
    if not isinstance(data, list):
        raise SuiteError(f"suite {suite}: {path} must hold a JSON list of objects")
    for n, record in enumerate(data):
        yield f"{path}[{n}]", _object(record, f"{path}[{n}]", suite)


def _object(record: Any, where: str, suite: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise SuiteError(f"suite {suite}: {where}: expected a JSON object")
    return record


def first_of(record: dict[str, Any], keys: tuple[str, ...], where: str, suite: str) -> Any:
    """The first of ``keys`` present in ``record`` (an error names them all)."""
    for key in keys:
        if key in record and record[key] is not None:
            return record[key]
    raise SuiteError(f"suite {suite}: {where}: missing {' / '.join(repr(k) for k in keys)}")


def text(record: dict[str, Any], keys: tuple[str, ...], where: str, suite: str) -> str:
    value = first_of(record, keys, where, suite)
    if not isinstance(value, str):
        raise SuiteError(f"suite {suite}: {where}: {keys[0]!r} must be a string")
    return value


def folder_of(path: Path, name: str) -> Path | None:
    """``name`` beside the suite file (or inside the suite directory), when it exists."""
    base = path if path.is_dir() else path.parent
    for candidate in (base / name, base.parent / name):
        if candidate.is_dir():
            return candidate
    return None


__all__ = ["find_file", "first_of", "folder_of", "iter_records", "load_json", "text"]
