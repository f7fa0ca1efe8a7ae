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
    assert err == f"error: --out {out}: an existing file, not a folder; pass a folder path\n"
    assert out.read_text() == "not a folder"


def test_make_benchmark_refuses_an_output_that_is_a_file(tmp_path, capsys):
    out = tmp_path / "bench"
    out.write_text("not a folder")
    assert main(["make-benchmark", str(out), "--train", "1", "--val", "0", "--test", "0"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: output {out}: an existing file, not a folder; pass a folder path\n"
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
