"""Figures shared by the chapters. Imports matplotlib itself, so ``import
mha_lib`` stays light.

Importing this module changes nothing; a chapter's set-up cell calls
:func:`use_book_style`, which sets the book's figure style: a figure of the
default size, 6.4 inches at 100 dpi, fills most of the book's
750-pixel text column at its natural size, and its type is then about as large
as the text around it. A figure wider than about 7.5 inches is shrunk to the
column, and its type with it: prefer several narrower figures. No text is set
below :data:`SMALLEST_TEXT_PT`. For a phone the book draws each figure again,
narrow, its panels stacked (:mod:`mha_lib.course.figure_editions`), so that
its text shows at 10 pixels or more. In a notebook, figures are drawn with
:data:`PIXEL_DENSITY` times the pixels of their size, sharp on a fine screen
and printed at over 200 pixels per inch.
"""

import io
import math
import struct
from functools import partial

try:
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter
except ModuleNotFoundError as error:  # the plot extra is not installed
    raise ModuleNotFoundError(
        "mha_lib.course.plotting draws with Matplotlib, which is not "
        "installed: pip install 'mha-lib[plot]'"
    ) from error

from ..spec import NAMED_KINDS
from . import figure_editions as editions

BOOK_STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "figure.titlesize": 13,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
SMALLEST_TEXT_PT = 10  # 13.9 pixels at 100 dpi: 8 on a phone at 58 %
PIXEL_DENSITY = 2.2  # pixels per pixel of size: 211 per inch on paper


def sharp_png(figure):
    """``figure`` as a PNG of :data:`PIXEL_DENSITY` times its pixels, with the
    width and height to show it at: ``(data, metadata)``, as IPython's
    formatters return it."""
    buffer = io.BytesIO()
    figure.savefig(
        buffer,
        format="png",
        dpi=figure.dpi * PIXEL_DENSITY,
        bbox_inches="tight",
    )
    data = buffer.getvalue()
    width, height = struct.unpack(">II", data[16:24])  # the PNG's header
    shown = {
        "width": round(width / PIXEL_DENSITY),
        "height": round(height / PIXEL_DENSITY),
    }
    return data, shown


def use_book_style():
    """Set matplotlib's defaults to the book's figure style, and in a notebook
    draw figures as :func:`sharp_png` and in the book's other renderings
    (called once, by a chapter's set-up cell; importing this module changes
    nothing)."""
    matplotlib.rcParams.update(BOOK_STYLE)
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        # the inline backend sets its own formatter when it starts: start it
        # first, then replace it
        plt.switch_backend(matplotlib.get_backend())
        formatters = shell.display_formatter.formatters
        formatters["image/png"].for_type(matplotlib.figure.Figure, sharp_png)
        # the book's other renderings of a figure, in Chinese and narrow
        from IPython.core.formatters import JSONFormatter

        book = JSONFormatter(parent=shell, format_type=editions.MIME)
        book.for_type(
            matplotlib.figure.Figure,
            lambda figure: editions.renderings(figure, sharp_png),
        )
        formatters[editions.MIME] = book


def legend_below(ax, *handles_and_labels, **options):
    """The legend of ``ax`` below its x-axis label, one entry a line: a fixed
    distance below the axes, so it clears the label at any figure size and
    covers no data."""
    from matplotlib.transforms import ScaledTranslation

    below = ScaledTranslation(0, -0.62, ax.figure.dpi_scale_trans)
    return ax.legend(
        *handles_and_labels,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, 0),
        bbox_transform=ax.transAxes + below,
        **options,
    )


