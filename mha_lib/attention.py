"""Scaled dot-product attention over heads, with the checks and masks every
layer of :mod:`mha_lib.layers` shares. A query that may attend to no key gets
zero weights, a zero output and a zero gradient, not a softmax's NaN."""

import math

import torch
import torch.nn.functional as F

from .checks import check_bool, check_shape, check_tensor


def default_scale(head_dim):
    """The logits' factor unless a layer sets another: ``1 /
    sqrt(head_dim)``, which keeps the logits' variance near 1."""
    return head_dim**-0.5


def self_attention(query, key=None, value=None):
    """``(query, key, value)`` with self-attention's defaults: the key is
    the query, the value the key."""
    key = query if key is None else key
    return query, key, key if value is None else value


def check_inputs(query, key, value, d_model, dtype):
    """Query, key and value (defaults: :func:`self_attention`), checked as
    inputs."""
    query, key, value = self_attention(query, key, value)
    for name, x in (("query", query), ("key", key), ("value", value)):
        if check_tensor(name, x).dim() != 3 or x.shape[-1] != d_model:
            hint = "; add a batch axis with .unsqueeze(0)" * (x.dim() == 2)
            raise ValueError(
                f"{name} must have shape (batch, seq, d_model={d_model}), "
                f"got {tuple(x.shape)}{hint}"
            )
        autocast = torch.is_autocast_enabled(x.device.type)  # casts itself
        if x.dtype != dtype and not (autocast and x.is_floating_point()):
            raise TypeError(
                f"{name} has dtype {x.dtype}, but the layer's weights are "
                f"{dtype}; cast the input with .to({dtype})"
            )
    if query.shape[0] != key.shape[0] or key.shape[:2] != value.shape[:2]:
        raise ValueError(
            "query, key and value must share the batch size, and key and "
            f"value the length; got {tuple(query.shape)}, "
            f"{tuple(key.shape)}, {tuple(value.shape)}"
        )
    return query, key, value


def logit_mask(attn_mask, key_padding_mask, is_causal, query, key, heads):
    """PyTorch's masks (True: may not attend) as one float mask that
    broadcasts to ``(batch, heads, n_query, n_key)``, or None."""
    (batch, n_query, _), n_key = query.shape, key.shape[1]
    full = (batch, heads, n_query, n_key)
    masks = {}
    if attn_mask is not None:
        shapes = [(n_query, n_key), (batch * heads, n_query, n_key), full]
        if tuple(check_tensor("attn_mask", attn_mask).shape) not in shapes:
            raise ValueError(
                f"attn_mask has shape {tuple(attn_mask.shape)}; expected "
                f"(n_query, n_key), (batch * heads, ..) or (batch, heads, "
                f"..): one of {shapes}"
            )
        if attn_mask.dim() == 3:  # (batch * heads, ..) -> (batch, heads, ..)
            attn_mask = attn_mask.reshape(full)
        masks["attn_mask"] = attn_mask  # (n_query, n_key) or full
    if key_padding_mask is not None:
        padding = dict(batch=batch, n_key=n_key)
        check_shape("key_padding_mask", key_padding_mask, **padding)
        # (batch, n_key) -> (batch, 1, 1, n_key)
        masks["key_padding_mask"] = key_padding_mask[:, None, None]
    if check_bool("is_causal", is_causal):  # the keys after each query
        causal = torch.ones(n_query, n_key, dtype=bool)  # (n_query, n_key)
        masks["is_causal"] = causal.triu(1)  # (n_query, n_key)
    for name, mask in masks.items():
        if not (mask.dtype == torch.bool or mask.is_floating_point()):
            raise TypeError(
                f"{name} must be a bool tensor (True = may not attend) or a "
                f"float tensor added to the logits, got {mask.dtype}"
            )
        if mask.dtype == torch.bool:  # True -> -inf, False -> 0, same shape
            mask = torch.where(mask.to(query.device), -math.inf, 0.0)
        masks[name] = mask.to(query)  # same shape, query's dtype and device
    # broadcast: (batch or 1, heads or 1, n_query or 1, n_key)
    return sum(masks.values()) if masks else None


def attend(q, k, v, mask=None, scale=None, dropout=0.0, need_weights=False):
    """Softmax attention per head: ``(out, weights | None)``, GQA included.

    ``q``: ``(batch, heads, n_query, head_dim)``; ``k``, ``v``: ``(batch,
    kv_heads, n_key, head_dim or value_dim)``; ``mask``: broadcasts to
    ``(batch, heads, n_query, n_key)``; ``scale`` by default
    :func:`default_scale`.
    """
    check_bool("need_weights", need_weights)
    scale = default_scale(q.shape[-1]) if scale is None else scale
    if k.shape[1] != q.shape[1]:  # share each key/value head with a group
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # (b, h, ..)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)  # (b, h, ..)
    dead = None  # queries that may attend to no key: (.., n_query, 1)
    if mask is not None and torch.isneginf(mask).all(-1).any():
        dead = torch.isneginf(mask).all(dim=-1, keepdim=True)  # (.., n_q, 1)
        mask = mask.masked_fill(dead, 0.0)  # same shape; zeroed out below
    if need_weights:
        scores = q @ k.transpose(-2, -1) * scale  # (b, heads, n_q, n_key)
        weights = (scores if mask is None else scores + mask).softmax(-1)
        weights = weights if dead is None else weights.masked_fill(dead, 0.0)
        out = F.dropout(weights, dropout) @ v  # (b, heads, n_q, size)
    else:
        weights = None
        out = F.scaled_dot_product_attention(  # (b, heads, n_q, size)
            q, k, v, attn_mask=mask, scale=scale, dropout_p=dropout
        )
    out = out if dead is None else out.masked_fill(dead, 0.0)  # same shape
    return out, weights  # (b, heads, n_q, size), (b, heads, n_q, n_key)
