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


def test_heatmaps_draw_and_check_their_input():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from mha_lib.plotting import heatmap, matrix_grid

    ax = heatmap(torch.rand(3, 5), xticks=list("abcde"), yticks=([0, 2], ["x", "z"]), title="t")
    assert [label.get_text() for label in ax.get_xticklabels()] == list("abcde")
    assert len(ax.figure.axes) == 2, "the colourbar is missing"
    figure = matrix_grid(torch.rand(2, 2, 3, 3), colorbar=True)
    assert len(figure.axes) == 5
    with pytest.raises(ValueError, match="2-D"):
        heatmap(torch.rand(2, 2, 2))
    with pytest.raises(ValueError, match="4-D"):
        matrix_grid(torch.rand(2, 3, 3))
