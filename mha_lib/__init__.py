"""mha_lib: the shared library of *Multi-Head Attention, Answered*.

One idea per module:

- ``spec``: one description of an attention layer; its module, parameters,
  FLOPs, memory.
- ``attention``: masked softmax attention over heads, shared by every layer.
- ``stacking``: several models of one architecture run as one (parameters
  stacked).
- ``layers``: the fused, chunked and per-head attention layers.
- ``conversions``: weights between PyTorch's layer, ours and one module per
  head.
- ``counting``: parameter and FLOP counts, from the formula and on real
  modules.
- ``memory``: the activations a layer keeps for backward, formula and
  measurement.
- ``timing``: timing that a busy neighbour does not skew: CPU time on a
  CPU, wall time on a GPU.
- ``checks``: input checks with messages that say what was expected.
- ``runtime``: the device and the seeds.
- ``report``: what a chapter reports to the book (glued numbers, checked
  claims, Markdown tables).
- ``results``: the stored long runs, with their provenance and hash;
  ``stored_models``: a chapter's trained models, stored and checked by
  training a few again; ``replication``: trained claims as shares of
  seeds, and the chapters run again on new seeds.
- ``tasks``: synthetic tasks; ``model``: the small attention-only model.
- ``training``: training and evaluation, one model or many seeds together;
  ``optimizer``: Adam on the stacked parameters of many seeds.
- ``heads``: per-head weight surgery; ``ablation``: removing heads and scoring
  them.
- ``analysis``: output differences, attention distances, offset profiles.
- ``statistics``: rank correlation, intervals, the choice of a learning rate.
- ``low_rank``: the rank bound of one head's attention pattern.
- ``corpus``: the text of Chapter 7; ``language_model``: a character-level
  decoder; ``language_training``: training it, scoring it on held-out text.
- ``pretrained``: all-MiniLM-L6-v2 rebuilt from these layers.
- ``relations``: heads against syntax on a gold treebank (Clark et al. 2019).
- ``plotting`` and ``interactive``: the book's static and interactive figures.

Plotting and the pretrained loader import their extra dependencies themselves,
so ``import mha_lib`` stays light.
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
from .layers import (
    AttentionHead,
    ChunkedAttention,
    MultiHeadAttention,
    PerHeadAttention,
)
from .runtime import pick_device, seed_everything
from .spec import AttentionSpec, resolve_heads

__all__ = [
    "AttentionHead",
    "AttentionSpec",
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
__version__ = "0.3.0"