class PointLabels(matplotlib.artist.Artist):
    """Labels beside points, placed each time the figure is drawn (a figure
    is drawn wide and narrow): each takes the first of :attr:`PLACES` where
    it covers no label placed before it (nor touches one), no point, line,
    error bar or legend, inside the axes (where none is free, the one that
    covers least)."""

    # offsets in points from the point to the label's nearest corner
    PLACES = (
        *((dx, dy) for dx in (5, -5) for dy in (3, -3)),
        (0, 7),
        (0, -7),
        *((dx, dy) for dx in (10, -10) for dy in (9, -9)),
        *((dx, dy) for dx in (16, -16) for dy in (0, 14, -14)),
    )
    zorder = 2.9  # drawn, so placed, before the labels themselves (3)

    def __init__(self, ax, points):
        """``points``: ``[(x, y, text, colour)]`` in data coordinates."""
        super().__init__()
        self.points = [(x, y) for x, y, _, _ in points]
        self.labels = [
            ax.annotate(
                text,
                (x, y),
                xytext=(0, 0),  # placed when drawn
                textcoords="offset points",
                fontsize=10,
                color=colour,
            )
            for x, y, text, colour in points
        ]
        ax.add_artist(self)

    def draw(self, renderer):
        ax = self.axes
        taken = [
            legend.get_window_extent(renderer)
            for legend in [ax.get_legend(), *ax.figure.legends]
            if legend is not None
        ]
        taken += _marks(ax, renderer)
        dots = ax.transData.transform(self.points)
        frame = ax.get_window_extent(renderer)

        def covered(box):
            """How much of ``box`` covers what is taken or lies outside the
            axes, in square pixels."""
            area = sum(_overlap_area(box, other) for other in taken)
            return area + box.width * box.height - _overlap_area(box, frame)

        for label, (x, y) in zip(self.labels, dots):
            self._put(label, self.PLACES[0])
            size = label.get_window_extent(renderer).size  # laid out once
            costs = []
            for dx, dy in self.PLACES:  # each place's box, from the size
                dx = renderer.points_to_pixels(dx)
                dy = renderer.points_to_pixels(dy)
                left = x + dx - size[0] * ((dx < 0) + (dx == 0) / 2)
                bottom = y + dy - size[1] * ((dy < 0) + (dy == 0) / 2)
                box = matplotlib.transforms.Bbox.from_bounds(
                    left, bottom, *size
                )
                costs.append(covered(box))
                if costs[-1] == 0:
                    break
            # the first free place, or else the least covered
            self._put(label, self.PLACES[costs.index(min(costs))])
            # 2 pixels apart: labels that touch read as one ("16" "8")
            taken.append(label.get_window_extent(renderer).padded(2))

    @staticmethod
    def _put(label, place):
        dx, dy = place
        label.set_position((dx, dy))
        label.set_horizontalalignment(
            "left" if dx > 0 else "right" if dx < 0 else "center"
        )
        label.set_verticalalignment(
            "bottom" if dy > 0 else "top" if dy < 0 else "center"
        )


def _marks(ax, renderer):
    """The boxes of every data point drawn on ``ax`` (a marker's, 4 points
    each way: labelled or not), of every line joining points (small boxes
    along it) and of every error bar, in pixels."""
    size = renderer.points_to_pixels(4)
    boxes = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(line.get_xydata())  # (n, 2)
        if line.get_marker() not in ("", " ", "None"):
            boxes += [
                matplotlib.transforms.Bbox.from_extents(
                    x - size, y - size, x + size, y + size
                )
                for x, y in xy
            ]
        if line.get_linestyle() not in ("", " ", "None"):
            boxes += _along(xy, width=line.get_linewidth())
    for bars in ax.collections:
        if isinstance(bars, matplotlib.collections.LineCollection):
            transform = bars.get_transform()
            for segment in bars.get_segments():
                (x0, y0), (x1, y1) = transform.transform(segment[[0, -1]])
                boxes.append(
                    matplotlib.transforms.Bbox.from_extents(
                        min(x0, x1) - 1,
                        min(y0, y1),
                        max(x0, x1) + 1,
                        max(y0, y1),
                    )
                )
    return boxes


def _along(xy, width, step=3.0):
    """Boxes of ``width`` pixels every ``step`` pixels along the segments
    joining the points ``xy`` ``(n, 2)``, in pixels."""
    boxes = []
    for (x0, y0), (x1, y1) in zip(xy[:-1], xy[1:]):
        count = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        for i in range(count + 1):
            x, y = x0 + i / count * (x1 - x0), y0 + i / count * (y1 - y0)
            boxes.append(
                matplotlib.transforms.Bbox.from_extents(
                    x - width, y - width, x + width, y + width
                )
            )
    return boxes


