"""What a chapter reports to the book: glued numbers, checked claims,
tables."""

import sys

import pytest

from mha_lib.course.report import (
    ClaimLog,
    Claims,
    folded,
    glue,
    markdown_table,
    signed,
    spread,
)

pytestmark = pytest.mark.core


def test_glue_hands_the_value_to_myst_nb_and_returns_nothing(monkeypatch):
    handed = []
    fake = type(sys)("myst_nb")
    fake.glue = lambda name, value, display: handed.append(
        (name, value, display)
    )
    monkeypatch.setitem(sys.modules, "myst_nb", fake)
    assert glue("x", 1.5) is None, (
        "a cell ending in glue(...) must print nothing"
    )
    assert handed == [("x", 1.5, False)]


def test_glue_does_nothing_without_myst_nb(monkeypatch):
    # as on Colab: the import fails
    monkeypatch.setitem(sys.modules, "myst_nb", None)
    assert glue("x", 1.5) is None


def test_claims_assert_and_list_what_held():
    claims = Claims("Section")
    claims.check(1 < 2, "one is less than two").check(True, "true is true")
    assert len(claims) == 2
    assert repr(claims).splitlines() == [
        "Section: ✓ 2 claims checked",
        "  ✓ one is less than two",
        "  ✓ true is true",
    ]
    shown = claims._repr_html_()  # one line, opening to the list
    assert "<summary>✓ 2 claims checked</summary>" in shown
    assert "<li>✓ one is less than two</li>" in shown
    assert "&lt;" in Claims().check(True, "a < b")._repr_html_()
    with pytest.raises(
        AssertionError, match=r"two is less than one \(measured 2\)"
    ):
        claims.check(2 < 1, "two is less than one", detail="measured 2")
    assert len(claims) == 2, "a failed claim is not listed"


def test_claims_that_keep_going_mark_a_failure_and_log_every_claim():
    chapter = ClaimLog(keep_going=True)
    claims = chapter.section("Section")
    claims.check(True, "holds", detail=3).check(False, "fails", detail=4)
    assert chapter.claims == ["holds", "fails"]
    assert [r["held"] for r in chapter.records] == [True, False]
    assert claims.failed == ["fails"] and claims.held == ["holds"]
    shown = claims._repr_html_()
    assert "✗ 1 of 2 claims failed" in shown and "<li>✗ fails</li>" in shown
    assert "✗ fails" in repr(claims)
    with pytest.raises(AssertionError, match="fails"):
        ClaimLog().section("Section").check(False, "fails")
    with pytest.raises(TypeError, match="keep_going"):
        ClaimLog(keep_going="yes")


def test_spread_text():
    assert spread([0.3, 0.1, 0.2]) == "median 0.200 (0.100 to 0.300)"
    assert spread([-0.12, 0.88, 0.5], 2) == "median 0.50 (-0.12 to 0.88)"
    assert spread([1, 2, 30], digits=1) == "median 2.0 (1.0 to 30.0)"
    assert spread([-0.0001, -0.011, 0.013]) == (
        "median 0.000 (-0.011 to 0.013)"
    ), "a median that rounds to zero has no sign"


def test_signed_text():
    assert [signed(x) for x in (0.0321, -0.006, -0.00016, 0)] == [
        "+0.032",
        "-0.006",
        "0.000",
        "0.000",
    ], "a difference that rounds to zero has no sign"
    assert signed(1.25, 1) == "+1.2"


def test_markdown_table_keeps_a_bar_inside_its_cell():
    pytest.importorskip("IPython")
    table = markdown_table(["a", "b"], [[1, 2], [3, 4]]).data
    assert table.splitlines() == [
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "| 3 | 4 |",
    ]
    escaped = markdown_table(["rule"], [["NOUN|PROPN"]]).data
    assert escaped.splitlines()[-1] == "| NOUN\\|PROPN |", (
        "| stays in its cell"
    )


def test_a_folded_table_opens_from_one_line_to_the_whole_table():
    table = markdown_table(["a", "b"], [[1, "x < y"]])
    shown = folded(table, "The table: 1 row, a & b").data
    assert shown.startswith(
        '<details class="mha-table"><summary>The table: 1 row, a &amp; b'
    )
    # blank lines around the table: Markdown reads it as a table, not HTML
    assert f"\n\n{table.data}\n\n</details>" in shown
    for summary in ("", "  ", None):
        with pytest.raises(ValueError, match="summary"):
            folded(table, summary)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_spread_refuses_what_is_not_a_number(bad):
    with pytest.raises(ValueError, match=r"finite numbers, got \[0.3, "):
        spread([0.3, bad, 0.5])
    with pytest.raises(ValueError, match="finite numbers"):
        spread([])
    with pytest.raises(ValueError, match="must be finite, got"):
        signed(bad)
