"""What every notebook needs around its experiments: a device, seeds, and numbers for the book."""

import os
import random

import torch

from .checks import check_int


def pick_device(prefer=None):
    """``torch.device`` to run on: ``prefer`` if given, else CUDA when present, else CPU.

    The environment variable ``MHA_DEVICE`` (``cpu``/``cuda``) overrides the automatic choice.
    """
    choice = prefer or os.environ.get("MHA_DEVICE")
    if choice is None:
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(choice)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {choice!r} was requested but CUDA is not available here")
    return device


def seed_everything(seed):
    """Seed Python, NumPy (if installed) and PyTorch so a notebook run is repeatable."""
    check_int("seed", seed)
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    return seed


def glue(name, value, display=False):
    """Hand ``value`` to the book's pages under ``name`` (myst-nb's glue) and return it.

    The answers page pastes these values, so its numbers come from the notebooks. Where myst-nb
    is not installed (Colab, a bare Jupyter) there is no book to hand them to, and this does nothing.
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return value
    myst_glue(name, value, display=display)
    return value
