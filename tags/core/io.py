"""Caption readers, sharding and the resumable JSON Lines writer.

Readers stream :class:`~.types.ImageGroup` objects (all captions of one image, in order):

- ``precomp``: SCAN ``{split}_caps.txt``, 5 lines per image; image id = line // 5,
  caption id = line (0-based);
- ``lines``: one caption per line, each its own image; image id = caption id = line;
- ``jsonl``: ``{"image_id": ..., "caption": "..."}`` per line; caption id = line (0-based);
  consecutive lines with the same image id form one group;
- ``karpathy``: ``dataset_*.json`` with ``images[]`` (``split``, ``filename``/``imgid``,
  ``sentences[].raw``/``sentid``); image id = ``imgid`` (else the image's index), caption
  id = ``sentid`` (else a running index).

A bad line or record is reported with its location to ``on_error`` (skip and count, or raise).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tags.core.errors import UserError
from tags.core.types import Caption, ImageGroup

FORMATS = ("karpathy", "precomp", "jsonl", "lines")


class InputError(UserError, ValueError):
    """A corrupt line or record, named by its location."""


class ErrorPolicy:
    """What to do with a bad input line: ``"skip"`` (warn and count) or ``"stop"`` (raise)."""

    def __init__(self, mode: str = "stop", warn: Callable[[str], None] | None = None):
        if mode not in ("skip", "stop"):
            raise ValueError(f"on_error must be 'skip' or 'stop', got {mode!r}")
        self.mode = mode
        self.warn = warn
        self.count = 0

    def __call__(self, message: str) -> None:
        if self.mode == "stop":
            raise InputError(message)
        self.count += 1
        if self.warn is not None:
            self.warn(f"skipping {message}")


def detect_format(path: str | Path) -> str:
    """Guess the format from the file name: ``.json`` karpathy, ``.jsonl`` jsonl, else precomp."""
    name = str(path).lower()
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith(".json"):
        return "karpathy"
    return "precomp"


def _decode(raw: bytes, where: str, on_error: ErrorPolicy) -> str | None:
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as err:
        on_error(f"{where}: not valid UTF-8 ({err.reason} at byte {err.start})")
        return None


def json_lines(
    path: str | Path, hint: str = "", name: str | None = None
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of a JSON Lines file. A line that is
    not UTF-8 text or not JSON is an :class:`InputError` naming the file (``name``: e.g. the
    option and the file) and the line, ending with ``hint`` (what to pass instead); what each
    value must hold is the caller's check."""
    end = f"; {hint}" if hint else ""
    name = name or str(path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(
                    f"{name}:{number}: not UTF-8 text ({err.reason} at byte {err.start}){end}"
                ) from None
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(f"{name}:{number}: invalid JSON ({err.msg}){end}") from None
            yield number, value


def read_precomp(
    path: str | Path, on_error: ErrorPolicy, per_image: int = 5
) -> Iterator[ImageGroup]:
    """SCAN precomp captions: ``per_image`` consecutive lines per image."""
    group: ImageGroup | None = None
    with open(path, "rb") as handle:
        for line, raw in enumerate(handle):
            image_id = line // per_image
            if group is None or group.image_id != image_id:
                if group is not None:
                    yield group
                group = ImageGroup(image_id)
            text = _decode(raw, f"{path}:{line + 1}", on_error)
            if text is not None:
                group.captions.append(Caption(image_id, line, text, line + 1))
    if group is not None:
        yield group


def read_jsonl(path: str | Path, on_error: ErrorPolicy) -> Iterator[ImageGroup]:
    """``{"image_id", "caption"}`` lines; consecutive lines of one image form a group."""
    group: ImageGroup | None = None
    with open(path, "rb") as handle:
        for line, raw in enumerate(handle):
            where = f"{path}:{line + 1}"
            text = _decode(raw, where, on_error)
            if text is None or not text.strip():
                if text is not None:
                    on_error(f"{where}: empty line (expected a JSON object)")
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as err:
                on_error(f"{where}: invalid JSON ({err.msg} at column {err.colno})")
                continue
            if not isinstance(record, dict) or "image_id" not in record or "caption" not in record:
                on_error(f"{where}: expected an object with 'image_id' and 'caption'")
                continue
            if not isinstance(record["caption"], str):
                on_error(f"{where}: 'caption' must be a string")
                continue
            image_id = record["image_id"]
            if group is None or group.image_id != image_id:
                if group is not None:
                    yield group
                group = ImageGroup(image_id, filename=record.get("filename"))
            group.captions.append(Caption(image_id, line, record["caption"], line + 1))
    if group is not None:
        yield group


def read_karpathy(
    path: str | Path, on_error: ErrorPolicy, split: str | None = None
) -> Iterator[ImageGroup]:
    """Karpathy split JSON; ``split`` may be a comma list (``"train,restval"``) or ``None``."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not a valid Karpathy JSON file ({err})") from err
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise InputError(f"{path}: expected a top-level object with an 'images' list")
    wanted = set(split.split(",")) if split else None
    running = 0
    for index, image in enumerate(images):
        where = f"{path}: images[{index}]"
        if not isinstance(image, dict) or not isinstance(image.get("sentences"), list):
            on_error(f"{where}: expected an object with a 'sentences' list")
            continue
        if wanted is not None and image.get("split") not in wanted:
            running += len(image["sentences"])
            continue
        image_id = image.get("imgid", index)
        group = ImageGroup(image_id, filename=image.get("filename"))
        for number, sentence in enumerate(image["sentences"]):
            caption_id = sentence.get("sentid", running) if isinstance(sentence, dict) else running
            running += 1
            raw = sentence.get("raw") if isinstance(sentence, dict) else None
            if not isinstance(raw, str):
                on_error(f"{where}.sentences[{number}]: expected a 'raw' string")
                continue
            group.captions.append(Caption(image_id, caption_id, raw, index + 1))
        yield group


def read_captions(
    path: str | Path,
    fmt: str | None = None,
    *,
    on_error: ErrorPolicy | None = None,
    split: str | None = None,
) -> Iterator[ImageGroup]:
    """Stream the image groups of ``path`` in the given (or detected) format."""
    fmt = fmt or detect_format(path)
    on_error = on_error or ErrorPolicy("stop")
    if not Path(path).is_file():
        raise FileNotFoundError(f"captions file not found: {path}")
    if fmt == "precomp":
        return read_precomp(path, on_error)
    if fmt == "lines":
        return read_precomp(path, on_error, per_image=1)
    if fmt == "jsonl":
        return read_jsonl(path, on_error)
    if fmt == "karpathy":
        return read_karpathy(path, on_error, split)
    raise ValueError(f"unknown format {fmt!r}; choose from {FORMATS}")


# ---------------------------------------------------------------------- input checks
PRECOMP_PER_IMAGE = 5


def count_lines(path: str | Path) -> int:
    """Lines of a text file (a last line without a newline counts)."""
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def check_precomp_lines(path: str | Path, rows: int | None = None, features: Any = None) -> int:
    """A precomp caption file holds exactly 5 lines per image (and, with a precomp
    ``[N, R, D]`` array of ``rows`` images, 5 x ``rows``): one missing line would shift every
    later caption onto the wrong image. Returns the line count; raises ``ValueError``."""
    lines = count_lines(path)
    per = PRECOMP_PER_IMAGE
    if rows is not None and lines != per * rows:
        raise ValueError(
            f"{path}: {lines} caption lines, but {features or 'the features'} holds {rows} "
            f"image rows: precomp captions need {per} lines per image and the array one row "
            f"per image ({per} x {rows} = {per * rows})"
        )
    if lines % per:
        raise ValueError(
            f"{path}: {lines} lines is not a multiple of {per}: a precomp caption file holds "
            f"{per} consecutive lines per image (a missing or extra line shifts every later "
            "caption onto the wrong image)"
        )
    return lines


def karpathy_splits(path: str | Path) -> list[str]:
    """The ``split`` values present in a Karpathy JSON file (sorted)."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    images = data.get("images", []) if isinstance(data, dict) else []
    return sorted({str(im.get("split")) for im in images if isinstance(im, dict)})


# ---------------------------------------------------------------------- sharding
def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with ``0 <= I < N``."""
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError as err:
        raise ValueError(f"--shard must look like I/N (e.g. 0/4), got {text!r}") from err
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"--shard {text}: need 0 <= I < N")
    return index, count


def shard_bounds(total: int, index: int, count: int) -> tuple[int, int]:
    """Contiguous block ``[start, stop)`` of ``total`` groups for shard ``index`` of ``count``.

    Blocks are contiguous so that concatenating the shard outputs in shard order gives the
    unsharded output exactly.
    """
    return total * index // count, total * (index + 1) // count


def take_shard(groups: Iterable[ImageGroup], start: int, stop: int) -> Iterator[ImageGroup]:
    """The groups with index in ``[start, stop)``; stops reading at ``stop``."""
    for i, group in enumerate(groups):
        if i >= stop:
            return
        if i >= start:
            yield group


# ---------------------------------------------------------------------- output
@dataclass
class ResumePoint:
    """Where an interrupted output file ends cleanly."""

    offset: int = 0
    records: int = 0
    last_caption_id: Any = None
    dropped_bytes: int = 0


def _not_output(path: str | Path, number: int, why: str) -> InputError:
    return InputError(
        f"--resume: {path} is not `tags generate` output (line {number}: {why}); it is left "
        "as it is: choose another --out (or --overwrite to replace that file)"
    )


def scan_output(path: str | Path) -> ResumePoint:
    """Find the end of the last caption whose negatives were all written.

    Records carry ``negative_index`` and ``num_negatives``; a caption is complete when its
    last record (``negative_index == num_negatives - 1``) ends with a newline. What follows
    may only be what a killed run leaves: whole records of an unfinished caption and a
    partial last line (a prefix of a record). Anything else (a line that is not a record)
    raises :class:`InputError`: the file is not ``tags generate`` output and nothing of it
    may be cut.
    """
    point = ResumePoint()
    if not Path(path).exists():
        return point
    offset = 0
    pending = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            offset += len(raw)
            if not raw.endswith(b"\n"):  # a killed write: a prefix of one record
                if not raw.startswith(b"{"):  # every record is a JSON object
                    raise _not_output(path, number, "a last line that no record starts with")
                try:
                    whole = json.loads(raw)
                except ValueError:
                    break  # a prefix: the unfinished caption, cut by JsonlWriter.open
                if not (
                    isinstance(whole, dict) and {"negative_index", "num_negatives"} <= set(whole)
                ):
                    raise _not_output(path, number, "not a negative record")
                break
            try:
                record = json.loads(raw)
                index, total = record["negative_index"], record["num_negatives"]
                caption_id = record["caption_id"]
            except (ValueError, KeyError, TypeError):
                raise _not_output(path, number, "not a negative record") from None
            pending += 1
            if index == total - 1:
                point.offset, point.records = offset, point.records + pending
                point.last_caption_id = caption_id
                pending = 0
    point.dropped_bytes = os.path.getsize(path) - point.offset
    return point


class JsonlWriter:
    """Append-only JSON Lines output written one caption at a time.

    Every caption's records go out in one ``write`` followed by a flush, so after a kill the
    file holds whole captions plus at most one partial caption, which :func:`scan_output`
    finds and :meth:`open` (``resume=True``) cuts off.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.handle: IO[str] | None = None

    def open(self, resume: bool = False) -> ResumePoint:
        point = ResumePoint()
        if resume and self.path.exists():
            point = scan_output(self.path)
            with open(self.path, "r+b") as handle:
                handle.truncate(point.offset)
        elif self.path.exists():
            self.path.unlink()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        return point

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        if lines:
            assert self.handle is not None, "call open() first"
            self.handle.write(lines)
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "FORMATS",
    "ErrorPolicy",
    "InputError",
    "JsonlWriter",
    "ResumePoint",
    "check_precomp_lines",
    "count_lines",
    "detect_format",
    "json_lines",
    "karpathy_splits",
    "parse_shard",
    "read_captions",
    "read_jsonl",
    "read_karpathy",
    "read_precomp",
    "scan_output",
    "shard_bounds",
    "take_shard",
]
