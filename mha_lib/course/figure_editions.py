"""Every figure for every reader: the same drawing with its words in Chinese,
and narrow for a phone.

A notebook's figure is shown as one PNG (:func:`plotting.sharp_png`). For
the book, :func:`renderings` draws the same figure, with the same numbers,
three more times: its words in Chinese (from the course's catalog,
``locale/zh_CN/outputs.po``), and narrow enough that a phone shows its
smallest text, sub- and superscripts included, at :data:`PHONE_TEXT_PX` or
more: its panels stacked, or as the figure's own ``figure.narrow()`` draws
it (:func:`narrow_drawing`). It also says, for each of the four, the
smallest text and every label drawn over another label or a legend drawn
over data points; the book's build refuses a
figure whose phone rendering is too small or whose labels collide
(``book/_ext/figure_editions.py`` puts the renderings on the pages). Where
the catalog is not there (``mha_lib`` installed without the course's
repository, and not by a Chinese download, which carries its words and font)
a figure is the one PNG.
"""

import base64
import hashlib
import json
import re
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.gridspec import GridSpec
from matplotlib.mathtext import MathTextParser
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FuncFormatter, LogFormatter

MIME = "application/vnd.mha-answered.figures+json"
ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "locale" / "zh_CN" / "outputs.po"
FONT = ROOT / "book" / "_static" / "fonts" / "NotoSansSC-book.woff"
# where a Chinese download writes the catalog's words (outputs.json) and the
# font it carries, in mha_lib installed without the course's repository
CARRIED = Path(__file__).resolve().parent / "zh_CN"
PHONE_COLUMN_PX = 350  # the text column at 390 CSS pixels
PHONE_TEXT_PX = 10  # the smallest text a phone should show
NARROW_INCHES = 4.6
NUMBER = re.compile(r"\d+(?:\.\d+)?")
WORDS = re.compile(r"[A-Za-z]{2}")
CHINESE = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def renderings(figure, sharp_png):
    """The book's other renderings of ``figure``, for IPython's formatter of
    :data:`MIME`: ``{"zh", "narrow", "zh-narrow": base64 PNG, "shown":
    {rendering: its size on a page}, "checks": {rendering: {...}},
    "untranslated": [...]}``; ``sharp_png(figure)`` draws one. None where
    the course's catalog or font is not there."""
    words = catalog()
    if words is None:
        return None
    result = {"checks": {}, "shown": {}, "untranslated": []}
    with _one_mathematics_parser():
        result["checks"]["en"] = measure(figure)
        drawn = {False: figure, True: narrow_drawing(figure)}
        for name, chinese, narrow in (
            ("narrow", False, True),
            ("zh", True, False),
            ("zh-narrow", True, True),
        ):
            shown_figure = drawn[narrow]
            edition = _edition(
                shown_figure, words if chinese else None, narrow
            )
            with edition as missing, _measured(shown_figure) as checks:
                data, shown = sharp_png(shown_figure)  # measured as drawn
            result[name] = base64.b64encode(data).decode("ascii")
            result["shown"][name] = shown
            result["checks"][name] = {**shown, **checks}
            result["untranslated"] += missing
    result["untranslated"] = sorted(set(result["untranslated"]))
    return result


def narrow_drawing(figure):
    """The figure a phone is shown: what ``figure.narrow()`` draws where a
    figure carries such a function (a diagram laid out anew), else
    ``figure``, made narrow by :func:`_edition`."""
    narrow = getattr(figure, "narrow", True)
    return narrow() if callable(narrow) else figure


def measure(figure):
    """The figure as drawn at its size: ``{"width", "height"}`` in pixels of
    size, the smallest text in them (``"smallest_text_px"``), the pairs of
    labels drawn over each other (``"overlaps"``) and the legends drawn over
    data points (``"legend_over_data"``)."""
    with _measured(figure) as checks:
        figure.draw_without_rendering()
    # the size savefig's bbox_inches="tight" crops to, in pixels of size
    pad = 2 * matplotlib.rcParams["savefig.pad_inches"]
    inches = figure.get_tightbbox(figure._get_renderer())
    return {
        "width": round((inches.width + pad) * figure.dpi),
        "height": round((inches.height + pad) * figure.dpi),
        **checks,
    }


