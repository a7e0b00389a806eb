"""Round-robin timing: every layer timed as often, the thread count
restored."""

import pytest
import torch
from support import DEVICES

import mha_lib
from mha_lib.timing import summarize, time_interleaved, time_round_robin


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


def test_round_robin_alternates_the_order_and_drops_the_warm_up():
    calls = []
    steps = {name: lambda name=name: calls.append(name) for name in "abc"}
    times = time_round_robin(steps, "cpu", repeats=3, warmup=1)
    assert calls == list("abccbaabccba"), "alternating order"
    assert {name: len(t) for name, t in times.items()} == dict(a=3, b=3, c=3)
    with pytest.raises(ValueError, match="repeats"):
        time_round_robin(steps, "cpu", repeats=0)
