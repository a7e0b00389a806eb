"""Chapter 7's central variants with rates chosen away from the scored text,
and the equal-cost split of 8 wide heads: sized 32 x 16.

    python3 scripts/ch7_apart.py  # about 10 CPU-hours; minutes on a GPU

writes ``mha_lib/course/results/ch7_apart.json``. The models, data and
schedule are those of ``scripts/ch7_experiment.py`` (1,500 steps, the rate
grid 0.001 to 0.032 a factor 2 apart); the reported seeds are the chapter's
15 (3 to 17), its tuning seeds 0, 1 and 2.

1. Sized 32 x 16 at ``d_model`` 64 (32 heads of size 16: total width 512,
   the parameters and FLOPs of wide 8 x 64) is tuned as every variant of the
   chapter is: seeds 0 to 2 at every rate of the grid, the rate with the
   lowest median final score on the scored books (2 Peter to Revelation);
   seeds 3 to 17 train at it.
2. The variants of the seven central pairs (``scripts/ch7_replication.py``;
   sized 32 x 16 among them) are tuned again on a block of text kept apart:
   the seven books before the scored ones, 1 Timothy to 1 Peter (92,141
   characters, the contiguous block nearest the scored books' 90,198). The
   tuning runs train on the training text without that block (its first
   3,955,113 characters) and are scored on the block: seeds 0 to 2 at every
   rate of the grid, the rate with the lowest median final score on the
   block. While that rate is the smallest or the largest tried, the rate a
   factor 2 beyond is tried too (at most three times on each side). The
   scored books are never read.
3. Where a variant's new rate differs from the chapter's, seeds 3 to 17 train
   at it as the chapter's do (the whole training text, scored on the scored
   books); runs the stored files already hold are read, not trained again.
4. Sized 32 x 16's seeds 3 to 5 train at the grid's other rates, and seeds 6
   to 17 at every rate that one of the 20 triples of seeds 0 to 5 chooses, as
   ``scripts/ch7_powered.py`` did for the other variants (for the chapter's
   table of verdicts under every tuning set).

The file also holds the rate that the final training loss would choose (on
seeds 0 to 2, where the stored runs kept it), the paired verdicts of the
central pairs and of wide 8 x 64 against sized 32 x 16 under each rule, and
per part its wall and CPU seconds and the commit that ran it.

Each block of runs is one part, kept in a partial file beside the result, so
a run that stops resumes where it stopped, in the order above. ``--threads``
sets the CPU threads (default 1); ``--plan`` lists the parts done and the
next one, training nothing; ``--smoke`` runs the whole pipeline for a few
steps into a temporary folder (never the results folder). A second process
on a 2-core machine, ``--second``, shares the parts: it retunes the variants
of step 2 on the tuning block in the reverse order and stops, while the first
runs the steps in order and takes in what the second finished.
"""

import argparse
import gzip
import json
import math
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import checkout  # this checkout's mha_lib, first
from ch7_experiment import (
    BATCH,
    CONTEXT,
    EVERY,
    RATES,
    SIZED_32,
    STEPS,
    describe,
    every_variant,
)
from ch7_powered import (
    CHAPTER_TUNING,
    GRID_SEEDS,
    NEW_SEEDS,
    tuning_sets,
)
from ch7_replication import CENTRAL

import mha_lib
from mha_lib.course import results
from mha_lib.course.corpus import (
    HELD_OUT_BOOKS,
    Corpus,
    load_bible,
    text_path,
    windows,
)
from mha_lib.course.language_training import train_language_models
from mha_lib.course.replication import VERDICT_CONFIDENCE, paired_verdict
from mha_lib.course.statistics import best_rate

ROOT = Path(__file__).resolve().parent.parent
NEW = SIZED_32
PAIRS = CENTRAL
EQUAL_COST = ("wide 8 x 64", NEW)  # the same parameters and FLOPs
assert EQUAL_COST in PAIRS
TUNING_BOOKS = (
    "1 Timothy",
    "2 Timothy",
    "Titus",
    "Philemon",
    "Hebrews",
    "James",
    "1 Peter",
)
REPORTED = [s for s in GRID_SEEDS if s not in CHAPTER_TUNING] + NEW_SEEDS
BLOCK = 5  # reported seeds trained together, one part each
WIDENING = 3  # rates tried a factor 2 beyond the grid, on each side
# retuned in this order: the pairs at wide 8 x 64's cost first
RETUNED = [
    "standard 8 x 8",
    "wide 8 x 64",
    "d_model 128",
    NEW,
    "standard 1 x 64",
    "wide 2 x 64",
    "sized 8 x 16",
    "standard 32 x 2",
    "queries/keys 8, values 2",
]
assert set(RETUNED) == {name for pair in PAIRS for name in pair}


