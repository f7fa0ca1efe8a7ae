"""Imports every built-in suite reader (each module registers itself)."""

from tags.evaluation.suites import aro, pairs, sugarcrepe, winoground

__all__ = ["aro", "pairs", "sugarcrepe", "winoground"]
