"""What a chapter reports to the book: glued numbers, the claims it checked,
and its tables.

Every claim of a chapter is asserted in its notebook. A section collects its
asserts in one :class:`Claims` in a folded cell, whose output lists the claims
that held, so a reader sees *that* and *what* was verified and can open the
code; the visible cells stay the experiment.
"""

import html
import math
import statistics


def glue(name, value):
    """Hand ``value`` to the book's pages under ``name`` (myst-nb's glue);
    returns nothing.

    The answers page pastes these values, so its numbers come from the
    notebooks. Where myst-nb is not installed (Colab, a bare Jupyter) there is
    no book to hand them to, and this does nothing.
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, value, display=False)


# how each bound judged since the last claim was checked came out: the next
# claim checked rests on them (Claims.check)
_BOUNDS = []
# what a bound on a share can say (mha_lib.course.replication.RULE)
READINGS = ("established", "not established", "unresolved", "ruled out")


def judged_bound(reading):
    """Note how a bound ("at least 70 % of seeds") was just judged
    (:class:`mha_lib.course.replication.Share`), one of :data:`READINGS`:
    met on seeds enough to establish it; met on too few (``not
    established``); missed by the observed share, though its interval still
    reaches it (``unresolved``); or ``ruled out`` by its interval. The next
    claim :meth:`Claims.check` records rests on them."""
    if reading not in READINGS:
        raise ValueError(
            f"a bound reads as one of {READINGS}, got {reading!r}"
        )
    _BOUNDS.append(reading)


class Claims:
    """The claims of one section, each asserted when it is added.

    ``claims.check(condition, "two heads beat one on most seeds")`` raises
    ``AssertionError`` with the claim (and ``detail``, if given) when the
    condition is false. Displayed, the object is one line, "✓ 9 claims
    checked", that opens to the list of every claim.

    With ``keep_going=True`` a false claim is recorded instead, shown with ✗
    and counted in the line ("✗ 1 of 9 claims failed"), so that one run
    reports every claim: a replication sets it, in the open, through the
    chapter's parameters cell (:class:`ClaimLog`). ``log``, a list, receives
    every claim checked as ``{"claim", "detail", "held", "established",
    "refuted"}``, read by the rule of a replication
    (:data:`mha_lib.course.replication.RULE`) from the bounds the claim
    rests on (:func:`judged_bound`): ``established`` is False where one was
    met on too few seeds to establish it; a claim that failed is
    ``refuted`` unless it failed on a bound its seeds left unresolved (and
    none was ruled out).
    """

    def __init__(self, title="Checked", *, keep_going=False, log=None):
        self.title, self.keep_going = title, keep_going
        self.log = [] if log is None else log
        self.results = []  # (claim, held), in order

    def check(self, condition, claim, detail=None):
        held = bool(condition)
        bounds = set(_BOUNDS)
        _BOUNDS.clear()
        if not held and not self.keep_going:
            raise AssertionError(
                claim if detail is None else f"{claim} ({detail})"
            )
        self.log.append(
            {
                "claim": claim,
                "detail": detail,
                "held": held,
                "established": "not established" not in bounds,
                "refuted": not held
                and ("ruled out" in bounds or "unresolved" not in bounds),
            }
        )
        self.results.append((claim, held))
        return self

    @property
    def held(self):
        return [claim for claim, held in self.results if held]

    @property
    def failed(self):
        return [claim for claim, held in self.results if not held]

    def __len__(self):
        return len(self.results)

    def _count(self):
        count = len(self.results)
        if self.failed:
            return f"✗ {len(self.failed)} of {count} claims failed"
        return f"✓ {count} claim{'' if count == 1 else 's'} checked"

    def __repr__(self):
        lines = [f"{self.title}: {self._count()}"]
        return "\n".join(
            lines
            + [f"  {'✓' if held else '✗'} {c}" for c, held in self.results]
        )

    def _repr_html_(self):
        items = "".join(
            f"<li>{'✓' if held else '✗'} {html.escape(claim)}</li>"
            for claim, held in self.results
        )
        failed = " mha-claims-failed" if self.failed else ""
        return (
            f'<details class="mha-claims{failed}"><summary>'
            f"{html.escape(self._count())}</summary><ul>{items}</ul>"
            "</details>"
        )


class ClaimLog:
    """Every claim of one chapter, in the order checked: each section's
    :class:`Claims` comes from :meth:`section`.

    ``keep_going`` comes from the chapter's parameters cell (False unless a
    replication runs the chapter); :attr:`records` is what that run reads
    back.
    """

    def __init__(self, *, keep_going=False):
        if not isinstance(keep_going, bool):
            raise TypeError(
                f"keep_going must be True or False, got {keep_going!r}"
            )
        self.keep_going, self.records = keep_going, []

    def section(self, title):
        return Claims(title, keep_going=self.keep_going, log=self.records)

    @property
    def claims(self):
        """The text of every claim checked so far."""
        return [record["claim"] for record in self.records]


def spread(values, digits=3):
    """``median m (min to max)`` of some numbers, as text ("to", not a dash,
    which would read as a minus sign before a negative maximum). NaN or
    infinity, which has no place among them, is refused."""
    values = list(values)
    if not values or not all(math.isfinite(v) for v in values):
        raise ValueError(
            f"spread needs finite numbers, got {values[:8]} (a diverged "
            "run? report how many diverged apart)"
        )
    low, middle, high = (
        _rounded(v, digits)
        for v in (min(values), statistics.median(values), max(values))
    )
    return f"median {middle} ({low} to {high})"


def signed(value, digits=3):
    """``value`` to ``digits`` decimals with its sign ("+0.032", "-0.006"),
    zero written as "0.000" (not "-0.000")."""
    text = _rounded(value, digits)
    return text if text.startswith("-") or float(text) == 0 else "+" + text


def _rounded(value, digits):
    """``value`` to ``digits`` decimals, a negative that rounds to zero
    written as zero ("0.000", not "-0.000"); NaN or infinity, no number to
    report, is refused."""
    if not math.isfinite(value):
        raise ValueError(f"a reported number must be finite, got {value}")
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def markdown_table(header, rows):
    """A Markdown table of ``rows`` (lists of cells) under ``header``, for
    ``IPython.display.display``. A ``|`` inside a cell is escaped, so it
    stays in its cell."""
    from IPython.display import Markdown

    def line(cells):
        return (
            "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
        )

    lines = [line(header), "|" + "---|" * len(header)]
    lines += [line(row) for row in rows]
    return Markdown("\n".join(lines))


def folded(table, summary):
    """A table from :func:`markdown_table` folded under one line,
    ``summary``, that opens to it: the evidence in full, a click away from
    the argument. (The book's PDF prints it open.)"""
    from IPython.display import Markdown

    if not isinstance(summary, str) or not summary.strip():
        raise ValueError(
            f"summary must be the fold's line of text, got {summary!r}"
        )
    return Markdown(
        f'<details class="mha-table"><summary>{html.escape(summary)}'
        f"</summary>\n\n{table.data}\n\n</details>"
    )