def _overlap_area(a, b):
    """The area two boxes share, in square pixels."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(0, width) * max(0, height)


def line_chart(
    series,
    *,
    xlabel,
    ylabel,
    title=None,
    logx=False,
    logy=False,
    ax=None,
    markers=None,
):
    """Plot ``{label: (x, y)}`` as lines with markers; ``markers`` adds
    ``{label: (x, y)}`` as dots.

    Returns the axes. Used by every chapter's "quantity vs number of heads"
    figures.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, (x, y) in series.items():
        ax.plot(x, y, marker="o", markersize=4, label=label)
    for label, (x, y) in (markers or {}).items():
        ax.plot(
            x,
            y,
            linestyle="none",
            marker="x",
            markersize=9,
            color="black",
            label=label,
        )
    if logx:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda value, _: f"{value:g}")
        )
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    legend_below(ax)
    return ax


def head_colour(index):
    """The colour of head ``index`` in every figure of the book (figures with
    and without a kernel share
    :data:`mha_lib.course.interactive.HEAD_COLOURS`)."""
    from .interactive import HEAD_COLOURS

    return HEAD_COLOURS[index % len(HEAD_COLOURS)]


def head_ownership(layer, axes=None):
    """A layer's fused weights coloured by the head that owns each block (Ch.
    2).

    Left: the stacked q/k/v projection as PyTorch stores it,
    ``(3 * h * head_dim, d_model)``; head i owns a band of rows in each of the
    three parts. Right: the output projection ``(d_model, h * head_dim)``; head
    i owns a band of columns. Shading is the weight's magnitude; a key names
    the colour of each head.
    """
    if axes is None:
        _, axes = plt.subplots(
            1, 2, figsize=(7.5, 4.6), gridspec_kw={"width_ratios": [1, 1.2]}
        )
    palette = _head_palette(layer.spec.num_heads)
    _draw_qkv_owners(axes[0], layer, palette)
    _draw_output_owners(axes[1], layer, palette)
    _name_heads(axes[0].figure, layer.spec)
    return axes


def _head_palette(num_heads):
    """The colours of heads 0 to ``num_heads - 1``, ``(num_heads, 3)`` RGB."""
    import numpy as np
    from matplotlib.colors import to_rgb

    return np.array([to_rgb(head_colour(i)) for i in range(num_heads)])


def _paint_by_head(weight, owner, palette):
    """``weight`` as an RGB image, each entry in the colour of its head in
    ``owner`` (same shape); strong weights in full colour."""
    import numpy as np

    shade = 0.35 + 0.65 * np.abs(weight) / np.abs(weight).max()
    return 1 - (1 - palette[owner]) * shade[..., None]


def _draw_qkv_owners(ax, layer, palette):
    """The stacked W^Q, W^K, W^V, ``(3 * h * head_dim, d_model)``: head i owns
    a band of rows in each part."""
    import numpy as np

    projections = (layer.q_proj, layer.k_proj, layer.v_proj)
    # (3 * width, d_model)
    in_proj = np.concatenate(
        [_as_array(p.weight, 2, "", "") for p in projections]
    )
    width = layer.spec.num_heads * layer.spec.head_dim
    rows = (np.arange(in_proj.shape[0]) % width) // layer.spec.head_dim
    owner = np.broadcast_to(rows[:, None], in_proj.shape)  # as in_proj
    ax.imshow(_paint_by_head(in_proj, owner, palette), aspect="auto")
    for boundary in (width, 2 * width):
        ax.axhline(boundary - 0.5, color="black", linewidth=1.5)
    labels = ["$W^Q$", "$W^K$", "$W^V$"]
    # 14 points: their exponents show at 10 px or more on a phone
    ax.set_yticks([width / 2, 1.5 * width, 2.5 * width], labels, fontsize=14)
    ax.set_xticks([])
    ax.set_xlabel("input feature (all of x)")
    ax.set_title("q, k, v: rows of head i", fontsize=14)


