"""Time training seeds together (mha_lib.course.training.train_seeds) against
one after another.

Chapter 5's task, model and training (OffsetCopy offsets (1, 2, 4, 7), seq 16,
d_in 4; d_model 32, 8 heads; lr 1e-2, 250 steps of 32). For 1, 5 and 20
members, each repeat times the members trained together and the same members
trained one after another with ``train_from_seed``, in alternating order so
that drifts in machine load hit both alike. Prints medians (with quartiles) and
two ratios: one-after-another / together (the speed-up), and together / one
member together (how the cost grows with members).

    # 3 repeats, a few minutes on a 2-core CPU:
    python3 benchmarks/train_seeds.py
    python3 benchmarks/train_seeds.py --device cuda --repeats 5
"""

import argparse

import mha_lib
from mha_lib.course.tasks import OffsetCopy
from mha_lib.course.timing import summarize, time_round_robin
from mha_lib.course.training import train_from_seed, train_seeds

TASK = OffsetCopy(offsets=(1, 2, 4, 7), seq_len=16, d_in=4)
SIZES = dict(d_model=32, num_heads=8)
LR = 1e-2


def compare(members=(1, 5, 20), steps=250, repeats=3, device=None, batch=32):
    """``{members: {"together": [s, ...], "one by one": [s, ...]}}``, seconds
    per repeat."""
    device = mha_lib.pick_device(device)
    options = dict(
        steps=steps, lr=LR, device=device, batch_size=batch, **SIZES
    )

    def together(m):
        return train_seeds(TASK, seeds=range(m), **options)

    def one_by_one(m):
        return [
            train_from_seed(TASK, seed=seed, **options) for seed in range(m)
        ]

    runs = {"together": together, "one by one": one_by_one}
    for run in (
        runs.values()
    ):  # warm-up: first calls pay for lazy imports and kernel set-up
        run(min(members))
    steps = {
        (m, name): lambda run=run, m=m: run(m)
        for m in members
        for name, run in runs.items()
    }
    timed = time_round_robin(steps, device, repeats=repeats, warmup=0)
    times = {m: {name: timed[m, name] for name in runs} for m in members}
    return str(device), times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--device",
        default=None,
        help="cpu or cuda (default: cuda when present)",
    )
    args = parser.parse_args()
    if args.repeats < 2:
        parser.error(
            "--repeats must be at least 2 (medians and quartiles need two "
            "timings)"
        )
    device, times = compare(
        args.members, args.steps, args.repeats, args.device, args.batch
    )
    print(
        f"device {device}, {args.steps} steps of {args.batch}, "
        f"median (q1-q3) of {args.repeats} interleaved repeats"
    )
    first = summarize(times[min(args.members)]["together"])[0]
    for m, by_name in times.items():
        together, q1, q3 = summarize(by_name["together"])
        alone, a1, a3 = summarize(by_name["one by one"])
        print(
            f"{m:3d} members: together {together:6.2f} s ({q1:.2f}-{q3:.2f}), "
            f"one by one {alone:6.2f} s ({a1:.2f}-{a3:.2f}); "
            f"one by one / together {alone / together:5.2f}, "
            f"together / {min(args.members)} together {together / first:5.2f}"
        )


if __name__ == "__main__":
    main()
