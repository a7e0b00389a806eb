"""Timing that a busy neighbour does not skew: CPU time on a CPU, every layer
timed round-robin, and the chapters' timing claims still true beside two
processes that keep a 2-core machine busy (as a free cloud runtime is)."""

import gc
import subprocess
import sys
import time

import pytest
import torch
from support import DEVICES
from torch import nn

import mha_lib
from mha_lib import AttentionSpec
from mha_lib.course.timing import (
    relative_times,
    seconds,
    summarize,
    time_interleaved,
    time_round_robin,
)


@pytest.fixture
def busy_cpu():
    """Two processes that spin for as long as the test runs, one per core of
    a 2-core machine."""
    spin = [sys.executable, "-c", "while True: pass"]
    burners = [subprocess.Popen(spin) for _ in range(2)]
    try:
        time.sleep(0.2)  # let them start spinning
        yield
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


def test_seconds_on_a_cpu_leave_out_time_the_process_waits():
    # waiting is what a busy neighbour makes a process do: wall time counts
    # it, the CPU time of the process does not
    assert seconds(lambda: time.sleep(0.3), "cpu") < 0.1


def test_seconds_pause_garbage_collection_for_the_step_only():
    collecting = []
    seconds(lambda: collecting.append(gc.isenabled()), "cpu")
    assert collecting == [False] and gc.isenabled()


class Logged(nn.Module):
    """A layer that writes its name to ``log`` when called."""

    def __init__(self, name, log):
        super().__init__()
        self.name, self.log = name, log
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        self.log.append(self.name)
        return self.scale * x, None


def test_time_interleaved_starts_its_rounds_from_every_layer():
    log = []
    names = ["a", "b", "c", "d"]
    layers = {name: Logged(name, log) for name in names}
    time_interleaved(layers, torch.ones(2), repeats=8, warmup=0)
    size = len(names)
    rounds = [log[i : i + size] for i in range(0, len(log), size)]
    assert all(sorted(r) == names for r in rounds)
    assert {r[0] for r in rounds} == set(names)


@pytest.mark.parametrize("device", DEVICES)
def test_time_interleaved_times_every_layer_and_restores_threads(device):
    layers = {h: mha_lib.MultiHeadAttention(16, h).to(device) for h in (1, 4)}
    x = torch.randn(2, 5, 16).to(device).requires_grad_()
    before = torch.get_num_threads()
    times = time_interleaved(layers, x, repeats=4, warmup=1, threads=1)
    assert torch.get_num_threads() == before
    assert set(times) == {1, 4} and all(
        len(t) == 4 and min(t) > 0 for t in times.values()
    )
    median, q1, q3 = summarize(times[1])
    assert q1 <= median <= q3
    with pytest.raises(ValueError, match="threads"):
        time_interleaved(layers, x, repeats=1, threads=0)
    with pytest.raises(ValueError, match="layers"):
        time_interleaved({}, x)


def test_relative_times_pair_each_round():
    """Load that slows a whole round cancels in its ratio, where a ratio of
    medians would say 1."""
    times = {"a": [1.0, 3.0, 2.0], "b": [2.0, 6.0, 2.0]}
    assert relative_times(times, "a") == {"a": 1.0, "b": 2.0}
    with pytest.raises(ValueError, match="reference 'c' is not among"):
        relative_times(times, "c")
    with pytest.raises(ValueError, match="shorter|longer"):
        relative_times({"a": [1.0], "b": [1.0, 2.0]}, "a")


def test_round_robin_alternates_the_order_and_drops_the_warm_up():
    calls = []
    steps = {name: lambda name=name: calls.append(name) for name in "abc"}
    times = time_round_robin(steps, "cpu", repeats=3, warmup=1)
    assert calls == list("abccbabcaacb"), "rotated, alternating order"
    assert {name: len(t) for name, t in times.items()} == dict(a=3, b=3, c=3)
    with pytest.raises(ValueError, match="repeats"):
        time_round_robin(steps, "cpu", repeats=0)


# The layers, sizes and claims of the timing cells of Chapters 3 ("Is it a
# speed trick?", its eleven repeats) and 5 ("Measured: time and memory", with
# fewer repeats).


def test_chapter_3_timing_claims_hold_on_a_busy_cpu(busy_cpu):
    torch.manual_seed(0)
    width, h, n_tokens = 256, 8, 64
    x = torch.randn(4, n_tokens, width).requires_grad_()
    heads = [1, 2, 4, 8, 16, 32, 64]
    standard = {n: mha_lib.MultiHeadAttention(width, n) for n in heads}
    for layer in standard.values():
        layer.load_state_dict(standard[1].state_dict())
    rivals = {
        "one": standard[1],
        "separate": mha_lib.to_per_head(standard[h]),
        "wide": mha_lib.MultiHeadAttention(width, h, head_dim=width),
    }
    # the chapter's eleven rounds (five let one head's median, inflated by
    # the machine's load, put 8 heads at 0.668 of it once in three)
    raw = time_interleaved(
        {**standard, **rivals}, x, repeats=11, warmup=2, threads=1
    )
    to_h, to_one = relative_times(raw, h), relative_times(raw, 1)
    ratio = {name: to_h[name] for name in rivals}
    slowdown = {n: to_one[n] for n in heads}
    assert 0.5 < ratio["one"] < 2, ratio
    assert ratio["separate"] > 1.2, ratio
    assert ratio["wide"] > h / 2, ratio
    assert all(0.67 < slowdown[n] < 1.5 for n in (2, 4, 8)), slowdown
    assert min(slowdown.values()) > 0.67, slowdown
    assert slowdown[64] > 1.2, slowdown


def test_chapter_5_timing_claims_hold_on_a_busy_cpu(busy_cpu):
    torch.manual_seed(0)
    x = torch.randn(4, 128, 256)
    timed = {
        (kind, heads): mha_lib.layer_for(AttentionSpec.named(kind, 256, heads))
        for kind, heads in [("standard", 16), ("wide", 4), ("wide", 16)]
    }
    raw = time_interleaved(timed, x, repeats=3, warmup=0, threads=1)
    to_standard = relative_times(raw, ("standard", 16))
    assert to_standard["wide", 16] > 2, to_standard
    assert relative_times(raw, ("wide", 4))["wide", 16] > 1.5, raw