def _draw_output_owners(ax, layer, palette):
    """W^O, ``(d_model, h * head_dim)``: head i owns a band of columns."""
    import numpy as np

    out_proj = _as_array(layer.out_proj.weight, 2, "", "")  # (d_model, width)
    width = layer.spec.num_heads * layer.spec.head_dim
    columns = np.arange(width) // layer.spec.head_dim
    owner = np.broadcast_to(columns[None, :], out_proj.shape)  # as out_proj
    ax.imshow(_paint_by_head(out_proj, owner, palette), aspect="auto")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("concatenated head outputs")
    ax.set_ylabel("output feature")
    ax.set_title("$W^O$: columns of head i", fontsize=14)


def _name_heads(figure, spec):
    """A key naming each head's colour below the panels, the layer's sizes
    above them."""
    from matplotlib.patches import Patch

    key = [
        Patch(color=head_colour(i), label=f"head {i}")
        for i in range(spec.num_heads)
    ]
    figure.legend(
        handles=key,
        loc="lower center",
        ncol=min(spec.num_heads, 6),
        frameon=False,
        bbox_to_anchor=(0.5, -0.02),
    )
    figure.suptitle(
        f"d_model = {spec.d_model}, {spec.num_heads} heads "
        f"of size {spec.head_dim}",
        fontsize=15,  # above the panels' 14
    )
    figure.tight_layout(rect=(0, 0.08, 1, 1))


# the columns of :func:`layer_diagram`: left edge, width, heading
DIAGRAM_COLUMNS = {
    "x": (0.0, 0.9, "input"),
    "qkv": (1.35, 2.05, "project"),
    "softmax": (3.85, 2.3, "attend"),
    "head": (6.6, 1.05, "average"),
    "concat": (8.1, 1.35, "join"),
    "out": (9.9, 1.3, "mix"),
}
DIAGRAM_RIGHT = 11.25  # the right edge of the drawing, past the last box
# the texts of its boxes shared by the heads
DIAGRAM_TEXTS = {
    "x": "x\n(n, d)",
    "concat": "concat\n(n, h d$_k$)",
    "out": "$\\times W^O$\n\noutput\n(n, d)",
}


def layer_diagram(num_heads=3, ax=None):
    """How data flows through one multi-head layer, a colour per head (Ch. 2).

    ``x`` feeds every head's query, key and value projections; each head takes
    its own softmax and weighted sum; the heads' outputs are concatenated and
    mixed by ``W^O``. Colours are the heads' colours of :func:`head_ownership`.
    """
    row = 1.2  # height of one head's row
    top = row * num_heads
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 1.6 + 1.15 * num_heads))
        # a phone is shown it top to bottom (its boxes hold text)
        fits = num_heads <= NARROW_DIAGRAM_HEADS
        ax.figure.narrow = fits and partial(_layer_diagram_down, num_heads)
    else:
        ax.figure.narrow = False  # its boxes hold text: not redrawn narrow
    ax.set_xlim(-0.05, DIAGRAM_RIGHT)
    ax.set_ylim(-0.1, top + 0.75)
    ax.axis("off")
    for left, width, heading in DIAGRAM_COLUMNS.values():
        ax.text(left + width / 2, top + 0.4, heading, ha="center", va="center")
    for name in ("x", "concat", "out"):
        left, width, _ = DIAGRAM_COLUMNS[name]
        _diagram_box(ax, left, 0.1, width, top - 0.2, DIAGRAM_TEXTS[name])
    for i in range(num_heads):
        _diagram_head(ax, i, top - row * (i + 1) + 0.12, row - 0.24)
    _diagram_arrow(ax, *_between("concat", "out", top / 2))
    ax.set_title(f"One layer, {num_heads} heads: every head reads all of x")
    return ax


