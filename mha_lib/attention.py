"""Scaled dot-product attention over heads, its input checks and its masks.

Every layer of :mod:`mha_lib.layers` calls :func:`check_inputs`,
:func:`logit_mask` and :func:`attend`, so they share one definition of
masking and scaling, and of a fully masked row: a query that may attend to no
key gets zero weights, a zero output and a zero gradient, not the NaN of a
softmax over ``-inf``.
"""

import math

import torch
import torch.nn.functional as F

from .checks import check_bool, check_shape, check_tensor


def check_inputs(query, key, value, d_model, dtype):
    """``(query, key, value)``, each checked to be ``(batch, seq, d_model)``
    of the layer's ``dtype``; ``key`` defaults to ``query``, ``value`` to
    ``key``."""
    key = query if key is None else key
    value = key if value is None else value
    for name, x in (("query", query), ("key", key), ("value", value)):
        if check_tensor(name, x).dim() != 3 or x.shape[-1] != d_model:
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
    if query.shape[0] != key.shape[0] or key.shape[:2] != value.shape[:2]:
        raise ValueError(
            "query, key and value must share the batch size, and key and "
            "value the length; got shapes "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
        )
    return query, key, value


def logit_mask(attn_mask, key_padding_mask, is_causal, query, key, heads):
    """The three masks as one float mask added to the logits (0 or -inf, or a
    float mask's values), broadcasting to ``(batch, heads, n_query, n_key)``;
    ``None`` when nothing is masked.

    Shapes follow ``torch.nn.MultiheadAttention`` (bool: True = may not
    attend): ``attn_mask`` ``(n_query, n_key)``, ``(batch * heads, n_query,
    n_key)`` or ``(batch, heads, n_query, n_key)``; ``key_padding_mask``
    ``(batch, n_key)``; ``is_causal`` hides the keys after a query's index.
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
        if attn_mask.dim() == 3:  # (batch * heads, ..) -> (batch, heads, ..)
            attn_mask = attn_mask.unflatten(0, (batch, heads))
        masks.append(("attn_mask", attn_mask))
    if key_padding_mask is not None:
        check_shape(
            "key_padding_mask", key_padding_mask, batch=batch, n_key=n_key
        )
        padding = key_padding_mask[:, None, None, :]  # (batch, 1, 1, n_key)
        masks.append(("key_padding_mask", padding))
    if is_causal:
        future = torch.ones(n_query, n_key, dtype=torch.bool).triu(1)
        masks.append(("is_causal", future))  # (n_query, n_key)
    if masks:
        return sum(_additive(name, mask, query) for name, mask in masks)


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


def attend(q, k, v, mask=None, scale=None, dropout=0.0, need_weights=False):
    """Softmax attention per head: ``(out (batch, heads, n_query, size),
    weights (batch, heads, n_query, n_key) | None)``.

    ``q``: ``(batch, heads, n_query, head_dim)``; ``k``, ``v``: ``(batch,
    kv_heads, n_key, size)``, ``kv_heads`` dividing ``heads`` (grouped-query
    attention). ``mask`` is added to the logits (see :func:`logit_mask`);
    ``scale`` multiplies them, default ``1 / sqrt(head_dim)``; ``dropout``
    drops weights (give 0 outside training). Without ``need_weights`` it
    calls ``F.scaled_dot_product_attention`` (fused kernels).
    """
    check_bool("need_weights", need_weights)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    if k.shape[1] != q.shape[1]:  # share each key/value head with a group
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    dead = None  # queries that may attend to no key: (.., n_query, 1)
    if mask is not None and torch.isneginf(mask).all(-1).any():
        dead = torch.isneginf(mask).all(dim=-1, keepdim=True)
        mask = mask.masked_fill(dead, 0.0)  # finite softmax, zeroed below
    if need_weights:
        scores = q @ k.transpose(-2, -1) * scale  # (b, heads, n_q, n_key)
        scores = scores if mask is None else scores + mask
        weights = scores.softmax(dim=-1)
        weights = weights if dead is None else weights.masked_fill(dead, 0.0)
        out = F.dropout(weights, dropout) @ v  # (b, heads, n_q, size)
    else:
        weights = None
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale, dropout_p=dropout
        )
    return (out if dead is None else out.masked_fill(dead, 0.0)), weights