@dataclass(frozen=True)
class Schedule:
    """Steps, evaluation interval, warm-up, and the held-out windows kept
    (None: all)."""

    steps: int = STEPS
    every: int = EVERY
    warmup: int = 100
    windows: int = None


SMOKE = Schedule(steps=6, every=3, warmup=2, windows=32)


def texts():
    """The chapter's corpus, and the tuning runs' corpus: the training text
    without the tuning block, which is their held-out text."""
    corpus = load_bible()  # checks the file's SHA-256
    rest, block = [], []
    for line in (
        gzip.decompress(text_path().read_bytes()).decode().splitlines()
    ):
        verse = json.loads(line)
        if verse["book"] not in HELD_OUT_BOOKS:
            part = block if verse["book"] in TUNING_BOOKS else rest
            part.append(verse["text"] + "\n")
    rest, block = "".join(rest), "".join(block)
    if corpus.train != rest + block:
        raise ValueError("the tuning block is not the training text's end")
    return corpus, Corpus(rest, block, corpus.alphabet)


def commit():
    """The commit of this checkout, ``+changes`` where its code differs."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--", "*.py"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + ("+changes" if changed else "")


def finite(value):
    """A score for JSON: None where a run diverged."""
    return round(value, 5) if math.isfinite(value) else None


def final(run, key="held_out"):
    """A run's last score (infinite where it diverged)."""
    value = run[key][-1]
    return math.inf if value is None else value


def choose(runs, seeds, key="held_out", among=None):
    """The rate with the lowest median final score over ``seeds``, from
    ``runs`` (``{(seed, lr): run}``), among the rates all of them tried
    (and in ``among``, where given)."""
    rates = sorted({lr for _, lr in runs if among is None or lr in among})
    rates = [lr for lr in rates if all((s, lr) in runs for s in seeds)]
    return best_rate(
        {lr: [final(runs[s, lr], key) for s in seeds] for lr in rates}
    )


def beyond(best, tried):
    """The rate to try next where ``best`` is the smallest or the largest of
    the rates ``tried`` (sorted): a factor 2 beyond it, at most
    :data:`WIDENING` factors past the grid; None where ``best`` lies inside
    them."""
    if best == tried[0] and best > RATES[0] / 2**WIDENING:
        return best / 2
    if best == tried[-1] and best < RATES[-1] * 2**WIDENING:
        return best * 2
    return None


