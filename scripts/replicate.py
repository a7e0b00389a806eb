"""Every trained claim of Chapters 4 and 5, and Chapter 7's central verdicts,
checked again on new seeds.

    python3 scripts/replicate.py --seeds 100-119            # about 30 minutes
    python3 scripts/replicate.py --seeds 100-119 --store    # and store it
    python3 scripts/replicate.py --seeds 300-302 --chapters 4 --only-new
    python3 scripts/replicate.py --seeds 200-209 --chapters 7 --store

runs each chapter's own notebook twice, on its own seeds and on ``--seeds``,
and prints one line per claim: the claim, its value on the chapter's seeds, its
value on the new seeds, and ``held``, ``not refuted`` or ``FAILED``, by the one
rule it prints after them (``mha_lib.course.replication.RULE``): FAILED where
the new seeds' evidence goes against the claim, held where they establish it,
not refuted where they cannot resolve it either way. The claims without a
value to show (a theorem, an identity, a bare comparison) come apart, after
the others. It exits with status 1 if a claim FAILED, on the new seeds or on
the chapter's, and 0 otherwise. It runs on this checkout's ``mha_lib``
(``scripts/checkout.py``), its kernels too, on one CPU thread unless
``--threads N`` says otherwise.

Chapter 4 trains its models in the notebook, so the new seeds go to it as
``SEEDS``. Chapter 5 reads its long runs from
``mha_lib/course/results/ch5_experiment.json`` and ``ch5_budgets.json``: here
every layer of those runs, and every wide layer at its budget of equal FLOPs,
is trained again on the new seeds, at the learning rate the stored tuning seeds
chose, by ``scripts/ch5_experiment.py``'s and ``ch5_budgets.py``'s own
functions, and the chapter reads them from a copy of the file
(``RESULTS_FOLDER``) in which they replace the reported seeds, checked against
the SHA-256 this run wrote them with (``RESULTS_SHA256``). Those trainings
are kept in a partial file, so a run that stops resumes. Settings reach a
chapter in the open: a cell with their values is added after the chapter's cell
tagged ``parameters`` (papermill's convention), ``KEEP_GOING = True`` among
them, so that a failed claim is recorded, marked ✗, instead of stopping the
run; a second added cell turns off the drawing of figures, which this command
does not read; a last added cell prints the chapter's claims, which it reads
(see ``mha_lib.course.replication``). Chapter 7's verdicts rest on language
models trained for 1,500 steps, about 17 minutes of one CPU thread per seed:
its seven central verdicts are checked by ``scripts/ch7_replication.py``, which
trains their variants on the new seeds at the chapter's rates.

With ``--store`` the run is written to
``mha_lib/course/results/replication.json``, which Chapters 4 and 5 show (a
chapter run alone replaces its own rows of a stored run on the same seeds),
and Chapter 7's rows, with the per-seed runs behind them, to
``ch7_replication-A-B.json``, named by the seeds (A to B), so that the run of
each seed set stays; a run on stored seeds reads their runs from it.
"""

import argparse
import json
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

import checkout  # this checkout's mha_lib, first
import nbformat
from nbclient import NotebookClient

import mha_lib
from mha_lib.course import results
from mha_lib.course.figure_editions import MIME
from mha_lib.course.replication import RULE, outcome, parse_seeds

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import ch5_budgets  # noqa: E402  (the long runs' own code and settings)
import ch5_experiment  # noqa: E402
import ch7_replication  # noqa: E402

CHAPTERS = {
    4: ROOT / "notebooks" / "04_heads_differ.ipynb",
    5: ROOT / "notebooks" / "05_chunked_standard_wide.ipynb",
}


