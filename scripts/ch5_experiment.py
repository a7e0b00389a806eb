"""Chapter 5's full experiment: chunked, standard and wide layers on two tasks.

    python3 scripts/ch5_experiment.py   # hours on a 2-core CPU
    python3 scripts/ch5_experiment.py --only long --reverse   # beside it

writes ``mha_lib/course/results/ch5_experiment.json`` (with the command,
device, versions and wall time), which Chapter 5 reads. Three parts, each
trained with ``train_seeds`` (Adam, batch 32, ``d_model`` 32, one attention
layer), evaluated on 1024 fresh sequences:

- ``grid``: every layer below on both tasks, 150 steps, learning rates 1e-2,
  3e-2 and 1e-1, seeds 0-9;
- ``long``: the standard, wide and chunked layers with 2 to 16 heads, every
  other layer whose seeds split into solved and unsolved in the grid, and the
  layers of ``paths`` (see ``path_layers``) with the standard layers they
  shrink, 600 steps, learning rates 1e-3 to 1e-1 (five) on seeds 0-9, then
  seeds 10-19 at the best of them, the seeds that are reported (they chose
  no rate); each run records its loss on 256 sequences every 25 steps;
- ``paths``: query/key size and value size set apart (1, 2 or 4 against 8) at
  8, 16 and 32 heads on both tasks, as the grid.

The best rate is the one that solves the most seeds (a loss below 0.05), ties
broken by the lowest median loss; it is chosen on seeds 0-9 alone. A run that
stops can be started again: finished layers are kept in a partial file beside
the result and skipped.
"""

import argparse

import checkout  # this checkout's mha_lib, first

import mha_lib
from mha_lib.course import results, statistics
from mha_lib.course.tasks import AssociativeRecall, OffsetCopy
from mha_lib.course.training import evaluate, train_seeds
from mha_lib.spec import AttentionSpec

