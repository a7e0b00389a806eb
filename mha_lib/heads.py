"""Per-head weight surgery: each head's parameters, how far apart heads are,
copying heads.

Every fused layer offers its weights heads first (``layer.head_weights()``,
views in the paper's (in, out) order, as TransformerLens stores them); the
functions here work on those.
"""

from typing import NamedTuple, Optional

import torch


class HeadWeights(NamedTuple):
    """A layer's weights with the heads first, in the paper's (in, out) order.

    ``W_Q``, ``W_K``: ``(heads, reads, head_dim)``; ``W_V``: ``(heads, reads,
    value_dim)``; ``W_O``: ``(heads, value_dim, d_model)``; biases ``(heads,
    size)`` or ``None``. ``reads`` is ``d_model``, or the chunk size of a
    chunked layer. Key and value weights have ``num_kv_heads`` heads. These are
    views: writing into them changes the layer.
    """

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    b_Q: Optional[torch.Tensor]
    b_K: Optional[torch.Tensor]
    b_V: Optional[torch.Tensor]


def head_weights(layer):
    """The weights of a :class:`~mha_lib.layers.MultiHeadAttention` or
    :class:`~mha_lib.layers.ChunkedAttention`, heads first: a
    :class:`HeadWeights` of views."""
    parts = ("spec", "q_proj", "k_proj", "v_proj", "out_proj")
    if not all(hasattr(layer, part) for part in parts):
        raise TypeError(
            "head_weights expects mha_lib.MultiHeadAttention or "
            f"mha_lib.ChunkedAttention, got {type(layer).__name__}"
        )
    heads, kv_heads = layer.spec.num_heads, layer.spec.num_kv_heads
    projections = layer.q_proj, layer.k_proj, layer.v_proj
    known = {
        id(parameter)
        for projection in (*projections, layer.out_proj)
        for parameter in projection.parameters()
    }
    others = [n for n, p in layer.named_parameters() if id(p) not in known]
    if others:  # copying or comparing heads would leave them behind
        raise TypeError(
            "head_weights knows a layer's four projections; this "
            f"{type(layer).__name__} also holds {others}, which per-head "
            "surgery would leave behind"
        )
    counts = heads, kv_heads, kv_heads
    if layer.spec.chunked:  # (heads, out, in) -> (heads, in, out)
        weights = [p.weight.transpose(-2, -1) for p in projections]
        biases = [p.bias for p in projections]  # (heads, chunk) or None
    else:  # (count * size, d) -> (count, d, size)
        weights = [
            p.weight.unflatten(-2, (count, -1)).transpose(-2, -1)
            for p, count in zip(projections, counts)
        ]
        biases = [  # (count * size,) -> (count, size)
            None if p.bias is None else p.bias.unflatten(-1, (count, -1))
            for p, count in zip(projections, counts)
        ]
    # W_O is (d_model, heads * value_dim): head i owns a block of columns
    w_o = layer.out_proj.weight.unflatten(-1, (heads, -1)).movedim(-3, -1)
    return HeadWeights(*weights, w_o, *biases)


def _own_blocks(layer):
    """Every tensor of a layer that belongs to single heads, each ``(num_heads,
    ...)``."""
    blocks = head_weights(layer)
    if layer.spec.num_kv_heads != layer.spec.num_heads:
        raise ValueError(
            "per-head parameters need num_kv_heads == num_heads "
            "(no shared key/value heads)"
        )
    return [block for block in blocks if block is not None]


def head_parameters(layer):
    """All of each head's own parameters as one row: ``(num_heads, parameters
    per head)``, or ``(members, num_heads, ...)`` for a stacked layer.

    The output bias is shared by all heads and not included. Returns a detached
    copy.
    """
    blocks = _own_blocks(layer)
    lead = blocks[0].shape[: blocks[0].dim() - 3]  # (members,) if stacked
    rows = [
        b.detach().reshape(*lead, layer.spec.num_heads, -1) for b in blocks
    ]
    return torch.cat(rows, dim=-1)


def head_spread(layer):
    """How different a layer's heads are: RMS distance of each head's
    parameters from the heads' mean, relative to the RMS size of a head's
    parameters. 0 means identical heads. A float; for a stacked layer one
    value per member, ``(members,)``."""
    params = head_parameters(layer)  # (..., heads, parameters per head)
    centred = params - params.mean(-2, keepdim=True)
    distance = centred.pow(2).sum(-1).mean(-1).sqrt()
    spread = distance / params.pow(2).sum(-1).mean(-1).sqrt()
    return spread.item() if spread.dim() == 0 else spread


def copy_head(layer, source=0, targets=None):
    """Give heads ``targets`` (default: every head) the weights of head
    ``source``, in place.

    Returns ``layer``. Identical heads receive identical gradients, so they
    stay identical.
    """
    blocks = _own_blocks(layer)
    targets = range(layer.spec.num_heads) if targets is None else targets
    for index in (source, *targets):
        valid = isinstance(index, int) and not isinstance(index, bool)
        if not valid or not 0 <= index < layer.spec.num_heads:
            raise ValueError(
                "source and targets must be head indices in [0, "
                f"{layer.spec.num_heads}), "
                f"got {index!r}"
            )
    with torch.no_grad():
        for block in blocks:
            for target in targets:
                block[target] = block[source]
    return layer
