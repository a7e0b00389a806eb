"""The benchmarks run and print their ratios (tiny sizes)."""

import re
import subprocess
import sys

from support import ROOT


def test_benchmark_runs():
    result = subprocess.run(
        [sys.executable, "benchmarks/forward_backward.py", "--batch", "2", "--seq", "8", "--d-model", "16",
         "--heads", "2", "--repeats", "3"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert re.search(r"ratio \d+\.\d{3}", result.stdout), result.stdout
