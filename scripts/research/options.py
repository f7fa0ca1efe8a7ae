"""Command-line options the research drivers share."""

from __future__ import annotations

import argparse


def add_num_workers(parser: argparse.ArgumentParser, default: int = 2) -> None:
    """``--num-workers N`` (dest ``jobs``: runs in parallel), with ``--jobs`` kept as a
    deprecated alias."""
    parser.add_argument(
        "--num-workers",
        "--jobs",
        dest="jobs",
        type=int,
        default=default,
        metavar="N",
        help="runs in parallel (--jobs: deprecated alias)",
    )


__all__ = ["add_num_workers"]
