"""The ``tags`` command line: one subcommand per module in :data:`COMMANDS`.

Every command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` (called with the parsed namespace, returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tags import __version__

# Subcommand modules under ``tags.cli``, in the order ``tags --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "parse",
    "eval_parser",
    "generate",
    "export",
    "evaluate",
    "report",
    "explain",
    "train",
    "make_benchmark",
    "demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tags",
        description="Hard negative captions for vision-language transformers.",
    )
    parser.add_argument("--version", action="version", version=f"tags {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"tags.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `tags parse ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
