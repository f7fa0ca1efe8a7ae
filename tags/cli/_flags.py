"""The shared option vocabulary of every subcommand: ``--out``, ``--overwrite``, ``--device``,
``--num-workers``, ``--quiet``/``--no-progress``/``--progress``; old spellings kept as
hidden aliases that print a one-line deprecation note to stderr when used; and options
declared once per config field (:class:`FieldFlag`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from tags.core.errors import CommandError

#: Progress setting when neither ``--progress`` nor ``--quiet`` is given: a bar when stderr
#: is a terminal (see :func:`progress_enabled`).
AUTO = None


class DeprecatedAlias(argparse.Action):
    """An old option spelling: stores into the new option's ``dest`` and prints
    ``tags CMD: OLD is deprecated; use NEW`` to stderr. Hidden from ``--help``."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str,
        use: str = "",
        nargs: Any = None,
        const: Any = None,
        **kwargs: Any,
    ) -> None:
        kwargs["help"] = argparse.SUPPRESS
        kwargs["default"] = argparse.SUPPRESS  # the new option's default stands
        super().__init__(option_strings, dest, nargs=nargs, const=const, **kwargs)
        self.use = use

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog}: {option_string} is deprecated; use {self.use}", file=sys.stderr)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def deprecated(
    p: Any, old: str, use: str, dest: str, const: Any = None, type: Callable | None = None
) -> None:
    """Add hidden alias ``old`` of the option stored in ``dest``: a flag storing ``const``
    when ``const`` is given, else an option taking one value (converted by ``type``)."""
    if const is not None:
        p.add_argument(old, action=DeprecatedAlias, dest=dest, use=use, nargs=0, const=const)
    else:
        p.add_argument(old, action=DeprecatedAlias, dest=dest, use=use, type=type)


def add_device(p: Any, cpu_alias: bool = False) -> None:
    """``--device`` (default: cuda when available, else cpu); ``--cpu`` as a deprecated alias
    of ``--device cpu`` where the command had it."""
    p.add_argument(
        "--device", default=None, help="torch device, e.g. cpu or cuda (default: cuda if available)"
    )
    if cpu_alias:
        deprecated(p, "--cpu", "--device cpu", "device", const="cpu")


def resolve_device(device: str | None) -> str:
    """``device`` as given, else ``cuda`` when available, else ``cpu``."""
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def uses_cpu(device: str | None) -> bool:
    """Whether ``--device`` asks for the CPU (Accelerate's ``cpu=``; else its default)."""
    return bool(device) and str(device).split(":")[0] == "cpu"


def add_progress(p: Any) -> None:
    """``--progress`` (show bars even when stderr is not a terminal) and ``--quiet`` /
    ``--no-progress`` (no bars); both store into ``progress`` (None: bars on a terminal)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--progress",
        dest="progress",
        action="store_const",
        const=True,
        default=AUTO,
        help="show progress bars even when stderr is not a terminal",
    )
    group.add_argument(
        "--quiet",
        "--no-progress",
        dest="progress",
        action="store_const",
        const=False,
        help="no progress bars (default: bars when stderr is a terminal)",
    )


def progress_enabled(setting: bool | None, stream: Any = None) -> bool:
    """Whether to draw bars: ``--progress`` / ``--quiet`` when given, else whether ``stream``
    (stderr) is a terminal."""
    if setting is not None:
        return setting
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass(frozen=True)
class FieldFlag:
    """The command-line option of one config field: its spellings and argparse keywords
    (``dest``: the field's name unless given); ``negation``: ``(spelling, help)`` of an
    opposite option storing ``False``, the two mutually exclusive."""

    field: str
    names: tuple[str, ...]
    options: Mapping[str, Any] = dataclass_field(default_factory=dict)
    dest: str | None = None
    negation: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        """The argparse ``dest``."""
        return self.dest or self.field


def add_field_flags(p: Any, flags: Iterable[FieldFlag], defaults: Mapping[str, Any]) -> None:
    """Add ``flags`` to ``p`` in order, each with ``defaults[field]`` as its default
    (``None`` for a field not in ``defaults``)."""
    for flag in flags:
        default = defaults.get(flag.field)
        group = p.add_mutually_exclusive_group() if flag.negation else p
        group.add_argument(*flag.names, dest=flag.key, default=default, **flag.options)
        if flag.negation:
            name, text = flag.negation
            group.add_argument(
                name, dest=flag.key, action="store_false", default=default, help=text
            )


def field_values(args: Any, flags: Iterable[FieldFlag]) -> dict[str, Any]:
    """``{field: value}`` of ``flags`` in the parsed ``args``."""
    return {flag.field: getattr(args, flag.key) for flag in flags}


def add_confine_to_root(p: Any) -> None:
    """``--confine-to-root`` (``confine_to_root``): for untrusted image folders, refuse an
    image file that a symlink inside the image root leads out of it (followed by default)."""
    p.add_argument(
        "--confine-to-root",
        action="store_true",
        help="for untrusted image folders: refuse an image file that a symlink inside the "
        "image root leads out of it (by default symlinks are followed)",
    )


def add_overwrite(p: Any, what: str = "an existing output") -> None:
    """``--overwrite``: replace ``what`` (refused without it)."""
    p.add_argument("--overwrite", action="store_true", help=f"replace {what}")


def add_out(
    p: Any,
    help: str,
    *,
    required: bool = False,
    default: Any = None,
    short: bool = False,
    old: str | None = None,
) -> None:
    """``--out`` (also ``-o`` with ``short``), where the command writes; ``help`` says what.
    ``old``: an earlier spelling kept as a deprecated alias (:func:`deprecated`)."""
    names = ("--out", "-o") if short else ("--out",)
    if required:
        p.add_argument(*names, required=True, help=help)
    else:
        p.add_argument(*names, default=default, help=help)
    if old:
        deprecated(p, old, "--out", "out")


def check_output_file(out: Path, inputs: list[Path], overwrite: bool) -> None:
    """One-line :class:`CommandError` for input files that are missing or folders, or an
    ``--out`` that is one of them, a folder, in a missing folder, or exists (without
    ``overwrite``)."""
    for part in inputs:
        if part.is_dir():
            raise CommandError(f"{part} is a directory; pass a file")
        if not part.is_file():
            raise CommandError(f"{part} not found")
        if part.resolve() == out.resolve():
            raise CommandError(f"--out {out} is one of the inputs; write elsewhere")
    if out.is_dir():
        raise CommandError(f"--out {out} is a directory; pass a file name")
    if not out.parent.is_dir():
        raise CommandError(f"--out {out}: directory {out.parent} does not exist")
    if out.exists() and not overwrite:
        raise CommandError(f"--out {out} exists; pass --overwrite to replace it")


__all__ = [
    "AUTO",
    "DeprecatedAlias",
    "FieldFlag",
    "add_confine_to_root",
    "add_device",
    "add_field_flags",
    "add_out",
    "add_overwrite",
    "add_progress",
    "check_output_file",
    "deprecated",
    "field_values",
    "progress_enabled",
    "resolve_device",
    "uses_cpu",
]
