"""Every figure helper draws, in the book's figure style."""

import json
import re
import struct
from pathlib import Path

import pytest
import torch

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from support import NOTEBOOKS as CHAPTERS  # noqa: E402
from support import ROOT, first_code_cell  # noqa: E402

from mha_lib.course import plotting  # noqa: E402

LIBRARY = Path(plotting.__file__).parent
TEXT_COLUMN_PX = (
    752  # the width of the book's text column at a 1280-pixel window
)


def test_figures_draw():
    history = {"step": [0, 1, 2], "loss": [1.0, 0.5, 0.25]}
    ax = plotting.learning_curves({"a": [history, history]})
    assert len(ax.lines) == 1
    ax = plotting.learning_curves(
        {"a": [history, history]}, reference=(0.5, "floor")
    )
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "a (2 seeds)",
        "floor",
    ]
    figure = plotting.matrix_grid(
        torch.rand(2, 3, 4, 4),
        row_labels=["x", "y"],
        column_labels=list("abc"),
    )
    assert len(figure.axes) == 6


def test_the_book_style_fits_the_column_with_type_as_large_as_the_text():
    matplotlib.rcdefaults()
    plotting.use_book_style()
    width, _ = matplotlib.rcParams["figure.figsize"]
    assert width * matplotlib.rcParams["figure.dpi"] <= TEXT_COLUMN_PX, (
        "a default figure would be shrunk"
    )
    points_to_px = matplotlib.rcParams["figure.dpi"] / 72
    assert matplotlib.rcParams["xtick.labelsize"] * points_to_px >= 14, (
        "tick labels smaller than 14 px"
    )
    ax = plotting.line_chart(
        {"a": ([1, 2, 4], [3, 2, 1])}, xlabel="h", ylabel="y", logx=True
    )
    assert (
        ax.xaxis.label.get_fontsize() == matplotlib.rcParams["axes.labelsize"]
    )


def test_quality_vs_cost_draws_one_point_per_layer_and_a_table_renders():
    records = [
        dict(
            kind=kind,
            heads=heads,
            head_size=size,
            params=params,
            flops=10 * params,
            loss=loss,
        )
        for kind, heads, size, params in (
            ("standard", 4, 8, 100),
            ("wide", 4, 32, 400),
            ("other", 4, 16, 200),
        )
        for loss in (0.1, 0.2, 0.3)
    ]
    axes = plotting.quality_vs_cost(records)
    assert len(axes) == 2
    points = [
        line
        for line in axes[0].lines
        if line.get_linestyle() == "None" and len(line.get_xdata()) == 1
    ]
    medians = [line.get_ydata()[0] for line in points]
    assert medians == pytest.approx([0.2, 0.2, 0.2]), (
        "one median point per layer"
    )


def test_heatmaps_draw_and_check_their_input():
    ax = plotting.heatmap(
        torch.rand(3, 5),
        xticks=list("abcde"),
        yticks=([0, 2], ["x", "z"]),
        title="t",
    )
    assert [label.get_text() for label in ax.get_xticklabels()] == list(
        "abcde"
    )
    assert len(ax.figure.axes) == 2, "the colourbar is missing"
    figure = plotting.matrix_grid(torch.rand(2, 2, 3, 3), colorbar=True)
    assert len(figure.axes) == 5
    with pytest.raises(ValueError, match="2-D"):
        plotting.heatmap(torch.rand(2, 2, 2))
    with pytest.raises(ValueError, match="4-D"):
        plotting.matrix_grid(torch.rand(2, 3, 3))


def test_families_vs_cost_draws_a_median_and_a_range_per_variant():
    families = {
        "a": [
            ("1", {"flops": 1.0, "time": 10.0}, [0.1, 0.2, 0.6]),
            (None, {"flops": 2.0, "time": 30.0}, [0.3, 0.3, 0.3]),
        ],
        "b": [("x", {"flops": 4.0, "time": 20.0}, [1.0, 2.0])],
    }
    axes = plotting.families_vs_cost(
        families, ylabel="bits", ticks={"flops": [1, 2, 4]}
    )
    assert [ax.get_xlabel() for ax in axes] == ["flops", "time"]
    # one errorbar per family: its points are the medians
    points = [bar.lines[0].get_ydata() for bar in axes[0].containers]
    assert [list(p) for p in points] == [
        pytest.approx([0.2, 0.3]),
        pytest.approx([1.5]),
    ]
    labels = [text.get_text() for text in axes[1].texts]
    assert labels == ["1", "x"], "a variant labelled None stays unlabelled"
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["1", "2", "4"]
    families["b"] = [({"time": "x"}, {"flops": 4.0, "time": 20.0}, [1.0])]
    axes = plotting.families_vs_cost(families, ylabel="bits")
    assert [t.get_text() for t in axes[0].texts] == ["1"]
    assert [t.get_text() for t in axes[1].texts] == ["1", "x"], (
        "a label given per cost shows in its panels only"
    )
    too_many = {str(i): families["b"] for i in range(9)}
    with pytest.raises(ValueError, match="families"):
        plotting.families_vs_cost(too_many, ylabel="bits")


