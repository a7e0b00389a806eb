"""Scaled dot-product attention over heads, with input checks and masks.

Every layer in :mod:`mha_lib.layers` calls :func:`check_inputs`,
:func:`build_mask` and :func:`attend`, so they share one definition of masking,
scaling and fully-masked rows.

Fully masked rows: a query that may attend to no key at all gets zero attention
weights and a zero attention output (before the output projection), instead of
the NaN that a softmax over ``-inf`` produces. Its gradient is zero too.
"""

import math

import torch
import torch.nn.functional as F

from .checks import check_bool, check_tensor


def check_inputs(query, key, value, d_model, dtype):
    """Check ``(batch, seq, d_model)`` inputs of the layer's ``dtype``;
    ``key``/``value`` default to ``query``."""
    key = query if key is None else key
    value = key if value is None else value
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, tensor)
        if tensor.dim() != 3:
            raise ValueError(
                f"{name} must have shape (batch, seq, d_model={d_model}), got "
                f"{tuple(tensor.shape)}"
                + (
                    "; add a batch dimension with .unsqueeze(0)"
                    if tensor.dim() == 2
                    else ""
                )
            )
        if tensor.shape[-1] != d_model:
            raise ValueError(
                f"{name} has feature size {tensor.shape[-1]}, but the layer "
                f"expects d_model={d_model}"
            )
        if not tensor.is_floating_point():
            raise TypeError(
                f"{name} must be a floating-point tensor, got {tensor.dtype}"
            )
        # autocast casts the inputs of each product itself
        autocast = torch.is_autocast_enabled(tensor.device.type)
        if tensor.dtype != dtype and not autocast:
            raise TypeError(
                f"{name} has dtype {tensor.dtype}, but the layer's weights "
                f"are {dtype}; cast the input with .to({dtype}) or the layer "
                f"with .to({tensor.dtype})"
            )
    if not (query.shape[0] == key.shape[0] == value.shape[0]):
        raise ValueError(
            "query, key and value must share the batch size, got "
            f"{query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
        )
    if key.shape[1] != value.shape[1]:
        raise ValueError(
            f"key and value must have the same length, got {key.shape[1]} and "
            f"{value.shape[1]}"
        )
    return query, key, value


def _as_additive(mask, name, dtype, device):
    """Bool (True = may not attend) or float (added to the logits) -> float
    mask."""
    check_tensor(name, mask)
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(
            mask.to(device), -math.inf
        )
    if mask.is_floating_point():
        return mask.to(dtype=dtype, device=device)
    raise TypeError(
        f"{name} must be a bool tensor (True = may not attend) or a float "
        "tensor "
        f"added to the logits, got {mask.dtype}"
    )


def build_mask(
    attn_mask,
    key_padding_mask,
    is_causal,
    *,
    batch,
    num_heads,
    n_query,
    n_key,
    dtype,
    device,
):
    """Combine the three masks into one additive mask.

    Returns ``(logit_mask, dead_rows)``: ``logit_mask`` is added to the
    attention logits and broadcasts to ``(batch, num_heads, n_query, n_key)``
    and holds 0 or -inf (or the float mask's values); ``dead_rows`` marks query
    rows that may attend to nothing, shape ``(batch or 1, num_heads or 1,
    n_query, 1)``. Both are ``None`` when nothing is masked.

    Shapes follow ``torch.nn.MultiheadAttention``: ``attn_mask`` is ``(n_query,
    n_key)`` or ``(batch * num_heads, n_query, n_key)`` (``(batch, num_heads,
    n_query, n_key)`` also works); ``key_padding_mask`` is ``(batch, n_key)``;
    ``is_causal`` hides keys after the query's index.
    """
    check_bool("is_causal", is_causal)
    logit_mask = None
    if attn_mask is not None:
        additive = _as_additive(attn_mask, "attn_mask", dtype, device)
        if additive.shape == (n_query, n_key):
            logit_mask = additive  # broadcasts over (batch, heads)
        elif additive.shape == (batch * num_heads, n_query, n_key):
            logit_mask = additive.view(batch, num_heads, n_query, n_key)
        elif additive.shape == (batch, num_heads, n_query, n_key):
            logit_mask = additive
        else:
            raise ValueError(
                f"attn_mask has shape {tuple(attn_mask.shape)}; expected "
                f"({n_query}, {n_key}), "
                f"({batch * num_heads}, {n_query}, {n_key}) or ({batch}, "
                f"{num_heads}, {n_query}, {n_key})"
                " for (n_query, n_key), (batch*num_heads, n_query, n_key) or "
                "(batch, heads, n_query, n_key)"
            )
    if key_padding_mask is not None:
        padding = _as_additive(
            key_padding_mask, "key_padding_mask", dtype, device
        )
        if padding.shape != (batch, n_key):
            raise ValueError(
                f"key_padding_mask has shape {tuple(key_padding_mask.shape)}; "
                f"expected (batch, n_key) = ({batch}, {n_key})"
            )
        padding = padding[:, None, None, :]  # (batch, 1, 1, n_key)
        logit_mask = padding if logit_mask is None else logit_mask + padding
    if is_causal:
        future = torch.ones(
            n_query, n_key, dtype=torch.bool, device=device
        ).triu(1)
        causal = _as_additive(future, "is_causal", dtype, device)
        logit_mask = causal if logit_mask is None else logit_mask + causal
    if logit_mask is None:
        return None, None
    while logit_mask.dim() < 4:
        logit_mask = logit_mask.unsqueeze(0)  # (.., .., n_query, n_key)
    dead_rows = torch.isneginf(logit_mask).all(dim=-1, keepdim=True)
    if not dead_rows.any():
        return logit_mask, None
    # Let dead rows attend uniformly (finite softmax, finite gradients);
    # attend() zeroes them.
    return logit_mask.masked_fill(dead_rows, 0.0), dead_rows


def attend(
    q,
    k,
    v,
    logit_mask=None,
    dead_rows=None,
    *,
    scale=None,
    dropout=0.0,
    need_weights=False,
):
    """Softmax attention per head.

    ``q``: (batch, heads, n_query, head_dim); ``k``, ``v``: (batch, heads,
    n_key, size), where ``k``/``v`` may have fewer heads that divide ``heads``
    (grouped-query attention). ``scale`` multiplies the logits, default ``1 /
    sqrt(head_dim)``; ``dropout`` drops attention weights with that probability
    (give 0 outside training). Returns ``(out (batch, heads, n_query, size),
    weights (batch, heads, n_query, n_key) or None)``. Without ``need_weights``
    it calls ``F.scaled_dot_product_attention`` (fused kernels).
    """
    check_bool("need_weights", need_weights)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    group = q.shape[1] // k.shape[1]
    if group > 1:
        # (batch, heads, n_key, head_dim)
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    if need_weights:
        # (batch, heads, n_query, n_key)
        scores = q @ k.transpose(-2, -1) * scale
        if logit_mask is not None:
            scores = scores + logit_mask
        weights = scores.softmax(dim=-1)
        if dead_rows is not None:
            weights = weights.masked_fill(dead_rows, 0.0)
        return F.dropout(weights, dropout) @ v, weights
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=logit_mask, scale=scale, dropout_p=dropout
    )
    if dead_rows is not None:
        out = out.masked_fill(dead_rows, 0.0)
    return out, None