# :func:`layer_diagram` top to bottom for a phone, 15-point text (its d_k
# under a root, at 0.66 of the text, shows at 10 pixels in a phone's column):
# its rows of boxes, by column of :data:`DIAGRAM_COLUMNS`, and their heights
# in inches; a gap between rows holds a heading and the arrows
NARROW_DIAGRAM_ROWS = {
    "x": 0.75,
    "qkv": 0.75,
    "softmax": 0.85,
    "head": 0.75,
    "concat": 0.75,
    "out": 1.2,
}
NARROW_DIAGRAM_PT = 15
NARROW_DIAGRAM_HEADS = 3  # more do not fit side by side
DIAGRAM_GAP = 0.55


def _layer_diagram_down(num_heads):
    """:func:`layer_diagram` top to bottom, the heads side by side,
    :data:`~.figure_editions.NARROW_INCHES` wide (a Figure of its own, not
    pyplot's)."""
    from matplotlib.figure import Figure

    rows = NARROW_DIAGRAM_ROWS
    # a margin below: a box's rounded edge is drawn outside it
    height = sum(rows.values()) + DIAGRAM_GAP * len(rows) + 0.05
    with matplotlib.rc_context({"font.size": NARROW_DIAGRAM_PT}):
        figure = Figure(figsize=(editions.NARROW_INCHES, height))
        figure.narrow = False  # narrow already
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set(xlim=(0, editions.NARROW_INCHES), ylim=(0, height))
        ax.axis("off")
        above = None
        for name, box_height in rows.items():
            height -= DIAGRAM_GAP + box_height
            _diagram_row(ax, num_heads, (above, name), height, box_height)
            above = name
        ax.set_title(
            f"One layer, {num_heads} heads: every head reads all of x"
        )
    return figure


