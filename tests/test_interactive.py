"""mha_lib.course.interactive: the Vega-Lite specifications, their data and
their controls, and bad input.

The browser test (tests/test_browser.py) moves the controls of the built
figures.
"""

import json

import numpy as np
import pytest
import torch

import mha_lib
from mha_lib.course.interactive import (
    MIMETYPE,
    NARROW,
    Interactive,
    attention_by_head_count,
    attention_explorer,
    overlaid,
    ownership_by_head_count,
    records_chart,
)

RECORDS = [
    {"task": "copy", "variant": "standard", "cost": 1.0, "loss": 0.5},
    {"task": "copy", "variant": "wide", "cost": 8.0, "loss": 0.4},
    {"task": "sort", "variant": "standard", "cost": 1.0, "loss": 1.5},
    {"task": "sort", "variant": "wide", "cost": 8.0, "loss": 1.2},
]


def test_records_chart_filters_by_the_control_and_keeps_one_y_range():
    figure = records_chart(
        RECORDS, x="cost", y="loss", color="variant", select="task"
    )
    spec = figure.spec
    assert figure.controls == ["pick"]
    (param,) = spec["params"]
    assert (
        param["bind"]["options"] == ["copy", "sort"]
        and param["value"] == "copy"
    )
    assert spec["transform"] == [{"filter": 'datum["task"] == pick'}]
    assert spec["data"]["values"] == RECORDS
    assert spec["encoding"]["y"]["scale"]["domain"] == [0, 1.5], (
        "the y range must cover every task"
    )
    assert spec["encoding"]["color"]["field"] == "variant"
    bundle = figure._repr_mimebundle_()
    assert (
        json.loads(json.dumps(bundle[MIMETYPE])) == spec
        and "text/plain" in bundle
    )


def test_records_chart_keeps_colours_and_reads_numbers_in_labels():
    records = [
        {"task": task, "layer": layer, "params": params, "loss": 0.0123456}
        for task, layers in (("a", ["16 x 2", "2 x 16"]), ("b", ["4 x 8"]))
        for layer in layers
        for params in (2_000, 30_000)
    ]
    spec = records_chart(
        records, x="params", y="loss", color="layer", select="task", logx=True
    ).spec
    colour = spec["encoding"]["color"]
    # every layer in the domain, in natural order, whatever the control picks
    assert colour["scale"]["domain"] == ["2 x 16", "4 x 8", "16 x 2"]
    assert colour["sort"] == colour["scale"]["domain"]
    tooltips = {t["field"]: t for t in spec["encoding"]["tooltip"]}
    assert tooltips["loss"]["format"] == ".3~g"
    assert "format" not in tooltips["layer"]
    assert spec["encoding"]["x"]["axis"]["format"] == "~s", "20k, not 20,000"
    assert spec["encoding"]["y"]["axis"]["format"] == "~g"
    marker = records_chart(
        records,
        x="params",
        y="loss",
        color="task",
        shape="layer",
        select="task",
        mark="point",
    ).spec["encoding"]["shape"]
    assert marker["scale"]["domain"] == ["2 x 16", "4 x 8", "16 x 2"]


def test_records_chart_accepts_numpy_and_torch_scalars_and_a_start_value():
    records = [
        {"c": np.float64(c), "h": torch.tensor(2), "gap": np.float32(0.5)}
        for c in (0.1, 0.01)
    ]
    figure = records_chart(
        records, x="h", y="gap", select="c", start=0.1, control="radio"
    )
    assert figure.spec["params"][0]["value"] == 0.1
    assert figure.spec["params"][0]["bind"]["input"] == "radio"
    assert figure.spec["params"][0]["bind"]["labels"] == ["0.01", "0.1"]
    json.dumps(figure.spec, allow_nan=False)


@pytest.mark.parametrize(
    ("records", "options", "error", "match"),
    [
        ([], {}, TypeError, "non-empty list of dicts"),
        ([{"cost": 1, "loss": 1}], {}, ValueError, "field 'task' is missing"),
        (
            [{"cost": "a", "loss": 1, "task": "x"}],
            {},
            TypeError,
            "not a number",
        ),
        (
            [{"cost": 1, "loss": float("nan"), "task": "x"}],
            {},
            ValueError,
            "finite",
        ),
        (
            [{"cost": 1, "loss": 1, "task": "x"}],
            {"mark": "pie"},
            ValueError,
            "mark must be one of",
        ),
        (
            [{"cost": 1, "loss": 1, "task": "x"}],
            {"control": "slider"},
            ValueError,
            "control must be one of",
        ),
        (
            [{"cost": 1, "loss": 1, "task": "x"}],
            {"start": "y"},
            ValueError,
            "start must be one of",
        ),
        (
            [{"cost": 1, "loss": 0, "task": "x"}],
            {"logy": True},
            ValueError,
            "log axis needs positive",
        ),
    ],
)
def test_records_chart_rejects_bad_input(records, options, error, match):
    with pytest.raises(error, match=match):
        records_chart(records, x="cost", y="loss", select="task", **options)


