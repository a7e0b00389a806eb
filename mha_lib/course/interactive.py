"""Figures with controls that work on a static page: no kernel, no network.

The notebook computes every state of a figure in advance; the figure is a
Vega-Lite specification whose controls (a selector, radio buttons) filter that
data in the reader's browser. A notebook front end that knows the Vega-Lite
MIME type (JupyterLab, Notebook 7, VS Code) draws it offline; the book draws it
with the Vega scripts it serves from its own ``_static`` folder
(``book/_ext/interactive_figures.py``).

Usage, for any table of results (one dict per measurement)::

    records = [{"task": "copy", "variant": "wide", "cost": 8.0, "loss": 0.02},
               ...]
    records_chart(records, x="cost", y="loss", color="variant", select="task")

shows ``loss`` against ``cost``, one line per ``variant``, and a drop-down that
picks the ``task``. The y axis keeps one range for every choice, so switching
compares like with like.

Each figure also carries its layout for a phone (``usermeta.narrow``: the
changes :func:`overlaid` lays over the specification, numbers and places but
no words), drawn where the page's column is narrower than the figure.
"""

import json
import math
import re
from numbers import Real

import numpy as np

MIMETYPE = "application/vnd.vegalite.v5+json"
# an identifier: nothing is fetched
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
MARKS = ("line", "point", "bar")
# pixels: a phone's column (390 px less the page's margins), the width every
# figure's narrow layout is drawn for
NARROW = 358
# pixels beside a plot for its axis's labels and title
AXIS_ROOM = 90
CONTROLS = ("select", "radio")
# Tableau 10 and two more: neighbouring heads get clearly different colours
HEAD_COLOURS = [
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#1b9e77",
    "#7570b3",
]
# Type sizes that stay legible at the width of a book page (Vega's defaults are
# 10-11 px), in the faces the book serves (book/_static/book.css), so a label
# is measured in the font it is drawn in; elsewhere the stack ends in the
# machine's sans-serif.
STYLE = {
    "font": '"DejaVu Sans book", "Noto Sans SC book", sans-serif',
    "axis": {"labelFontSize": 12, "titleFontSize": 13},
    "legend": {"labelFontSize": 12, "titleFontSize": 13},
    "header": {"labelFontSize": 12},
    "title": {"fontSize": 15},
}


class Interactive:
    """A Vega-Lite figure; displaying it in a notebook hands the specification
    to the front end."""

    def __init__(self, spec, *, description, narrow=None):
        # resize: the drawing grows and shrinks with the data a control selects
        # (e.g. more heatmaps)
        autosize = {"type": "pad", "resize": True}
        self.spec = {
            "$schema": SCHEMA,
            "description": description,
            "config": STYLE,
            "autosize": autosize,
            # black type stays readable when the page is in dark mode
            "background": "white",
            **spec,
        }
        if narrow is not None:
            self.spec["usermeta"] = {"narrow": narrow}
        # fail here, not in the reader's browser
        json.dumps(self.spec, allow_nan=False)

    @property
    def controls(self):
        """Names of the parameters bound to a control, in the order they are
        drawn."""
        return [
            param["name"]
            for param in self.spec.get("params", [])
            if "bind" in param
        ]

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            MIMETYPE: self.spec,
            "text/plain": f"<interactive figure: {self.spec['description']}>",
        }


def overlaid(spec, changes):
    """``spec`` with ``changes`` laid over it, as the page draws a figure's
    narrow layout: a dict's keys are laid over the spec's dict, a list's
    items over the spec's list item by item, and anything else replaces what
    it falls on (``None`` included). ``spec`` is left as it was."""
    if isinstance(changes, dict) and isinstance(spec, dict):
        laid = dict(spec)
        for key, change in changes.items():
            laid[key] = overlaid(spec.get(key), change)
        return laid
    if isinstance(changes, list) and isinstance(spec, list):
        if len(changes) != len(spec):
            raise ValueError(
                f"changes to a list of {len(spec)} items must list "
                f"{len(spec)}, got {len(changes)}"
            )
        return [overlaid(item, change) for item, change in zip(spec, changes)]
    return changes