SIZE_SET = re.compile(r"""\b(?:fontsize|labelsize)\s*=\s*(['"]?)([\w.-]+)\1""")


def code_of_the_book():
    """The library's code and every chapter's code cells, as text."""
    yield from (path.read_text() for path in LIBRARY.glob("*.py"))
    for path in CHAPTERS:
        cells = json.loads(path.read_text())["cells"]
        yield from (
            "".join(cell["source"])
            for cell in cells
            if cell["cell_type"] == "code"
        )


def test_no_figure_text_is_set_below_the_smallest_size():
    """Together with the figures' narrow renderings (measured by the phone
    test, tests/browsing.py), this keeps every figure's text at 10 px on a
    phone, and at 8 px where a wide rendering is shown at 58 %."""
    smallest = plotting.SMALLEST_TEXT_PT
    style = {
        key: value
        for key, value in plotting.BOOK_STYLE.items()
        if key.endswith("size") and key != "figure.figsize"
    }
    assert min(style.values()) >= smallest, style
    base = plotting.BOOK_STYLE["font.size"]
    scalings = matplotlib.font_manager.font_scalings
    found = []
    for code in code_of_the_book():
        for _, size in SIZE_SET.findall(code):
            points = base * scalings[size] if size in scalings else float(size)
            found.append(points)
            assert points >= smallest, f"text set at {size} ({points:g} pt)"
    assert found, "the search found no sizes: the pattern is broken"
    assert 10 / 72 * 100 * 0.58 >= 8  # 10 pt at 100 dpi, shown at 58 %


def test_a_figure_is_drawn_sharper_than_it_is_shown():
    figure = matplotlib.figure.Figure(figsize=(3, 2), dpi=100)
    figure.add_subplot().plot([0, 1], [1, 0])
    data, shown = plotting.sharp_png(figure)
    width, height = struct.unpack(">II", data[16:24])
    assert abs(width / shown["width"] - plotting.PIXEL_DENSITY) < 0.02
    assert abs(height / shown["height"] - plotting.PIXEL_DENSITY) < 0.02
    assert 250 < shown["width"] < 340  # 3 inches at 100 dpi, cropped tight
    assert plotting.PIXEL_DENSITY * 96 >= 200  # pixels per printed inch


def test_importing_the_figure_module_changes_nothing():
    """Importing ``mha_lib.course.plotting`` leaves Matplotlib's settings and
    IPython's formatters as they were; a chapter's set-up cell applies the
    book's style with ``use_book_style()``."""
    import subprocess
    import sys

    script = """
import matplotlib
matplotlib.use("Agg")
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
formatters = shell.display_formatter.formatters
def registered():
    return {kind: (dict(f.type_printers), dict(f.deferred_printers))
            for kind, f in formatters.items()}
before, kinds = dict(matplotlib.rcParams), registered()
import mha_lib.course.plotting as plotting
import mha_lib.course.interactive
changed = [k for k, v in matplotlib.rcParams.items() if before[k] != v]
assert not changed, f"importing changed rcParams {changed}"
assert registered() == kinds, "importing registered formatters"
plotting.use_book_style()
changed = [k for k, v in matplotlib.rcParams.items() if before[k] != v]
assert "font.size" in changed and set(changed) <= set(plotting.BOOK_STYLE)
assert registered() != kinds, "the explicit call sets the figure formats"
print("ok")
"""
    run = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,  # this mha_lib
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.name)
def test_every_chapter_that_draws_applies_the_book_style_when_it_sets_up(path):
    first = first_code_cell(path)
    if "mha_lib.course.plotting" in first:
        assert "\nuse_book_style()" in first, path.name
