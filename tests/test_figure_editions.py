"""A figure's other renderings: its words in Chinese, narrow for a phone, and
what their drawing measures (text size, labels over labels, legends over
data)."""

import base64
import io

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from mha_lib.course import figure_editions as editions  # noqa: E402
from mha_lib.course import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def book_style():
    """The figures in the book's style, as a chapter's set-up cell sets it
    (importing the figure modules sets nothing)."""
    with matplotlib.rc_context(plotting.BOOK_STYLE):
        yield


WORDS = {
    "training step": "训练步数",
    "head {}": "头 {}",
    "standard {} x {} ({} seeds)": "标准 {} x {}（{} 个种子）",
    "{} of {} seeds": "{1} 个种子中的 {0} 个",
    "head {}\n$A_{} / \\sqrt{d_k}$": "头 {}\n$A_{} / \\sqrt{d_k}$",
}


def two_panels():
    figure = Figure(figsize=(10, 4))
    axes = figure.subplots(1, 2, sharey=True)
    for ax in axes:
        ax.plot([1, 2, 3], [1, 4, 9], label="standard 8 x 8 (5 seeds)")
        ax.set_xlabel("training step")
        ax.set_title("head 3")
    figure.tight_layout()
    return figure, axes


def test_words_come_from_the_catalog_numbers_from_the_figure():
    translate = editions.translate
    assert translate("training step", WORDS) == "训练步数"
    assert translate("head 12", WORDS) == "头 12"
    assert (
        translate("standard 8 x 16 (20 seeds)", WORDS)
        == "标准 8 x 16（20 个种子）"
    )
    assert translate("head 2\n$A_2 / \\sqrt{d_k}$", WORDS) == (
        "头 2\n$A_2 / \\sqrt{d_k}$"
    ), "mathematics' braces are not numbers' places"
    assert translate("3 of 20 seeds", WORDS) == "20 个种子中的 3 个"
    assert translate("16x8", WORDS) == "16x8", "no words: stays"
    assert translate("$W^Q$", WORDS) == "$W^Q$", "mathematics stays"
    assert translate("loss", WORDS) is None, "missing: None"


def test_narrow_stacks_the_panels_and_puts_everything_back():
    figure, axes = two_panels()
    size = tuple(figure.get_size_inches())
    positions = [tuple(ax.get_position().bounds) for ax in axes]
    wide = editions.measure(figure)
    with editions._edition(figure, WORDS, narrow=True) as missing:
        narrow = editions.measure(figure)
        assert axes[1].get_xlabel() == "训练步数"
        lower, upper = (ax.get_position() for ax in axes)
        assert upper.y0 < lower.y0, "the second panel is below the first"
        assert axes[1].yaxis.get_tick_params()["labelleft"], (
            "a panel that shared its neighbour's y axis shows its ticks"
        )
    assert missing == []
    assert narrow["height"] > narrow["width"] and narrow["width"] < 500
    assert editions.phone_text_px(narrow) >= editions.PHONE_TEXT_PX
    assert editions.phone_text_px(wide) < editions.PHONE_TEXT_PX
    assert tuple(figure.get_size_inches()) == size
    assert [tuple(ax.get_position().bounds) for ax in axes] == positions
    assert axes[1].get_xlabel() == "training step"
    assert not axes[1].yaxis.get_tick_params()["labelleft"]


def test_a_label_over_a_label_and_a_legend_over_points_are_found():
    figure = Figure(figsize=(4, 3))
    ax = figure.add_subplot()
    ax.plot(range(10), range(10), marker="o", label="points")
    ax.text(2, 5, "one label")
    ax.text(2.2, 5.1, "another label")
    ax.legend(loc="center")
    checks = editions.measure(figure)
    assert checks["overlaps"] == [["one label", "another label"]]
    assert checks["legend_over_data"] == ["points"]
    assert checks["smallest_text_px"] == pytest.approx(11 * 100 / 72, 0.01)


