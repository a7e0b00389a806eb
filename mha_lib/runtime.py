"""What every notebook needs around its experiments: a device, and seeds."""

import os
import random

import torch

from .checks import check_int


def pick_device(prefer=None):
    """``torch.device`` to run on: ``prefer`` if given, else CUDA when present,
    else CPU.

    ``prefer`` is ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or such a
    ``torch.device``. The environment variable ``MHA_DEVICE`` (the same
    strings) overrides the automatic choice. On CUDA, TF32 matrix products are
    switched off: the chapters compare code paths at float32 precision, which
    TF32 (10 bits of mantissa) does not keep.
    """
    if prefer is not None:
        device, choice = _device("prefer", prefer), prefer
    elif os.environ.get("MHA_DEVICE"):
        choice = os.environ["MHA_DEVICE"]
        device = _device("the environment variable MHA_DEVICE", choice)
    else:
        choice = "cuda" if torch.cuda.is_available() else "cpu"
        device = torch.device(choice)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {choice!r} was requested but CUDA is not available "
                "here"
            )
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return device


def _device(name, choice):
    """``choice`` as a CPU or CUDA ``torch.device``; anything else is refused,
    since the course runs on those two only."""
    if not isinstance(choice, (str, torch.device)):
        raise TypeError(
            f"{name} must be 'cpu', 'cuda', 'cuda:N' or a torch.device, got "
            f"{type(choice).__name__} ({choice!r})"
        )
    try:
        device = torch.device(choice)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise ValueError(
            f"{name} must be 'cpu', 'cuda' or 'cuda:N' (the devices the "
            f"course runs on), got {choice!r}"
        )
    return device


def seed_everything(seed, *, deterministic=False):
    """Seed Python, NumPy (if installed) and PyTorch so a notebook run is
    repeatable.

    Random draws in the course are made on the CPU and then moved, so a seed
    gives the same numbers on every device. ``deterministic=True`` also asks
    PyTorch for deterministic kernels (slower on a GPU, where some reductions
    otherwise run in varying order).
    """
    seed = check_int("seed", seed)  # a NumPy integer becomes an int
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    if deterministic:
        # what cuBLAS needs to be deterministic (set, not read)
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    return seed
