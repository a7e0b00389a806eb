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