def _diagram_row(ax, num_heads, names, y, height):
    """A row of :func:`_layer_diagram_down` from ``y`` up ``height``: the
    box ``names[1]`` (one a head, or one across) and, in the gap above, its
    heading and the arrows from the row ``names[0]``."""
    above, name = names
    width = editions.NARROW_INCHES
    column = width / num_heads
    top = y + height + DIAGRAM_GAP
    # the heading between the first two heads' arrows
    ax.text(
        column if num_heads > 1 else 0.75 * width,
        top - DIAGRAM_GAP / 2,
        DIAGRAM_COLUMNS[name][2],
        ha="center",
        va="center",
    )
    if name in DIAGRAM_TEXTS:
        _diagram_box(ax, 0.06, y, width - 0.12, height, DIAGRAM_TEXTS[name])
    for i in range(num_heads):
        middle = column * (i + 0.5)
        if name not in DIAGRAM_TEXTS:
            text, left = _head_texts(i)[name], column * i + 0.06
            box = (left, y, column - 0.12, height, text, head_colour(i))
            _diagram_box(ax, *box)
        # an arrow a head, and one from concat to W^O
        if above is not None and (above != "concat" or i == num_heads // 2):
            colour = "0.35" if above in DIAGRAM_TEXTS else head_colour(i)
            _diagram_arrow(ax, (middle, top), (middle, y + height), colour)


def _diagram_head(ax, i, y, height):
    """Head ``i``'s row of :func:`layer_diagram`, from ``y`` up ``height``:
    its projections, softmax and weighted sum, in its colour, and the arrows
    from x and into the concatenation."""
    colour = head_colour(i)
    middle = y + height / 2
    for name, text in _head_texts(i).items():
        left, width, _ = DIAGRAM_COLUMNS[name]
        _diagram_box(ax, left, y, width, height, text, colour)
    _diagram_arrow(ax, *_between("x", "qkv", middle))
    for start, end in (("qkv", "softmax"), ("softmax", "head")):
        _diagram_arrow(ax, *_between(start, end, middle), colour)
    _diagram_arrow(ax, *_between("head", "concat", middle), colour)


def _between(start, end, y):
    """The ends of an arrow at height ``y`` from the right edge of column
    ``start`` of :data:`DIAGRAM_COLUMNS` to the left edge of ``end``."""
    left, width, _ = DIAGRAM_COLUMNS[start]
    return (left + width, y), (DIAGRAM_COLUMNS[end][0], y)


def _head_texts(i):
    """Head ``i``'s boxes' texts, by column of :data:`DIAGRAM_COLUMNS`."""
    return {
        "qkv": f"$Q_{i}, K_{i}, V_{i}$\n(n, d$_k$) each",
        "softmax": f"$A_{i}$ = softmax\n$(Q_{i} K_{i}^T / \\sqrt{{d_k}})$",
        "head": f"head {i}\n$A_{i} V_{i}$",
    }


def _diagram_box(ax, x, y, w, h, text, colour="#bab0ac"):
    """A pale rounded box with ``text`` centred in it."""
    from matplotlib.patches import FancyBboxPatch

    style = dict(boxstyle="round,pad=0.04", linewidth=1.2, alpha=0.35)
    ax.add_patch(
        FancyBboxPatch(
            (x, y), w, h, edgecolor=colour, facecolor=colour, **style
        )
    )
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center")


def _diagram_arrow(ax, start, end, colour="0.35"):
    """An arrow from ``start`` to ``end``, in data coordinates."""
    from matplotlib.patches import FancyArrowPatch

    style = dict(arrowstyle="-|>", mutation_scale=12, linewidth=1.2)
    ax.add_patch(FancyArrowPatch(start, end, color=colour, **style))


def learning_curves(
    runs,
    *,
    ax=None,
    title=None,
    ylabel="loss / target variance",
    logy=True,
    reference=None,
):
    """Median and min-max band over seeds: ``runs`` is ``{label: [history,
    ...]}`` (Chapters 4, 5).

    Each history is a ``{"step": [...], "loss": [...]}`` dict from
    :func:`mha_lib.course.training.train`. Each curve has its own colour and
    dash, so curves that run together stay visible. ``reference`` is ``(loss,
    label)``: a grey dotted line at that loss, named in the legend.
    """
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    dashes = ("-", "--", "-.", ":")
    for index, (label, histories) in enumerate(runs.items()):
        steps = histories[0]["step"]
        # (seeds, records)
        losses = np.array([history["loss"] for history in histories])
        (line,) = ax.plot(
            steps,
            np.median(losses, axis=0),
            linestyle=dashes[index % len(dashes)],
            label=f"{label} ({len(histories)} seeds)",
        )
        ax.fill_between(
            steps,
            losses.min(axis=0),
            losses.max(axis=0),
            color=line.get_color(),
            alpha=0.2,
        )
    if reference is not None:
        level, name = reference
        ax.axhline(level, color="grey", linestyle=":", linewidth=1, label=name)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    legend_below(ax)  # covers no curve; long labels never run together
    return ax


def _ticks(set_ticks, ticks, count):
    """``ticks``: None (no ticks), labels one per row/column, or ``(positions,
    labels)``."""
    if ticks is None:
        set_ticks([])
    elif isinstance(ticks, tuple) and len(ticks) == 2:
        set_ticks(*ticks)
    else:
        set_ticks(range(count), ticks)


def heatmap(
    matrix,
    *,
    ax=None,
    title=None,
    xlabel=None,
    ylabel=None,
    xticks=None,
    yticks=None,
    vmin=None,
    vmax=None,
    cmap="viridis",
    colorbar=True,
):
    """One matrix as a heatmap with a colourbar (distances between heads,
    per-head scores, kernels).

    ``xticks``/``yticks``: labels one per column/row, ``(positions, labels)``,
    or None for none. Returns the axes.
    """
    matrix = _as_array(matrix, 2, "heatmap", "(rows, columns)")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 4.4))
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    _ticks(ax.set_xticks, xticks, matrix.shape[1])
    _ticks(ax.set_yticks, yticks, matrix.shape[0])
    for label, setter in (
        (title, ax.set_title),
        (xlabel, ax.set_xlabel),
        (ylabel, ax.set_ylabel),
    ):
        if label:
            setter(label)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax


