"""Issue "every bad input": output folders of ``tags report`` / ``tags make-benchmark`` that
are existing files are refused in one line before any work."""

from __future__ import annotations

import pytest

from tags.cli import main


def test_report_refuses_an_out_that_is_a_file(tmp_path, capsys):
    """Before: both models were evaluated, then a FileExistsError traceback."""
    out = tmp_path / "report"
    out.write_text("not a folder")
    argv = ["report", "--model", str(tmp_path / "model"), "--suite", "shapes=x"]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"tags report: --out {out}: an existing file, not a folder; pass a folder path\n"
    assert out.read_text() == "not a folder"


def test_make_benchmark_refuses_an_output_that_is_a_file(tmp_path, capsys):
    out = tmp_path / "bench"
    out.write_text("not a folder")
    assert main(["make-benchmark", str(out), "--train", "1", "--val", "0", "--test", "0"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"tags make-benchmark: output {out}: an existing file, not a folder; pass a folder path\n"
    )
    blocked = out / "sub"
    assert main(["make-benchmark", str(blocked), "--train", "1", "--quiet"]) == 2
    assert f"cannot create it in {out}" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["-1", "0"])
def test_make_benchmark_refuses_non_positive_pairs_per_type(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["make-benchmark", str(tmp_path / "b"), "--pairs-per-type", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --pairs-per-type: must be >= 1, got {value}" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "--model", "m"], "tags evaluate: give --captions (retrieval) or --suite"),
        (["explain", "--model", "m", "--images", "i"], "tags explain: give one of --caption"),
        (
            ["report", "--model", "m", "--out", "r"],
            "tags report: give --captions (retrieval) and/or --suite",
        ),
        (
            ["export", "missing.jsonl", "--format", "negclip"],
            "tags export: missing.jsonl not found",
        ),
    ],
)
def test_early_checks_name_the_command_and_trace_under_debug(tmp_path, capsys, argv, message):
    """Checks a command makes before it starts print ``tags COMMAND: message`` like every
    other input error (they printed ``error: ...`` before), and ``--debug`` traces them."""
    from tags.core.errors import CommandError

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(CommandError):
        main(["--debug", *argv])