def records_chart(
    records,
    *,
    x,
    y,
    select,
    color=None,
    shape=None,
    start=None,
    mark="line",
    control="select",
    title=None,
    xlabel=None,
    ylabel=None,
    logx=False,
    logy=False,
    width=420,
    height=260,
):
    """``y`` against ``x`` for the records whose ``select`` field has the value
    a control picks.

    ``records`` is a list of dicts holding at least the fields ``x``, ``y`` and
    ``select`` (and ``color``, one line or colour of points per value, and
    ``shape``, one marker per value of a second field); every field is shown
    in the tooltip, numbers to three significant digits.
    ``control`` is ``"select"`` (a drop-down) or ``"radio"``; it shows
    ``start`` first (default: the smallest value). A ``color`` value keeps its
    colour whatever the control picks, and the legend lists the values in
    natural order ("2 x 16" before "16 x 2"). Returns an :class:`Interactive`.
    """
    records = _check_records(
        records,
        [field for field in (x, y, select, color, shape) if field is not None],
    )
    if mark not in MARKS:
        raise ValueError(f"mark must be one of {MARKS}, got {mark!r}")
    _check_numbers(records, (x, y))
    encoding = {
        "x": _axis(records, x, xlabel, logx),
        "y": _axis(records, y, ylabel, logy),
        "tooltip": [_tooltip(records, field) for field in records[0]],
    }
    for channel, field in (("color", color), ("shape", shape)):
        if field is not None:
            encoding[channel] = _every_value(records, field)
    spec = {
        "width": width,
        "height": height,
        "data": {"values": records},
        "params": [
            _control("pick", select, _choices(records, select), control, start)
        ],
        "transform": [{"filter": f"datum[{json.dumps(select)}] == pick"}],
        "mark": _mark(mark),
        "encoding": encoding,
    }
    narrow = _narrow_records(width, encoding)
    return _titled(spec, title, f"{y} against {x}, by {select}", narrow=narrow)


def _narrow_records(width, encoding):
    """:func:`records_chart`'s narrow layout: the plot takes the column's
    width, its legends go below it."""
    below = {"legend": {"orient": "bottom", "columns": 1}}
    return {
        "width": min(width, NARROW - AXIS_ROOM),
        "encoding": {
            channel: below
            for channel in ("color", "shape")
            if channel in encoding
        },
    }


def _check_numbers(records, fields):
    """Refuse a record whose value of one of ``fields`` is not a number."""
    for field in fields:
        if not all(isinstance(record[field], Real) for record in records):
            raise TypeError(
                f"records_chart plots numbers: field {field!r} holds a value "
                "that is not a number"
            )


def _every_value(records, field):
    """A colour or marker channel over every value of ``field``, in natural
    order: a value keeps its colour or marker when the control filters some
    values out."""
    choices = _choices(records, field)
    return {
        "field": field,
        "type": "nominal",
        "scale": {"domain": choices},
        "sort": choices,
    }


def _mark(mark):
    """The mark of :func:`records_chart`: lines show their points too."""
    if mark == "line":
        return {"type": mark, "point": True, "tooltip": True}
    return {"type": mark, "tooltip": True}


def _titled(spec, title, description, *, narrow):
    """An :class:`Interactive` of ``spec`` and its ``narrow`` layout, with
    ``title`` when given; its description is the title, or else
    ``description``."""
    if title:
        spec["title"] = title
    return Interactive(spec, description=title or description, narrow=narrow)


