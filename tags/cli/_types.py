"""Argparse ``type=`` helpers: every numeric option of every subcommand is range-checked here.

A value out of range is refused by argparse itself (exit 2, one ``usage`` line and one
``error`` line naming the option); nothing else checks ranges of CLI numbers. Options where 0
or a negative number means something are documented at the option (and listed in
``tests/test_cli_types.py``).
"""

from __future__ import annotations

import argparse
import math


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (counts, sizes, limits)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (0 documented at the option: e.g. no workers, no retries)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def finite_float(text: str) -> float:
    """Any finite number (no ``nan``/``inf``): weights, seeds of scales, offsets."""
    return _float(text)


def positive_float(text: str) -> float:
    """A finite number > 0 (temperatures, scales, rates)."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value:g}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (margins, thresholds, seconds)."""
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value:g}")
    return value


def probability(text: str) -> float:
    """A number in [0, 1] (ratios, probabilities, thresholds on probabilities)."""
    value = _float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {value:g}")
    return value


def edit_kinds(text: str) -> list[str]:
    """``--kinds``: comma-separated edit kinds (:data:`~tags.negatives.edit_kinds.EDIT_KINDS`),
    sorted and deduplicated; a list, as the run's ``OUT.meta.json`` saves it."""
    from tags.negatives.edit_kinds import parse_kinds

    try:
        return list(parse_kinds(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


__all__ = [
    "edit_kinds",
    "finite_float",
    "non_negative_float",
    "non_negative_int",
    "positive_float",
    "positive_int",
    "probability",
]
