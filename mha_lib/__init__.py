"""mha_lib: the shared library of *Multi-Head Attention, Answered*.

The core, one idea per module, imports nothing of the course:

- ``spec``: one description of an attention layer; its parameters, FLOPs,
  activations.
- ``attention``: masked softmax attention over heads, shared by every layer.
- ``layers``: the fused, chunked and per-head attention layers.
- ``conversions``: weights between PyTorch's layer, ours and one module per
  head.
- ``counting``: parameter and FLOP counts, from the formula and on real
  modules.
- ``heads``: per-head weight surgery.
- ``checks``: input checks with messages that say what was expected.
- ``runtime``: the device and the seeds, and a context that puts back the
  process-wide settings they change.

The course's machinery, which the chapters import, is :mod:`mha_lib.course`:

- ``tasks``: synthetic tasks; ``model``: the small attention-only model.
- ``training``: training and evaluation, one model or many seeds together;
  ``stacking``: several models of one architecture run as one;
  ``optimizer``: Adam on the stacked parameters of many seeds.
- ``results``: the stored long runs, with their provenance and hash;
  ``stored_models``: a chapter's trained models, stored and checked by
  training a few again; ``replication``: trained claims as shares of seeds.
- ``report``: what a chapter reports to the book (glued numbers, checked
  claims, Markdown tables).
- ``ablation``: removing heads and scoring them; ``analysis``: output
  differences, attention distances, offset profiles; ``statistics``: rank
  correlation, intervals, the choice of a learning rate; ``low_rank``: the
  rank bound of one head's attention pattern.
- ``memory``: the activations a layer keeps for backward, measured;
  ``timing``: timing that a busy neighbour does not skew.
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
    layer_for,
)
from .runtime import pick_device, restored_settings, seed_everything
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
    "layer_for",
    "parameter_count",
    "pick_device",
    "resolve_heads",
    "restored_settings",
    "seed_everything",
    "stacked_to_interleaved",
    "to_fused",
    "to_per_head",
    "to_torch",
]
__version__ = "0.5.0.dev0"  # between releases, the next one (CHANGELOG.md)
