"""The shared option vocabulary of every subcommand: ``--out``, ``--overwrite``, ``--device``,
``--num-workers``, ``--quiet``/``--no-progress``/``--progress``; and old spellings kept as
hidden aliases that print a one-line deprecation note to stderr when used."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

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


def add_overwrite(p: Any, what: str = "an existing output") -> None:
    """``--overwrite``: replace ``what`` (refused without it)."""
    p.add_argument("--overwrite", action="store_true", help=f"replace {what}")


__all__ = [
    "AUTO",
    "DeprecatedAlias",
    "add_device",
    "add_overwrite",
    "add_progress",
    "deprecated",
    "progress_enabled",
    "resolve_device",
    "uses_cpu",
]
