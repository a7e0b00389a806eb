"""Scaled dot-product attention over heads, with its input checks and masks.

Every layer in :mod:`mha_lib.layers` calls :func:`check_inputs`,
:func:`build_mask` and :func:`attend`, so they share one definition of masking,
scaling and fully masked rows: a query that may attend to no key gets zero
weights and a zero output (before the output projection), not the NaN of a
softmax over ``-inf``, and a zero gradient.
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
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, x)
        if x.dim() != 3 or x.shape[-1] != d_model:
            hint = "; add a batch axis with .unsqueeze(0)" * (x.dim() == 2)
            raise ValueError(
                f"{name} must have shape (batch, seq, d_model={d_model}), "
                f"got {tuple(x.shape)}{hint}"
            )
        if not x.is_floating_point():
            raise TypeError(f"{name} must be floating-point, got {x.dtype}")
        # autocast casts the inputs of each product itself
        if x.dtype != dtype and not torch.is_autocast_enabled(x.device.type):
            raise TypeError(
                f"{name} has dtype {x.dtype}, but the layer's weights are "
                f"{dtype}; cast the input with .to({dtype}) or the layer "
                f"with .to({x.dtype})"
            )
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        raise ValueError(
            "query, key and value must share the batch size, got "
            f"{query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
        )
    if key.shape[1] != value.shape[1]:
        raise ValueError(
            f"key and value must have the same length, got {key.shape[1]} "
            f"and {value.shape[1]}"
        )
    return query, key, value


def build_mask(attn_mask, key_padding_mask, is_causal, query, key, heads=1):
    """The three masks as one: ``(logit_mask, dead_rows)``, both ``None`` when
    nothing is masked.

    ``logit_mask`` is added to the logits; it broadcasts to ``(batch, heads,
    n_query, n_key)`` and holds 0 or -inf (or a float mask's values).
    ``dead_rows`` marks the queries that may attend to nothing, ``(batch or 1,
    heads or 1, n_query, 1)``. Shapes follow ``torch.nn.MultiheadAttention``:
    ``attn_mask`` ``(n_query, n_key)`` or ``(batch * heads, n_query, n_key)``
    (or ``(batch, heads, n_query, n_key)``), ``key_padding_mask`` ``(batch,
    n_key)``; ``is_causal`` hides keys after the query's index.
    """
    check_bool("is_causal", is_causal)
    (batch, n_query, _), n_key = query.shape, key.shape[1]
    masks = []
    if attn_mask is not None:
        shapes = [(n_query, n_key), (batch * heads, n_query, n_key)]
        shapes.append((batch, heads, n_query, n_key))
        if tuple(check_tensor("attn_mask", attn_mask).shape) not in shapes:
            raise ValueError(
                f"attn_mask has shape {tuple(attn_mask.shape)}; expected one "
                f"of {shapes}: (n_query, n_key), (batch * heads, n_query, "
                "n_key) or (batch, heads, n_query, n_key)"
            )
        if attn_mask.dim() == 3:  # (batch * heads, ...) -> (batch, heads, ...)
            attn_mask = attn_mask.reshape(batch, heads, n_query, n_key)
        masks.append(("attn_mask", attn_mask))
    if key_padding_mask is not None:
        shape = tuple(check_tensor("key_padding_mask", key_padding_mask).shape)
        if shape != (batch, n_key):
            raise ValueError(
                f"key_padding_mask has shape {shape}; expected (batch, n_key) "
                f"= ({batch}, {n_key})"
            )
        padding = key_padding_mask[:, None, None, :]  # (batch, 1, 1, n_key)
        masks.append(("key_padding_mask", padding))
    if is_causal:
        future = torch.ones(n_query, n_key, dtype=torch.bool).triu(1)
        masks.append(("is_causal", future))
    if not masks:
        return None, None
    logit_mask = sum(_additive(name, mask, query) for name, mask in masks)
    while logit_mask.dim() < 4:
        logit_mask = logit_mask[None]  # (.., .., n_query, n_key)
    dead_rows = torch.isneginf(logit_mask).all(dim=-1, keepdim=True)
    if not dead_rows.any():
        return logit_mask, None
    # dead rows attend uniformly (finite softmax and gradients); attend()
    # zeroes them
    return logit_mask.masked_fill(dead_rows, 0.0), dead_rows


def _additive(name, mask, like):
    """A bool (True = may not attend) or float mask as a float mask of
    ``like``'s dtype and device."""
    if mask.dtype == torch.bool:
        zeros = torch.zeros(mask.shape, dtype=like.dtype, device=like.device)
        return zeros.masked_fill(mask.to(like.device), -math.inf)
    if not mask.is_floating_point():
        raise TypeError(
            f"{name} must be a bool tensor (True = may not attend) or a "
            f"float tensor added to the logits, got {mask.dtype}"
        )
    return mask.to(like.device, like.dtype)


def check_head_mask(head_mask, **sizes):
    """Raise unless ``head_mask`` is a tensor of shape ``sizes``, e.g.
    ``num_heads=8``; returns it."""
    check_tensor("head_mask", head_mask)
    if tuple(head_mask.shape) != tuple(sizes.values()):
        raise ValueError(
            f"head_mask must have shape ({', '.join(sizes)}) = "
            f"{tuple(sizes.values())}, got {tuple(head_mask.shape)}"
        )
    return head_mask


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
    """Softmax attention per head: ``(out (batch, heads, n_query, size),
    weights (batch, heads, n_query, n_key) | None)``.

    ``q``: ``(batch, heads, n_query, head_dim)``; ``k``, ``v``: ``(batch,
    kv_heads, n_key, size)``, ``kv_heads`` dividing ``heads`` (grouped-query
    attention). ``scale`` multiplies the logits, default ``1 /
    sqrt(head_dim)``; ``dropout`` is the probability of dropping a weight
    (give 0 outside training). Without ``need_weights`` it calls
    ``F.scaled_dot_product_attention`` (fused kernels).
    """
    check_bool("need_weights", need_weights)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    group = q.shape[1] // k.shape[1]
    if group > 1:  # (batch, kv_heads, n_key, size) -> (batch, heads, ...)
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    if need_weights:
        scores = q @ k.transpose(-2, -1) * scale  # (b, heads, n_q, n_key)
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
