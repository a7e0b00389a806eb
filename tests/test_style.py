"""The code is formatted by ruff and passes its checks (pyproject.toml)."""

import subprocess
import sys

import pytest
from support import ROOT


@pytest.mark.parametrize(
    "command", [["check", "."], ["format", "--check", "."]], ids=" ".join
)
def test_ruff(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr


def test_no_function_of_the_figure_modules_is_over_60_lines():
    """A figure is drawn by functions short enough to read at once."""
    import ast

    course = ROOT / "mha_lib" / "course"
    long = []
    for name in ("interactive.py", "plotting.py", "figure_editions.py"):
        for node in ast.walk(ast.parse((course / name).read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                long += [f"{name}:{node.name} {lines}"] * (lines > 60)
    assert not long
