"""Device choice and seeding for notebooks (every chapter's first cell)."""

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