def attention_by_head_count(
    attention, difference, *, title=None, panel=120, columns=4
):
    """Per-head attention maps and the output difference, for a number of heads
    a control picks.

    ``attention`` maps each head count ``h`` to that layer's weights for one
    sequence, ``(h, n_query, n_key)``; ``difference`` maps the same ``h`` to
    one number per query token (for example how far its output moved from one
    head's). The control starts at the largest ``h``, the state with the most
    to see (and the one a printed page shows). Returns an :class:`Interactive`.
    """
    _check_head_counts(attention, difference)
    maps, bars = [], []
    for heads in sorted(attention):
        weights, moved = _array(attention[heads]), _array(difference[heads])
        _check_one_head_count(heads, weights, moved)
        maps += _map_cells(heads, weights)
        bars += [
            {"h": heads, "query": q + 1, "difference": round(float(value), 4)}
            for q, value in enumerate(moved)
        ]
    pick = _control(
        "h",
        "number of heads h",
        sorted(attention),
        "radio",
        start=max(attention),
    )
    top, strongest = (
        max(bar["difference"] for bar in bars),
        max(cell["weight"] for cell in maps),
    )
    heatmaps = _heatmaps_by_head(maps, strongest, panel, columns)
    moved_chart = _difference_bars(bars, top, columns * panel)
    # the bars on top keep their place when the number of heatmap rows changes
    spec = {"params": [pick], "vconcat": [moved_chart, heatmaps]}
    # narrow: two maps a row, as many as fit
    across = max(1, min(columns, (NARROW - AXIS_ROOM) // panel))
    narrow = {"vconcat": [{"width": across * panel}, {"columns": across}]}
    return _titled(
        spec,
        title,
        "attention maps and output difference by number of heads",
        narrow=narrow,
    )


def _check_head_counts(attention, difference):
    """Refuse two dicts that are not ``{h: array}`` for the same ``h``."""
    if (
        not isinstance(attention, dict)
        or not isinstance(difference, dict)
        or not attention
    ):
        raise TypeError(
            "attention and difference must be non-empty dicts "
            "{number of heads: array}"
        )
    if sorted(attention) != sorted(difference):
        raise ValueError(
            "attention and difference need the same head counts, got "
            f"{sorted(attention)} and "
            f"{sorted(difference)}"
        )


def _check_one_head_count(heads, weights, moved):
    """Refuse weights that are not ``(heads, n, n)`` or a difference that is
    not ``(n,)``."""
    if (
        weights.ndim != 3
        or weights.shape[0] != heads
        or weights.shape[1] != moved.shape[0]
        or moved.ndim != 1
    ):
        raise ValueError(
            f"for h = {heads} expected attention (h, n_query, n_key) = "
            f"({heads}, n, n) and difference (n_query,), "
            f"got {weights.shape} and {moved.shape}"
        )


def _map_cells(heads, weights):
    """One record per cell of every head's map ``(heads, n_query, n_key)``,
    positions counted from 1."""
    return [
        {
            "h": heads,
            "head": i,
            "query": q + 1,
            "key": k + 1,
            "weight": round(float(weights[i, q, k]), 4),
        }
        for i, q, k in np.ndindex(weights.shape)
    ]


def _heatmaps_by_head(maps, strongest, panel, columns):
    """The picked ``h``'s attention maps, a square panel per head, on one
    colour scale from 0 to ``strongest``."""
    return {
        "data": {"values": maps},
        "transform": [{"filter": "datum.h == h"}],
        "facet": {
            "field": "head",
            "type": "ordinal",
            "title": None,
            "header": {"labelExpr": "'head ' + datum.value"},
        },
        "columns": columns,
        "spec": {
            "width": panel,
            "height": panel,
            "mark": {"type": "rect"},
            "encoding": _heatmap_encoding(strongest),
        },
    }


def _heatmap_encoding(strongest):
    """Key across, query down, weight as colour (viridis, 0 to
    ``strongest``)."""
    return {
        "x": {"field": "key", "type": "ordinal", "title": "key position"},
        "y": {"field": "query", "type": "ordinal", "title": "query position"},
        "color": {
            "field": "weight",
            "type": "quantitative",
            "scale": {"scheme": "viridis", "domain": [0, strongest]},
            "title": "attention weight",
            # above the maps: beside them it would widen the figure
            # past the page's column
            "legend": {"orient": "top", "gradientLength": 200},
        },
        "tooltip": [
            {"field": "head"},
            {"field": "query", "title": "query position"},
            {"field": "key", "title": "key position"},
            {"field": "weight", "format": ".3f"},
        ],
    }


def _difference_bars(bars, top, width):
    """The picked ``h``'s output difference, a bar per query token, on one
    y range from 0 to ``top``."""
    return {
        "data": {"values": bars},
        "transform": [{"filter": "datum.h == h"}],
        "width": width,
        "height": 150,
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": "query", "type": "ordinal", "title": "query token"},
            "y": {
                "field": "difference",
                "type": "quantitative",
                "scale": {"domain": [0, top]},
                "title": "output moved (relative)",
            },
        },
    }


def ownership_by_head_count(layer, head_counts, *, title=None, pixel=3):
    """A layer's fused weights coloured by the head that owns each block, for
    an ``h`` a control picks.

    The weights are ``layer``'s (its ``q_proj``, ``k_proj``, ``v_proj`` and
    ``out_proj``); only the ownership changes with ``h``: head i owns a band of
    rows of each of W^Q, W^K, W^V and a band of columns of W^O. Shading is the
    weight's magnitude. Returns an :class:`Interactive`.
    """
    in_proj, out_proj = _fused_weights(layer)
    width = out_proj.shape[1]
    _check_ownership_counts(head_counts, width)
    spec = {
        "data": {"values": _weight_rows(in_proj, out_proj)},
        "params": [
            _control(
                "h",
                "number of heads h",
                sorted(head_counts),
                "radio",
                start=max(head_counts),
            )
        ],
        "transform": _ownership_transform(width),
        # side by side; in the narrow layout one above the other
        "columns": 2,
        "concat": [
            _owned_matrix(
                "in",
                "query, key, value projections",
                *in_proj.shape,
                "input feature (all of x)",
                "W_Q, W_K, W_V",
                pixel,
            ),
            _owned_matrix(
                "out",
                "output projection",
                *out_proj.shape,
                "concatenated head outputs",
                "output feature",
                pixel,
            ),
        ],
    }
    return _titled(
        spec,
        title,
        "weights coloured by the head that owns them",
        narrow={"columns": 1},
    )


def _fused_weights(layer):
    """``layer``'s stacked W^Q, W^K, W^V and its W^O, as arrays."""
    projections = [
        getattr(layer, name, None)
        for name in ("q_proj", "k_proj", "v_proj", "out_proj")
    ]
    if any(
        getattr(projection, "weight", None) is None
        for projection in projections
    ):
        raise TypeError(
            "ownership_by_head_count needs a layer with q_proj, k_proj, "
            "v_proj and out_proj Linears"
        )
    # (3 * width, d_model)
    in_proj = np.concatenate(
        [_array(projection.weight) for projection in projections[:3]]
    )
    out_proj = _array(projections[3].weight)  # (d_model, width)
    return in_proj, out_proj


def _check_ownership_counts(head_counts, width):
    """Refuse head counts that do not divide ``width``, repeat, or outnumber
    the head colours."""
    if not head_counts or any(
        not isinstance(h, int) or h < 1 or width % h for h in head_counts
    ):
        raise ValueError(
            f"head_counts must be divisors of the layer's width {width}, got "
            f"{head_counts}"
        )
    if len(head_counts) != len(set(head_counts)) or max(head_counts) > len(
        HEAD_COLOURS
    ):
        raise ValueError(
            f"head_counts must be distinct and at most {len(HEAD_COLOURS)} (a "
            f"colour each), got {head_counts}"
        )


def _weight_rows(in_proj, out_proj):
    """One record per matrix row, its weights' magnitudes over the largest
    (the flatten transform makes one record per entry)."""
    scale = max(np.abs(in_proj).max(), np.abs(out_proj).max())
    return [
        {
            "part": part,
            "row": r,
            "w": [round(float(v), 2) for v in np.abs(matrix[r]) / scale],
        }
        for part, matrix in (("in", in_proj), ("out", out_proj))
        for r in range(matrix.shape[0])
    ]


def _ownership_transform(width):
    """One record per weight, with its column and the head that owns it for
    the picked ``h``: rows of W^Q, W^K, W^V, columns of W^O."""
    owner = (
        f"datum.part == 'in' ? floor((datum.row % {width}) / ({width} / h)) "
        f": floor(datum.column / ({width} / h))"
    )
    return [
        {"flatten": ["w"]},
        {
            "window": [{"op": "row_number", "as": "column"}],
            "groupby": ["part", "row"],
        },
        {"calculate": "datum.column - 1", "as": "column"},
        {"calculate": owner, "as": "head"},
    ]


def _owned_matrix(part, label, n_rows, n_columns, xlabel, ylabel, pixel):
    """One matrix, ``pixel`` pixels a weight, coloured by its owning head
    and shaded by the weight's magnitude."""
    hidden = {"labels": False, "ticks": False}
    return {
        "transform": [{"filter": f"datum.part == '{part}'"}],
        "width": pixel * n_columns,
        "height": pixel * n_rows,
        "title": label,
        "mark": {"type": "rect", "tooltip": True},
        "encoding": {
            "x": {
                "field": "column",
                "type": "ordinal",
                "axis": hidden,
                "title": xlabel,
            },
            "y": {
                "field": "row",
                "type": "ordinal",
                "axis": hidden,
                "title": ylabel,
            },
            "color": {
                "field": "head",
                "type": "nominal",
                "scale": {"range": HEAD_COLOURS},
                "legend": None,
            },
            "opacity": {
                "field": "w",
                "type": "quantitative",
                "scale": {"range": [0.25, 1]},
                "legend": None,
            },
            "tooltip": [
                {"field": "head"},
                {"field": "row"},
                {"field": "column"},
            ],
        },
    }


def attention_explorer(examples, *, title=None, cell=20, start=None):
    """Every head's attention on a few sentences, picked with three controls.

    ``examples`` is a list of ``(tokens, weights)``, one per sentence: its
    tokens and a ``(layers, heads, n, n)`` tensor of attention weights. The
    reader picks a sentence, a layer and a head (numbered from 1) and sees that
    head's map, the tokens written on both axes, a colour scale beside it.
    ``start`` is ``(sentence, layer, head)`` to show first (the chapter's
    named heads make good starts). Weights are stored to two decimals, one
    list per map, so the page stays small. Returns an :class:`Interactive`.
    """
    if not isinstance(examples, (list, tuple)) or not examples:
        raise TypeError(
            "examples must be a non-empty list of (tokens, weights)"
        )
    maps, labels = [], []
    for index, (tokens, weights) in enumerate(examples):
        weights = _check_example(index, tokens, weights)
        layers, heads = weights.shape[:2]
        maps += _flat_maps(index, weights)
        labels += [
            {"key": f"{index}-{i}", "token": f"{i + 1} {token}"}
            for i, token in enumerate(tokens)
        ]
    spec = {
        "data": {"values": maps},
        "params": _explorer_controls(examples, layers, heads, start),
        "transform": _explorer_transform(labels),
        "width": {"step": cell},
        "height": {"step": cell},
        "mark": {"type": "rect"},
        "encoding": _explorer_encoding(),
    }
    # narrow: cells as small as the longest sentence needs to fit beside
    # its tokens (down to 10 px), the colour scale below the map
    longest = max(len(tokens) for tokens, _ in examples)
    small = max(10, min(cell, (NARROW - AXIS_ROOM - 50) // longest))
    narrow = {
        "width": {"step": small},
        "height": {"step": small},
        "encoding": {"color": {"legend": {"orient": "bottom"}}},
    }
    return _titled(
        spec, title, "every head's attention, one at a time", narrow=narrow
    )


def _check_example(index, tokens, weights):
    """``weights`` as an array, refused unless ``(layers, heads, n, n)`` for
    its ``n`` tokens."""
    weights = _array(weights)
    n = len(tokens)
    if weights.ndim != 4 or weights.shape[-2:] != (n, n):
        raise ValueError(
            f"example {index}: weights must be (layers, heads, {n}, {n}) "
            f"for its {n} tokens, got {weights.shape}"
        )
    return weights


def _flat_maps(index, weights):
    """One record per head of sentence ``index``: its ``(n, n)`` map as one
    list of ``n * n`` weights to two decimals, layer and head from 1."""
    layers, heads, n = weights.shape[:3]
    maps = []
    for layer, head in np.ndindex(layers, heads):
        flat = np.round(weights[layer, head].reshape(-1), 2).tolist()  # (n*n,)
        maps.append(
            {"s": index, "l": layer + 1, "h": head + 1, "n": n, "w": flat}
        )
    return maps


def _explorer_controls(examples, layers, heads, start):
    """Drop-downs for the sentence (named by its first words, after [CLS]),
    the layer and the head, at ``start`` or the first of each."""
    names = [" ".join(tokens[1:6]) + " ..." for tokens, _ in examples]
    sentence, layer, head = start or (0, 1, 1)
    sentences = list(range(len(examples)))
    controls = [
        _control("sentence", "sentence", sentences, "select", start=sentence),
        _control(
            "layer", "layer", list(range(1, layers + 1)), "select", start=layer
        ),
        _control(
            "head", "head", list(range(1, heads + 1)), "select", start=head
        ),
    ]
    controls[0]["bind"]["labels"] = names
    return controls


def _explorer_transform(labels):
    """The picked map, one record per cell, with its query and key tokens
    looked up in ``labels``."""
    token_of = {"data": {"values": labels}, "key": "key", "fields": ["token"]}
    picked = "datum.s == sentence && datum.l == layer && datum.h == head"
    return [
        {"filter": picked},
        {"flatten": ["w"], "as": ["weight"]},
        {"window": [{"op": "row_number", "as": "cell"}]},
        # cell c of an n x n map: query floor(c / n), key c % n
        {"calculate": "floor((datum.cell - 1) / datum.n)", "as": "q"},
        {"calculate": "(datum.cell - 1) % datum.n", "as": "k"},
        {"calculate": "datum.s + '-' + datum.q", "as": "qkey"},
        {"calculate": "datum.s + '-' + datum.k", "as": "kkey"},
        {"lookup": "qkey", "from": token_of, "as": ["query"]},
        {"lookup": "kkey", "from": token_of, "as": ["key"]},
    ]


def _explorer_encoding():
    """Key tokens across, query tokens down, in sentence order; weight as
    colour from 0 to 1."""
    return {
        "x": {
            "field": "key",
            "type": "ordinal",
            "sort": {"field": "k"},
            "title": "key token (attended to)",
            "axis": {"labelAngle": -60},
        },
        "y": {
            "field": "query",
            "type": "ordinal",
            "sort": {"field": "q"},
            "title": "query token",
        },
        "color": {
            "field": "weight",
            "type": "quantitative",
            "scale": {"scheme": "viridis", "domain": [0, 1]},
            "title": "attention",
        },
        "tooltip": [
            {"field": "query", "title": "query"},
            {"field": "key", "title": "key"},
            {"field": "weight", "format": ".2f"},
        ],
    }


def _check_records(records, fields):
    if (
        not isinstance(records, (list, tuple))
        or not records
        or not all(isinstance(r, dict) for r in records)
    ):
        raise TypeError(
            "records must be a non-empty list of dicts, one per measurement"
        )
    for field in fields:
        missing = [
            i for i, record in enumerate(records) if field not in record
        ]
        if missing:
            raise ValueError(
                f"field {field!r} is missing from record {missing[0]} "
                f"(fields: {sorted(records[0])})"
            )
    return [
        {key: _plain(value) for key, value in record.items()}
        for record in records
    ]


def _plain(value):
    """A JSON value: numpy and torch scalars become Python numbers; NaN and
    infinity are refused."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"records must hold finite numbers, got {value}")
    if not isinstance(value, (str, int, float, bool)) and value is not None:
        raise TypeError(
            "record values must be numbers or strings, got "
            f"{type(value).__name__}"
        )
    return value


def _array(values):
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float)


def _choices(records, field):
    """The values of ``field``: numbers in order, text in natural order."""
    values = {record[field] for record in records}
    numbers = all(isinstance(value, Real) for value in values)
    return sorted(values) if numbers else sorted(values, key=_natural)


def _natural(text):
    """Sort key that reads the numbers in ``text``: "2 x 16" < "16 x 2"."""
    parts = re.split(r"(\d+)", str(text))
    return [int(part) if part.isdigit() else part for part in parts]


def _tooltip(records, field):
    if all(isinstance(record[field], Real) for record in records):
        return {"field": field, "type": "quantitative", "format": ".3~g"}
    return {"field": field, "type": "nominal"}


def number_label(value):
    """A value as a reader wants to see it: ``0.01``, ``2.2e-05``, ``8``."""
    if not isinstance(value, float):
        return str(value)
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.3g}"
    return f"{value:.2g}"


def _control(name, label, choices, control, start=None):
    """A parameter bound to a drop-down or radio buttons, starting at ``start``
    or the first choice."""
    if control not in CONTROLS:
        raise ValueError(f"control must be one of {CONTROLS}, got {control!r}")
    if start is not None and start not in choices:
        raise ValueError(
            f"start must be one of the values of the field {label!r}: "
            f"{choices}, got {start!r}"
        )
    labels = [number_label(choice) for choice in choices]
    bind = {
        "input": control,
        "options": list(choices),
        "labels": labels,
        "name": f"{label} ",
    }
    return {
        "name": name,
        "value": choices[0] if start is None else start,
        "bind": bind,
    }


def _axis(records, field, label, log):
    """A quantitative axis whose range covers every record, so it stays put
    when the control moves."""
    values = [record[field] for record in records]
    if log and min(values) <= 0:
        raise ValueError(
            f"a log axis needs positive values, field {field!r} has "
            f"{min(values)}"
        )
    low = min(values) if log else min(0, min(values))
    scale = (
        {"type": "log", "domain": [low, max(values)]}
        if log
        else {"domain": [low, max(values)]}
    )
    # large counts as 20k, 3M: "20,000" and "30,000" collide on a log axis
    large = min(values) >= 1 and max(values) >= 1e4
    return {
        "field": field,
        "type": "quantitative",
        "title": label or field,
        "scale": {**scale, "nice": True},
        # a label that would touch its neighbour is left out
        "axis": {
            "format": "~s" if large else "~g",
            "labelOverlap": "greedy",
            "labelSeparation": 4,
        },
    }
