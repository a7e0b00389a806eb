"""The benchmarks run and print their ratios (tiny sizes)."""

import re
import runpy
import sys

from support import ROOT


def run_benchmark(name, arguments, monkeypatch, capsys):
    """What ``benchmarks/<name>`` prints with ``arguments``, run in this
    process (runpy): a second interpreter would import torch again."""
    monkeypatch.setattr(sys, "argv", [name, *arguments])
    runpy.run_path(str(ROOT / "benchmarks" / name), run_name="__main__")
    return capsys.readouterr().out


def test_benchmark_runs(monkeypatch, capsys):
    arguments = "--batch 2 --seq 8 --d-model 16 --heads 2 --repeats 3"
    output = run_benchmark(
        "forward_backward.py", arguments.split(), monkeypatch, capsys
    )
    assert re.search(r"ratio \d+\.\d{3}", output), output


def test_train_seeds_benchmark_prints_one_line_per_member_count(
    monkeypatch, capsys
):
    arguments = "--members 1 3 --steps 2 --repeats 2 --device cpu"
    output = run_benchmark(
        "train_seeds.py", arguments.split(), monkeypatch, capsys
    )
    lines = output.splitlines()
    assert lines[0].startswith("device cpu") and len(lines) == 3, lines
    assert re.search(
        r"^  3 members: .* one by one / together +\d+\.\d{2}", lines[2]
    ), lines
