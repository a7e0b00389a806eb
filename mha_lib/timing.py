"""Wall-clock timing that is honest on CPU and GPU (Chapter 3; the benchmark in
benchmarks/)."""

import statistics
import time

import torch

from .checks import check_positive_int


def synchronize(device):
    """Wait for queued GPU work, so that a timer measures the work and not its
    launch."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def seconds(step, device):
    """Seconds one call of ``step()`` takes on ``device``."""
    synchronize(device)
    start = time.perf_counter()
    step()
    synchronize(device)
    return time.perf_counter() - start


def forward_backward(layer, x):
    """One training-style step of a self-attention layer: forward, then
    backward of a scalar."""
    output, _ = layer(x)
    output.sum().backward()


def summarize(times):
    """Median and interquartile range of a list of timings: ``(median, q1,
    q3)``."""
    q1, median, q3 = statistics.quantiles(times, n=4)
    return median, q1, q3


def time_round_robin(steps, device, *, repeats=20, warmup=3, threads=None):
    """Seconds of each call of every ``{name: step}``, measured round-robin:
    ``{name: [seconds per repeat]}``.

    Each repeat times every step once, in alternating order, so that a change
    in machine load hits all steps alike instead of biasing whichever was
    measured at the time. The first ``warmup`` rounds are not kept. ``threads``
    sets PyTorch's CPU thread count while timing (restored afterwards): on a
    shared machine one thread keeps the ratios between steps steady, where
    threads that wait for each other do not.
    """
    check_positive_int("repeats", repeats)
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_positive_int("threads", threads))
    times = {name: [] for name in steps}
    try:
        for round_ in range(warmup + repeats):
            order = list(steps.items())
            if round_ % 2:
                order.reverse()
            for name, step in order:
                elapsed = seconds(step, device)
                if round_ >= warmup:
                    times[name].append(elapsed)
    finally:
        torch.set_num_threads(previous)
    return times


def time_interleaved(layers, x, *, repeats=20, warmup=3, threads=None):
    """Seconds per forward+backward for each of ``{name: layer}``, measured
    round-robin (:func:`time_round_robin`)."""
    steps = {
        name: lambda layer=layer: forward_backward(layer, x)
        for name, layer in layers.items()
    }
    return time_round_robin(
        steps, x.device, repeats=repeats, warmup=warmup, threads=threads
    )
