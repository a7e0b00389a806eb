"""Input checks shared by the library: every bad argument gets a message that
says what was wrong and what was expected."""

import math
import numbers

import torch


def check_int(name, value):
    """Raise ``TypeError`` unless ``value`` is an integer (a NumPy integer is
    one, ``bool`` is not); returns it as a Python ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} ({value!r})"
        )
    return int(value)


def check_positive_int(name, value):
    """Raise unless ``value`` is an int > 0; returns it."""
    value = check_int(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return value


def check_bool(name, value):
    """Raise unless ``value`` is True or False ("False" would read as true)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_positive_number(name, value):
    """Raise unless ``value`` is a finite real number > 0 (``bool`` is
    refused); returns it as a ``float``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} ({value!r})"
        )
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"{name} must be a positive, finite number, got {value!r}"
        )
    return float(value)


def check_probability(name, value):
    """Raise unless ``value`` is a real number in ``[0, 1)``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} ({value!r})"
        )
    if not 0 <= value < 1:
        raise ValueError(
            f"{name} must be a probability in [0, 1), got {value}"
        )
    return value


def check_tensor(name, value):
    """Raise ``TypeError`` unless ``value`` is a tensor; returns it."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(value).__name__}")
    return value


def check_shape(name, value, **sizes):
    """Raise unless ``value`` has the shape ``sizes`` (``num_heads=8``)."""
    if tuple(check_tensor(name, value).shape) != tuple(sizes.values()):
        raise ValueError(
            f"{name} must have shape ({', '.join(sizes)}) = "
            f"{tuple(sizes.values())}, got {tuple(value.shape)}"
        )
    return value


def check_instance(value, expected, caller):
    """Raise ``TypeError`` unless ``value`` is an ``expected`` (a class or a
    tuple of classes)."""
    if not isinstance(value, expected):
        classes = expected if isinstance(expected, tuple) else (expected,)
        names = " or ".join(
            f"{_home(cls)}.{cls.__qualname__}" for cls in classes
        )
        raise TypeError(
            f"{caller} expects {names}, got {type(value).__name__}"
        )
    return value


def _home(cls):
    """Where a reader imports ``cls`` from: ``torch.nn`` or the top-level
    package."""
    return (
        "torch.nn"
        if cls.__module__.startswith("torch.nn")
        else cls.__module__.split(".")[0]
    )
