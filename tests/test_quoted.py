"""The numbers the answers page quotes are pinned (``book/quoted.json``):
the test command's runs must glue the same values, within the tolerance of
each number's source (``book/_ext/quoted_numbers.py``)."""

import nbformat
import pytest
from support import extension

quoted = extension("quoted_numbers")


def test_every_number_the_answers_page_quotes_is_pinned():
    assert list(quoted.pinned()) == quoted.quoted_names()


def test_a_drifted_number_is_caught():
    expected = {
        "ch7_sized_gain_8": {"value": 0.0372, "source": "stored"},
        "ch3_diff_h2": {"value": 0.2211, "source": "live"},
        "ch4_seeds": {"value": 20, "source": "live"},
        "ch3_fused_speedup": {"value": 3.1, "source": "machine"},
    }
    measured = {
        "ch7_sized_gain_8": 0.0372,
        "ch3_diff_h2": 0.2211 * (1 + 5e-4),  # within a live tolerance
        "ch4_seeds": 20,
        "ch3_fused_speedup": 9.0,  # a time: not pinned
    }
    assert quoted.problems(expected, measured) == []
    for name, drifted in [
        ("ch7_sized_gain_8", 0.010),
        ("ch7_sized_gain_8", 0.0372 + 1e-9),  # stored: to the last digit
        ("ch3_diff_h2", 0.2211 * 1.01),
        ("ch4_seeds", 19),
    ]:
        found = quoted.problems(expected, {**measured, name: drifted})
        assert len(found) == 1 and found[0].startswith(name), found
    gone = {k: v for k, v in measured.items() if k != "ch4_seeds"}
    assert quoted.problems(expected, gone) == [
        "ch4_seeds: no chapter glued it in this run"
    ]


def test_the_quoted_numbers_are_the_ones_the_chapters_glued(english_pages):
    """After every chapter ran in this session (the pages are built from
    those runs)."""
    measured = quoted.glued()
    if not measured:
        pytest.skip("no chapter ran in this session (run with --nbval)")
    assert quoted.problems(quoted.pinned(), measured) == []


def test_the_numbers_are_read_from_a_chapters_glue_outputs():
    """As myst-nb's glue(..., display=False) writes them: each value's repr
    under its name."""

    def glued_output(name, shown):
        return nbformat.v4.new_output(
            "display_data",
            data={"application/papermill.record/text/plain": shown},
            metadata={"scrapbook": {"name": name, "mime_prefix": ""}},
        )

    cell = nbformat.v4.new_code_cell("glue(...)")
    cell.outputs = [
        glued_output("ch9_gain", "np.float64(0.0372)"),
        glued_output("ch9_seeds", "15"),
        glued_output("ch9_head", "'3-7'"),
        nbformat.v4.new_output("stream", text="printed, not glued"),
    ]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    assert quoted.glued_in(notebook) == {
        "ch9_gain": 0.0372,
        "ch9_seeds": 15,
        "ch9_head": "3-7",
    }
