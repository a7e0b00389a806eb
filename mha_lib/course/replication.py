"""Claims about trained models in a form that replicates on new seeds.

A claim measured on the seeds that set its threshold ("at least 30 times
lower on every seed", 30 being the smallest ratio seen) only says that those
seeds were measured. A chapter states a trained claim instead as a share of
seeds with its 95 % Wilson interval (:class:`Share`), checked against a bound
set with margin, or as a median with its range.

``scripts/replicate.py`` runs a chapter again on seeds no one chose. It hands
the chapter its settings in the open: the chapter's cell tagged ``parameters``
(papermill's convention) names its seeds and ``KEEP_GOING``, and the command
adds a cell after it with the new values, so that the chapter's
:class:`mha_lib.course.report.ClaimLog` records a failed claim (shown with ✗)
instead of stopping at it. Nothing in the environment changes what a chapter
asserts.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from . import report, results
from .statistics import (
    finite,
    paired_t_interval,
    seeds_and_text_bootstrap,
    wilson_interval,
)

MOST_SEEDS = 1000  # more would be days of training, most likely a typo
# Fewer seeds than this can refute a share, not establish it. Ten is the
# fewest seeds on which a chapter states its shares (Chapter 5 reports seeds
# 10 to 19; Chapter 4, 20): a replication establishes a share by the
# chapter's own test on no fewer seeds than the chapter itself used.
FEW = 10
# a verdict on paired scores is judged alone at this level (see paired_verdict)
VERDICT_CONFIDENCE = 0.95

# what new seeds can say of a claim, the one rule of every replication
RULE = (
    "On new seeds a claim is FAILED where their evidence goes against it: a "
    "verdict's interval lies wholly on the other side of zero, a share's "
    "95 % interval misses its bound, a claim without an interval is false. "
    "It is held where they establish it: a verdict's interval lies wholly "
    "on its side of zero (an interval widens as seeds get fewer), a share "
    f"reaches its bound on at least {FEW} seeds (the fewest on which a "
    "chapter states its shares), a claim without an interval is true. "
    "Otherwise it is not refuted: the seeds could not resolve it either way."
)


def parse_seeds(text):
    """Seeds from text: ``"100-119"`` (both ends included), ``"3,5,8"``, or a
    mix of both (``"0-4,9"``)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            f"seeds must be text such as '100-119' or '3,5,8', got {text!r}"
        )
    seeds = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            if dash and not last:
                raise ValueError("a range without its end")
            low, high = int(first), int(last or first)
        except ValueError:
            raise ValueError(
                f"cannot read seeds {part.strip()!r} in {text!r}: expected "
                "a number or a range such as '100-119'"
            ) from None
        if low < 0 or high < low:
            raise ValueError(
                f"seed range {part.strip()!r} must run from a seed >= 0 up"
            )
        if high >= 2**32 or len(seeds) + high - low >= MOST_SEEDS:
            raise ValueError(
                f"seeds {text!r}: at most {MOST_SEEDS} seeds, each below "
                "2**32, are expected"
            )
        seeds.extend(range(low, high + 1))
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds {text!r} name a seed twice")
    return seeds


@dataclass(frozen=True)
class Share:
    """``count`` of ``total`` seeds had some property; ``interval`` is the 95 %
    Wilson interval of the rate behind it."""

    count: int
    total: int

    def __post_init__(self):
        wilson_interval(self.count, self.total)  # whole numbers, in order

    @classmethod
    def of(cls, flags):
        """The share of true values among ``flags`` (one per seed): each
        True or False (1 or 0); NaN, which ``bool`` would count as true, is
        refused with the rest."""
        flags = list(flags)
        odd = [flag for flag in flags if not _is_flag(flag)]
        if odd:
            raise ValueError(
                f"a share counts True or False, one per seed, got {odd[:4]} "
                "(NaN: a diverged run? compare its loss first)"
            )
        if not flags:
            raise ValueError("a share of no seeds is undefined")
        return cls(sum(bool(flag) for flag in flags), len(flags))

    @property
    def fraction(self):
        return self.count / self.total

    @property
    def interval(self):
        return wilson_interval(self.count, self.total)

    def at_least(self, fraction):
        """Whether these seeds bear out "the rate is at least ``fraction``":
        the observed share reaches it. Fewer than :data:`FEW` seeds can
        refute such a claim but not establish it: then it is enough that the
        interval reaches it. How the bound came out is noted for the claim
        checked on it, which a replication reads by :data:`RULE`
        (:meth:`_judged`)."""
        _check_fraction(fraction)
        return self._judged(
            self.fraction >= fraction, self.interval[1] >= fraction
        )

    def at_most(self, fraction):
        """Whether these seeds bear out "the rate is at most ``fraction``"
        (as :meth:`at_least` judges it, the other way up)."""
        _check_fraction(fraction)
        return self._judged(
            self.fraction <= fraction, self.interval[0] <= fraction
        )

    def _judged(self, reached, reachable):
        """The test of a bound that the observed share ``reached`` and the
        interval ``reachable``: ``reached`` on :data:`FEW` seeds or more,
        else ``reachable``; its reading by :data:`RULE` is noted for the
        next claim checked (:func:`report.judged_bound`)."""
        if not reachable:
            report.judged_bound("ruled out")
            return False
        if self.total < FEW:
            report.judged_bound("not established")
            return True
        report.judged_bound("established" if reached else "unresolved")
        return reached

    def __str__(self):
        low, high = self.interval
        return (
            f"{self.count} of {self.total} seeds "
            f"(95 % interval {low:.2f} to {high:.2f})"
        )


