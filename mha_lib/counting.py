"""Counting what a layer costs: from the formula, and on real modules (Chapter
1).

The formulas belong to :class:`~mha_lib.spec.AttentionSpec`;
:func:`parameter_count` and :func:`attention_flops` read them for a layer given
by its sizes. :func:`count_trainable` and :func:`counted_flops` measure real
modules, so the formulas can be checked against them.
"""

from torch import nn

from .spec import AttentionSpec


def count_trainable(module):
    """Count the trainable parameters of a real module."""
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"module must be a torch.nn.Module, got {type(module).__name__}"
        )
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def parameter_count(d_model, num_heads, **sizes):
    """Trainable parameters of the attention layer with these sizes, from the
    formula.

    ``sizes`` are the other fields of :class:`~mha_lib.spec.AttentionSpec`
    (``head_dim``, ``value_dim``, ``num_kv_heads``, ``bias``, ``chunked``).
    Query and output projections each hold ``d_model * num_heads * head_dim``
    weights; key and value projections ``d_model * num_kv_heads * head_dim``
    each. For the standard layer (``head_dim = d_model / num_heads``, no
    sharing) this is ``4 d^2 + 4 d`` whatever ``num_heads``; ``chunked=True``
    gives ``3 d^2 / h + d^2 + 4 d``.
    """
    return AttentionSpec(d_model, num_heads, **sizes).parameter_count()


def attention_flops(d_model, num_heads, n_query, n_key=None, **sizes):
    """Multiply-add FLOPs (2 per multiply-add) of one forward pass over one
    sequence.

    A dict with ``projections``, ``scores`` (Q K^T), ``mixing`` (weights @ V)
    and ``total``; see :meth:`AttentionSpec.flops
    <mha_lib.spec.AttentionSpec.flops>`. ``sizes`` as in
    :func:`parameter_count`.
    """
    return AttentionSpec(d_model, num_heads, **sizes).flops(n_query, n_key)


def counted_flops(module, *inputs, **options):
    """FLOPs of the matrix products one call ``module(*inputs, **options)``
    really runs, counted by PyTorch's ``FlopCounterMode`` (softmax and
    additions are not counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        module(*inputs, **options)
    return counter.get_total_flops()
