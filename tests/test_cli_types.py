"""Every numeric option of every subcommand is range-checked by argparse (tags/cli/_types.py):
an out-of-range value exits 2 with one error line naming the option."""

from __future__ import annotations

import argparse

import pytest

from tags.cli import _types, build_parser

#: For each range type, values it must refuse.
OUT_OF_RANGE = {
    _types.positive_int: ["0", "-1"],
    _types.non_negative_int: ["-1"],
    _types.finite_float: ["nan", "inf"],
    _types.positive_float: ["0", "-1", "nan"],
    _types.non_negative_float: ["-1", "nan"],
    _types.probability: ["-0.1", "1.5", "nan"],
}

#: Options where 0 or a negative value means something (their type says which):
#: ``--num-workers 0`` decodes in this process; ``--train/--val/--test 0`` leave a split out;
#: ``--seed 0`` is a seed; ``--progress-every 0`` prints every update; ``report --bootstrap 0``
#: computes no intervals; ``--max-surprise``
#: (finite_float) may be negative: it then also drops negatives more likely than their
#: caption. They are still range-checked: the cases below refuse what is meaningless.
ZERO_OR_NEGATIVE_MEAN_SOMETHING = {
    ("evaluate", "--num-workers"), ("report", "--num-workers"),
    ("make-benchmark", "--train"), ("make-benchmark", "--val"), ("make-benchmark", "--test"),
    ("make-benchmark", "--seed"), ("generate", "--seed"), ("demo", "--seed"),
    ("generate", "--progress-every"), ("parse", "--progress-every"),
    ("generate", "--max-surprise"), ("report", "--bootstrap"), ("export", "--refine-seed"),
}  # fmt: skip


#: Numeric options not typed by tags/cli/_types.py, and why: the export options that
#: tags/cli/export.py adds to ``tags export`` and ``tags generate --export`` (that file is
#: outside this change; the exporters check the values themselves).
def numeric_options() -> list[tuple[str, str, object]]:
    """(subcommand, option, type) of every option whose values are numbers."""
    parser = build_parser()
    found = []
    for action in parser._subparsers._group_actions:  # the subcommands
        assert isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items():
            for option in sub._actions:
                if option.option_strings and option.type is not None:
                    kind = option.type
                    if kind in (int, float) or kind in OUT_OF_RANGE:
                        found.append((name, option.option_strings[0], kind))
    return found


OPTIONS = numeric_options()


def test_the_walk_finds_the_options():
    names = {(c, o) for c, o, _ in OPTIONS}
    assert {("evaluate", "--batch-size"), ("generate", "--mask-ratio")} <= names
    assert ("make-benchmark", "--pairs-per-type") in names and len(OPTIONS) >= 40
    assert names >= ZERO_OR_NEGATIVE_MEAN_SOMETHING


@pytest.mark.parametrize(
    ("command", "option", "kind"), OPTIONS, ids=[f"{c} {o}" for c, o, _ in OPTIONS]
)
def test_out_of_range_values_exit_2_in_one_line(capsys, command, option, kind):
    assert kind in OUT_OF_RANGE, f"tags {command} {option}: plain {kind.__name__}"
    if (command, option) not in ZERO_OR_NEGATIVE_MEAN_SOMETHING:
        assert kind not in (_types.non_negative_int, _types.non_negative_float), (
            f"tags {command} {option}: 0 accepted; list it in ZERO_OR_NEGATIVE_MEAN_SOMETHING"
        )
    for value in OUT_OF_RANGE[kind]:
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([command, f"{option}={value}"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("tags ")]
        assert len(errors) == 1 and f"argument {option}" in errors[0], err
