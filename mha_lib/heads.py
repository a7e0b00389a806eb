"""Per-head weight surgery: each head's parameters, how far apart heads are,
copying heads.

Every fused layer offers its weights heads first (``layer.head_weights()``,
views in the paper's (in, out) order, as TransformerLens stores them); the
functions here work on those.
"""

import torch

from .checks import check_instance
from .layers import ChunkedAttention, MultiHeadAttention


def _own_blocks(layer):
    """Every tensor of a layer that belongs to single heads, each ``(num_heads,
    ...)``."""
    check_instance(
        layer, (MultiHeadAttention, ChunkedAttention), "per-head parameters"
    )
    if layer.num_kv_heads != layer.num_heads:
        raise ValueError(
            "per-head parameters need num_kv_heads == num_heads "
            "(no shared key/value heads)"
        )
    return [block for block in layer.head_weights() if block is not None]


def head_parameters(layer):
    """All of each head's own parameters as one row: ``(num_heads, parameters
    per head)``, or ``(members, num_heads, ...)`` for a stacked layer.

    The output bias is shared by all heads and not included. Returns a detached
    copy.
    """
    blocks = _own_blocks(layer)
    lead = blocks[0].shape[: blocks[0].dim() - 3]  # (members,) if stacked
    rows = [b.detach().reshape(*lead, layer.num_heads, -1) for b in blocks]
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
    targets = range(layer.num_heads) if targets is None else targets
    for index in (source, *targets):
        valid = isinstance(index, int) and not isinstance(index, bool)
        if not valid or not 0 <= index < layer.num_heads:
            raise ValueError(
                "source and targets must be head indices in [0, "
                f"{layer.num_heads}), "
                f"got {index!r}"
            )
    with torch.no_grad():
        for block in blocks:
            for target in targets:
                block[target] = block[source]
    return layer
