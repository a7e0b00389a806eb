"""Figures shared by the chapters. Imports matplotlib itself, so ``import mha_lib`` stays light."""

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter


def line_chart(series, *, xlabel, ylabel, title=None, logx=False, logy=False, ax=None, markers=None):
    """Plot ``{label: (x, y)}`` as lines with markers; ``markers`` adds ``{label: (x, y)}`` as dots.

    Returns the axes. Used by every chapter's "quantity vs number of heads" figures.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, (x, y) in series.items():
        ax.plot(x, y, marker="o", markersize=4, label=label)
    for label, (x, y) in (markers or {}).items():
        ax.plot(x, y, linestyle="none", marker="x", markersize=9, color="black", label=label)
    if logx:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(frameon=False)
    return ax
