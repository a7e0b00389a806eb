"""Scaled dot-product attention over heads, with the checks and masks every
layer of :mod:`mha_lib.layers` shares. A query that may attend to no key gets
zero weights, a zero output and a zero gradient, not a softmax's NaN.

The masks mean what they mean in ``torch.nn.MultiheadAttention``, on purpose,
so that code moves between the two unchanged: a bool mask's True hides a key;
a float mask, ``attn_mask`` or ``key_padding_mask``, is added to the logits,
so a float 0/1 "keep" mask hides nothing (1.0 only raises a logit: pass
``mask == 0`` as bool); ``key_padding_mask`` is read as ``(batch, n_key)``,
so where batch and n_key are equal a transposed one cannot be told apart and
is read that way too.
"""

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


def check_inputs(query, key, value, d_model, weight):
    """Query, key and value (defaults: :func:`self_attention`), checked
    against ``d_model`` and a weight of the layer."""
    query, key, value = self_attention(query, key, value)
    for name, x in (("query", query), ("key", key), ("value", value)):
        if check_tensor(name, x).dim() != 3 or x.shape[-1] != d_model:
            hint = "; add a batch axis with .unsqueeze(0)" * (x.dim() == 2)
            raise ValueError(
                f"{name} must have shape (batch, seq, d_model={d_model}), "
                f"got {tuple(x.shape)}{hint}"
            )
        if (x.device, x.dtype) != (weight.device, weight.dtype):
            check_like_weight(name, x, weight)
    if query.shape[0] != key.shape[0] or key.shape[:2] != value.shape[:2]:
        raise ValueError(
            "query, key and value must share the batch size, and key and "
            f"value the length; got {tuple(query.shape)}, "
            f"{tuple(key.shape)}, {tuple(value.shape)}"
        )
    return query, key, value


def check_like_weight(name, x, weight):
    """Refuse an input on another device than the layer's weights, or of
    another dtype unless autocast casts it."""
    if x.device != weight.device:
        raise ValueError(
            f"{name} is on {x.device}, but the layer's weights are on "
            f"{weight.device}; move the input with .to('{weight.device}') "
            f"or the layer with .to('{x.device}')"
        )
    try:
        autocast = torch.is_autocast_enabled(x.device.type)  # casts itself
    except RuntimeError:  # a device autocast does not know, such as meta
        autocast = False
    if not (autocast and x.is_floating_point()):
        raise TypeError(
            f"{name} has dtype {x.dtype}, but the layer's weights are "
            f"{weight.dtype}; cast the input with .to({weight.dtype})"
        )


def logit_mask(attn_mask, key_padding_mask, is_causal, query, key, heads):
    """PyTorch's masks (True: may not attend) as one float mask that
    broadcasts to ``(batch, heads, n_query, n_key)``, or None."""
    (batch, n_query, _), n_key = query.shape, key.shape[1]
    masks = {}
    if attn_mask is not None:  # (n_query, n_key) or (batch, heads, ..)
        masks["attn_mask"] = full_attn_mask(
            attn_mask, batch, heads, query, key
        )
    if key_padding_mask is not None:  # (batch, n_key) -> (batch, 1, 1, n_key)
        masks["key_padding_mask"] = padding_mask(key_padding_mask, batch, key)
    if check_bool("is_causal", is_causal):  # the keys after each query
        causal = torch.ones(n_query, n_key, dtype=bool)  # (n_query, n_key)
        masks["is_causal"] = causal.triu(1)  # (n_query, n_key)
    if not masks:
        return None
    # broadcast: (batch or 1, heads or 1, n_query or 1, n_key)
    return sum(as_logits(name, mask, query) for name, mask in masks.items())


