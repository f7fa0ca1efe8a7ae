"""The ``tags`` command line: one subcommand per module in :data:`COMMANDS`.

Every command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` (called with the parsed namespace, returning an exit code).

Errors: bad input (a :class:`tags._errors.UserError` of any layer, or an ``OSError`` naming a
file) is printed as one line, ``tags COMMAND: message``, exit 2; ``tags --debug COMMAND``
shows its traceback. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tags import __version__
from tags._errors import user_message

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
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an input error instead of its one-line message",
    )
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
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    """``args.func(args)`` under the one error handler of the CLI (see the module
    docstring); ``args.command`` names the command in messages."""
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `tags parse ... | head`
        return 0
    except Exception as err:
        message = user_message(err)
        if message is None or getattr(args, "debug", False):
            raise
        print(f"tags {getattr(args, 'command', None) or 'error'}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
