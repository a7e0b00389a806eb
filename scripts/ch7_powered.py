"""Chapter 7's central variants on twelve more seeds, so that every verdict
the answers lean on rests on 15 reported seeds and a rate tuned on three.

    python3 scripts/ch7_powered.py   # about 21 hours of one CPU thread

writes ``mha_lib/course/results/ch7_powered.json``. The models, data and
schedule are those of ``scripts/ch7_experiment.py`` (1,500 steps), whose stored
file holds seeds 0 to 5 at every rate of its grid. Here a variant's rate is the
one with the lowest median held-out score over three tuning seeds; to say how
a verdict fares when other seeds tune, every one of the 20 triples of seeds
0 to 5 is a tuning set in turn, and seeds 6 to 17 train at every rate that
some triple chooses. With triple T tuning, the reported seeds are the other
three of seeds 0 to 5 and seeds 6 to 17: always 15 seeds that did not choose
the rate. The chapter's own tuning set is seeds 0, 1 and 2.

The new seeds train in blocks of four (one part each, kept in a partial file
beside the result), the central variants first, so a run that stops resumes
where it stopped; ``--threads`` sets the CPU threads (default 1, which leaves
the other core of a 2-core machine free), and ``--worker I --workers N``
trains every N-th part not yet done, starting at the I-th, beside other
workers (a plain run afterwards gathers the parts).
"""

import itertools

import checkout  # noqa: F401  (this checkout's mha_lib, first)
from ch7_experiment import SEEDS, TUNING_SEED, curves, shared_run_arguments

import mha_lib
from mha_lib.course import results
from mha_lib.course.corpus import load_bible, windows
from mha_lib.course.statistics import best_rate

CONTEXT = 64
GRID_SEEDS = [TUNING_SEED, *SEEDS]  # 0 to 5: every rate stored
NEW_SEEDS = list(range(6, 18))
BLOCK = 4
CHAPTER_TUNING = (0, 1, 2)
# the central pairs first: one head against eight, wide against the layers
# of its cost
VARIANTS = [
    "standard 1 x 64",
    "standard 8 x 8",
    "wide 2 x 64",
    "sized 8 x 16",
    "wide 8 x 64",
    "d_model 128",
    "standard 2 x 32",
    "standard 32 x 2",
    "queries/keys 4, values 8",
    "queries/keys 8, values 4",
    "queries/keys 2, values 8",
    "queries/keys 8, values 2",
    "wide 4 x 64",
    "sized 16 x 16",
    "4 layers, 1 head",
    "4 layers, 8 heads",
]


def tuning_sets():
    """Every triple of seeds 0 to 5, the chapter's own first."""
    triples = list(itertools.combinations(GRID_SEEDS, 3))
    triples.remove(CHAPTER_TUNING)
    return [CHAPTER_TUNING, *triples]


def chosen_rate(finals, triple, rates):
    """The rate with the lowest median final score over the seeds of
    ``triple``; ``finals[(seed, lr)]`` is a run's final held-out score."""
    return best_rate({lr: [finals[s, lr] for s in triple] for lr in rates})


def rates_to_train(grid_variant, rates):
    """Every rate that some triple of seeds 0 to 5 chooses, the chapter's
    choice first."""
    finals = {(r["seed"], r["lr"]): r["held_out"][-1] for r in grid_variant}
    chosen = [chosen_rate(finals, t, rates) for t in tuning_sets()]
    return list(dict.fromkeys(chosen))


def main():
    args = shared_run_arguments(__doc__)
    device = mha_lib.pick_device()
    corpus = load_bible()
    validation = windows(corpus.encode(corpus.validation), CONTEXT)
    grid = results.load("ch7_experiment")["data"]
    rates = grid["settings"]["rates"]
    stored = {v["variant"]: v["runs"] for v in grid["variants"]}
    parts = results.Parts("ch7_powered")
    blocks = [
        NEW_SEEDS[i : i + BLOCK] for i in range(0, len(NEW_SEEDS), BLOCK)
    ]
    plan = [
        (name, lr, block)
        for name in VARIANTS
        for lr in rates_to_train(stored[name], rates)
        for block in blocks
    ]
    # the chapter's rate of every variant before any other rate
    first = {name: rates_to_train(stored[name], rates)[0] for name in VARIANTS}
    plan.sort(key=lambda p: p[1] != first[p[0]])

    def run(name, lr, block):
        return curves(
            corpus, validation, name, block, [lr] * len(block), device, 1500
        )

    def key(name, lr, block):
        return f"{name} @ {lr} seeds {block[0]}-{block[-1]}"

    if args.worker is not None:  # every N-th part of those not yet done
        todo = [p for p in plan if key(*p) not in parts]
        for name, lr, block in todo[args.worker :: args.workers]:
            parts.get(
                key(name, lr, block),
                lambda n=name, r=lr, b=block: run(n, r, b),
            )
        return
    done = {}
    for name, lr, block in plan:
        part = key(name, lr, block)
        done[part] = parts.get(
            part, lambda n=name, r=lr, b=block: run(n, r, b)
        )
    data = {
        "settings": {
            "steps": 1500,
            "grid_seeds": GRID_SEEDS,
            "new_seeds": NEW_SEEDS,
            "chapter_tuning": list(CHAPTER_TUNING),
            "tuning_sets": [list(t) for t in tuning_sets()],
        },
        "variants": [
            {
                "variant": name,
                "rates": rates_to_train(stored[name], rates),
                "runs": [
                    r
                    for part, runs in done.items()
                    if part.startswith(name + " @ ")
                    for r in runs
                ],
            }
            for name in VARIANTS
        ],
    }
    parts.save(data, device=device)


if __name__ == "__main__":
    main()
