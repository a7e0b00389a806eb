"""Chapter 7's longer budget: the central pairs of
``scripts/ch7_experiment.py`` trained three times as long.

    python3 scripts/ch7_long.py   # about 10 hours of one CPU thread

writes ``mha_lib/course/results/ch7_long.json``: one head against eight, wide
2 x 64 against sized 8 x 16, wide 8 x 64 against ``d_model`` 128, each for
4,500 steps instead of 1,500 (the same warm-up, the cosine decay stretched
over the longer run), held-out bits per character every 150 steps.

Seed 0 tunes and is reported nowhere: it tries the rate it chose at 1,500
steps, half of it and twice it, and while its best is the smallest or the
largest rate tried, the next one beyond (a factor 2 further); seeds 1 to 10
train at its best. Runs already in the results file are kept (the first two
variants' seeds 0 to 5 come from an earlier run of this command).

Each block of runs is one part, kept in a partial file beside the result, so
a run that stops resumes where it stopped; ``--threads`` sets the CPU threads
(default 1), and ``--worker I --workers N`` trains every N-th variant,
starting at the I-th, beside other workers (a plain run afterwards gathers
the parts). ``--finished`` trains nothing: it writes the pairs whose runs are
all done, names the others ``unfinished`` and keeps the partial file, from
which a later run goes on.
"""

import checkout  # noqa: F401  (this checkout's mha_lib, first)
from ch7_experiment import (
    CONTEXT,
    EVERY,
    TUNING_SEED,
    curves,
    shared_run_arguments,
    tuned_rate,
)

import mha_lib
from mha_lib.course import results
from mha_lib.course.corpus import load_bible, windows

LONG_STEPS = 4500
REPORTED = list(range(1, 11))
BLOCKS = [REPORTED[:5], REPORTED[5:]]
PAIRS = [
    ("standard 1 x 64", "standard 8 x 8"),
    ("wide 2 x 64", "sized 8 x 16"),
    ("wide 8 x 64", "d_model 128"),
]
LONG = [name for pair in PAIRS for name in pair]


def kept_runs():
    """``{(variant, seed, lr): run}`` of the stored results file, if any, and
    the seconds of training behind them."""
    try:
        stored = results.load("ch7_long")
    except FileNotFoundError:
        return {}, 0.0
    runs = {
        (v["variant"], r["seed"], r["lr"]): r
        for v in stored["data"]["variants"]
        for r in v["runs"]
    }
    settings = stored["data"]["settings"]
    if "unfinished" in settings:  # its parts are still in the partial file
        return runs, settings["kept_wall_seconds"]
    return runs, stored["wall_seconds"]


FINISHED = (
    "--finished",
    "write the pairs whose runs are all done, train nothing",
)


class Unfinished(Exception):
    """A part that ``--finished`` would have had to train."""


def main():
    args = shared_run_arguments(__doc__, FINISHED)
    device = mha_lib.pick_device()
    corpus = load_bible()
    validation = windows(corpus.encode(corpus.validation), CONTEXT)
    short = {
        v["variant"]: v
        for v in results.load("ch7_experiment")["data"]["variants"]
    }
    kept, kept_seconds = kept_runs()
    parts = results.Parts("ch7_long")

    def runs(name, seeds, rates):
        """The runs of ``name`` at ``seeds`` and ``rates``: kept ones, the
        others trained together as one part."""
        missing = [
            (s, lr) for s, lr in zip(seeds, rates) if (name, s, lr) not in kept
        ]
        if missing:
            part = f"{name}: " + ", ".join(f"{s} @ {lr}" for s, lr in missing)
            if args.finished and part not in parts:
                raise Unfinished(part)
            trained = parts.get(
                part,
                lambda: curves(
                    corpus,
                    validation,
                    name,
                    [s for s, _ in missing],
                    [lr for _, lr in missing],
                    device,
                    LONG_STEPS,
                ),
            )
            kept.update({(name, r["seed"], r["lr"]): r for r in trained})
        return [kept[name, s, lr] for s, lr in zip(seeds, rates)]

    def run(name):
        around = short[name]["chosen_lr"]
        tried = [around / 2, around, around * 2]
        while True:
            tuning = runs(name, [TUNING_SEED] * len(tried), tried)
            best = tuned_rate(tuning)
            if best == tried[0]:
                tried = [best / 2, *tried]
            elif best == tried[-1]:
                tried = [*tried, best * 2]
            else:
                break
        reported = [
            r
            for block in BLOCKS
            for r in runs(name, block, [best] * len(block))
        ]
        return {
            "variant": name,
            "tried_lr": tried,
            "chosen_lr": best,
            "runs": tuning + reported,
        }

    mine = LONG if args.worker is None else LONG[args.worker :: args.workers]
    if args.worker is not None:
        for name in mine:
            run(name)
        return
    done, finished, unfinished = [], [], []
    for pair in PAIRS:
        try:
            done += [run(name) for name in pair]
            finished.append(list(pair))
        except Unfinished as part:
            print(f"unfinished: {pair[0]} against {pair[1]} ({part})")
            unfinished.append(list(pair))
    data = {
        "settings": {
            "steps": LONG_STEPS,
            "evaluate_every": EVERY,
            "tuning_seed": TUNING_SEED,
            "seeds": REPORTED,
            "pairs": finished,
        },
        "variants": done,
    }
    # the result's wall time counts this run's parts; the kept runs' own
    # time is stored beside them
    data["settings"]["kept_wall_seconds"] = kept_seconds
    if not unfinished:
        parts.save(data, device=device)
        return
    data["settings"]["unfinished"] = unfinished
    names = {name for pair in finished for name in pair}
    seconds = sum(
        parts.seconds_of(part)
        for part in parts.done
        if part.partition(": ")[0] in names
    )
    results.save("ch7_long", data, device=device, seconds=seconds)


if __name__ == "__main__":
    main()
