"""Moving weights between layouts: PyTorch's fused layer, ours, and one module
per head (Chapter 2).

PyTorch stores a Linear weight as (out_features, in_features) and stacks the
query, key and value projections row-wise in ``in_proj_weight``: rows [q; k;
v], each ``d_model`` rows, and inside each, head i owns rows
``i*head_dim:(i+1)*head_dim``. The output projection's head i block is the
*columns* ``i*head_dim:(i+1)*head_dim`` of ``out_proj.weight``.

Every conversion keeps the function: the logits' scale, the attention dropout
and the training mode go across with the weights, or the conversion is
refused.
"""

import math

import torch
from torch import nn

from .attention import default_scale
from .checks import check_instance, check_positive_int, check_tensor
from .layers import MultiHeadAttention, PerHeadAttention


def _check_plain(layer, caller):
    """Refuse a chunked layer and one whose weights are stacked for several
    seeds: their weights have other shapes."""
    if layer.spec.chunked:
        raise ValueError(
            f"{caller} needs a layer whose heads read the whole input; a "
            "chunked layer's heads read one chunk each"
        )
    if not isinstance(layer.q_proj, nn.Linear):
        raise TypeError(
            f"{caller} needs one layer, and this one holds several seeds' "
            "weights stacked; unstack them into single models first"
        )


def _check_carried(source, carried, caller):
    """Refuse ``source`` where its ``state_dict`` holds a tensor that is not
    among ``carried`` (the tensors the conversion copies): a parameter a
    subclass or a new kind added, say a gate per head, would otherwise be
    dropped without a word."""
    carried = {id(tensor) for tensor in carried}
    left = [
        name
        for name, tensor in source.state_dict(keep_vars=True).items()
        if id(tensor) not in carried
    ]
    if left:
        raise ValueError(
            f"{caller} would drop {left} of this "
            f"{type(source).__name__}: it carries only the weights of "
            f"{caller}'s layers (query, key, value and output projections); "
            "convert a layer with more parameters by hand, or teach the "
            "conversion its parameters (mha_lib/conversions.py)"
        )


def _copy(target, source):
    with torch.no_grad():
        target.copy_(source)


def _like(target, source):
    """``target`` on ``source``'s device and dtype, in its training mode (the
    mode decides whether dropout acts)."""
    weight = next(source.parameters())
    return target.to(weight.device, weight.dtype).train(source.training)


def from_torch(torch_mha):
    """``nn.MultiheadAttention`` -> ``MultiHeadAttention`` computing the same
    outputs, with the same dropout.

    Our layers are batch-first, so the torch layer must be too. Layers with
    ``kdim``/``vdim`` different from ``embed_dim``, ``add_bias_kv`` or
    ``add_zero_attn`` are refused.
    """
    check_instance(torch_mha, nn.MultiheadAttention, "from_torch")
    if not torch_mha._qkv_same_embed_dim:
        raise ValueError(
            "from_torch supports only kdim == vdim == embed_dim (one stacked "
            "in_proj_weight)"
        )
    if torch_mha.bias_k is not None or torch_mha.add_zero_attn:
        raise ValueError(
            "from_torch does not support add_bias_kv or add_zero_attn"
        )
    if not torch_mha.batch_first:
        raise ValueError(
            "from_torch needs a torch layer built with batch_first=True: "
            "mha_lib's layers read (batch, seq, d_model) and this one reads "
            "(seq, batch, d_model), so the converted layer would compute "
            "something else on the same tensor. Build "
            "nn.MultiheadAttention(..., batch_first=True) and load this "
            "layer's state_dict into it (the weights do not depend on the "
            "layout), or transpose your inputs with .transpose(0, 1)"
        )
    d_model, has_bias = torch_mha.embed_dim, torch_mha.in_proj_bias is not None
    weight = torch_mha.in_proj_weight
    _check_carried(
        torch_mha,
        [
            weight,
            torch_mha.in_proj_bias,
            torch_mha.out_proj.weight,
            torch_mha.out_proj.bias,
        ],
        "from_torch",
    )
    layer = MultiHeadAttention(
        d_model, torch_mha.num_heads, bias=has_bias, dropout=torch_mha.dropout
    )
    layer = _like(layer, torch_mha)
    projections = (layer.q_proj, layer.k_proj, layer.v_proj)
    for proj, rows in zip(
        projections, weight.chunk(3, dim=0)
    ):  # rows [q; k; v], each (d, d)
        _copy(proj.weight, rows)
    if has_bias:
        for proj, part in zip(projections, torch_mha.in_proj_bias.chunk(3)):
            _copy(proj.bias, part)
        _copy(layer.out_proj.bias, torch_mha.out_proj.bias)
    _copy(layer.out_proj.weight, torch_mha.out_proj.weight)
    return layer


