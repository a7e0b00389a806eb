"""Timing that other programs on a shared machine do not skew: CPU time on a
CPU, synchronized wall time on a GPU (Chapters 3 and 5; the benchmark in
benchmarks/)."""

import gc
import statistics
import time

import torch

from ..checks import check_positive_int


def synchronize(device):
    """Wait for queued GPU work, so that a timer measures the work and not its
    launch."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def clock_name(device):
    """What ``seconds`` measures on ``device``, in words for a page."""
    return "CPU time" if torch.device(device).type == "cpu" else "wall time"


def seconds(step, device):
    """Seconds one call of ``step()`` takes on ``device``.

    On a CPU this is the CPU time of this process: a busy neighbour (another
    notebook, a second program on a 2-core cloud runtime) delays the work,
    inflating wall time by whatever the scheduler decides, but does not add to
    the process's CPU time. On a GPU the work runs outside the process, so the
    wall time between two synchronizations is measured. Garbage collection is
    paused meanwhile, as ``timeit`` does, so that a collection of earlier
    garbage is not charged to this step.
    """
    timer = time.process_time
    if torch.device(device).type != "cpu":
        timer = time.perf_counter
    collecting = gc.isenabled()
    gc.disable()
    try:
        synchronize(device)
        start = timer()
        step()
        synchronize(device)
        return timer() - start
    finally:
        if collecting:
            gc.enable()


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


def relative_times(times, reference):
    """``{name: median over the rounds of times[name][i] /
    times[reference][i]}`` from :func:`time_round_robin`: each step's time as
    a multiple of ``reference``'s, paired round by round: load that lasts
    through a round cancels in its ratio, and a round hit by a shorter burst
    is an outlier the median drops."""
    if reference not in times:
        raise ValueError(
            f"reference {reference!r} is not among the timed steps "
            f"{list(times)}"
        )
    return {
        name: statistics.median(
            t / r for t, r in zip(values, times[reference], strict=True)
        )
        for name, values in times.items()
    }


def time_round_robin(steps, device, *, repeats=20, warmup=3, threads=1):
    """Seconds (see :func:`seconds`) of each call of every ``{name: step}``,
    measured round-robin: ``{name: [seconds per repeat]}``.

    Each repeat times every step once, in an order that is rotated and
    reversed from repeat to repeat, so that a change in machine load, or the
    cache a previous step left warm, hits all steps alike instead of biasing
    whichever was measured at the time. The first ``warmup`` rounds are not
    kept. ``threads`` sets PyTorch's CPU thread count while timing (restored
    afterwards; ``None`` leaves it): with one thread the CPU time is the work
    itself, where several threads add the time they spin waiting for each
    other, which grows when a neighbour takes their cores.
    """
    if not steps:
        raise ValueError("steps must map at least one name to a step")
    check_positive_int("repeats", repeats)
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_positive_int("threads", threads))
    items = list(steps.items())
    times = {name: [] for name in steps}
    try:
        for round_ in range(warmup + repeats):
            start = round_ // 2 % len(items)
            order = items[start:] + items[:start]
            if round_ % 2:
                order.reverse()
            for name, step in order:
                elapsed = seconds(step, device)
                if round_ >= warmup:
                    times[name].append(elapsed)
    finally:
        torch.set_num_threads(previous)
    return times


def time_interleaved(layers, x, *, repeats=20, warmup=3, threads=1):
    """Seconds per forward+backward for each of ``{name: layer}``, measured
    round-robin (:func:`time_round_robin`)."""
    if not layers:
        raise ValueError("layers must map at least one name to a layer")
    steps = {
        name: lambda layer=layer: forward_backward(layer, x)
        for name, layer in layers.items()
    }
    return time_round_robin(
        steps, x.device, repeats=repeats, warmup=warmup, threads=threads
    )
