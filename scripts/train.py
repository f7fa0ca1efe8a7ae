"""Accelerate launch script: ``accelerate launch scripts/train.py --config CONFIG [k=v ...]``.

Same arguments as ``tags train``; one process per GPU, DDP, mixed precision from the config
(``mixed_precision: bf16``). The batch size in the config is the global batch.
"""

from __future__ import annotations

import argparse
import sys

from tags.cli import run_command
from tags.cli.train import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="tracebacks of input errors")
    parser.set_defaults(func=run, command="train")
    return run_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