def test_placed_labels_cover_no_label_or_point():
    def drawn(place):
        figure = Figure(figsize=(4, 3))
        ax = figure.add_subplot()
        points = [(1, 1, "16x8", "C0"), (1.05, 1.0, "8x16", "C1")]
        points += [(1.0, 1.06, "4", "C2"), (2, 2, "far", "C3")]
        ax.plot([p[0] for p in points], [p[1] for p in points], "o")
        ax.set(xlim=(0, 3), ylim=(0, 3))
        place(ax, points)
        return editions.measure(figure)["overlaps"]

    def beside(ax, points):  # each label at the same offset
        for x, y, text, _ in points:
            ax.annotate(
                text, (x, y), xytext=(5, 3), textcoords="offset points"
            )

    assert drawn(beside), "the case has labels over labels to avoid"
    assert drawn(plotting.PointLabels) == []


def test_renderings_say_which_words_the_catalog_lacks(monkeypatch):
    monkeypatch.setattr(editions, "catalog", lambda: WORDS)
    figure, axes = two_panels()
    axes[0].set_ylabel("loss")
    result = editions.renderings(figure, plotting.sharp_png)
    assert result["untranslated"] == ["loss"]
    assert set(result["checks"]) == {"en", "narrow", "zh", "zh-narrow"}
    for name in ("narrow", "zh", "zh-narrow"):
        png = base64.b64decode(result[name])
        assert png.startswith(b"\x89PNG")
    image = matplotlib.image.imread(io.BytesIO(base64.b64decode(result["zh"])))
    assert image.shape[1] > image.shape[0], "the Chinese one is wide"
    assert axes[0].get_ylabel() == "loss"


def test_without_the_catalog_a_figure_is_one_png(monkeypatch):
    monkeypatch.setattr(editions, "catalog", lambda: None)
    figure, _ = two_panels()
    assert editions.renderings(figure, plotting.sharp_png) is None


def test_a_stacked_colour_bar_keeps_its_ticks_on_its_own_side():
    figure = matplotlib.figure.Figure(figsize=(8, 3))
    for ax in figure.subplots(1, 2):
        image = ax.imshow([[0, 1], [2, 3]])
        figure.colorbar(image, ax=ax)
    bars = figure.axes[2:]
    with editions._edition(figure, None, narrow=True):
        for bar in bars:
            ticks = bar.yaxis.get_tick_params()
            assert ticks["labelright"] and not ticks["labelleft"], (
                "a colour bar's tick labels drawn twice, once over the data"
            )


def test_tick_labels_given_as_words_are_drawn_in_chinese():
    """``set_yticks(ticks, labels)`` makes the labels at each draw (a
    FuncFormatter): the Chinese rendering changes what it makes."""
    figure = Figure(figsize=(4, 3))
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_yticks([0, 1], ["head 0", "head 1"])
    ax.set_xticks([0, 1], ["loss", "head 2"])
    ax.twinx().yaxis.set_major_formatter(lambda x, pos: int(x))  # a number
    drawn = []
    with editions._edition(figure, WORDS, narrow=False) as missing:
        figure.savefig(io.BytesIO(), format="png")
        drawn = [t.get_text() for t in ax.get_yticklabels()]
    assert drawn == ["头 0", "头 1"]
    assert "loss" in missing
    figure.savefig(io.BytesIO(), format="png")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["head 0", "head 1"]


