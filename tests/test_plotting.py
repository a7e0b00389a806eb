"""Every figure helper draws."""

import pytest
import torch


def test_figures_draw():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from mha_lib.plotting import attention_grid, learning_curves

    history = {"step": [0, 1, 2], "loss": [1.0, 0.5, 0.25]}
    ax = learning_curves({"a": [history, history]})
    assert len(ax.lines) == 1
    figure = attention_grid(torch.rand(2, 3, 4, 4), row_labels=["x", "y"], column_labels=list("abc"))
    assert len(figure.axes) == 6


def test_quality_vs_cost_draws_one_point_per_layer_and_a_table_renders():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from mha_lib.plotting import markdown_table, quality_vs_cost

    records = [
        dict(kind=kind, heads=heads, head_size=size, params=params, flops=10 * params, loss=loss)
        for kind, heads, size, params in (("standard", 4, 8, 100), ("wide", 4, 32, 400), ("other", 4, 16, 200))
        for loss in (0.1, 0.2, 0.3)
    ]
    axes = quality_vs_cost(records)
    assert len(axes) == 2
    points = [line for line in axes[0].lines if line.get_linestyle() == "None" and len(line.get_xdata()) == 1]
    medians = [line.get_ydata()[0] for line in points]
    assert medians == pytest.approx([0.2, 0.2, 0.2]), "one median point per layer"
    table = markdown_table(["a", "b"], [[1, 2], [3, 4]]).data
    assert table.splitlines() == ["| a | b |", "|---|---|", "| 1 | 2 |", "| 3 | 4 |"]
