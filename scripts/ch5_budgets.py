"""Chapter 5's comparison at equal training FLOPs, each budget with its own
learning rate.

    python3 scripts/ch5_budgets.py   # about 2 minutes on a 2-core CPU

writes ``mha_lib/course/results/ch5_budgets.json``. A wide layer costs more per
step than the standard layer with as many heads, so at the FLOPs of 600
standard steps it trains for fewer steps: its budget, the last curve step
(every 25) whose updates cost no more than 600 standard ones. The rate that
suits 600 steps need not suit 75, so every budget chooses its own, from the
long runs' grid of five rates on the tuning seeds (0-9) of
``mha_lib/course/results/ch5_experiment.json``: Adam at a constant rate, so a
run of ``budget`` steps is the first ``budget`` steps of those runs. The
reported seeds (10-19), which chose nothing, then train to the budget at that
rate.
"""

import checkout  # this checkout's mha_lib, first
from ch5_experiment import (
    D_MODEL,
    FIRST_SEEDS,
    LONG,
    MORE_SEEDS,
    SOLVED,
    TASKS,
    long_runs,
)

import mha_lib
from mha_lib.course import results, statistics
from mha_lib.course.model import AttentionModel

HEAD_COUNTS = [2, 4, 8, 16]


def budget_of(task, heads, steps):
    """The wide layer's FLOPs per step over the standard layer's, and the
    last of the curve's ``steps`` within the FLOPs of 600 standard steps
    (curve step ``s`` is recorded after ``s + 1`` updates)."""
    cost = {
        size: AttentionModel.for_task(
            task, d_model=D_MODEL, num_heads=heads, head_dim=size
        ).forward_flops()
        for size in (D_MODEL // heads, D_MODEL)
    }
    ratio = cost[D_MODEL] / cost[D_MODEL // heads]
    return ratio, max(s for s in steps if s + 1 <= LONG / ratio)


def rate_at(tuning, step):
    """The rate that solved the most tuning seeds at ``step`` (ties: the
    lowest median loss), from their curves."""
    by_rate = {}
    for r in tuning:
        at = r["curve_steps"].index(step)
        by_rate.setdefault(r["lr"], []).append(r["curve"][at])
    return statistics.best_rate(by_rate, SOLVED)


def budgets(long, seeds, device, parts):
    """Every wide layer's budget and its rate, chosen on the tuning seeds of
    the long runs ``long``, with ``seeds`` trained to the budget at it (each
    a part of ``parts``): one row per task and head count."""
    rows = []
    for task_name, task in TASKS.items():
        for heads in HEAD_COUNTS:
            label = f"wide {heads} x {D_MODEL}"
            tuning = [
                r
                for r in long
                if r["task"] == task_name
                and r["layer"] == label
                and r["seed"] in FIRST_SEEDS
            ]
            ratio, budget = budget_of(task, heads, tuning[0]["curve_steps"])
            lr = rate_at(tuning, budget)
            runs = parts.get(
                f"{task_name} | {label} | {budget} | {lr}",
                lambda t=task_name, h=heads, b=budget, lr=lr: long_runs(
                    t,
                    dict(num_heads=h, head_dim=D_MODEL),
                    seeds,
                    lr,
                    device,
                    steps=b + 1,
                ),
            )
            rows.append(
                {
                    "task": task_name,
                    "layer": label,
                    "heads": heads,
                    "flops_ratio": ratio,
                    "budget": budget,
                    "lr": lr,
                    "runs": runs,
                }
            )
    return rows


def main():
    checkout.threads_only(__doc__)
    device = mha_lib.pick_device()
    long = results.load("ch5_experiment")["data"]["long"]
    parts = results.Parts("ch5_budgets")
    data = {
        "settings": {
            "standard_steps": LONG,
            "tuning_seeds": FIRST_SEEDS,
            "reported_seeds": MORE_SEEDS,
            "solved_below": SOLVED,
        },
        "budgets": budgets(long, MORE_SEEDS, device, parts),
    }
    parts.save(data, device=device)


if __name__ == "__main__":
    main()
