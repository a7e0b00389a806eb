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