def test_attention_by_head_count_holds_every_map_and_every_bar():
    maps = {h: torch.softmax(torch.randn(h, 5, 5), -1) for h in (1, 2, 4)}
    moved = {h: torch.rand(5) for h in (1, 2, 4)}
    figure = attention_by_head_count(maps, moved)
    bars, heatmaps = figure.spec["vconcat"]
    assert figure.controls == ["h"] and figure.spec["params"][0]["bind"][
        "options"
    ] == [1, 2, 4]
    assert len(heatmaps["data"]["values"]) == (1 + 2 + 4) * 5 * 5
    assert len(bars["data"]["values"]) == 3 * 5
    assert (
        heatmaps["transform"]
        == bars["transform"]
        == [{"filter": "datum.h == h"}]
    )
    assert isinstance(figure, Interactive)


def test_attention_by_head_count_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="same head counts"):
        attention_by_head_count({1: np.ones((1, 3, 3))}, {2: np.ones(3)})
    with pytest.raises(ValueError, match=r"for h = 2 expected attention"):
        attention_by_head_count({2: np.ones((1, 3, 3))}, {2: np.ones(3)})
    with pytest.raises(TypeError, match="non-empty dicts"):
        attention_by_head_count([], {})


def test_ownership_by_head_count_keeps_the_weights_and_recolours_by_head():
    layer = mha_lib.MultiHeadAttention(12, 1)
    figure = ownership_by_head_count(layer, [1, 2, 3, 4])
    rows = figure.spec["data"]["values"]
    assert [row["part"] for row in rows].count("in") == 3 * 12 and [
        row["part"] for row in rows
    ].count("out") == 12
    assert all(len(row["w"]) == 12 for row in rows), "one magnitude per weight"
    assert max(max(row["w"]) for row in rows) == 1.0
    assert figure.controls == ["h"] and figure.spec["params"][0]["value"] == 4
    with pytest.raises(ValueError, match="divisors of the layer's width 12"):
        ownership_by_head_count(layer, [5])
    with pytest.raises(TypeError, match="q_proj, k_proj, v_proj and out_proj"):
        ownership_by_head_count(torch.nn.Linear(3, 3), [1])


def test_overlaid_lays_dicts_key_by_key_and_lists_item_by_item():
    spec = {"width": 420, "vconcat": [{"width": 480}, {"columns": 4}], "x": 1}
    changes = {"width": 268, "vconcat": [{"width": 240}, {"columns": 2}]}
    assert overlaid(spec, changes) == {
        "width": 268,
        "vconcat": [{"width": 240}, {"columns": 2}],
        "x": 1,
    }
    assert spec["width"] == 420, "the spec is left as it was"
    assert overlaid({"legend": {"a": 1}}, {"legend": None}) == {"legend": None}
    with pytest.raises(ValueError, match="must list 2"):
        overlaid({"v": [1, 2]}, {"v": [1]})


def test_every_figure_has_a_narrow_layout_without_words():
    """Each narrow layout is laid over its figure (the page does the same,
    book/_static/interactive.js) and changes only numbers and places: no
    word a translation would miss."""
    maps = {h: torch.softmax(torch.randn(h, 5, 5), -1) for h in (1, 2, 4, 8)}
    moved = {h: torch.rand(5) for h in maps}
    tokens = [f"t{i}" for i in range(12)]
    figures = {
        "records": records_chart(
            RECORDS, x="cost", y="loss", color="variant", select="task"
        ),
        "maps": attention_by_head_count(maps, moved),
        "weights": ownership_by_head_count(
            mha_lib.MultiHeadAttention(12, 1), [1, 2, 3, 4]
        ),
        "explorer": attention_explorer(
            [(tokens, torch.rand(2, 3, 12, 12))], cell=20
        ),
    }
    narrow = {
        name: overlaid(f.spec, f.spec["usermeta"]["narrow"])
        for name, f in figures.items()
    }
    assert narrow["records"]["width"] <= NARROW - 60
    assert narrow["records"]["encoding"]["color"]["legend"]["orient"] == (
        "bottom"
    )
    bars, heatmaps = narrow["maps"]["vconcat"]
    assert heatmaps["columns"] == 2 and bars["width"] == 2 * 120
    assert heatmaps["spec"] == figures["maps"].spec["vconcat"][1]["spec"]
    assert narrow["weights"]["columns"] == 1
    step = narrow["explorer"]["width"]["step"]
    assert step < 20 and 12 * step <= NARROW - 120
    for figure in figures.values():
        words = json.dumps(figure.spec["usermeta"]["narrow"])
        assert "title" not in words and "label" not in words, words
