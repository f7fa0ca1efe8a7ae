"""One option vocabulary across subcommands: ``--out``, ``--overwrite``, ``--device``,
``--num-workers``, ``--quiet``/``--no-progress``/``--progress``; old spellings are hidden
aliases that print one deprecation line. Walks every subparser (as tests/test_cli_types.py)."""

from __future__ import annotations

import argparse

import pytest

from tags.cli import build_parser, main
from tags.cli._flags import DeprecatedAlias

#: Old spellings: never a visible option, only a hidden deprecated alias.
OLD = {"--output", "--cpu", "--workers", "--force", "--json"}
#: Except: eval-parser's ``--json`` prints the scores as JSON (a format switch, no file).
KEEP = {("eval-parser", "--json")}
#: Commands that write an output (file or folder).
WRITES = {
    "parse",
    "generate",
    "balance",
    "export",
    "evaluate",
    "report",
    "explain",
    "make-benchmark",
    "demo",
}
#: Writers without --overwrite, and why: demo reuses its finished steps when re-run (it
#: never replaces a finished step).
NO_OVERWRITE = {"demo"}
#: Commands with progress output.
PROGRESS = {"parse", "generate", "evaluate", "report", "make-benchmark"}
#: Commands that run a torch model on a device.
DEVICE = {"generate", "evaluate", "report", "explain"}


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


SUBPARSERS = subparsers()


def visible(sub: argparse.ArgumentParser) -> set[str]:
    return {s for a in sub._actions if a.help is not argparse.SUPPRESS for s in a.option_strings}


def test_the_walk_sees_every_command():
    assert set(SUBPARSERS) >= WRITES | PROGRESS | DEVICE
    assert {"train", "eval-parser"} <= set(SUBPARSERS)


@pytest.mark.parametrize("name", sorted(SUBPARSERS))
def test_the_vocabulary(name):
    sub = SUBPARSERS[name]
    shown = visible(sub) - {o for n, o in KEEP if n == name}
    assert not shown & OLD, f"tags {name}: old spellings shown: {shown & OLD}"
    for action in sub._actions:
        if set(action.option_strings) & OLD - {o for n, o in KEEP if n == name}:
            assert isinstance(action, DeprecatedAlias), (name, action.option_strings)
            assert action.help is argparse.SUPPRESS
    assert ("--out" in shown) == (name in WRITES), name
    assert ("--overwrite" in shown) == (name in WRITES - NO_OVERWRITE), name
    has_progress = bool(shown & {"--progress", "--quiet", "--no-progress"})
    assert has_progress == (name in PROGRESS), name
    if has_progress:
        assert {"--progress", "--quiet", "--no-progress"} <= shown, name
    assert ("--device" in shown) == (name in DEVICE), name
    assert not any("worker" in s for s in shown - {"--num-workers"}), name


@pytest.mark.parametrize(
    ("argv", "dest", "value", "note"),
    [
        (["evaluate", "--model", "m", "--cpu"], "device", "cpu", "--cpu is deprecated; use --device cpu"),
        (["report", "--model", "m", "--out", "o", "--cpu"], "device", "cpu", "use --device cpu"),
        (["parse", "--output", "x.txt"], "out", "x.txt", "--output is deprecated; use --out"),
        (["parse", "--workers", "3"], "num_workers", 3, "use --num-workers"),
        (["generate", "--captions", "c", "--out", "o", "--workers", "2"], "num_workers", 2, "use --num-workers"),
        (["explain", "--model", "m", "--json", "e.json"], "out", "e.json", "use --out"),
        (["make-benchmark", "b", "--force"], "overwrite", True, "use --overwrite"),
    ],
)  # fmt: skip
def test_old_spellings_still_work_with_one_note(capsys, argv, dest, value, note):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"tags {argv[0]}: ") and note in err[0], err


def test_new_spellings_print_nothing(capsys):
    args = build_parser().parse_args(["parse", "--out", "x", "-o", "y", "--num-workers", "2"])
    assert (args.out, args.num_workers) == ("y", 2)
    args = build_parser().parse_args(["evaluate", "--model", "m", "--device", "cpu", "--quiet"])
    assert (args.device, args.progress) == ("cpu", False)
    assert build_parser().parse_args(["report", "--model", "m", "--out", "o"]).device is None
    args = build_parser().parse_args(["generate", "--captions", "c", "--out", "o", "--progress"])
    assert args.progress is True
    assert build_parser().parse_args(["parse", "--no-progress"]).progress is False
    assert capsys.readouterr().err == ""


def test_progress_and_quiet_exclude_each_other(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["parse", "--progress", "--quiet"])
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--model", "m", "--suite", "shapes=x"],
        ["explain", "--model", "m", "--caption", "a dog"],
        ["parse", "-"],
    ],
)
def test_an_existing_out_is_kept_without_overwrite(tmp_path, capsys, argv):
    out = tmp_path / "earlier.json"
    out.write_text("earlier")
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and f"--out {out} exists; pass --overwrite" in err[0], err
    assert out.read_text() == "earlier"


def test_report_keeps_an_earlier_report_without_overwrite(tmp_path, capsys):
    (tmp_path / "report.md").write_text("earlier")
    argv = ["report", "--model", "m", "--suite", "shapes=x", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"tags report: --out {tmp_path} holds an earlier report; pass --overwrite to replace it\n"
    )
    assert (tmp_path / "report.md").read_text() == "earlier"


def test_make_benchmark_takes_its_folder_as_out_or_positional(tmp_path, capsys):
    assert main(["make-benchmark", str(tmp_path / "a"), "--out", str(tmp_path / "b")]) == 2
    assert "two outputs" in capsys.readouterr().err
    assert main(["make-benchmark", "--quiet"]) == 2
    assert "give the output directory (--out DIR)" in capsys.readouterr().err
    args = build_parser().parse_args(["make-benchmark", "--out", "d", "--overwrite"])
    assert (args.out, args.output, args.overwrite) == ("d", None, True)