D_MODEL, BATCH, SOLVED = 32, 32, 0.05
TASKS = {
    "offset copy": OffsetCopy(offsets=(1, 2, 4, 7), seq_len=16, d_in=4),
    "associative recall": AssociativeRecall(
        d_key=8, d_value=4, num_pairs=8, num_queries=8
    ),
}
SHORT, LONG, CURVE_EVERY = 150, 600, 25
SHORT_RATES, LONG_RATES = [1e-2, 3e-2, 1e-1], [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
FIRST_SEEDS, MORE_SEEDS = list(range(10)), list(range(10, 20))
HEAD_COUNTS = [2, 4, 8, 16]


def grid_layers():
    """Every layer of the grid, as ``AttentionSpec`` keyword arguments."""
    layers = [dict(num_heads=h) for h in (1, 2, 4, 8, 16, 32)]
    layers += [dict(num_heads=h, head_dim=D_MODEL) for h in HEAD_COUNTS]
    layers += [dict(num_heads=h, chunked=True) for h in HEAD_COUNTS]
    sized = [
        (2, 4),
        (2, 8),
        (4, 4),
        (4, 16),
        (8, 8),
        (8, 16),
        (16, 4),
        (16, 8),
    ]
    sized += [(16, 16)]
    layers += [dict(num_heads=h, head_dim=size) for h, size in sized]
    return layers


def path_layers(long=False):
    """Query/key size and value size set apart, at 8, 16 and 32 heads. For
    the long runs, the standard layers they shrink too, and both paths
    widened at 8 heads only (at 16 and 32 heads those layers are the
    costliest of all, and the short runs solve them)."""
    layers = []
    for heads in (8, 16, 32):
        small = D_MODEL // heads
        if long:
            layers.append(dict(num_heads=heads))
        both = [(8, 8)] if heads == 8 or not long else []
        for qk, value in [(small, 8), (8, small)] + both:
            layers.append(dict(num_heads=heads, head_dim=qk, value_dim=value))
    return layers


def long_layers(grid):
    """The layers trained long: main layers, split layers, the paths."""
    layers = []
    for task_name in TASKS:
        for sizes in grid_layers():
            main_layer = sizes.get("head_dim") in (None, D_MODEL)
            main_layer = main_layer and sizes["num_heads"] in HEAD_COUNTS
            if main_layer or splits(grid[key(task_name, sizes)]):
                layers.append((task_name, sizes))
        for sizes in path_layers(long=True):
            labels = [key(name, s) for name, s in layers]
            if key(task_name, sizes) not in labels:
                layers.append((task_name, sizes))
    return layers


def label(sizes):
    return AttentionSpec(D_MODEL, **sizes).label


def key(task_name, sizes):
    return f"{task_name} | {label(sizes)}"


def record(task_name, sizes, lr, seed, loss, **extra):
    spec = AttentionSpec(D_MODEL, **sizes)
    task = TASKS[task_name]
    return {
        "task": task_name,
        "layer": spec.label,
        "kind": spec.kind,
        "heads": spec.num_heads,
        "head_dim": spec.head_dim,
        "value_dim": spec.value_dim,
        "params": spec.parameter_count(),
        "flops": spec.flops(task.seq_len)["total"],
        "lr": lr,
        "seed": seed,
        "loss": loss,
        **extra,
    }


def short_runs(task_name, sizes, device):
    """10 seeds at each short-run rate, 150 steps: one record per model."""
    seeds = FIRST_SEEDS * len(SHORT_RATES)
    rates = [lr for lr in SHORT_RATES for _ in FIRST_SEEDS]
    task = TASKS[task_name]
    runs = train_seeds(
        task,
        seeds=seeds,
        lr=rates,
        steps=SHORT,
        batch_size=BATCH,
        device=device,
        d_model=D_MODEL,
        **sizes,
    )
    return [
        record(task_name, sizes, lr, seed, evaluate(model, task))
        for (model, _), seed, lr in zip(runs, seeds, rates)
    ]


def long_runs(task_name, sizes, seeds, rates, device, steps=LONG):
    """600 steps (or ``steps``); the loss on 256 fixed sequences every 25
    steps: a curve."""
    task = TASKS[task_name]
    rates = rates if isinstance(rates, list) else [rates] * len(seeds)
    runs = train_seeds(
        task,
        seeds=seeds,
        lr=rates,
        steps=steps,
        batch_size=BATCH,
        device=device,
        record_every=CURVE_EVERY,
        curve_batch=256,
        d_model=D_MODEL,
        **sizes,
    )
    return [
        record(
            task_name,
            sizes,
            lr,
            seed,
            evaluate(model, task),
            curve_steps=history["step"],
            curve=[round(loss, 6) for loss in history["eval"]],
        )
        for (model, history), seed, lr in zip(runs, seeds, rates)
    ]


def best_rate(records):
    """The rate of :func:`mha_lib.course.statistics.best_rate` for these
    records."""
    by_rate = {}
    for r in records:
        by_rate.setdefault(r["lr"], []).append(r["loss"])
    return statistics.best_rate(by_rate, SOLVED)


def splits(records):
    """Whether a layer's seeds split into solved and unsolved, best lr."""
    lr = best_rate(records)
    solved = sum(r["loss"] < SOLVED for r in records if r["lr"] == lr)
    return 0 < solved < len(FIRST_SEEDS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only",
        choices=["grid", "long", "paths"],
        help="run only these parts, beside a full run in another process "
        "(the two share the partial file); writes no result",
    )
    parser.add_argument(
        "--reverse",
        action="store_true",
        help="take the long-run layers from the last (for a second process)",
    )
    checkout.add_threads(parser)
    args = parser.parse_args()
    checkout.use_threads(args.threads)
    only, reverse = args.only, args.reverse
    device = mha_lib.pick_device()
    parts = results.Parts("ch5_experiment")

    def part(name, task_name, sizes, run):
        """``run(task_name, sizes, device)``, or its records if it ran; None
        for a part this process leaves to another (``--only``)."""
        full = f"{name} | {key(task_name, sizes)}"
        if only and name != only and full not in parts:
            return None
        return parts.get(full, lambda: run(task_name, sizes, device))

    grid = {}
    for task_name in TASKS:
        for sizes in grid_layers():
            grid[key(task_name, sizes)] = part(
                "grid",
                task_name,
                sizes,
                short_runs,
            )
    long = []
    layers = long_layers(grid)
    if reverse:  # a second process works from the other end
        layers.reverse()
    for task_name, sizes in layers:

        def tuned_then_more(task_name, sizes, device):
            seeds = FIRST_SEEDS * len(LONG_RATES)
            rates = [lr for lr in LONG_RATES for _ in FIRST_SEEDS]
            first = long_runs(task_name, sizes, seeds, rates, device)
            lr = best_rate(first)
            more = long_runs(task_name, sizes, MORE_SEEDS, lr, device)
            return first + more

        long += part("long", task_name, sizes, tuned_then_more) or []
    paths = []
    for task_name in TASKS:
        for sizes in path_layers():
            if key(task_name, sizes) in grid:  # the same layer is in the grid
                continue
            paths += part("paths", task_name, sizes, short_runs) or []
    if only:
        return
    data = {
        "settings": {
            "d_model": D_MODEL,
            "batch_size": BATCH,
            "solved_below": SOLVED,
            "short_steps": SHORT,
            "long_steps": LONG,
            "short_rates": SHORT_RATES,
            "long_rates": LONG_RATES,
            "tuning_seeds": FIRST_SEEDS,
            "reported_seeds": MORE_SEEDS,
            "curve_every": CURVE_EVERY,
            "tasks": {name: repr(task) for name, task in TASKS.items()},
        },
        "grid": [r for records in grid.values() for r in records],
        "long": long,
        "paths": paths,
    }
    parts.save(data, device=device)


if __name__ == "__main__":
    main()