def matrix_grid(
    matrices,
    *,
    row_labels=None,
    column_labels=None,
    size=1.6,
    title=None,
    vmin=0,
    vmax=1,
    cmap="viridis",
    colorbar=False,
):
    """Matrices ``(rows, columns, height, width)`` as a grid of heatmaps on one
    colour scale.

    Rows are usually layers or seeds and columns heads; ``colorbar=True`` adds
    one shared bar. Returns the figure.
    """
    matrices = _as_array(
        matrices, 4, "matrix_grid", "(rows, columns, height, width)"
    )
    rows, columns = matrices.shape[:2]
    figure, axes = plt.subplots(
        rows, columns, figsize=(size * columns, size * rows), squeeze=False
    )
    for r in range(rows):
        for c in range(columns):
            ax = axes[r, c]
            image = ax.imshow(matrices[r, c], cmap=cmap, vmin=vmin, vmax=vmax)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0 and column_labels is not None:
                ax.set_title(column_labels[c], fontsize=10)
            if c == 0 and row_labels is not None:
                ax.set_ylabel(row_labels[r], fontsize=10)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    if colorbar:
        figure.colorbar(image, ax=axes, shrink=0.8)
    return figure


def _as_array(values, dims, caller, shape):
    """A NumPy copy of a tensor or array with ``dims`` axes, for imshow."""
    import numpy as np

    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    values = np.asarray(values, dtype=float)
    if values.ndim != dims:
        raise ValueError(
            f"{caller} expects a {dims}-D array {shape}, got shape "
            f"{values.shape}"
        )
    return values


def layer_styles():
    """``{kind: matplotlib style}``, one per kind of
    :data:`mha_lib.spec.NAMED_KINDS` in its order (chunked, standard, wide,
    then any kind added there)."""
    markers, colours = "^osDvPX*", ("C2", "C0", "C3", "C1", "C4", "C5", "C6")
    return {
        kind: dict(marker=marker, color=colour)
        for kind, marker, colour in zip(NAMED_KINDS, markers, colours)
    }


COSTS = (
    ("params", "attention parameters"),
    ("flops", "attention FLOPs per sequence"),
)


def quality_vs_cost(records, *, axes=None, title=None, costs=COSTS):
    """Median loss over seeds against cost, one panel per cost, one point per
    layer (Chapter 5).

    ``records``: dicts with ``kind``, ``heads``, ``head_size``, ``params``,
    ``flops`` and ``loss`` (one per seed, already at the learning rate chosen
    for that layer). Kinds in :func:`layer_styles` are drawn in colour and
    joined across head counts, each point labelled with its number of heads;
    any other kind is a grey dot. Bars span the quartiles over seeds.
    """
    styles = layer_styles()
    groups = _by_layer(records)
    if axes is None:
        _, axes = plt.subplots(
            1,
            len(costs),
            figsize=(6.2 * len(costs), 4.4),
            sharey=True,
            squeeze=False,
        )
        axes = axes[0]
    for ax, (cost, label) in zip(axes, costs):
        _layers_at_cost(ax, groups, cost, styles)
        _kind_legend_entries(ax, styles)
        _log_cost_axes(ax, label)
    axes[0].set_ylabel("loss / target variance (median over seeds)")
    legend_below(axes[0], fontsize=10)
    if title:
        axes[0].figure.suptitle(title)
    return axes


def _by_layer(records):
    """``{(kind, heads, head_size): [record, ...]}``, a record per seed."""
    groups = {}
    for record in records:
        key = (record["kind"], record["heads"], record["head_size"])
        groups.setdefault(key, []).append(record)
    return groups


def _layers_at_cost(ax, groups, cost, styles):
    """Every layer's median at its ``cost``, labelled with its heads (others:
    heads x head size); a line joins each kind of ``styles`` across head
    counts."""
    families, labels = {}, []
    for (kind, heads, head_size), group in sorted(groups.items()):
        style = styles.get(kind, dict(marker=".", color="0.6"))
        x, median = _median_point(ax, group, cost, style, kind in styles)
        if kind in styles:
            families.setdefault(kind, []).append((x, median))
            labels.append((x, median, f"{heads}", style["color"]))
        else:
            labels.append((x, median, f"{heads}x{head_size}", "0.4"))
    PointLabels(ax, labels)
    for kind, points in families.items():
        points.sort()
        ax.plot(*zip(*points), color=styles[kind]["color"], alpha=0.6)