def _is_flag(flag):
    """Whether ``flag`` is True or False (or 1 or 0, a bool tensor's
    element): NaN equals neither."""
    try:
        return flag in (True, False)
    except (TypeError, RuntimeError, ValueError):  # an array of several
        return False


def _check_fraction(fraction):
    if not (isinstance(fraction, numbers.Real) and 0 <= fraction <= 1):
        raise ValueError(
            f"a share is compared with a fraction in [0, 1], got {fraction!r}"
        )


def paired_verdict(first, second):
    """``first`` minus ``second``, paired lists of scores where lower is
    better, judged alone at :data:`VERDICT_CONFIDENCE`: ``(word, (mean, low,
    high))``, the word ``worse`` where the paired interval lies above zero,
    ``better`` where below, else ``not resolved``. A score that is NaN or
    infinite (a diverged run) is no score to judge: ``ValueError``."""
    mean, low, high = paired_t_interval(
        first, second, confidence=VERDICT_CONFIDENCE
    )
    return side_of_zero(low, high), (mean, low, high)


# what a text's seeds and pieces said of a verdict stated on another text
READINGS = ("held", "reversed", "unresolved")


def on_a_text(stated, first, second, characters, *, confidence):
    """What one text says of a verdict (``worse`` or ``better``) stated for
    ``first`` minus ``second`` elsewhere: ``first`` and ``second`` are each
    run's loss summed over each piece of the text, ``(seeds, pieces)``, row
    ``s`` of both from seed ``s``, and ``characters`` each piece's length.

    Returns ``{"seeds": (word, (mean, low, high)), "text": (word, (mean,
    low, high)), "reading": held | reversed | unresolved}``: the paired
    t interval over seeds alone (the chapter's), the interval over seeds and
    pieces together (:func:`.statistics.seeds_and_text_bootstrap`), both at
    ``confidence``, and what the second says of the verdict."""
    if stated not in ("worse", "better"):
        raise ValueError(
            f"a verdict to read on a text is worse or better, got {stated!r}"
        )
    characters = finite("characters", characters)
    scores = [  # each run's loss per character over the whole text
        torch.as_tensor(runs, dtype=torch.float64).sum(1) / characters.sum()
        for runs in (first, second)
    ]
    by_seeds = paired_t_interval(*scores, confidence=confidence)
    by_text = seeds_and_text_bootstrap(
        first, second, characters, confidence=confidence
    )
    found = side_of_zero(*by_text[1:])
    reading = (
        "unresolved"
        if found == "not resolved"
        else "held"
        if found == stated
        else "reversed"
    )
    return {
        "seeds": (side_of_zero(*by_seeds[1:]), by_seeds),
        "text": (found, by_text),
        "reading": reading,
    }


def verdict_outcome(stated, found):
    """What new seeds said of a verdict the chapter ``stated`` (``worse``
    or ``better``) where their interval ``found`` (a word of
    :func:`side_of_zero`), by :data:`RULE`: ``held`` on the stated side,
    ``failed`` on the other, ``not refuted`` where it holds zero."""
    if stated not in ("worse", "better"):
        raise ValueError(
            "a verdict to replicate is worse or better (the chapter's seeds "
            f"resolved it), got {stated!r}"
        )
    if found == "not resolved":
        return "not refuted"
    return "held" if found == stated else "failed"


