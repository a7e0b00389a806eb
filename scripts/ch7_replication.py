"""Chapter 7's central verdicts on seeds no one chose, for
``scripts/replicate.py --chapters 7``.

The verdicts the answers lean on (Q9, Q12, Q13) are paired differences of
held-out bits per character after 1,500 steps: one head, 32 heads and values
of 2 against 8 standard heads; 8 wide heads against 8 standard ones; the wide
layers against the standard layers of their cost. Each variant trains on the
new seeds at the rate the chapter uses (the lowest median over tuning seeds 0
to 2), with ``scripts/ch7_experiment.py``'s own code. Each pair's paired
95 % interval is judged alone (the replication checks stated verdicts one by
one), on the chapter's 15 reported seeds (3 to 17) and on the new ones, so
the two columns compare like with like; the new seeds' interval reads by
``mha_lib.course.replication.RULE``: held on the chapter's side of zero,
failed on the other, not refuted where it holds zero, with the smallest
difference those seeds could have resolved. About 17 minutes of one CPU
thread per seed on a 2-core machine (five seeds train together); minutes on
a GPU.
"""

import checkout  # noqa: F401  (this checkout's mha_lib, first)
from ch7_experiment import curves
from ch7_powered import (
    CHAPTER_TUNING,
    GRID_SEEDS,
    NEW_SEEDS,
    chosen_rate,
)

from mha_lib.course import results
from mha_lib.course.corpus import load_bible, windows
from mha_lib.course.replication import (
    VERDICT_CONFIDENCE,
    paired_verdict,
    resolvable,
    verdict_outcome,
)

# (variant, reference): the pairs the answers lean on, the chapter's names
CENTRAL = [
    ("standard 1 x 64", "standard 8 x 8"),
    ("standard 32 x 2", "standard 8 x 8"),
    ("queries/keys 8, values 2", "standard 8 x 8"),
    ("wide 8 x 64", "standard 8 x 8"),
    ("wide 2 x 64", "sized 8 x 16"),
    ("wide 8 x 64", "d_model 128"),
    ("wide 8 x 64", "sized 32 x 16"),  # the same parameters and FLOPs
]
# the files of the chapter's runs on the whole text, scored on the scored books
STORED = ("ch7_experiment", "ch7_powered", "ch7_sized")
BLOCK = 5  # seeds trained together, one part each
STEPS = 1500


def chapter_runs():
    """``(rate, {seed: final score})`` of every central variant on the
    chapter's reported seeds, at the chapter's rate."""
    grid = results.load("ch7_experiment")["data"]
    runs = {
        key: run["held_out"][-1]
        for key, run in results.runs_by_key(*map(results.load, STORED)).items()
    }
    reported = [s for s in GRID_SEEDS if s not in CHAPTER_TUNING] + NEW_SEEDS
    table = {}
    for name in {n for pair in CENTRAL for n in pair}:
        finals = {
            (s, lr): runs[name, s, lr]
            for s in CHAPTER_TUNING
            for lr in grid["settings"]["rates"]
        }
        lr = chosen_rate(finals, CHAPTER_TUNING, grid["settings"]["rates"])
        table[name] = (lr, {s: runs[name, s, lr] for s in reported})
    return table


def judged(first, second):
    """``(verdict, detail)`` of ``first`` minus ``second`` (paired lists of
    scores), as :func:`mha_lib.course.replication.paired_verdict` judges it."""
    word, (mean, low, high) = paired_verdict(first, second)
    return word, f"{mean:+.3f} ({low:+.3f} to {high:+.3f}), {word}"


def resolution(first, second):
    """What the seeds of paired lists ``first`` and ``second`` could
    resolve: the level of their interval and the smallest difference it
    resolves, in words."""
    _, (_, low, high) = paired_verdict(first, second)
    return (
        f"at {VERDICT_CONFIDENCE * 100:.0f} %, each pair alone, "
        f"{len(first)} seeds resolve a difference beyond "
        f"±{resolvable(low, high):.3f}"
    )


def stored_name(seeds):
    """The results file ``--store`` writes for a run on ``seeds``: one per
    seed set, ``ch7_replication-A-B``."""
    return f"ch7_replication-{seeds[0]}-{seeds[-1]}"


def parts_of(seeds):
    """The partial file of a run on ``seeds``: the parts it trained, until
    ``--store`` keeps their runs in the results file."""
    return results.Parts(f"replication-ch7-{seeds[0]}-{seeds[-1]}")


def stored_runs(seeds):
    """``{(variant, seed, rate): run}`` of the stored replication on
    ``seeds`` (none where there is none yet), and its trainings' seconds."""
    try:
        stored = results.load(stored_name(seeds))
    except FileNotFoundError:
        return {}, 0
    runs = stored["data"]["runs"]
    kept = {(r["variant"], r["seed"], r["lr"]): r for r in runs}
    return kept, stored["wall_seconds"]


def rows(seeds, device):
    """One row per central pair: its verdict on the chapter's seeds and on
    ``seeds``; the runs on ``seeds`` behind them (``variant``, ``seed``,
    ``lr`` and the held-out curve), taken from the stored replication where
    it has them, else trained here (kept in a partial file, so a stopped run
    resumes); and the wall time of the trainings, summed over their
    parts."""
    chapter = chapter_runs()
    corpus = load_bible()
    validation = windows(corpus.encode(corpus.validation), 64)
    parts = parts_of(seeds)
    kept, kept_seconds = stored_runs(seeds)
    new, runs = {}, []
    for name, (lr, _) in sorted(chapter.items()):
        new[name] = {}
        for i in range(0, len(seeds), BLOCK):
            block = seeds[i : i + BLOCK]
            trained = [kept.get((name, s, lr)) for s in block]
            if None in trained:
                trained = parts.get(
                    f"{name} @ {lr} seeds {block[0]}-{block[-1]}",
                    lambda n=name, b=block, r=lr: curves(
                        corpus, validation, n, b, [r] * len(b), device, STEPS
                    ),
                )
                trained = [{"variant": name, **r} for r in trained]
            runs += trained
            new[name].update({r["seed"]: r["held_out"][-1] for r in trained})
    table = []
    for name, reference in CENTRAL:
        own = [chapter[n][1] for n in (name, reference)]
        stated, own_detail = judged(*(list(o.values()) for o in own))
        scores = [[new[n][s] for s in seeds] for n in (name, reference)]
        word, new_detail = judged(*scores)
        found = verdict_outcome(stated, word)
        table.append(
            {
                "chapter": 7,
                "claim": f"{name} against {reference}: {stated}",
                "chapter_seeds": own_detail,
                "new_seeds": new_detail,
                "resolution": resolution(*scores),
                "held_on_chapter_seeds": True,  # verdict_outcome saw to it
                "held": found == "held",
                "refuted": found == "failed",
            }
        )
    return table, runs, parts.seconds + (kept_seconds if kept else 0)