def _median_point(ax, group, cost, style, named):
    """One layer's median loss over seeds at its ``cost``, a bar over the
    quartiles (a named kind's marker larger); returns ``(cost, median)``."""
    import numpy as np

    losses = np.array([record["loss"] for record in group])
    q1, median, q3 = np.quantile(losses, [0.25, 0.5, 0.75])
    x = group[0][cost]
    ax.plot([x, x], [q1, q3], color=style["color"], alpha=0.5, linewidth=1.5)
    ax.plot(x, median, linestyle="none", markersize=8 if named else 7, **style)
    return x, median


def _kind_legend_entries(ax, styles):
    """Legend entries for every kind of ``styles``, also for those absent from
    this panel, and one for the other kinds."""
    for kind, style in styles.items():
        ax.plot(
            [],
            [],
            linestyle="-",
            alpha=0.8,
            label=f"{kind} (label: heads)",
            **style,
        )
    ax.plot(
        [],
        [],
        linestyle="none",
        marker=".",
        color="0.6",
        label="other (heads x head size)",
    )


def _log_cost_axes(ax, label):
    """Log axes with room for the top points' labels, the cost named below."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(y=0.12)  # room for the labels of the top points
    # minor labels collide on short log axes
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)
    ax.grid(True, which="major", alpha=0.3)


FAMILY_STYLES = (("C0", "o"), ("C1", "^"), ("C3", "s"), ("C2", "D"))


def families_vs_cost(families, *, ylabel, ticks=None):
    """Quality against cost for families of variants, one panel per cost
    (Chapter 7); returns the axes.

    ``families``: ``{family: [(label, {cost: x}, [value per seed]), ...]}``,
    each variant's ``label`` written beside its point (``None``: no label;
    ``{cost: label}``: in those panels only, where points of one cost would
    crowd).
    Each point is the median over seeds, its bar the range. Families take the
    colours and markers of :data:`FAMILY_STYLES` in order; the costs are log
    axes, with ``ticks`` (``{cost: [values]}``) labelled where given.
    """
    import statistics

    if not 0 < len(families) <= len(FAMILY_STYLES):
        raise ValueError(
            f"families_vs_cost draws 1 to {len(FAMILY_STYLES)} families, got "
            f"{len(families)}"
        )
    cost_names = list(next(iter(families.values()))[0][1])
    figure, axes = plt.subplots(
        1, len(cost_names), figsize=(10, 4.6), sharey=True, squeeze=False
    )
    axes = axes[0]
    for ax, cost in zip(axes, cost_names):
        labels = []
        for (family, variants), (colour, marker) in zip(
            families.items(), FAMILY_STYLES
        ):
            xs = [costs[cost] for _, costs, _ in variants]
            values = [values for _, _, values in variants]
            middles = [statistics.median(v) for v in values]
            ax.errorbar(
                xs,
                middles,
                yerr=[
                    [m - min(v) for m, v in zip(middles, values)],
                    [max(v) - m for m, v in zip(middles, values)],
                ],
                fmt=marker,
                color=colour,
                label=family,
                capsize=3,
            )
            for x, y, (label, _, _) in zip(xs, middles, variants):
                if isinstance(label, dict):  # a label in some panels only
                    label = label.get(cost)
                if label is not None:
                    labels.append((x, y, label, colour))
        PointLabels(ax, labels)
        ax.set(xscale="log", xlabel=cost)
        if ticks and cost in ticks:
            ax.set_xticks(ticks[cost], [f"{t:g}" for t in ticks[cost]])
            ax.set_xticks([], minor=True)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(ylabel)
    legend_below(axes[0], fontsize=10)
    figure.tight_layout()
    return axes
