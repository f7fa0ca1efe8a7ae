"""The ``tags`` command line: one subcommand per module in :data:`COMMANDS`.

Every command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` (called with the parsed namespace, returning an exit code).

Errors: bad input (a :class:`tags.core.errors.UserError` of any layer, or an ``OSError`` naming a
file) is printed as one line, ``tags COMMAND: message``, exit 2; ``tags --debug COMMAND``
shows its traceback. Any other exception is a bug and keeps its traceback.

Layer: the top. May import every other part of tags, ``parsers`` and ``heads``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tags import __version__
from tags.core.errors import user_message

# Subcommand modules under ``tags.cli``, in the order ``tags --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "parse",
    "eval_parser",
    "generate",
    "counts",
    "balance",
    "export",
    "evaluate",
    "report",
    "explain",
    "train",
    "make_benchmark",
    "demo",
)


#: The docs page of each subcommand (the last line of its ``--help``).
DOC_PAGES: dict[str, str] = {
    "parse": "docs/parser.md",
    "eval-parser": "docs/parser.md",
    "generate": "docs/generate.md",
    "counts": "docs/generate.md",
    "balance": "docs/generate.md",
    "export": "docs/interop.md",
    "evaluate": "docs/evaluation.md",
    "report": "docs/evaluation.md",
    "explain": "docs/evaluation.md",
    "train": "docs/training.md",
    "make-benchmark": "docs/benchmark.md",
    "demo": "docs/demo.md",
}


class HelpFormatter(argparse.HelpFormatter):
    """Wraps one-line paragraphs as usual; text with line breaks (an epilog's list) keeps
    them, each line wrapped on its own."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        lines = []
        for line in text.splitlines():
            lead = line[: len(line) - len(line.lstrip())]
            lines.append(super()._fill_text(line, width, indent + lead) if line.strip() else "")
        return "\n".join(lines)


def show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append ``(default: X)`` to the help of every option with a default worth showing
    (not None/False/empty) whose help does not already say it."""
    for action in parser._actions:
        default, text = action.default, action.help
        if text is argparse.SUPPRESS or not action.option_strings:
            continue
        if default in (None, False, argparse.SUPPRESS) or default == [] or default == "":
            continue
        if text and ("%(default)" in text or "default" in text.lower()):
            continue
        action.help = f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


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
    for name, sub in subparsers.choices.items():
        show_defaults(sub)
        sub.formatter_class = HelpFormatter
        sub.epilog = f"Docs: {DOC_PAGES[name]}"
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
    from tags.core.lock import Terminated
    from tags.core.noise import quiet_loading

    quiet_loading()
    try:
        return int(args.func(args) or 0)
    except Terminated as stop:  # SIGTERM / SIGHUP while an output was locked: unwound
        print(f"terminated ({stop.name})", file=sys.stderr)
        return int(stop.code)
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
