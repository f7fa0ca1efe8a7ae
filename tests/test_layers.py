"""The code's structure: layers that import one way, no cycles, no overlong functions.

The layers and the cycle rule are declared in ``pyproject.toml`` (``[tool.importlinter]``)
and checked with import-linter; docs/README.md#layout draws them.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tags", "parsers", "heads")
MAX_FUNCTION_LINES = 120


def _lint_imports() -> str:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("import-linter is not installed: pip install -e '.[dev]'")
    return exe


def test_import_contracts_hold():
    run = subprocess.run(
        [_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " 0 broken" in run.stdout


def test_no_library_function_is_longer_than_the_limit():
    long = []
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{file.relative_to(ROOT)}:{node.lineno} {node.name} {lines}")
    assert not long, "functions over 120 lines:\n" + "\n".join(long)
