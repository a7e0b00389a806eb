"""The attention layers: fused (the paper's and PyTorch's), one module per head, and chunked.

``MultiHeadAttention`` is the standard layer: one Linear per projection, reshaped into heads
(``head_dim=d_model`` gives the wide layer, ``num_kv_heads`` grouped-query attention).
``PerHeadAttention`` is the drawing in the blog posts, literally a sum of ``AttentionHead``
modules; :mod:`mha_lib.conversions` moves weights between the two. ``ChunkedAttention`` is the
layer Bloem (2019) called "narrow": each head reads only its own chunk of the input.
"""

import torch
from torch import nn

from .attention import attend, build_mask, check_inputs
from .checks import check_positive_int, check_tensor
from .shapes import resolve_heads


class _Attention(nn.Module):
    """Sizes, input handling and the shared forward pass of the fused layers."""

    def __init__(self, d_model, num_heads, head_dim, num_kv_heads):
        super().__init__()
        self.head_dim, self.num_kv_heads = resolve_heads(d_model, num_heads, head_dim, num_kv_heads)
        self.d_model, self.num_heads = d_model, num_heads

    def extra_repr(self):
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
            f"num_kv_heads={self.num_kv_heads}"
        )

    def _check_head_mask(self, head_mask, like):
        if head_mask is None:
            return None
        check_tensor("head_mask", head_mask)
        if head_mask.shape != (self.num_heads,):
            raise ValueError(
                f"head_mask must have shape (num_heads,) = ({self.num_heads},), got {tuple(head_mask.shape)}"
            )
        return head_mask.to(dtype=like.dtype, device=like.device)

    def _project(self, query, key, value):
        """``(q, k, v)``, each ``(batch, heads, seq, head_dim)`` (k, v may have fewer heads)."""
        raise NotImplementedError

    def forward(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None,
                is_causal=False, need_weights=False, head_mask=None):  # fmt: skip
        """``(output (batch, n_query, d_model), weights (batch, num_heads, n_query, n_key) or None)``.

        ``key``/``value`` default to ``query`` (self-attention). Masks follow
        ``torch.nn.MultiheadAttention`` (bool True = may not attend); ``head_mask`` of shape
        ``(num_heads,)`` scales each head's output before the output projection.
        """
        query, key, value = check_inputs(query, key, value, self.d_model)
        logit_mask, dead_rows = build_mask(
            attn_mask, key_padding_mask, is_causal,
            batch=query.shape[0], num_heads=self.num_heads, n_query=query.shape[1],
            n_key=key.shape[1], dtype=query.dtype, device=query.device,
        )  # fmt: skip
        head_mask = self._check_head_mask(head_mask, query)
        q, k, v = self._project(query, key, value)
        heads, weights = attend(q, k, v, logit_mask, dead_rows, need_weights=need_weights)
        if head_mask is not None:
            heads = heads * head_mask.view(1, -1, 1, 1)
        batch, _, n_query, value_size = heads.shape
        # (batch, heads, n_query, value_size) -> (batch, n_query, heads * value_size)
        concat = heads.transpose(1, 2).reshape(batch, n_query, self.num_heads * value_size)
        return self.out_proj(concat), weights


class MultiHeadAttention(_Attention):
    """Multi-head attention, batch-first: the standard layer, and its wide and grouped variants.

    ``head_dim=None`` gives the standard layer (``d_model // num_heads``); ``head_dim=d_model``
    the wide layer; ``num_kv_heads`` < ``num_heads`` grouped-query attention (1: multi-query).
    ``value_dim`` (default ``head_dim``) sizes the values apart from the queries and keys, so the
    two paths through a head can be widened or shrunk one at a time.
    """

    def __init__(self, d_model, num_heads, *, head_dim=None, value_dim=None, num_kv_heads=None, bias=True):
        super().__init__(d_model, num_heads, head_dim, num_kv_heads)
        self.value_dim = self.head_dim if value_dim is None else check_positive_int("value_dim", value_dim)
        q_width, kv_width = num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, q_width, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.v_proj = nn.Linear(d_model, self.num_kv_heads * self.value_dim, bias=bias)
        self.out_proj = nn.Linear(num_heads * self.value_dim, d_model, bias=bias)

    def extra_repr(self):
        differs = self.value_dim != self.head_dim
        return super().extra_repr() + (f", value_dim={self.value_dim}" if differs else "")

    @staticmethod
    def _split(projected, heads):
        batch, seq, width = projected.shape
        # (batch, seq, heads * size) -> (batch, heads, seq, size)
        return projected.view(batch, seq, heads, width // heads).transpose(1, 2)

    def _project(self, query, key, value):
        q = self._split(self.q_proj(query), self.num_heads)
        k = self._split(self.k_proj(key), self.num_kv_heads)
        v = self._split(self.v_proj(value), self.num_kv_heads)
        return q, k, v


class ChunkedLinear(nn.Module):
    """``num_heads`` independent Linear maps, map i reading only chunk i of the features.

    ``weight``: ``(num_heads, chunk, chunk)`` in PyTorch's (out, in) order per head. Equivalent
    to a Linear(d, d) whose weight is block-diagonal.
    """

    def __init__(self, num_heads, chunk, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_heads, chunk, chunk))
        self.bias = nn.Parameter(torch.empty(num_heads, chunk)) if bias else None
        bound = chunk**-0.5  # nn.Linear's default initialisation, per chunk
        nn.init.uniform_(self.weight, -bound, bound)
        if bias:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        """``(batch, seq, heads * chunk)`` -> ``(batch, heads, seq, chunk)``."""
        batch, seq, _ = x.shape
        heads, chunk, _ = self.weight.shape
        chunks = x.view(batch, seq, heads, chunk)  # (batch, seq, heads, chunk)
        out = torch.einsum("bshi,hoi->bhso", chunks, self.weight)  # (batch, heads, seq, chunk)
        return out if self.bias is None else out + self.bias[None, :, None, :]


