"""The benchmark scripts that read files refuse a missing one in one line (no traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "scripts" / "benchmarks"
MISSING = "/nonexistent/captions.txt"

CALLS = {
    "parse_speed": ["--captions", MISSING],
    "generate_speed": ["--captions", MISSING],
    "text_shortcut": [f"flickr={MISSING}:5000"],
    "blind_read make": ["make", MISSING, "--out", "{tmp}/read", "--key", "{tmp}/key.json"],
    "blind_read score": ["score", "{tmp}", "--key", MISSING],
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_missing_input_is_refused_in_one_line(name, tmp_path):
    script = BENCHMARKS / f"{name.split()[0]}.py"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in CALLS[name]]
    run = subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-800:]
    assert "/nonexistent" in lines[0] or "reader_labels" in lines[0]
    assert not (tmp_path / "read").exists()
