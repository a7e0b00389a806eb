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


def time_interleaved(layers, x, *, repeats=20, warmup=3, threads=None):
    """Seconds per forward+backward for each of ``{name: layer}``, measured
    round-robin.

    Each repeat times every layer once, in alternating order, so that a change
    in machine load hits all layers alike instead of biasing whichever was
    measured at the time. ``threads`` sets PyTorch's CPU thread count while
    timing (restored afterwards): on a shared machine one thread keeps the
    ratios between layers steady, where threads that wait for each other do
    not.
    """
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_positive_int("threads", threads))
    times = {name: [] for name in layers}
    try:
        for step in range(warmup + repeats):
            order = list(layers.items())
            if step % 2:
                order.reverse()
            for name, layer in order:
                elapsed = seconds(
                    lambda layer=layer: forward_backward(layer, x), x.device
                )
                if step >= warmup:
                    times[name].append(elapsed)
    finally:
        torch.set_num_threads(previous)
    return times
