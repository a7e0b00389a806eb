"""The two attention layers: fused (as in the paper and PyTorch) and one module per head.

``MultiHeadAttention`` is the layer of Chapters 1 to 5: one Linear per projection, reshaped into
heads. ``PerHeadAttention`` is the drawing in the blog posts, a separate small layer per head;
Chapter 2 shows that the two compute the same function (see :mod:`mha_lib.conversions`).
"""

import torch
from torch import nn

from .attention import attend, build_mask, check_inputs
from .shapes import resolve_heads


class _Attention(nn.Module):
    """Sizes and input handling shared by both layers."""

    def __init__(self, d_model, num_heads, head_dim, num_kv_heads):
        super().__init__()
        self.head_dim, self.num_kv_heads = resolve_heads(d_model, num_heads, head_dim, num_kv_heads)
        self.d_model, self.num_heads = d_model, num_heads

    def extra_repr(self):
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
            f"num_kv_heads={self.num_kv_heads}"
        )

    def _prepare(self, query, key, value, attn_mask, key_padding_mask, is_causal, head_mask):
        query, key, value = check_inputs(query, key, value, self.d_model)
        bias, dead_rows = build_mask(
            attn_mask, key_padding_mask, is_causal,
            batch=query.shape[0], num_heads=self.num_heads, n_query=query.shape[1],
            n_key=key.shape[1], dtype=query.dtype, device=query.device,
        )  # fmt: skip
        if head_mask is not None:
            if not isinstance(head_mask, torch.Tensor):
                raise TypeError(f"head_mask must be a torch.Tensor, got {type(head_mask).__name__}")
            if head_mask.shape != (self.num_heads,):
                raise ValueError(
                    f"head_mask must have shape (num_heads,) = ({self.num_heads},), "
                    f"got {tuple(head_mask.shape)}"
                )
            head_mask = head_mask.to(dtype=query.dtype, device=query.device)
        return query, key, value, bias, dead_rows, head_mask


class MultiHeadAttention(_Attention):
    """Multi-head attention, batch-first (Chapters 1-3; wide heads in Chapter 5).

    ``head_dim=None`` gives the standard narrow layer (``d_model // num_heads``);
    ``head_dim=d_model`` the "wide" layer; ``num_kv_heads`` < ``num_heads`` gives grouped-query
    attention (1: multi-query). ``forward`` returns ``(output, weights)``, where ``weights`` is
    ``(batch, num_heads, n_query, n_key)`` if ``need_weights`` else ``None``. Masks follow
    ``torch.nn.MultiheadAttention`` (bool True = may not attend); ``head_mask`` of shape
    ``(num_heads,)`` scales each head's output before the output projection.
    """

    def __init__(self, d_model, num_heads, *, head_dim=None, num_kv_heads=None, bias=True):
        super().__init__(d_model, num_heads, head_dim, num_kv_heads)
        q_width, kv_width = num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, q_width, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.out_proj = nn.Linear(q_width, d_model, bias=bias)

    def _split(self, projected, heads):
        batch, seq, _ = projected.shape
        # (batch, seq, heads * head_dim) -> (batch, heads, seq, head_dim)
        return projected.view(batch, seq, heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None,
                is_causal=False, need_weights=False, head_mask=None):  # fmt: skip
        query, key, value, bias, dead_rows, head_mask = self._prepare(
            query, key, value, attn_mask, key_padding_mask, is_causal, head_mask
        )
        q = self._split(self.q_proj(query), self.num_heads)  # (batch, heads, n_query, head_dim)
        k = self._split(self.k_proj(key), self.num_kv_heads)  # (batch, kv_heads, n_key, head_dim)
        v = self._split(self.v_proj(value), self.num_kv_heads)
        heads, weights = attend(q, k, v, bias, dead_rows, need_weights=need_weights)
        if head_mask is not None:
            heads = heads * head_mask.view(1, -1, 1, 1)
        batch, _, n_query, _ = heads.shape
        # (batch, heads, n_query, head_dim) -> (batch, n_query, heads * head_dim)
        concat = heads.transpose(1, 2).reshape(batch, n_query, self.num_heads * self.head_dim)
        return self.out_proj(concat), weights


def _select_head(mask, index):
    """This head's slice of a mask of shape (batch, heads or 1, n_query, n_key or 1)."""
    if mask is None or mask.shape[1] == 1:
        return mask
    return mask[:, index : index + 1]


class AttentionHead(nn.Module):
    """One head of ``PerHeadAttention``: its own W_Q, W_K, W_V and its block W_O^i (Chapter 2)."""

    def __init__(self, d_model, head_dim, bias=True):
        super().__init__()
        self.q_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.out_proj = nn.Linear(head_dim, d_model, bias=False)  # the output bias is shared


class PerHeadAttention(_Attention):
    """Multi-head attention written as ``num_heads`` independent heads (Chapter 2).

    Each head reads the whole input and writes ``head_i @ W_O^i``; the layer's output is the
    sum over heads plus one shared bias. Same ``forward`` as ``MultiHeadAttention``.
    """

    def __init__(self, d_model, num_heads, *, head_dim=None, bias=True):
        super().__init__(d_model, num_heads, head_dim, None)
        self.heads = nn.ModuleList(AttentionHead(d_model, self.head_dim, bias) for _ in range(num_heads))
        self.out_bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None,
                is_causal=False, need_weights=False, head_mask=None):  # fmt: skip
        query, key, value, bias, dead_rows, head_mask = self._prepare(
            query, key, value, attn_mask, key_padding_mask, is_causal, head_mask
        )
        output = torch.zeros_like(query) if self.out_bias is None else self.out_bias.expand_as(query)
        all_weights = []
        for index, head in enumerate(self.heads):
            head_bias, head_dead = _select_head(bias, index), _select_head(dead_rows, index)
            q = head.q_proj(query).unsqueeze(1)  # (batch, 1, n_query, head_dim)
            k = head.k_proj(key).unsqueeze(1)  # (batch, 1, n_key, head_dim)
            v = head.v_proj(value).unsqueeze(1)
            out, weights = attend(q, k, v, head_bias, head_dead, need_weights=need_weights)
            contribution = head.out_proj(out.squeeze(1))  # (batch, n_query, d_model)
            if head_mask is not None:
                contribution = contribution * head_mask[index]
            output = output + contribution
            all_weights.append(weights)
        return output, torch.cat(all_weights, dim=1) if need_weights else None
