"""What a chapter reports to the book: glued numbers, the claims it checked,
and its tables.

Every claim of a chapter is asserted in its notebook. A section collects its
asserts in one :class:`Claims` in a folded cell, whose output lists the claims
that held, so a reader sees *that* and *what* was verified and can open the
code; the visible cells stay the experiment.
"""

import html
import json
import os
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


class Claims:
    """The claims of one section, each asserted when it is added.

    ``claims.check(condition, "two heads beat one on most seeds")`` raises
    ``AssertionError`` with the claim (and ``detail``, if given) when the
    condition is false. Displayed, the object is one line, "✓ 9 claims
    checked", that opens to the list of every claim that held.

    Where the variable ``MHA_CLAIMS`` names a file (``scripts/replicate.py``
    runs a chapter on other seeds so), each claim is appended to it as a line
    of JSON, with ``detail`` and whether it held, and a failed claim does not
    stop the chapter, so that one run reports every claim.
    """

    checked = []  # every claim checked in this process, in order

    def __init__(self, title="Checked"):
        self.title, self.held = title, []

    def check(self, condition, claim, detail=None):
        Claims.checked.append(claim)
        record = os.environ.get("MHA_CLAIMS")
        if record:
            line = {"claim": claim, "detail": detail, "held": bool(condition)}
            with open(record, "a") as file:
                file.write(json.dumps(line, default=str) + "\n")
        if not condition and not record:
            raise AssertionError(
                claim if detail is None else f"{claim} ({detail})"
            )
        if condition:
            self.held.append(claim)
        return self

    def __len__(self):
        return len(self.held)

    def _count(self):
        return (
            f"{len(self.held)} claim{'' if len(self.held) == 1 else 's'} held"
        )

    def __repr__(self):
        lines = [f"{self.title}: {self._count()}"]
        return "\n".join(lines + [f"  ✓ {claim}" for claim in self.held])

    def _repr_html_(self):
        count = len(self.held)
        items = "".join(
            f"<li>✓ {html.escape(claim)}</li>" for claim in self.held
        )
        return (
            '<details class="mha-claims"><summary>'
            f"✓ {count} claim{'' if count == 1 else 's'} checked"
            f"</summary><ul>{items}</ul></details>"
        )


def spread(values, digits=3):
    """``median m (min to max)`` of some numbers, as text ("to", not a dash,
    which would read as a minus sign before a negative maximum)."""
    values = list(values)
    low, middle, high = min(values), statistics.median(values), max(values)
    return (
        f"median {middle:.{digits}f} ({low:.{digits}f} to {high:.{digits}f})"
    )


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