def test_a_stacked_panel_draws_its_chinese_tick_labels_in_chinese_glyphs():
    """A panel that shared its neighbour's y axis shows its tick labels once
    stacked: those labels, never drawn before, get the Chinese font too."""
    import warnings

    figure = Figure(figsize=(8, 3))
    axes = figure.subplots(1, 2, sharey=True)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    axes[0].set_yticks([0, 1], ["head 0", "head 1"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with editions._edition(figure, WORDS, narrow=True):
            figure.savefig(io.BytesIO(), format="png")
            shown = [t.get_text() for t in axes[1].get_yticklabels()]
    assert shown == ["头 0", "头 1"]
    lacking = [str(w.message) for w in caught if "missing from" in str(w)]
    assert not lacking, lacking


def test_the_check_measures_subscripts_of_a_figure_kept_wide():
    """A figure kept at its size (``narrow = False``) whose words a phone
    shows at 10 px still fails where its subscripts show smaller."""
    figure = Figure(figsize=(5.4, 1))
    figure.narrow = False
    figure.text(0.02, 0.2, "words at 12 points")
    figure.text(0.98, 0.6, "(n, d$_k$)", ha="right")
    result = editions.renderings(figure, plotting.sharp_png)
    if result is None:
        pytest.skip("the course's catalog or font is not there")
    checks = result["checks"]["narrow"]
    words_px = 12 * 100 / 72 * editions.PHONE_COLUMN_PX / checks["width"]
    assert words_px >= editions.PHONE_TEXT_PX, "the words alone would pass"
    assert editions.phone_text_px(checks) < editions.PHONE_TEXT_PX
    assert checks["smallest_text_px"] == round(12 * 0.7 * 100 / 72, 1)


def test_the_layer_diagram_draws_its_own_narrow_version_for_a_phone():
    figure = plotting.layer_diagram(num_heads=3).figure
    wide = plotting.sharp_png(figure)
    result = editions.renderings(figure, plotting.sharp_png)
    if result is None:
        pytest.skip("the course's catalog or font is not there")
    assert result["untranslated"] == []
    for name in ("narrow", "zh-narrow"):
        checks = result["checks"][name]
        assert editions.phone_text_px(checks) >= editions.PHONE_TEXT_PX
        assert checks["height"] > checks["width"], "top to bottom"
        assert checks["overlaps"] == []
    assert editions.phone_text_px(result["checks"]["zh"]) < 10, "wide"
    assert plotting.sharp_png(figure) == wide, "the figure is as it was"
    matplotlib.pyplot.close(figure)


def test_a_log_axis_shows_plain_numbers_on_a_phone_and_powers_on_a_page():
    """10⁻³'s exponent would show at about 8 px on a phone: the narrow
    rendering writes 0.001; the page's rendering keeps its powers."""
    figure = Figure(figsize=(8, 4))
    ax = figure.subplots()
    ax.plot([1, 10, 100, 1e4], [1e-3, 1e-2, 0.5, 1])
    ax.set(xscale="log", yscale="log", xlabel="training step")
    before = plotting.sharp_png(figure)
    result = editions.renderings(figure, plotting.sharp_png)
    if result is None:
        pytest.skip("the course's catalog or font is not there")
    for name in ("narrow", "zh-narrow"):
        checks = result["checks"][name]
        assert editions.phone_text_px(checks) >= editions.PHONE_TEXT_PX
    assert plotting.sharp_png(figure) == before  # put back as it was
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert any("10^{" in label for label in labels), labels


def test_placed_labels_keep_off_the_lines_joining_points():
    figure = Figure(figsize=(4, 3))
    ax = figure.add_subplot()
    xs = [0.5, 1.5, 2.5]
    ax.plot(xs, xs, "-o")  # a line up and to the right, through each point
    ax.set(xlim=(0, 3), ylim=(0, 3))
    plotting.PointLabels(ax, [(x, x, "16x16", "C0") for x in xs])
    renderer = figure._get_renderer()
    figure.draw(renderer)  # places the labels
    line = ax.get_lines()[0]
    path = plotting._along(
        line.get_transform().transform(line.get_xydata()), width=0.5
    )
    for label in ax.texts:
        box = label.get_window_extent(renderer)
        assert not any(box.overlaps(b) for b in path), label.get_position()
    # the first place tried (right and up) would have crossed it
    first = plotting.PointLabels.PLACES[0]
    assert first[0] > 0 and first[1] > 0


def test_a_label_lies_where_its_place_was_measured():
    """Each place's box is worked out before the label is put there; the
    label then drawn at that place covers that box, for places beside the
    point too (an offset of 0 up or across centres the label on it)."""
    figure = Figure(figsize=(4, 3))
    ax = figure.add_subplot()
    ax.set(xlim=(0, 3), ylim=(0, 3))
    labels = plotting.PointLabels(ax, [(1.5, 1.5, "d 128", "C0")])
    renderer = figure._get_renderer()
    figure.draw(renderer)
    label = labels.labels[0]
    x, y = ax.transData.transform((1.5, 1.5))
    size = label.get_window_extent(renderer).size
    for dx, dy in plotting.PointLabels.PLACES:
        labels._put(label, (dx, dy))
        box = label.get_window_extent(renderer)
        left = x + renderer.points_to_pixels(dx)
        left -= size[0] * ((dx < 0) + (dx == 0) / 2)
        bottom = y + renderer.points_to_pixels(dy)
        bottom -= size[1] * ((dy < 0) + (dy == 0) / 2)
        assert abs(box.x0 - left) < 1 and abs(box.y0 - bottom) < 1, (dx, dy)
