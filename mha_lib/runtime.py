"""What every notebook needs around its experiments: a device, and seeds."""

import os
import random
import warnings

import torch

from .checks import check_int


def pick_device(prefer=None):
    """``torch.device`` to run on: ``prefer`` if given, else CUDA when present,
    else CPU.

    The environment variable ``MHA_DEVICE`` (``cpu``/``cuda``) overrides the
    automatic choice. On CUDA, TF32 matrix products are switched off: the
    chapters compare code paths at float32 precision, which TF32 (10 bits of
    mantissa) does not keep.
    """
    choice = prefer or os.environ.get("MHA_DEVICE")
    if choice is None:
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
        if os.environ.get("NVIDIA_TF32_OVERRIDE") == "1":
            warnings.warn(
                "NVIDIA_TF32_OVERRIDE=1 forces TF32 matrix products, which "
                "PyTorch cannot "
                "switch off; the chapters' float32 comparisons may fail. "
                "Unset it.",
                stacklevel=2,
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
    check_int("seed", seed)
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    return seed
