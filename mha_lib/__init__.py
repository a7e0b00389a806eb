"""mha_lib: the shared library of *Multi-Head Attention, Answered*.

The layers need only PyTorch. Each submodule holds one idea: ``attention`` (masked softmax
attention), ``layers``, ``conversions`` (between layouts), ``counting`` (closed-form costs),
``shapes`` and ``checks`` (sizes and input checks), ``heads`` (per-head surgery: copy, remove,
measure), ``tasks``, ``model``, ``training`` and ``ensemble`` (many seeds at once),
``analysis`` (attention patterns), ``timing`` and ``memory``, ``low_rank``, ``pretrained``,
``relations`` (hand-labelled syntax, heads as classifiers) and ``plotting``. Plotting and the
pretrained loader import their extra dependencies themselves, so ``import mha_lib`` stays light.
"""

from .conversions import (
    from_torch,
    interleaved_to_stacked,
    stacked_to_interleaved,
    to_fused,
    to_per_head,
    to_torch,
)
from .counting import attention_flops, count_trainable, parameter_count
from .layers import AttentionHead, ChunkedAttention, MultiHeadAttention, PerHeadAttention
from .runtime import pick_device, seed_everything
from .shapes import resolve_heads

__all__ = [
    "AttentionHead",
    "ChunkedAttention",
    "MultiHeadAttention",
    "PerHeadAttention",
    "attention_flops",
    "count_trainable",
    "from_torch",
    "interleaved_to_stacked",
    "parameter_count",
    "pick_device",
    "resolve_heads",
    "seed_everything",
    "stacked_to_interleaved",
    "to_fused",
    "to_per_head",
    "to_torch",
]
__version__ = "0.2.0"
