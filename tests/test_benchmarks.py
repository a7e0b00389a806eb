"""The benchmarks run and print their ratios (tiny sizes)."""

import re
import runpy
import sys

from support import ROOT


def test_benchmark_runs(monkeypatch, capsys):
    # In this process (runpy), as the benchmark below: a second interpreter
    # would import torch again.
    arguments = [
        "--batch",
        "2",
        "--seq",
        "8",
        "--d-model",
        "16",
        "--heads",
        "2",
        "--repeats",
        "3",
    ]
    monkeypatch.setattr(sys, "argv", ["forward_backward.py", *arguments])
    runpy.run_path(
        str(ROOT / "benchmarks" / "forward_backward.py"), run_name="__main__"
    )
    output = capsys.readouterr().out
    assert re.search(r"ratio \d+\.\d{3}", output), output


def test_train_seeds_benchmark_prints_one_line_per_member_count(
    monkeypatch, capsys
):
    # In this process (runpy), so that it shares the imports the other tests
    # paid for.
    arguments = [
        "--members",
        "1",
        "3",
        "--steps",
        "2",
        "--repeats",
        "2",
        "--device",
        "cpu",
    ]
    monkeypatch.setattr(sys, "argv", ["train_seeds.py", *arguments])
    runpy.run_path(
        str(ROOT / "benchmarks" / "train_seeds.py"), run_name="__main__"
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("device cpu") and len(lines) == 3, lines
    assert re.search(
        r"^  3 members: .* one by one / together +\d+\.\d{2}", lines[2]
    ), lines