def resolvable(low, high):
    """The smallest mean difference the seeds behind a paired interval
    ``(low, high)`` could have resolved at its level, given the spread they
    showed: its half-width (a mean beyond it puts the interval wholly on one
    side of zero)."""
    return (high - low) / 2


def side_of_zero(low, high):
    """The verdict an interval of ``first - second`` (lower is better) gives:
    ``worse`` wholly above zero, ``better`` wholly below, else ``not
    resolved``; an end that is NaN is refused."""
    if math.isnan(low) or math.isnan(high) or low > high:
        raise ValueError(
            f"an interval runs from low to high, got ({low}, {high})"
        )
    return "worse" if low > 0 else "better" if high < 0 else "not resolved"


# what new seeds said of a claim, and its mark in a table
OUTCOMES = {"held": "✓", "not refuted": "○", "failed": "✗"}


def outcome(row):
    """What the new seeds of a replication said of one claim (a row of
    ``scripts/replicate.py``), by :data:`RULE`: ``failed`` where the row is
    ``refuted``, ``held`` where it held and is ``established``, else ``not
    refuted``. A row stored before it carried ``refuted`` is refuted where
    it did not hold, and one without ``established`` was judged on enough
    seeds."""
    if row.get("refuted", not row["held"]):
        return "failed"
    if row["held"] and row.get("established", True):
        return "held"
    return "not refuted"


def replication_table(chapter, checked, name="replication", *, level=None):
    """The claims of ``chapter`` in a stored replication (by default
    ``mha_lib/course/results/replication.json``; Chapter 7's are
    ``ch7_replication-A-B``, one per seed set A to B, all written by
    ``scripts/replicate.py --store``), as tables folded under one line: each
    claim's value on the chapter's seeds and on the new ones, then, apart,
    the claims that have no value to show (a theorem, an identity, a bare
    comparison), which a reader cannot weigh from new seeds.

    ``level``: the confidence of the intervals in the cells, named in the
    headers (a verdict's, :data:`VERDICT_CONFIDENCE`); a share's cells name
    their own. ``checked`` are the claims the chapter checked in this run
    (:attr:`mha_lib.course.report.ClaimLog.claims`): where the stored claims
    differ, the file is stale and a ``ValueError`` says how to renew it; a
    claim that failed on the new seeds raises ``AssertionError``, naming it.
    A claim its new seeds could not resolve (:data:`RULE`) is marked ○, not
    ✓.
    """
    from IPython.display import Markdown

    stored = results.load(name)
    rows = [
        row for row in stored["data"]["claims"] if row["chapter"] == chapter
    ]
    if [row["claim"] for row in rows] != list(checked):
        raise ValueError(
            f"the stored replication of Chapter {chapter} ({name}.json) "
            f"checked other claims than this run did; run again: "
            f"{stored['command']}"
        )
    failed = [row["claim"] for row in rows if outcome(row) == "failed"]
    if failed:
        raise AssertionError(
            f"on the new seeds these claims of Chapter {chapter} failed: "
            + "; ".join(failed)
        )
    seeds = stored["data"]["seeds"]
    seeds = f"seeds {seeds[0]}-{seeds[-1]}"
    at = "" if level is None else f" ({level:.0%} intervals)"
    valued = [row for row in rows if row["new_seeds"] is not None]
    bare = [row for row in rows if row["new_seeds"] is None]
    tables = [
        report.markdown_table(
            ["claim", f"this chapter's seeds{at}", seeds + at],
            [
                [
                    row["claim"],
                    row["chapter_seeds"] or "—",
                    f"{row['new_seeds']} {OUTCOMES[outcome(row)]}",
                ]
                for row in valued
            ],
        )
    ]
    if bare:
        tables.append(
            report.markdown_table(
                ["claims without a value to show", seeds],
                [[row["claim"], OUTCOMES[outcome(row)]] for row in bare],
            )
        )
    held = sum(outcome(row) == "held" for row in rows)
    line = f"✓ {held} claims held again, on {seeds}"
    if held < len(rows):
        line = (
            f"✓ {held} claims held again, {len(rows) - held} not refuted "
            f"(○), on {seeds}"
        )
    return report.folded(
        Markdown("\n\n".join(table.data for table in tables)), line
    )