def to_torch(layer):
    """``MultiHeadAttention`` (standard, no GQA, the default scale) ->
    ``nn.MultiheadAttention(batch_first=True)`` with the same dropout."""
    check_instance(layer, MultiHeadAttention, "to_torch")
    _check_plain(layer, "to_torch")
    standard = layer.spec.kind == "standard"
    if not standard or layer.spec.num_kv_heads != layer.spec.num_heads:
        raise ValueError(
            "nn.MultiheadAttention holds only the standard layer (num_heads * "
            "head_dim == d_model, "
            f"num_kv_heads == num_heads); got {layer.spec.sizes}"
        )
    torch_scale = default_scale(layer.spec.head_dim)
    if not math.isclose(layer.spec.logit_scale, torch_scale):
        raise ValueError(
            "nn.MultiheadAttention always scales the logits by 1 / "
            f"sqrt(head_dim) = {torch_scale:.6g}, and this layer uses "
            f"scale={layer.spec.logit_scale:.6g}, so torch's layer would "
            "compute another function. Keep the mha_lib layer, or fold the "
            "scale into the queries first: multiply q_proj's weight and bias "
            "by scale * sqrt(head_dim) in a layer built with scale=None"
        )
    projections = (layer.q_proj, layer.k_proj, layer.v_proj, layer.out_proj)
    _check_carried(
        layer,
        [t for p in projections for t in (p.weight, p.bias)],
        "to_torch",
    )
    has_bias = layer.q_proj.bias is not None
    torch_mha = nn.MultiheadAttention(
        layer.spec.d_model,
        layer.spec.num_heads,
        dropout=layer.spec.dropout,
        bias=has_bias,
        batch_first=True,
    )
    torch_mha = _like(torch_mha, layer)
    projections = (layer.q_proj, layer.k_proj, layer.v_proj)
    # (3d, d)
    _copy(torch_mha.in_proj_weight, torch.cat([p.weight for p in projections]))
    _copy(torch_mha.out_proj.weight, layer.out_proj.weight)
    if has_bias:
        _copy(torch_mha.in_proj_bias, torch.cat([p.bias for p in projections]))
        _copy(torch_mha.out_proj.bias, layer.out_proj.bias)
    return torch_mha


def to_per_head(layer):
    """``MultiHeadAttention`` -> ``PerHeadAttention`` whose head i holds the
    i-th weight blocks."""
    check_instance(layer, MultiHeadAttention, "to_per_head")
    _check_plain(layer, "to_per_head")
    if layer.spec.num_kv_heads != layer.spec.num_heads:
        raise ValueError(
            "to_per_head needs one key/value head per query head; this layer "
            f"shares {layer.spec.num_kv_heads} key/value heads among "
            f"{layer.spec.num_heads} query heads"
        )
    if layer.spec.value_dim != layer.spec.head_dim:
        raise ValueError(
            "to_per_head needs value_dim == head_dim (AttentionHead has one "
            f"size); got {layer.spec.sizes}"
        )
    per_head = _like(PerHeadAttention(layer.spec), layer)
    tensors = list(_blocks(layer, per_head))
    _check_carried(layer, [fused for fused, _, _ in tensors], "to_per_head")
    for fused, parts, dim in tensors:
        # head i owns the i-th block of rows (columns for W_O)
        blocks = (
            [fused] if dim is None else fused.split(layer.spec.head_dim, dim)
        )
        for part, block in zip(parts, blocks):
            _copy(part, block)
    return per_head


def to_fused(per_head):
    """``PerHeadAttention`` -> ``MultiHeadAttention``: stack the heads' blocks
    back into one layer."""
    check_instance(per_head, PerHeadAttention, "to_fused")
    layer = _like(MultiHeadAttention(per_head.spec), per_head)
    tensors = list(_blocks(layer, per_head))
    _check_carried(
        per_head, [p for _, parts, _ in tensors for p in parts], "to_fused"
    )
    for fused, parts, dim in tensors:
        _copy(fused, parts[0] if dim is None else torch.cat(parts, dim))
    return layer


def _blocks(layer, per_head):
    """``(fused tensor, its per-head parts, the axis they stack along)`` for
    every parameter of a fused layer and its per-head twin; the shared
    output bias is whole (axis ``None``)."""
    for name in ("q_proj", "k_proj", "v_proj"):
        fused = getattr(layer, name)
        heads = [getattr(head, name) for head in per_head.heads]
        yield fused.weight, [h.weight for h in heads], 0
        if fused.bias is not None:
            yield fused.bias, [h.bias for h in heads], 0
    heads = [head.out_proj.weight for head in per_head.heads]
    yield layer.out_proj.weight, heads, 1
    if layer.out_proj.bias is not None:
        yield layer.out_proj.bias, [per_head.out_bias], None


def _check_qkv_rows(tensor, num_heads, name):
    check_tensor(f"the tensor given to {name}", tensor)
    check_positive_int("num_heads", num_heads)
    if tensor.dim() not in (1, 2) or tensor.shape[0] % (3 * num_heads):
        raise ValueError(
            f"{name} expects a weight (3 * d_model, d_model) or bias (3 * "
            "d_model,) whose rows split "
            f"into 3 * num_heads = {3 * num_heads} equal blocks, got shape "
            f"{tuple(tensor.shape)}"
        )
    return tensor.shape[0] // (3 * num_heads)


def interleaved_to_stacked(tensor, num_heads):
    """Reorder fused q/k/v rows from per-head interleaving to PyTorch's
    stacking.

    Some codebases order the fused projection's rows head by head, ``[q_0; k_0;
    v_0; q_1; ...]``; ``nn.MultiheadAttention.in_proj_weight`` stacks ``[q_0;
    q_1; ...; k_0; ...; v_0; ...]``. Works for the weight (3d, d) and the bias
    (3d,).
    """
    head_dim = _check_qkv_rows(tensor, num_heads, "interleaved_to_stacked")
    # (head, qkv, head_dim, ...)
    blocks = tensor.reshape(num_heads, 3, head_dim, *tensor.shape[1:])
    # (qkv, head, head_dim, ...) flattened
    return blocks.transpose(0, 1).reshape(tensor.shape)


def stacked_to_interleaved(tensor, num_heads):
    """The inverse of :func:`interleaved_to_stacked`."""
    head_dim = _check_qkv_rows(tensor, num_heads, "stacked_to_interleaved")
    # (qkv, head, head_dim, ...)
    blocks = tensor.reshape(3, num_heads, head_dim, *tensor.shape[1:])
    # (head, qkv, head_dim, ...) flattened
    return blocks.transpose(0, 1).reshape(tensor.shape)