@contextmanager
def _measured(figure):
    """Within: each draw of ``figure`` (savefig's or a layout-only one)
    records what :func:`measure` reports of its text and legends in the
    yielded dict, from the layout the draw made; sizes in pixels of the
    figure's size (savefig may draw it at another dpi)."""
    checks = {}
    size_dpi = figure.dpi
    draw = figure.draw

    def draw_and_measure(renderer):
        with _texts_drawn() as drawn:
            draw(renderer)
        checks.update(_text_checks(figure, renderer, drawn, size_dpi))

    figure.draw = draw_and_measure
    try:
        yield checks
    finally:
        del figure.draw  # the class's again


def _text_checks(figure, renderer, drawn, size_dpi):
    """The smallest of the ``drawn`` texts, the labels drawn over each
    other and the legends over data, as ``renderer`` laid them out."""
    pixel = renderer.dpi / size_dpi  # one pixel of size
    boxes = [(text, text.get_window_extent(renderer)) for text in drawn]
    overlaps = [
        [a.get_text(), b.get_text()]
        for i, (a, box_a) in enumerate(boxes)
        for b, box_b in boxes[i + 1 :]
        if _overlap(box_a, box_b) > pixel
    ]
    legends = [ax.get_legend() for ax in figure.axes] + figure.legends
    boxes = [
        legend.get_window_extent(renderer)  # laid out once per legend
        for legend in legends
        if legend is not None and legend.get_visible()
    ]
    lines = [
        line
        for ax in figure.axes
        for line in ax.get_lines()
        if line.get_visible()
    ]
    covered = [
        line.get_label()
        for box in boxes
        for line in lines
        if _any_inside(box, line.get_transform().transform(line.get_xydata()))
    ]
    sizes = [_smallest_points(text) * size_dpi / 72 for text in drawn]
    return {
        "smallest_text_px": round(min(sizes, default=99), 1),
        "overlaps": overlaps,
        "legend_over_data": covered,
    }


def _smallest_points(text):
    """The size of a text's smallest glyphs, in points: its mathematics
    sets sub- and superscripts smaller than the text."""
    sizes = [text.get_fontsize()]
    for line in text.get_text().split("\n"):
        line, math = text._preprocess_math(line)
        if math is True:  # not TeX's
            if "path" not in _PARSERS:
                _PARSERS["path"] = MathTextParser("path")
            parsed = _PARSERS["path"].parse(
                line, 72, text.get_fontproperties()
            )
            sizes += [glyph[1] for glyph in parsed.glyphs]
    return min(sizes)


def phone_text_px(checks):
    """The smallest text of a rendering shown in a phone's column."""
    return checks["smallest_text_px"] * min(
        1, PHONE_COLUMN_PX / checks["width"]
    )


def _any_inside(box, points):
    """Whether any of ``points`` (``(n, 2)`` pixels) lies in ``box``, edges
    included."""
    low, high = np.minimum(box.p0, box.p1), np.maximum(box.p0, box.p1)
    return bool(((points >= low) & (points <= high)).all(axis=1).any())