class ChunkedAttention(_Attention):
    """Bloem's (2019) "narrow" layer: head i reads only features ``i*d/h .. (i+1)*d/h`` of its input.

    Each head has its own ``(d/h x d/h)`` query, key and value maps, then one full output
    projection ``W_O`` (d x d) mixes the heads, as in the standard layer. Its q/k/v projections
    hold ``3 d^2 / h`` weights instead of ``3 d^2``.
    """

    def __init__(self, d_model, num_heads, *, bias=True):
        super().__init__(d_model, num_heads, None, None)
        self.q_proj = ChunkedLinear(num_heads, self.head_dim, bias)
        self.k_proj = ChunkedLinear(num_heads, self.head_dim, bias)
        self.v_proj = ChunkedLinear(num_heads, self.head_dim, bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _project(self, query, key, value):
        return self.q_proj(query), self.k_proj(key), self.v_proj(value)


class AttentionHead(nn.Module):
    """One head: its own W_Q, W_K, W_V (d_model -> head_dim) and its block W_O^i (head_dim -> d_model).

    Calling it returns the head's *contribution* to the layer's output, ``head_i @ W_O^i``, so a
    multi-head layer is the sum of its heads' contributions plus one shared output bias.
    """

    def __init__(self, d_model, head_dim, bias=True):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.q_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.out_proj = nn.Linear(head_dim, d_model, bias=False)  # the output bias is shared

    def extra_repr(self):
        return f"d_model={self.d_model}, head_dim={self.head_dim}"

    def forward(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None,
                is_causal=False, need_weights=False):  # fmt: skip
        """``(contribution (batch, n_query, d_model), weights (batch, n_query, n_key) or None)``."""
        query, key, value = check_inputs(query, key, value, self.d_model)
        logit_mask, dead_rows = build_mask(
            attn_mask, key_padding_mask, is_causal,
            batch=query.shape[0], num_heads=1, n_query=query.shape[1],
            n_key=key.shape[1], dtype=query.dtype, device=query.device,
        )  # fmt: skip
        q = self.q_proj(query).unsqueeze(1)  # (batch, 1, n_query, head_dim)
        k = self.k_proj(key).unsqueeze(1)  # (batch, 1, n_key, head_dim)
        v = self.v_proj(value).unsqueeze(1)
        out, weights = attend(q, k, v, logit_mask, dead_rows, need_weights=need_weights)
        contribution = self.out_proj(out.squeeze(1))  # (batch, n_query, d_model)
        return contribution, None if weights is None else weights.squeeze(1)


def _head_slice(attn_mask, index, batch, num_heads):
    """Head ``index``'s part of an ``attn_mask`` given for all heads (shapes as in build_mask)."""
    if attn_mask is None or attn_mask.dim() == 2:
        return attn_mask  # (n_query, n_key): the same for every head
    # (batch * heads, n_q, n_k) or (batch, heads, n_q, n_k) -> (batch, n_q, n_k)
    return attn_mask.reshape(batch, num_heads, *attn_mask.shape[-2:])[:, index]


class PerHeadAttention(_Attention):
    """Multi-head attention written as ``num_heads`` independent :class:`AttentionHead` modules.

    Each head reads the whole input; the layer's output is the sum of the heads' contributions
    plus one shared bias. Same ``forward`` as :class:`MultiHeadAttention`.
    """

    def __init__(self, d_model, num_heads, *, head_dim=None, bias=True):
        super().__init__(d_model, num_heads, head_dim, None)
        self.heads = nn.ModuleList(AttentionHead(d_model, self.head_dim, bias) for _ in range(num_heads))
        self.out_bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None,
                is_causal=False, need_weights=False, head_mask=None):  # fmt: skip
        query, key, value = check_inputs(query, key, value, self.d_model)
        batch = query.shape[0]
        # Check the masks against all heads once; each head then builds its own part.
        build_mask(
            attn_mask, key_padding_mask, is_causal,
            batch=batch, num_heads=self.num_heads, n_query=query.shape[1],
            n_key=key.shape[1], dtype=query.dtype, device=query.device,
        )  # fmt: skip
        head_mask = self._check_head_mask(head_mask, query)
        output = torch.zeros_like(query) if self.out_bias is None else self.out_bias.expand_as(query)
        all_weights = []
        for index, head in enumerate(self.heads):
            contribution, weights = head(
                query, key, value, attn_mask=_head_slice(attn_mask, index, batch, self.num_heads),
                key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=need_weights,
            )  # fmt: skip
            if head_mask is not None:
                contribution = contribution * head_mask[index]
            output = output + contribution
            all_weights.append(weights)
        return output, torch.stack(all_weights, dim=1) if need_weights else None