def medians(runs, seeds, key="held_out"):
    """``{rate: median final score over seeds}``, for the record."""
    rates = sorted({lr for _, lr in runs})
    table = {}
    for lr in rates:
        scores = sorted(final(runs[s, lr], key) for s in seeds)
        table[str(lr)] = finite(scores[len(scores) // 2])
    return table


def train_variant(corpus, validation, name, seeds, rates, schedule, device):
    """``name``'s ``seeds`` at ``rates`` trained together on ``corpus`` for
    ``schedule``, scored on ``validation`` (``(inputs, targets)``): ``[(model,
    history)]``."""
    spec, num_layers, _ = every_variant()[name]
    return train_language_models(
        corpus,
        attention=spec,
        seeds=seeds,
        steps=schedule.steps,
        lr=rates,
        context=CONTEXT,
        num_layers=num_layers,
        batch_size=BATCH,
        evaluate_every=schedule.every,
        warmup=schedule.warmup,
        validation=validation,
        device=device,
    )


def runs_of(into, name):
    """``{(seed, lr): run}`` of ``name`` among ``into``'s ``{(variant, seed,
    lr): run}``."""
    return {(s, lr): r for (n, s, lr), r in into.items() if n == name}


def stored_runs():
    """``{(variant, seed, lr): run}`` of the chapter's stored files: seeds 0
    to 5 at every rate of the grid (with the training loss), and seeds 6 to
    17 at the rates the powered run trained; not ``ch7_sized``, whose runs
    are this script's own parts."""
    return {
        key: {**run, "from": name}
        for name in ("ch7_experiment", "ch7_powered")
        for key, run in results.runs_by_key(results.load(name)).items()
    }


def parsed(doc, name, second, *switches):
    """The command line of a long run in parts, parsed and applied:
    ``--threads``, ``--plan`` (list the parts, train nothing), ``--smoke
    [FOLDER]`` (a few steps per run, into a folder of its own: default a
    temporary ``<name>_smoke``) and ``--second`` (``second``: what a second
    process does); ``switches``, ``(flag, help)`` of the run's own on/off
    options. Returns ``(args, schedule)``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    checkout.add_threads(parser)
    parser.add_argument(
        "--plan", action="store_true", help="list the parts, train nothing"
    )
    parser.add_argument(
        "--smoke",
        nargs="?",
        const=Path(tempfile.gettempdir()) / f"{name}_smoke",
        type=Path,
        help="a few steps per run, into this folder (default: a temporary "
        "one)",
    )
    for flag, help in [*switches, ("--second", second)]:
        parser.add_argument(flag, action="store_true", help=help)
    args = parser.parse_args()
    checkout.use_threads(args.threads)
    if args.smoke is not None and args.smoke.resolve() == results.FOLDER:
        raise SystemExit("--smoke writes to a folder of its own")
    return args, SMOKE if args.smoke is not None else Schedule()


def main():
    args, schedule = parsed(
        __doc__,
        "ch7_apart",
        "a second process: step 2's retuning, variants in reverse",
        ("--sized", "step 1 only, then write ch7_sized.json for the chapter"),
    )
    device = mha_lib.pick_device()
    table = every_variant()
    corpus, apart = texts()

    def held_out(text):
        inputs, targets = windows(corpus.encode(text), CONTEXT)
        return inputs[: schedule.windows], targets[: schedule.windows]

    scored, block = held_out(corpus.validation), held_out(apart.validation)
    parts = results.Parts("ch7_apart", folder=args.smoke)
    code = commit()
    pool = stored_runs()  # every run on the whole text, scored books
    tuning = {}  # every run of the tuning block: {(variant, seed, lr): run}
    plan = []  # the parts, in order, as they come

    def part(key, where, name, seeds, rates):
        """Part ``key``: ``name``'s ``seeds`` at ``rates`` trained together,
        on the whole training text scored on the scored books (``where``
        "scored") or on the text without the tuning block, scored on it
        ("block"); its runs go to ``pool`` or ``tuning``."""
        plan.append(key)
        if args.plan and key not in parts:
            raise Planned(key)

        def run():
            print(f"{time.strftime('%H:%M:%S')} {key} ...", flush=True)
            begun = time.process_time()
            trained = train_variant(
                corpus if where == "scored" else apart,
                scored if where == "scored" else block,
                name,
                seeds,
                rates,
                schedule,
                device,
            )
            runs = [
                {
                    "seed": seed,
                    "lr": lr,
                    "steps": history["step"],
                    "held_out": [finite(b) for b in history["eval"]],
                    "train": [finite(b) for b in history["loss"]],
                }
                for (_, history), seed, lr in zip(trained, seeds, rates)
            ]
            return {
                "variant": name,
                "text": where,
                "runs": runs,
                "cpu_seconds": round(time.process_time() - begun, 1),
                "commit": code,
                "environment": results.environment(device),
            }

        done = parts.get(key, run)
        into = pool if where == "scored" else tuning
        for r in done["runs"]:
            into[name, r["seed"], r["lr"]] = {**r, "from": "ch7_apart"}
        return done

    def reported(name, lr):
        """Seeds 3 to 17 of ``name`` at ``lr``: those not stored are trained,
        five at a time."""
        missing = [s for s in REPORTED if (name, s, lr) not in pool]
        for i in range(0, len(missing), BLOCK):
            seeds = missing[i : i + BLOCK]
            listed = ", ".join(map(str, seeds))
            key = f"{name} @ {lr}: seeds {listed}"
            part(key, "scored", name, seeds, [lr] * len(seeds))
        return {s: pool[name, s, lr] for s in REPORTED}

    def retune(name):
        """The rates ``name`` tried on the tuning block and its choice."""
        for seed in CHAPTER_TUNING:
            key = f"{name}: tuning block, seed {seed} @ the grid"
            part(key, "block", name, [seed] * len(RATES), RATES)
        tried = list(RATES)
        while True:
            best = choose(runs_of(tuning, name), CHAPTER_TUNING)
            further = beyond(best, tried)
            if further is None:
                return tried, best
            key = f"{name}: tuning block, seeds 0-2 @ {further}"
            seeds = list(CHAPTER_TUNING)
            part(key, "block", name, seeds, [further] * len(seeds))
            tried = sorted([*tried, further])

    if args.second and not args.plan:
        for name in reversed(RETUNED):
            retune(name)
        print("the second process's parts are done")
        return
    try:
        # 1. sized 32 x 16 as the chapter tunes: seeds 0 to 2 at every rate
        for seed in CHAPTER_TUNING:
            key = f"{NEW}: scored books, seed {seed} @ the grid"
            part(key, "scored", NEW, [seed] * len(RATES), RATES)
        present = {
            name: choose(runs_of(pool, name), CHAPTER_TUNING, among=RATES)
            for name in RETUNED
        }
        reported(NEW, present[NEW])
        if args.sized and not args.plan:
            sized = list(plan)  # so far step 1's parts, all sized 32 x 16's
            data = sized_data(schedule, corpus, table, pool, present[NEW])
            data["parts"] = part_records(parts, sized)
            results.save(
                "ch7_sized",
                data,
                device=device,
                seconds=sum(map(parts.seconds_of, sized)),
                folder=args.smoke,
                ran_in=parts.done[sized[0]]["result"]["environment"],
            )
            return
        # 2. every variant tuned on the block kept apart
        retuned = {name: retune(name) for name in RETUNED}
        # 3. the reported seeds at every rate that changed
        for name in RETUNED:
            if retuned[name][1] != present[name]:
                reported(name, retuned[name][1])
        # 4. sized 32 x 16 under every triple of seeds 0 to 5
        for seed in REPORTED[:3]:
            others = [lr for lr in RATES if (NEW, seed, lr) not in pool]
            if others:
                key = f"{NEW}: scored books, seed {seed} @ the other rates"
                part(key, "scored", NEW, [seed] * len(others), others)
        triples = {
            t: choose(runs_of(pool, NEW), t, among=RATES)
            for t in tuning_sets()
        }
        for lr in dict.fromkeys(triples.values()):
            reported(NEW, lr)
    except Planned as error:
        done = [key for key in plan if key in parts]
        print(f"{len(done)} parts done:", *done, sep="\n  ")
        print(f"next: {error}")
        return
    if args.plan:
        print(f"all {len(plan)} parts done; a run writes the results file")
        return
    data = gather(
        schedule, corpus, apart, table, pool, tuning, present, retuned
    )
    data["settings"]["triples"] = {
        ", ".join(map(str, t)): lr for t, lr in triples.items()
    }
    data["parts"] = part_records(parts, plan)
    parts.save(data, device=device)


class Planned(Exception):
    """The first part that ``--plan`` would train."""


def part_records(parts, keys):
    """``{key: its wall and CPU seconds, commit and environment}``."""
    return {
        key: {
            "wall_seconds": parts.seconds_of(key),
            **{
                field: parts.done[key]["result"][field]
                for field in ("cpu_seconds", "commit", "environment")
            },
        }
        for key in keys
    }


def sized_data(schedule, corpus, table, pool, rate):
    """Step 1's results, ``ch7_sized.json``: sized 32 x 16 as the chapter
    tunes its variants, seeds 0 to 2 at every rate of the grid and seeds 3
    to 17 at the rate they chose (the lowest median on the scored books)."""
    described = equal_cost(
        {
            name: describe(name, *table[name], len(corpus.alphabet))
            for name in EQUAL_COST
        }
    )
    runs = [
        {k: v for k, v in r.items() if k != "from"}
        for (name, seed, lr), r in sorted(pool.items())
        if name == NEW and (seed in CHAPTER_TUNING or lr == rate)
    ]
    return {
        "settings": settings(schedule, corpus),
        "variants": [{**described[NEW], "rate": rate, "runs": runs}],
    }


def settings(schedule, corpus):
    """The settings that both results files record."""
    return {
        "steps": schedule.steps,
        "evaluate_every": schedule.every,
        "warmup": schedule.warmup,
        "context": CONTEXT,
        "batch_size": BATCH,
        "rates": RATES,
        "tuning_seeds": list(CHAPTER_TUNING),
        "reported_seeds": REPORTED,
        "training_characters": len(corpus.train),
    }


def equal_cost(described):
    """``described`` (``{name: describe(...)}``), once sized 32 x 16 is
    checked to have exactly wide 8 x 64's parameters and FLOPs."""
    for field in ("parameters", "forward_flops"):
        if len({described[name][field] for name in EQUAL_COST}) > 1:
            raise ValueError(f"{NEW} and wide 8 x 64 differ in {field}")
    return described


def gather(schedule, corpus, apart, table, pool, tuning, present, retuned):
    """The results file's data: settings, each variant's choices and runs,
    and the paired verdicts under each rule."""

    def loss_rule(name):
        """The rate the final training loss of seeds 0 to 2 chooses, where
        the stored runs kept it."""
        runs = runs_of(pool, name)
        kept = {
            k: r for k, r in runs.items() if r.get("train") and k[1] in RATES
        }
        if not all((s, lr) in kept for s in CHAPTER_TUNING for lr in RATES):
            return None
        return choose(kept, CHAPTER_TUNING, key="train", among=RATES)

    rules = {
        "scored books": present,
        "tuning block": {name: retuned[name][1] for name in RETUNED},
        "training loss": {name: loss_rule(name) for name in RETUNED},
    }
    described = equal_cost(
        {
            name: describe(name, *table[name], len(corpus.alphabet))
            for name in RETUNED
        }
    )

    def finals(name, lr):
        if lr is None or any((name, s, lr) not in pool for s in REPORTED):
            return None
        return {str(s): pool[name, s, lr]["held_out"][-1] for s in REPORTED}

    out = []
    for name in RETUNED:
        tried, chosen = retuned[name]
        block_runs = runs_of(tuning, name)
        grid_runs = {
            k: r for k, r in runs_of(pool, name).items() if k[0] in GRID_SEEDS
        }
        out.append(
            {
                **described[name],
                "rates": {rule: rates[name] for rule, rates in rules.items()},
                "tried_on_block": tried,
                "widened": [lr for lr in tried if lr not in RATES],
                # a choice still at an edge: of the grid under the chapter's
                # rule, of the widened rates on the block
                "at_edge": {
                    "scored books": present[name] in (RATES[0], RATES[-1]),
                    "tuning block": chosen in (tried[0], tried[-1]),
                },
                "block_medians": medians(block_runs, CHAPTER_TUNING),
                "block_training_loss_rate": choose(
                    block_runs, CHAPTER_TUNING, key="train"
                ),
                "block_runs": [
                    {k: v for k, v in r.items() if k != "from"}
                    for _, r in sorted(block_runs.items())
                ],
                # the grid's seeds 0 to 5 where this run trained them
                "grid_runs": [
                    {k: v for k, v in r.items() if k != "from"}
                    for _, r in sorted(grid_runs.items())
                    if r["from"] == "ch7_apart"
                ],
                # seeds 3 to 17 at every rate where all 15 are stored
                "reported": {
                    str(lr): finals(name, lr)
                    for lr in sorted({lr for (n, _, lr) in pool if n == name})
                    if finals(name, lr) is not None
                },
            }
        )
    verdicts = []
    for first, second in PAIRS:
        for rule, rates in rules.items():
            a, b = finals(first, rates[first]), finals(second, rates[second])
            row = {"pair": [first, second], "rule": rule}
            if a is None or b is None:
                row["verdict"] = None  # not all 15 seeds stored at a rate
            else:
                word, (mean, low, high) = paired_verdict(
                    [a[str(s)] for s in REPORTED],
                    [b[str(s)] for s in REPORTED],
                )
                row.update(verdict=word, mean=mean, low=low, high=high)
                row["confidence"] = VERDICT_CONFIDENCE  # each pair alone
            verdicts.append(row)
    return {
        "settings": {
            **settings(schedule, corpus),
            "widening": WIDENING,
            "scored_books": list(HELD_OUT_BOOKS),
            "tuning_books": list(TUNING_BOOKS),
            "tuning_training_characters": len(apart.train),
            "tuning_block_characters": len(apart.validation),
            "scored_characters": len(corpus.validation),
            "pairs": [list(pair) for pair in PAIRS],
        },
        "variants": out,
        "verdicts": verdicts,
    }


if __name__ == "__main__":
    main()