def _overlap(a, b):
    """How far two boxes overlap, in pixels (the smaller of the two
    extents; 0 where they do not)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(0, min(width, height))


@contextmanager
def _texts_drawn():
    """Within: every visible, non-empty text drawn is added to the yielded
    list, once (a tick outside the axes' limits, say, is not drawn)."""
    drawn = {}
    draw = Text.draw

    def record(text, renderer):
        if text.get_visible() and text.get_text().strip():
            drawn[id(text)] = text
        return draw(text, renderer)

    Text.draw = record
    texts = []
    try:
        yield texts
    finally:
        Text.draw = draw
        texts += drawn.values()


def _drawn_texts(figure):
    """Every text the figure draws, from a layout-only draw."""
    with _texts_drawn() as drawn:
        figure.draw_without_rendering()
    return drawn


# one parser of mathematics for every renderer: Matplotlib gives each
# renderer its own, and its cache of parsed expressions is the parser's, so
# each rendering of a figure parsed its tick labels ($10^{-2}$...) again
_PARSERS = {}


@contextmanager
def _one_mathematics_parser():
    """Within: every Agg renderer made shares one mathematics parser."""
    from matplotlib.backends import backend_agg

    made = backend_agg.MathTextParser

    def shared(output):
        if output not in _PARSERS:
            _PARSERS[output] = made(output)
        return _PARSERS[output]

    backend_agg.MathTextParser = shared
    try:
        yield
    finally:
        backend_agg.MathTextParser = made


_catalog = {}


def catalog():
    """``{English: Chinese}`` from :data:`CATALOG` (or the words a Chinese
    download carries, :data:`CARRIED`), or None where the catalog, its font
    or Babel (which reads it) is not there."""
    if "words" not in _catalog:
        _catalog["words"] = _words() if _font().is_file() else None
    return _catalog["words"]


def _words():
    carried = CARRIED / "outputs.json"
    if not CATALOG.is_file():
        if carried.is_file():
            return json.loads(carried.read_text(encoding="utf-8"))
        return None
    try:
        from babel.messages.pofile import read_po
    except ModuleNotFoundError:
        return None
    with CATALOG.open("rb") as file:
        return {
            m.id: m.string
            for m in read_po(file)
            if m.id and m.string and not m.fuzzy
        }


def _font():
    """The Chinese font: the book's, else the one a download carries."""
    return FONT if FONT.is_file() else CARRIED / FONT.name


def translate(text, words):
    """``text`` in Chinese, or None where the catalog lacks it; a message
    may stand for its numbers with ``{}`` ("head {}": "头 {}"), and its
    translation put them in another order with ``{0}``, ``{1}``... Text
    without two letters in a row, or all mathematics, stays."""
    if not WORDS.search(re.sub(r"\$[^$]*\$", "", text)):
        return text
    if text in words:
        return words[text]
    pattern = NUMBER.sub("{}", text)
    if pattern not in words:
        return None
    numbers = NUMBER.findall(text)
    following = iter(numbers)

    def number(place):  # "{}": the next number; "{2}": the third
        index = place.group(1)
        return numbers[int(index)] if index else next(following)

    # only "{}" and "{N}": mathematics has braces of its own ("\sqrt{d_k}")
    return re.sub(r"\{(\d*)\}", number, words[pattern])


def _font_file():
    """The Chinese pages' font as a TrueType file Matplotlib can read (it
    does not read WOFF), made once per machine beside the temporary files."""
    digest = hashlib.sha256(_font().read_bytes()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"mha-NotoSansSC-{digest}.ttf"
    if not path.is_file():
        from fontTools.ttLib import TTFont

        font = TTFont(_font())
        font.flavor = None
        written = path.with_suffix(f".{id(font)}.tmp")
        font.save(written)
        written.replace(path)  # atomic: another kernel may be reading it
    return path


_fonts = []


def _chinese_font():
    """The font family name of :func:`_font_file`, added to Matplotlib."""
    if not _fonts:
        path = _font_file()
        matplotlib.font_manager.fontManager.addfont(path)
        _fonts.append(matplotlib.font_manager.FontProperties(fname=path))
    return _fonts[0].get_name()


@contextmanager
def _edition(figure, words, narrow):
    """Within: ``figure`` with its words from ``words`` (None: as drawn) and,
    if ``narrow``, :data:`NARROW_INCHES` wide with a row of panels stacked;
    yields the list of words the catalog lacks. Everything is put back."""
    undo = []
    missing = []
    try:
        if words is not None:
            _translate_texts(figure, words, missing, undo)
        if narrow:
            _narrow(figure, undo)
        yield missing
    finally:
        for step in reversed(undo):
            step()


def _translate_texts(figure, words, missing, undo):
    """Every word of ``figure`` from ``words``, the Chinese glyphs from the
    book's font (what the figure's font lacks falls back to it)."""
    chinese = _chinese_font()
    rc = matplotlib.rcParams
    family = rc["font.family"]  # for tick labels made while drawing
    undo.append(lambda: rc.__setitem__("font.family", family))
    rc["font.family"] = [FontProperties().get_name(), chinese]
    drawn = _drawn_texts(figure)  # tick labels exist once drawn
    # and those not drawn yet (a stacked panel shows its hidden ones; new
    # ticks copy the first one's font)
    hidden = [
        label
        for ax in figure.axes
        for axis in (ax.xaxis, ax.yaxis)
        for tick in axis.get_major_ticks()
        for label in (tick.label1, tick.label2)
        if label not in drawn
    ]
    for label in hidden:
        family = label.get_fontfamily()
        undo.append(lambda t=label, f=family: t.set_fontfamily(f))
        label.set_fontfamily([label.get_fontname(), chinese])
    for axis in (a for ax in figure.axes for a in (ax.xaxis, ax.yaxis)):
        formatter = axis.get_major_formatter()
        if isinstance(formatter, FixedFormatter):
            old = list(formatter.seq)
            new = [translate(t, words) for t in old]
            missing += [t for t, n in zip(old, new) if n is None]
            formatter.seq = [n or t for t, n in zip(old, new)]
            undo.append(lambda f=formatter, s=old: setattr(f, "seq", s))
        elif isinstance(formatter, FuncFormatter):  # set_ticklabels' labels
            old = formatter.func
            undo.append(lambda f=formatter, g=old: setattr(f, "func", g))
            formatter.func = _translating(old, words, missing)
    for text in drawn:
        old = text.get_text()
        new = translate(old, words)
        if new is None:
            missing.append(old)
        elif new != old:
            text.set_text(new)
            undo.append(lambda t=text, s=old: t.set_text(s))
        # a text with mathematics takes its words from the first font only
        fonts = [text.get_fontname(), chinese]
        if "$" in text.get_text() and CHINESE.search(text.get_text()):
            fonts.reverse()
        family = text.get_fontfamily()
        undo.append(lambda t=text, f=family: t.set_fontfamily(f))
        text.set_fontfamily(fonts)


def _translating(label, words, missing):
    """``label(x, pos)``, a formatter's function, with its text in Chinese
    (what ``words`` lacks is added to ``missing``)."""

    def chinese(x, pos=None):
        text = label(x, pos)
        if not isinstance(text, str):  # a number, drawn as it is
            return text
        new = translate(text, words)
        if new is None:
            missing.append(text)
        return new or text

    return chinese


def _narrow(figure, undo):
    """``figure`` :data:`NARROW_INCHES` wide; panels side by side in one row
    are stacked in a column. A figure that says ``figure.narrow = False``
    (a diagram whose boxes hold text) keeps its size, as does one that
    draws its own narrow version (:func:`narrow_drawing`)."""
    narrow = getattr(figure, "narrow", True)
    if not narrow or callable(narrow):
        return
    width, height = figure.get_size_inches()
    undo.append(lambda: figure.set_size_inches(width, height))
    positions = {ax: ax.get_position(original=True) for ax in figure.axes}
    undo.append(lambda: [ax._set_position(p) for ax, p in positions.items()])
    rows = _stack(figure, undo)
    figure.set_size_inches(NARROW_INCHES, rows * height)
    _plain_log_ticks(figure, undo)
    # tight_layout cannot place a colour bar made beside several panels
    if rows > 1 or all(ax.get_subplotspec() for ax in figure.axes):
        _tight(figure)
        if _fold_long_texts(figure, undo):
            _tight(figure)
    else:
        _fold_long_texts(figure, undo)


def _plain_log_ticks(figure, undo):
    """Log axes' ticks as plain numbers, 0.001 for 10⁻³: on a phone an
    exponent shows at about 8 px, under :data:`PHONE_TEXT_PX`."""
    for axis in (a for ax in figure.axes for a in (ax.xaxis, ax.yaxis)):
        for which in ("major", "minor"):
            formatter = getattr(axis, f"get_{which}_formatter")()
            if axis.get_scale() != "log" or not isinstance(
                formatter, LogFormatter
            ):
                continue
            setter = getattr(axis, f"set_{which}_formatter")
            undo.append(lambda set_=setter, f=formatter: set_(f))
            setter(FuncFormatter(_plain(formatter)))


def _plain(formatter):
    """A tick label function: the number ``formatter`` would label, written
    plainly from 0.001 to 10000 and as ``1e6`` or ``1e-5`` beyond, and no
    label where it would write none."""

    def label(value, position):
        if not formatter(value, position):
            return ""
        if value == 0 or 1e-3 <= abs(value) < 1e5:
            return f"{value:g}"
        mantissa, exponent = f"{value:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"  # 1e+06 -> 1e6

    return label


def _tight(figure):
    """Matplotlib's tight layout, the figure made taller first where what
    it holds (a legend below the axes, say) does not fit its height."""
    renderer = figure._get_renderer()
    width, height = figure.get_size_inches()
    # the panels at their smallest: what their labels and legends need
    figure.subplots_adjust(bottom=0.1, top=0.9, hspace=0.2)
    needed = figure.get_tightbbox(renderer).height
    if needed > height:
        figure.set_size_inches(width, 2 * needed - height)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        figure.tight_layout()


def _fold_long_texts(figure, undo):
    """Break each title or axis label longer than its axes (a suptitle:
    than the figure) into two lines; returns whether any was."""
    renderer = figure._get_renderer()
    whole = figure.bbox
    pairs = [(figure._suptitle, whole.width)] if figure._suptitle else []
    for ax in figure.axes:
        box = ax.get_window_extent(renderer)
        pairs += [
            (ax.title, box.width),
            (ax.xaxis.label, box.width),
            (ax.yaxis.label, box.height),
        ]
    folded = False
    for text, room in pairs:
        old = text.get_text()
        extent = text.get_window_extent(renderer)
        if "\n" in old or max(extent.width, extent.height) <= room:
            continue
        text.set_text(_two_lines(old))
        undo.append(lambda t=text, s=old: t.set_text(s))
        folded = True
    return folded


def _two_lines(text):
    """``text`` broken near its middle: at a space where it has one."""
    middle = len(text) // 2
    spaces = [i for i, c in enumerate(text) if c == " "]
    if spaces:
        cut = min(spaces, key=lambda i: abs(i - middle))
        return text[:cut] + "\n" + text[cut + 1 :]
    return text[:middle] + "\n" + text[middle:]


def _stack(figure, undo):
    """Stack the columns of a one-row grid of panels into rows; returns
    the number of rows (1 where the figure is not such a grid)."""
    tops = {}
    for ax in figure.axes:
        spec = ax.get_subplotspec()
        if spec is None:
            continue
        top = spec.get_topmost_subplotspec()
        tops.setdefault(top.get_gridspec(), []).append((ax, spec, top))
    if len(tops) != 1:
        return 1
    ((grid, members),) = tops.items()
    rows, columns = grid.get_geometry()
    if rows != 1 or columns < 2:
        return 1
    column_grid = GridSpec(columns, 1, figure=figure)
    for ax, spec, top in members:
        # a panel that shared its neighbour's y axis showed no tick labels
        # (a colour bar shows its own on the right)
        ticks = ax.yaxis.get_tick_params()
        if not ticks.get("labelright", False):
            shown = ticks.get("labelleft", True)
            undo.append(lambda a=ax, s=shown: a.tick_params(labelleft=s))
            ax.tick_params(labelleft=True)
        new_top = column_grid[top.colspan.start, 0]
        if spec is top:
            undo.append(lambda a=ax, s=spec: a.set_subplotspec(s))
            ax.set_subplotspec(new_top)
        else:  # a panel beside its colour bar: move the pair
            inner = spec.get_gridspec()
            old = inner._subplot_spec
            undo.append(lambda g=inner, s=old: setattr(g, "_subplot_spec", s))
            inner._subplot_spec = new_top
            ax.set_subplotspec(spec)
    return columns
