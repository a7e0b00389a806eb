"""Claims in a form that replicates, and the replication command."""

import subprocess
import sys

import pytest
import torch
from support import ROOT

from mha_lib.course import replication
from mha_lib.course.replication import Share, parse_seeds


def test_parse_seeds_reads_ranges_and_lists():
    assert parse_seeds("100-103") == [100, 101, 102, 103]
    assert parse_seeds("0-2,9") == [0, 1, 2, 9]
    assert parse_seeds("7") == [7]
    for bad in ("", "a-b", "5-3", "1,1", "-3", None, "5-", "0-100000"):
        with pytest.raises(ValueError, match="seed"):
            parse_seeds(bad)


def test_a_share_is_judged_by_its_count_and_with_few_seeds_by_its_interval():
    share = Share.of([True] * 17 + [False] * 3)
    assert (share.count, share.total) == (17, 20)
    assert share.at_least(0.85) and not share.at_least(0.9)
    low, high = share.interval
    assert 0.6 < low < 0.85 < high < 1
    assert "17 of 20 seeds" in str(share)
    # three seeds can refute "at least 80 %", not establish it
    assert Share.of([True, True, False]).at_least(0.8)
    assert not Share.of([False, False, False]).at_least(0.8)
    assert Share(2, 20).at_most(0.1) and not Share(3, 20).at_most(0.1)
    assert Share(1, 3).at_most(0.1) and not Share(3, 3).at_most(0.1)
    with pytest.raises(ValueError, match="no seeds"):
        Share.of([])


def test_a_share_claim_on_few_seeds_is_not_refuted_rather_than_held():
    """Three seeds can fail "at least 80 %", not establish it: the claim
    checked on such a bound is recorded, and reported, as not refuted."""
    from mha_lib.course.report import Claims

    claims = Claims(keep_going=True)
    claims.check(Share(2, 3).at_least(0.8), "few seeds")
    claims.check(Share(17, 20).at_least(0.8), "twenty seeds")
    claims.check(Share(0, 3).at_most(0.3) and 1 < 2, "few seeds, combined")
    claims.check(Share(3, 3).at_most(0.1), "refuted")
    assert [replication.outcome(row) for row in claims.log] == [
        "not refuted",
        "held",
        "not refuted",
        "failed",
    ]
    # a row stored before the mark existed was judged on enough seeds
    assert replication.outcome({"held": True}) == "held"


def test_one_rule_reads_every_kind_of_claim():
    """FAILED where the evidence goes against a claim, held where enough
    seeds establish it, not refuted where they cannot tell: for shares on
    any number of seeds, for verdicts, and for claims without an
    interval."""
    from mha_lib.course.report import Claims

    enough = replication.FEW
    # a share: all but two of FEW seeds misses "at least 90 %" but its
    # interval reaches it; none of them is ruled out by it
    near, none = Share(enough - 2, enough), Share(0, enough)
    assert near.interval[1] >= 0.9 > near.fraction
    claims = Claims(keep_going=True)
    claims.check(Share(enough, enough).at_least(0.9), "established")
    claims.check(near.at_least(0.9), "unresolved")
    claims.check(none.at_least(0.9), "ruled out")
    claims.check(Share(1, 2).at_least(0.9), "too few seeds")
    claims.check(near.at_least(0.1) and 1 > 2, "a false comparison")
    claims.check(1 < 2, "a true comparison")
    assert [replication.outcome(row) for row in claims.log] == [
        "held",
        "not refuted",
        "failed",
        "not refuted",
        "failed",
        "held",
    ]
    assert not claims.log[1]["held"], "the chapter's own test still fails"
    # a verdict: its interval on the stated side, on the other, on zero
    assert [
        replication.verdict_outcome("worse", found)
        for found in ("worse", "better", "not resolved")
    ] == ["held", "failed", "not refuted"]
    with pytest.raises(ValueError, match="worse or better"):
        replication.verdict_outcome("not resolved", "worse")
    # the rule says each word once, and where its seed count comes from
    for word in ("FAILED", "held", "not refuted", f"{enough} seeds"):
        assert replication.RULE.count(word) == 1, word