def run_chapter(path, parameters):
    """Execute the notebook at ``path`` with ``parameters`` (``{name:
    value}``) set in a cell added after its ``parameters`` cell and
    ``KEEP_GOING = True``; returns the claims it checked (``claim``,
    ``detail``, ``held``)."""
    notebook = nbformat.read(path, as_version=4)
    tagged = [
        i
        for i, cell in enumerate(notebook.cells)
        if "parameters" in cell.metadata.get("tags", [])
    ]
    if len(tagged) != 1:
        raise ValueError(
            f"{path.name} needs one cell tagged 'parameters', has "
            f"{len(tagged)}"
        )
    settings = {**parameters, "KEEP_GOING": True}
    injected = nbformat.v4.new_code_cell(
        "\n".join(f"{name} = {value!r}" for name, value in settings.items())
    )
    injected.metadata["tags"] = ["injected-parameters"]
    # this run reads the claims: its figures are not drawn (the formatters
    # that draw them, of the page and of the book's other renderings, go)
    # ... and the kernel runs this checkout's mha_lib, as this process does
    unseen = nbformat.v4.new_code_cell(
        f"assert mha_lib.__file__ == {mha_lib.__file__!r}, mha_lib.__file__\n"
        "formatters = get_ipython().display_formatter.formatters\n"
        f"for kind in ('image/png', {MIME!r}):\n"
        "    formatters.pop(kind, None)"
    )
    notebook.cells[tagged[0] + 1 : tagged[0] + 1] = [injected, unseen]
    marker = "claims of the chapter:"
    notebook.cells.append(
        nbformat.v4.new_code_cell(
            "import json\n"
            f"print({marker!r}, json.dumps(chapter_claims.records, "
            "default=str))"
        )
    )
    NotebookClient(
        notebook,
        timeout=3600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    printed = "".join(
        output.get("text", "") for output in notebook.cells[-1].outputs
    )
    return json.loads(printed.split(marker, 1)[1])


def ch5_on_new_seeds(seeds, folder, device):
    """Chapter 5's results files with every long-run layer trained again on
    ``seeds`` at its chosen rate, in place of the reported seeds, written to
    ``folder``; returns their SHA-256 (``{name: digest}``), which the chapter
    checks them against."""
    stored = results.load("ch5_experiment")
    data = stored["data"]
    settings = data["settings"]
    tuning = set(settings["tuning_seeds"])
    by_layer = {}
    for record in data["long"]:
        by_layer.setdefault((record["task"], record["layer"]), []).append(
            record
        )
    # kept beside the stored results (ignored by git), so a stopped run resumes
    parts = results.Parts(f"replication-ch5-{seeds[0]}-{seeds[-1]}")
    new_long = []
    for (task_name, label), records in by_layer.items():
        tuned = [r for r in records if r["seed"] in tuning]
        lr = ch5_experiment.best_rate(tuned)
        sizes = layer_sizes(records[0])
        new_long += tuned
        new_long += parts.get(
            f"{task_name} | {label} | {lr}",
            lambda t=task_name, s=sizes, lr=lr: ch5_experiment.long_runs(
                t, s, seeds, lr, device
            ),
        )
    data = dict(data, long=new_long)
    data["settings"] = dict(settings, reported_seeds=seeds)
    written = results.save(
        "ch5_experiment",
        data,
        device=device,
        seconds=parts.seconds,
        folder=folder,
    )
    # the comparison at equal FLOPs: each budget at the rate its tuning seeds
    # chose, the new seeds trained to it
    budgets = results.load("ch5_budgets")["data"]
    budgets["settings"] = dict(budgets["settings"], reported_seeds=seeds)
    budgets["budgets"] = ch5_budgets.budgets(
        stored["data"]["long"], seeds, device, parts
    )
    return {
        "ch5_experiment": written.sha256,
        "ch5_budgets": results.save(
            "ch5_budgets",
            budgets,
            device=device,
            seconds=parts.seconds,
            folder=folder,
        ).sha256,
    }


def layer_sizes(record):
    """The ``AttentionSpec`` sizes of a stored record."""
    sizes = dict(num_heads=record["heads"])
    if record["kind"] == "chunked":
        return dict(sizes, chunked=True)
    if record["kind"] != "standard":
        sizes["head_dim"] = record["head_dim"]
        if record["value_dim"] != record["head_dim"]:
            sizes["value_dim"] = record["value_dim"]
    return sizes


def compare(chapter, own, new):
    """One row per claim: the two runs' claims matched in order (``own``
    None: the chapter's seeds were not run)."""
    if own is None:
        return [
            dict(row, chapter_seeds="not run", held_on_chapter_seeds=None)
            for row in compare(chapter, new, new)
        ]
    if [c["claim"] for c in own] != [c["claim"] for c in new]:
        raise RuntimeError(
            f"Chapter {chapter} checked different claims on the new seeds; "
            "a claim's text must not depend on the seeds"
        )
    return [
        {
            "chapter": chapter,
            "claim": a["claim"],
            "chapter_seeds": a["detail"],
            "new_seeds": b["detail"],
            "held_on_chapter_seeds": a["held"],
            "held": b["held"],
            "established": b.get("established", True),
            "refuted": b.get("refuted", not b["held"]),
        }
        for a, b in zip(own, new)
    ]


def judgement(row, only_new=False):
    """What a run said of one claim: :func:`outcome` on the new seeds, or
    ``failed`` where the claim failed on the chapter's own seeds too (not
    run with ``only_new``)."""
    if not (row["held_on_chapter_seeds"] or only_new):
        return "failed"
    return outcome(row)


def report_rows(rows, only_new=False):
    """Print one line per claim: its value on the chapter's seeds and on the
    new ones (an interval with its level and the smallest difference its new
    seeds could resolve), and what the new seeds said by :data:`RULE`
    (:func:`outcome`: ``held``, ``not refuted`` or ``FAILED``); the claims
    without a value to show come apart, after the others; then the rule, and
    the count of each word. Returns the count."""
    width = max(len(row["claim"]) for row in rows)
    valued = [row for row in rows if row["new_seeds"] is not None]
    bare = [row for row in rows if row["new_seeds"] is None]
    for title, group in (
        (None, valued),
        ("Claims without a value to show, on either set of seeds:", bare),
    ):
        if title and group:
            print(title)
        for row in group:
            verdict = outcome(row).replace("failed", "FAILED")
            if not (row["held_on_chapter_seeds"] or only_new):
                verdict += " (and FAILED on the chapter's seeds)"
            own, new = (
                "—" if row[key] is None else row[key]  # no value
                for key in ("chapter_seeds", "new_seeds")
            )
            if row.get("resolution"):  # an interval's level, what it resolves
                new += f" [{row['resolution']}]"
            print(
                f"Ch {row['chapter']}  {row['claim']:{width}s} | "
                f"{own} | {new} | {verdict}"
            )
    print(textwrap.fill(RULE, 79))
    counts = Counter(judgement(row, only_new) for row in rows)
    print(
        f"{counts['held']} held, {counts['not refuted']} not refuted, "
        f"{counts['failed']} failed"
    )
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", required=True, help="e.g. 100-119")
    parser.add_argument("--chapters", default="4,5", help="e.g. 4 or 4,5")
    parser.add_argument("--store", action="store_true")
    parser.add_argument(
        "--only-new",
        action="store_true",
        help="skip the run on the chapter's own seeds (the tests run those)",
    )
    checkout.add_threads(parser)
    args = parser.parse_args()
    checkout.use_threads(args.threads)
    try:
        seeds = parse_seeds(args.seeds)
        chapters = [int(c) for c in args.chapters.split(",")]
    except ValueError as error:
        parser.error(
            f"--seeds {args.seeds!r} --chapters {args.chapters!r}: {error} "
            "(chapters are numbers separated by commas, such as 4,5)"
        )
    if not set(chapters) <= {*CHAPTERS, 7}:
        parser.error(f"--chapters: choose among {sorted({*CHAPTERS, 7})}")
    device = mha_lib.pick_device()
    begun = time.time()
    rows = []
    work = Path(tempfile.mkdtemp(prefix="replicate-"))
    for chapter in chapters:
        if chapter == 7:  # its verdicts on the stored seeds and the new ones
            ch7_rows, ch7_runs, ch7_seconds = ch7_replication.rows(
                seeds, device
            )
            rows += ch7_rows
            continue
        parameters = {"SEEDS": seeds}
        if chapter == 5:
            parameters = {
                "RESULTS_FOLDER": str(work),
                "RESULTS_SHA256": ch5_on_new_seeds(seeds, work, device),
            }
        new = run_chapter(CHAPTERS[chapter], parameters)
        own = None if args.only_new else run_chapter(CHAPTERS[chapter], {})
        rows += compare(chapter, own, new)
    failed = report_rows(rows, args.only_new)["failed"]
    if args.store and 7 in chapters:
        results.save(
            ch7_replication.stored_name(seeds),
            {"seeds": seeds, "claims": ch7_rows, "runs": ch7_runs},
            device=device,
            seconds=ch7_seconds,  # its trainings, over every resumption
        )
        ch7_replication.parts_of(seeds).discard()  # its runs are kept now
        rows = [r for r in rows if r["chapter"] != 7]
        chapters = [c for c in chapters if c != 7]
    if args.store and chapters and not args.only_new:
        data = {"seeds": seeds, "chapters": chapters, "claims": rows}
        try:  # keep the other chapters of a stored run on the same seeds
            kept = results.load("replication")["data"]
        except FileNotFoundError:
            kept = None
        if kept and kept["seeds"] == seeds:
            others = [
                r for r in kept["claims"] if r["chapter"] not in chapters
            ]
            data["claims"] = sorted(
                others + rows, key=lambda row: row["chapter"]
            )
            data["chapters"] = sorted(set(kept["chapters"]) | set(chapters))
        results.save(
            "replication", data, device=device, seconds=time.time() - begun
        )
    return 1 if failed else 0  # FAILED, and only FAILED


if __name__ == "__main__":
    sys.exit(main())