def full_attn_mask(attn_mask, batch, heads, query, key):
    """``attn_mask`` checked: ``(n_query, n_key)`` as given, ``(batch * heads,
    ..)`` as ``(batch, heads, n_query, n_key)``."""
    full = (batch, heads, query.shape[1], key.shape[1])
    shapes = [full[2:], (batch * heads, *full[2:]), full]
    if tuple(check_tensor("attn_mask", attn_mask).shape) not in shapes:
        raise ValueError(
            f"attn_mask has shape {tuple(attn_mask.shape)}; expected "
            f"(n_query, n_key), (batch * heads, ..) or (batch, heads, "
            f"..): one of {shapes}"
        )
    # (batch * heads, ..) -> (batch, heads, ..); the others as they are
    return attn_mask.reshape(full) if attn_mask.dim() == 3 else attn_mask


def padding_mask(key_padding_mask, batch, key):
    """``key_padding_mask`` ``(batch, n_key)`` checked, as ``(batch, 1, 1,
    n_key)``. As in PyTorch, a transposed mask of a square shape (batch
    equal to n_key) is taken as it is: nothing tells the two apart."""
    sizes = dict(batch=batch, n_key=key.shape[1])
    check_shape("key_padding_mask", key_padding_mask, **sizes)
    return key_padding_mask[:, None, None]  # (batch, 1, 1, n_key)


def as_logits(name, mask, query):
    """A mask as what it adds to the logits, in ``query``'s dtype and on its
    device: True -> -inf, False -> 0; a float mask as it is, as PyTorch adds
    it (a float 0/1 mask is no "keep" mask: 1.0 adds 1 to a logit)."""
    if not (mask.dtype == torch.bool or mask.is_floating_point()):
        raise TypeError(
            f"{name} must be a bool tensor (True = may not attend) or a "
            f"float tensor added to the logits, got {mask.dtype}"
        )
    if mask.dtype == torch.bool:  # True -> -inf, False -> 0
        mask = torch.where(mask.to(query.device), -math.inf, 0.0)  # same shape
    return mask.to(query)  # same shape


def attend(q, k, v, mask=None, scale=None, dropout=0.0, need_weights=False):
    """Softmax attention per head, GQA included: ``(out, weights | None)``
    from ``q`` ``(batch, heads, n_query, head_dim)``, ``k`` and ``v``
    ``(batch, kv_heads, n_key, size)``, ``mask`` as :func:`logit_mask`'s."""
    check_bool("need_weights", need_weights)
    scale = default_scale(q.shape[-1]) if scale is None else scale
    if k.shape[1] != q.shape[1]:  # share each key/value head with a group
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # (b, h, ..)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)  # (b, h, ..)
    if mask is not None and torch.isneginf(mask).all(-1).any():
        return attend_to_none(q, k, v, mask, scale, dropout, need_weights)
    if need_weights:
        scores = q @ k.transpose(-2, -1) * scale  # (b, heads, n_q, n_key)
        scores = scores if mask is None else scores + mask  # same shape
        weights = scores.softmax(-1)  # (b, heads, n_q, n_key)
        return F.dropout(weights, dropout) @ v, weights  # (b, heads, n_q, ..)
    out = F.scaled_dot_product_attention(  # (b, heads, n_q, size)
        q, k, v, attn_mask=mask, scale=scale, dropout_p=dropout
    )
    return out, None


def attend_to_none(q, k, v, mask, scale, dropout, need_weights):
    """:func:`attend` where some queries may attend to no key: theirs are
    zero weights and a zero output (and gradient), not a softmax's NaN."""
    dead = torch.isneginf(mask).all(dim=-1, keepdim=True)  # (.., n_q, 1)
    mask = mask.masked_fill(dead, 0.0)  # same shape; zeroed out below
    out, weights = attend(q, k, v, mask, scale, dropout, need_weights)
    out = out.masked_fill(dead, 0.0)  # (b, heads, n_q, size)
    if need_weights:
        weights = weights.masked_fill(dead, 0.0)  # (b, heads, n_q, n_key)
    return out, weights