def test_the_rules_seed_count_is_the_fewest_a_chapter_states_shares_on():
    from mha_lib.course import results

    settings = results.load("ch5_experiment")["data"]["settings"]
    assert replication.FEW == len(settings["reported_seeds"])


def test_the_claims_without_a_value_are_listed_apart():
    rows = _stored_rows(4)
    table = replication.replication_table(4, [row["claim"] for row in rows])
    valued, bare = table.data.split("| claims without a value to show |")
    for row in rows:
        side = valued if row["new_seeds"] is not None else bare
        claim = row["claim"].replace("|", "\\|")  # escaped in its cell
        assert f"| {claim} |" in side, claim


def test_the_stored_replication_refuses_stale_claims():
    rows = _stored_rows(4)
    assert rows and all(row["held"] for row in rows)
    table = replication.replication_table(4, [row["claim"] for row in rows])
    assert rows[0]["claim"] in table.data
    with pytest.raises(ValueError, match="replicate.py"):
        replication.replication_table(4, ["a claim the chapter never checked"])


def _stored_rows(chapter, name="replication"):
    from mha_lib.course import results

    claims = results.load(name)["data"]["claims"]
    return [row for row in claims if row["chapter"] == chapter]


def test_chapter_4_holds_on_three_new_seeds():
    """A few-seed run of the replication command: a threshold fitted to the
    chapter's own seeds fails here."""
    result = subprocess.run(
        [sys.executable, "scripts/replicate.py", "--seeds", "100-102"]
        + ["--chapters", "4", "--only-new"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        result.stdout[-3000:] + result.stderr[-2000:]
    )
    assert " 0 failed" in result.stdout
    # three seeds cannot establish a share claim: it is only not refuted
    lines = result.stdout.splitlines()
    assert any(line.endswith("| not refuted") for line in lines)
    assert not any(
        "at least 80 % of seeds" in line and line.endswith("| held")
        for line in lines
    )
    apart = lines.index(
        "Claims without a value to show, on either set of seeds:"
    )
    assert all(line.split(" | ")[1] != "—" for line in lines[:apart])


def test_a_planted_false_claim_fails_its_chapter_whatever_the_environment():
    """No variable turns an assert into a log line: Chapter 1, cut after its
    first section of claims with one false claim planted there, fails under
    every variable the library reads or once read."""
    import os

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = ROOT / "notebooks" / "01_parameters.ipynb"
    notebook = nbformat.read(path, as_version=4)
    first = next(
        i
        for i, cell in enumerate(notebook.cells)
        if "claims.check(" in cell.source
    )
    notebook.cells = notebook.cells[: first + 1]
    notebook.cells[
        first
    ].source += '\nclaims.check(1 > 2, "planted: one is more than two")'
    variables = {
        "MHA_DEVICE": "cpu",
        "MHA_CLAIMS": os.devnull,
        "MHA_SEEDS": "100-102",
        "MHA_RESULTS": str(ROOT),
        "MHA_STORE_MODELS": "ch4_models",
    }
    saved = dict(os.environ)
    os.environ.update(variables)
    try:
        client = NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        with pytest.raises(CellExecutionError, match="planted: one is more"):
            client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_library_reads_no_environment_variable_but_the_device():
    """Settings reach a chapter in its parameters cell, not the environment:
    the one variable the library reads is the documented device override."""
    import re

    read = set()
    for module in (ROOT / "mha_lib").rglob("*.py"):
        text = module.read_text()
        read |= set(re.findall(r"\bMHA_[A-Z_]+", text))
        for call in re.findall(r"os\.(?:environ|getenv)[^\n]*", text):
            # besides the override, only the setting cuBLAS needs for
            # deterministic kernels: written by seed_everything, and read by
            # restored_settings only to be put back as it was
            cublas = "CUBLAS_WORKSPACE_CONFIG" in call
            assert "MHA_DEVICE" in call or (
                cublas and module.name == "runtime.py"
            ), f"{module}: {call}"
    assert read == {"MHA_DEVICE"}


def test_chapter_7s_central_verdicts_hold_on_its_own_seeds():
    """The replication of Chapter 7 starts from the chapter's own verdicts:
    on its 15 reported seeds each central pair is resolved at 95 %, in the
    direction the chapter states (one head, 32 heads and values of 2 worse
    than 8 standard heads; 8 wide heads better; the wide layers worse than
    the standard layers of their cost, 32 heads of size 16 among them)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import ch7_replication

    chapter = ch7_replication.chapter_runs()
    expected = ["worse", "worse", "worse", "better", "worse", "worse", "worse"]
    assert len(expected) == len(ch7_replication.CENTRAL)
    for (name, reference), stated in zip(ch7_replication.CENTRAL, expected):
        seeds = list(chapter[name][1])
        assert len(seeds) == 15 and seeds == list(chapter[reference][1])
        word, _ = ch7_replication.judged(
            *(list(chapter[n][1].values()) for n in (name, reference))
        )
        assert word == stated, (name, reference, word)


def test_a_paired_verdict_says_which_side_of_zero_its_interval_lies():
    lower = [1.0, 2.0, 3.0, 4.0, 5.0]
    higher = [x + d for x, d in zip(lower, [0.9, 1.1, 1.0, 0.95, 1.05])]
    assert replication.paired_verdict(higher, lower)[0] == "worse"
    assert replication.paired_verdict(lower, higher)[0] == "better"
    mixed = [x + d for x, d in zip(lower, [0.5, -0.5, 0.4, -0.4, 0.1])]
    word, (mean, low, high) = replication.paired_verdict(mixed, lower)
    assert word == "not resolved" and low < mean < high
    assert [
        replication.side_of_zero(*ends)
        for ends in ((0.01, 0.2), (-0.2, -0.01), (-0.1, 0.1))
    ] == ["worse", "better", "not resolved"]
    table = replication.replication_table(
        7,
        [row["claim"] for row in _stored_rows(7, "ch7_replication-200-209")],
        "ch7_replication-200-209",
        level=replication.VERDICT_CONFIDENCE,
    )
    assert "seeds 200-209 (95% intervals)" in table.data


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_no_verdict_or_share_is_drawn_from_what_is_not_a_number(bad):
    scores = [2.0, 3.0, 4.0, 3.0]
    with pytest.raises(
        ValueError, match=r"first must be finite.*1.0, (nan|inf)"
    ):
        replication.paired_verdict([1.0, bad, 3.0, 2.0], scores)
    with pytest.raises(ValueError, match="second must be finite"):
        replication.paired_verdict(scores, [bad] * 4)
    with pytest.raises(ValueError, match="interval runs from low to high"):
        replication.side_of_zero(float("nan"), 0.1)
    # bool(nan) is True: a NaN among the flags is refused, not counted
    with pytest.raises(ValueError, match=r"True or False.*got \[nan\]"):
        Share.of([True, float("nan"), False])
    assert Share.of(torch.tensor([True, False, True])) == Share(2, 3)
    for count, total in ((bad, 4), (1, bad)):
        with pytest.raises(TypeError, match="whole number of seeds"):
            Share(count, total)
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        Share(5, 4)
    for check in (Share(3, 4).at_least, Share(30, 40).at_most):
        with pytest.raises(ValueError, match=r"fraction in \[0, 1\]"):
            check(bad)


@pytest.mark.parametrize("seeds", ["200-209", "300-309"])
def test_chapter_7s_replications_store_the_scores_behind_their_verdicts(
    seeds,
):
    """Each stored replication of Chapter 7 holds its runs on the new seeds,
    and their final scores give again the verdicts it states."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import ch7_replication

    from mha_lib.course import results

    data = results.load(ch7_replication.stored_name(parse_seeds(seeds)))
    data = data["data"]
    final = {}
    for run in data["runs"]:
        final.setdefault(run["variant"], {})[run["seed"]] = run["held_out"][-1]
    assert len(data["claims"]) == len(ch7_replication.CENTRAL)
    for (name, reference), row in zip(ch7_replication.CENTRAL, data["claims"]):
        _, detail = ch7_replication.judged(
            *([final[n][s] for s in data["seeds"]] for n in (name, reference))
        )
        assert detail == row["new_seeds"], (name, reference)
    assert not list(results.FOLDER.glob("replication-ch7-*.partial.json"))


FEW_STEPS = 2  # of training, for a replication run in a test
FEW_WINDOWS = 8  # of held-out text, to score it


def _replicate_chapter_7(monkeypatch, tmp_path, seeds, curves=None):
    """``scripts/replicate.py --seeds <seeds> --chapters 7`` in this
    process, its parts kept in ``tmp_path``: the variants trained
    :data:`FEW_STEPS` steps (their schedule's warm-up cut to fit) and scored
    on :data:`FEW_WINDOWS` held-out windows, or their runs from ``curves``
    (the signature of ``ch7_experiment.curves``) where given. Returns its
    exit status and its lines."""
    import contextlib
    import io
    import os

    for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import ch7_replication
    import replicate

    from mha_lib.course import language_training, results

    monkeypatch.setattr(results, "FOLDER", tmp_path)
    monkeypatch.setattr(ch7_replication, "STEPS", FEW_STEPS)
    schedule = language_training.warmup_cosine
    windows = ch7_replication.windows
    monkeypatch.setattr(
        language_training,
        "warmup_cosine",
        lambda steps, warmup: schedule(steps, min(warmup, steps - 1)),
    )
    monkeypatch.setattr(
        ch7_replication,
        "windows",
        lambda ids, size: [part[:FEW_WINDOWS] for part in windows(ids, size)],
    )
    if curves is not None:
        monkeypatch.setattr(ch7_replication, "curves", curves)
    monkeypatch.setattr(
        sys, "argv", ["replicate.py", "--seeds", seeds, "--chapters", "7"]
    )
    printed = io.StringIO()
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(printed):
            status = replicate.main()
    finally:
        torch.set_num_threads(threads)
    return status, printed.getvalue().splitlines()


def test_chapter_7_replicates_on_seeds_nobody_stored(monkeypatch, tmp_path):
    """Seeds with no stored replication train their variants (a few steps
    here, through the same code) instead of stopping at the file that is
    not there; every central pair gets a line with its interval, its level
    and what its seeds could resolve, and the last line counts the three
    words, whose FAILED alone sets the exit status."""
    status, lines = _replicate_chapter_7(monkeypatch, tmp_path, "7801-7802")
    import ch7_replication

    rows = [line for line in lines if line.startswith("Ch 7 ")]
    assert len(rows) == len(ch7_replication.CENTRAL)
    assert all("2 seeds resolve a difference beyond ±" in r for r in rows)
    held, open_, failed = (
        int(count.split()[0]) for count in lines[-1].split(", ")
    )
    assert lines[-1].endswith(" failed") and "not refuted" in lines[-1]
    assert held + open_ + failed == len(rows)
    assert failed == sum(row.endswith("| FAILED") for row in rows)
    assert status == (1 if failed else 0)
    parts = ch7_replication.parts_of([7801, 7802])
    assert parts.path.parent == tmp_path and parts.done, "its parts, kept"


# planted final scores, (seed 1, seed 2) above 2 bits, for each variant of
# the central pairs: against standard 8 x 8, one head of 64 ends worse on
# both seeds (held), 32 heads of 2 worse on one and better on the other
# (not refuted); values of 2 worse on both, or, reversed, better on both
PLANTED = {
    "standard 8 x 8": (0.0, 0.0),
    "standard 1 x 64": (0.10, 0.101),
    "standard 32 x 2": (0.10, -0.05),
    "queries/keys 8, values 2": (0.10, 0.102),
    "wide 8 x 64": (-0.05, -0.051),  # better than 8 x 8: held
    "sized 8 x 16": (0.0, 0.0),
    "wide 2 x 64": (0.05, 0.051),  # worse than sized 8 x 16: held
    "d_model 128": (-0.10, -0.10),  # wide 8 x 64 worse: held
    "sized 32 x 16": (-0.10, -0.10),  # wide 8 x 64 worse: held
}


def planted(reversed_pair=None):
    """A stand-in for ``ch7_experiment.curves`` that returns the runs of
    :data:`PLANTED`, the scores of ``reversed_pair``'s variant turned to
    the other side of its reference."""

    def curves(corpus, validation, name, seeds, rates, device, steps):
        offsets = PLANTED[name]
        if name == reversed_pair:
            offsets = tuple(-offset for offset in offsets)
        return [
            {"seed": seed, "lr": lr, "steps": [steps], "held_out": [2 + d]}
            for seed, lr, d in zip(seeds, rates, offsets)
        ]

    return curves


@pytest.mark.parametrize("reversal", [None, "queries/keys 8, values 2"])
def test_each_word_of_the_rule_on_two_planted_seeds(
    monkeypatch, tmp_path, reversal
):
    """Two seeds nobody stored, their scores planted: an interval on the
    chapter's side of zero is held, one that holds zero is not refuted
    (exit 0), one on the other side FAILED (exit 1); each line says the
    smallest difference its two seeds could resolve, the half-width of its
    interval."""
    import re

    status, lines = _replicate_chapter_7(
        monkeypatch, tmp_path, "7801-7802", planted(reversal)
    )
    import ch7_replication

    words = {}
    for line in lines:
        if line.startswith("Ch 7 "):
            claim, _, new, word = line.split(" | ")
            words[claim[len("Ch 7 ") :].split(":")[0].strip()] = word
            low, high = map(float, re.findall(r"[+-]\d\.\d+", new)[1:3])
            (half,) = re.findall(r"beyond ±(\d\.\d+)", new)
            assert abs(float(half) - (high - low) / 2) <= 1e-3, line
            assert "at 95 %, each pair alone, 2 seeds" in new
    first, second, third = (
        f"{name} against {reference}"
        for name, reference in ch7_replication.CENTRAL[:3]
    )
    assert words.pop(first) == "held"
    assert words.pop(second) == "not refuted"
    assert words.pop(third) == ("FAILED" if reversal else "held")
    assert set(words.values()) == {"held"}
    failed = 1 if reversal else 0
    assert lines[-1] == (
        f"{len(words) + 2 - failed} held, 1 not refuted, {failed} failed"
    )
    assert status == failed
    assert "On new seeds a claim is FAILED where" in "\n".join(lines)


def test_a_verdict_read_on_a_text_is_held_reversed_or_unresolved():
    """A verdict stated elsewhere, read on a text's runs scored piece by
    piece: held where the interval over seeds and pieces lies on its side
    of zero, reversed on the other, unresolved where it holds zero, even
    when the seeds alone resolve it."""
    generator = torch.Generator().manual_seed(0)
    characters = torch.randint(100, 400, (30,), generator=generator)
    base = 2 + 0.2 * torch.rand(15, 30, generator=generator)

    def runs(gap, seed_spread, piece_spread):
        shift = (
            gap
            + seed_spread * torch.randn(15, 1, generator=generator)
            + piece_spread * torch.randn(1, 30, generator=generator)
        )
        return (base + shift) * characters, base * characters

    worse = runs(0.02, 0.002, 0.005)
    read = replication.on_a_text("worse", *worse, characters, confidence=0.99)
    assert read["reading"] == "held" and read["text"][0] == "worse"
    mean, low, high = read["seeds"][1]
    assert read["seeds"][0] == "worse" and low < mean < high
    assert abs(mean - 0.02) < 0.005
    read = replication.on_a_text("better", *worse, characters, confidence=0.99)
    assert read["reading"] == "reversed"
    # the seeds agree, the pieces do not
    scattered = runs(0.01, 0.0005, 0.08)
    read = replication.on_a_text(
        "worse", *scattered, characters, confidence=0.99
    )
    assert read["seeds"][0] == "worse" and read["reading"] == "unresolved"
    with pytest.raises(ValueError, match="worse or better"):
        replication.on_a_text(
            "not resolved", *worse, characters, confidence=0.99
        )
