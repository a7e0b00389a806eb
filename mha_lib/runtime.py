"""What every notebook needs around its experiments: a device, and seeds.

Both change settings of the whole process (TF32, deterministic kernels), as a
notebook wants; :func:`restored_settings` puts them back for code that shares
the process.
"""

import contextlib
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
    switched off for the whole process, the caller's own code included: the
    chapters compare code paths at float32 precision, which TF32 (10 bits of
    mantissa) does not keep. Call it inside :func:`restored_settings` to
    have them back afterwards.
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
    otherwise run in varying order), for the whole process and until
    changed: it sets ``CUBLAS_WORKSPACE_CONFIG``, turns on
    ``torch.use_deterministic_algorithms`` (an operation with no
    deterministic kernel then raises) and turns off cuDNN's benchmark mode.
    Call it inside :func:`restored_settings` to have them back afterwards.
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


@contextlib.contextmanager
def restored_settings():
    """Context that puts back, on leaving, the process-wide settings that
    :func:`pick_device` and :func:`seed_everything` change: TF32 for matrix
    products and cuDNN, deterministic algorithms (and their warn-only mode),
    cuDNN's benchmark and deterministic flags, ``CUBLAS_WORKSPACE_CONFIG``.

    The random generators are not put back: seeding is what was asked for.
    cuBLAS reads its variable when CUDA starts, so a run that starts CUDA
    inside keeps the workspace it chose.
    """
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    flags = (
        matmul.allow_tf32,  # the flag pick_device sets, read the same way
        cudnn.allow_tf32,
        cudnn.benchmark,
        cudnn.deterministic,
    )
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    workspace = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    try:
        yield
    finally:
        (
            matmul.allow_tf32,
            cudnn.allow_tf32,
            cudnn.benchmark,
            cudnn.deterministic,
        ) = flags
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        if workspace is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = workspace
