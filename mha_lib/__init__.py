"""mha_lib: the shared library of *Multi-Head Attention, Answered*.

The layers need only PyTorch. Submodules hold the rest, one idea each: ``tasks``, ``model``,
``training`` and ``analysis`` (Chapters 4-6), ``memory`` and ``low_rank`` (Chapter 5),
``pretrained`` (Chapter 6), ``plotting`` and ``timing``. Plotting and the pretrained loader
import their extra dependencies themselves, so ``import mha_lib`` stays light.
"""

from .conversions import (
    from_torch,
    interleaved_to_stacked,
    merge_heads,
    split_heads,
    stacked_to_interleaved,
    to_torch,
)
from .counting import attention_flops, count_parameters, parameter_count
from .layers import AttentionHead, MultiHeadAttention, PerHeadAttention
from .runtime import pick_device, seed_everything
from .shapes import resolve_heads

__all__ = [
    "AttentionHead",
    "MultiHeadAttention",
    "PerHeadAttention",
    "attention_flops",
    "count_parameters",
    "from_torch",
    "interleaved_to_stacked",
    "merge_heads",
    "parameter_count",
    "pick_device",
    "resolve_heads",
    "seed_everything",
    "split_heads",
    "stacked_to_interleaved",
    "to_torch",
]
__version__ = "0.1.0"
