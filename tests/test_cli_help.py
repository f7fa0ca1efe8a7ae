"""``--help`` of every subcommand shows the defaults and ends with its docs page; ``tags train
--help`` lists the recipes and presets and points to the config reference."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tags.cli import DOC_PAGES, build_parser, main
from tags.training.presets import list_presets
from tags.training.recipes import list_recipes

ROOT = Path(__file__).resolve().parents[1]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


SUBPARSERS = subparsers()


def help_of(name: str) -> str:
    return " ".join(SUBPARSERS[name].format_help().split())  # one line: wrapping aside


@pytest.mark.parametrize("name", sorted(SUBPARSERS))
def test_help_ends_with_an_existing_docs_page(name):
    text = SUBPARSERS[name].format_help().rstrip()
    page = text.splitlines()[-1]
    assert page == f"Docs: {DOC_PAGES[name]}"
    assert (ROOT / DOC_PAGES[name]).is_file(), page


@pytest.mark.parametrize("name", sorted(SUBPARSERS))
def test_every_default_is_shown(name):
    """Each option with a default worth showing says it in its help line."""
    for action in SUBPARSERS[name]._actions:
        if action.help is argparse.SUPPRESS or not action.option_strings:
            continue
        if action.default in (None, False, "", [], argparse.SUPPRESS):
            continue
        text = action.help % {"default": action.default, "prog": "tags"}
        assert "default" in text.lower(), f"tags {name} {action.option_strings[0]}: {text}"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("generate", "--k K, --num-copies K masked copies per caption (default: 20)"),
        ("generate", "--l L, --num-samples L refills per masked copy (default: 20)"),
        ("generate", "--temperature TEMPERATURE (default: 1.5)"),
        ("generate", "--top-m TOP_M negatives kept per caption (default: 31)"),
        ("generate", "captions per batch (default: 256)"),
        ("evaluate", "reranked (default: 128)"),
        ("evaluate", "pairs (or items) per forward (default: 256)"),
        ("report", "--batch-size BATCH_SIZE (default: 256)"),
        ("explain", "pairs per forward (default: 32)"),
        ("parse", "--batch-size BATCH_SIZE (default: 256)"),
    ],
)
def test_named_defaults(name, expected):
    assert expected in help_of(name)


def test_train_help_lists_recipes_presets_and_the_config_reference(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    listed = set(re.findall(r"^  ([^-\s]\S*)$", out, re.MULTILINE))  # not an option alone
    assert listed == set(list_recipes()) | set(list_presets()) and len(listed) >= 8
    assert "docs/training.md, section 'Config schema'" in " ".join(out.split())
    assert "## Config schema" in (ROOT / "docs/training.md").read_text(encoding="utf-8")
    assert out.rstrip().endswith("Docs: docs/training.md")
