"""The attention layers: fused (the paper's and PyTorch's), chunked, and one
module per head.

``MultiHeadAttention`` is the standard layer: one Linear per projection,
reshaped into heads (``head_dim=d_model`` gives the wide layer,
``num_kv_heads`` grouped-query attention). ``ChunkedAttention`` is the layer
Bloem (2019) called "narrow": each head reads only its own chunk of the input.
Both take their sizes from one :class:`~mha_lib.spec.AttentionSpec`.
``PerHeadAttention`` is the drawing in the blog posts, literally a sum of
``AttentionHead`` modules; :mod:`mha_lib.conversions` moves weights between it
and the fused layer.
"""

from typing import NamedTuple, Optional

import torch
from torch import nn

from .attention import attend, build_mask, check_inputs
from .checks import check_positive_int, check_tensor
from .spec import AttentionSpec
from .stacking import Linear


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


class _Heads(nn.Module):
    """What every multi-head layer shares: its spec, its sizes and the head
    mask check."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        self.d_model, self.num_heads = spec.d_model, spec.num_heads
        self.head_dim, self.value_dim = spec.head_dim, spec.value_dim
        self.num_kv_heads = spec.num_kv_heads

    def extra_repr(self):
        text = (
            f"d_model={self.d_model}, num_heads={self.num_heads}, "
            f"head_dim={self.head_dim}, num_kv_heads={self.num_kv_heads}"
        )
        return text + (
            f", value_dim={self.value_dim}"
            if self.value_dim != self.head_dim
            else ""
        )

    def _check_inputs(self, query, key, value):
        dtype = next(self.parameters()).dtype  # every weight has one dtype
        return check_inputs(query, key, value, self.d_model, dtype)

    def _check_head_mask(self, head_mask, like):
        if head_mask is None:
            return None
        check_tensor("head_mask", head_mask)
        if head_mask.shape != (self.num_heads,):
            raise ValueError(
                "head_mask must have shape (num_heads,) = "
                f"({self.num_heads},), "
                f"got {tuple(head_mask.shape)}"
            )
        return head_mask.to(dtype=like.dtype, device=like.device)

    def _masks(self, query, key, attn_mask, key_padding_mask, is_causal):
        return build_mask(
            attn_mask,
            key_padding_mask,
            is_causal,
            batch=query.shape[0],
            num_heads=self.num_heads,
            n_query=query.shape[1],
            n_key=key.shape[1],
            dtype=query.dtype,
            device=query.device,
        )


class _FusedAttention(_Heads):
    """The forward pass of the fused layers: project, attend per head,
    concatenate, project."""

    def project(self, query, key=None, value=None):
        """``(q, k, v)``, each ``(batch, heads, seq, size)``; k and v have
        ``num_kv_heads``."""
        raise NotImplementedError

    def forward(
        self,
        query,
        key=None,
        value=None,
        *,
        attn_mask=None,
        key_padding_mask=None,
        is_causal=False,
        need_weights=False,
        head_mask=None,
    ):
        """``(output (batch, n_query, d_model), weights (batch, heads, n_query,
        n_key) | None)``.

        ``key``/``value`` default to ``query`` (self-attention). Masks follow
        ``torch.nn.MultiheadAttention`` (bool True = may not attend);
        ``head_mask`` of shape ``(num_heads,)`` scales each head's output
        before the output projection.
        """
        query, key, value = self._check_inputs(query, key, value)
        masks = self._masks(query, key, attn_mask, key_padding_mask, is_causal)
        head_mask = self._check_head_mask(head_mask, query)
        q, k, v = self.project(query, key, value)
        heads, weights = attend(
            q,
            k,
            v,
            *masks,
            scale=self.spec.logit_scale,
            dropout=self.spec.dropout if self.training else 0.0,
            need_weights=need_weights,
        )
        if head_mask is not None:
            heads = heads * head_mask.view(1, -1, 1, 1)
        batch, num_heads, n_query, value_dim = heads.shape
        # (batch, heads, n_query, value_dim) -> (batch, n_query, heads *
        # value_dim); the width is given, as -1 is ambiguous for 0 elements
        concat = heads.transpose(1, 2).reshape(
            batch, n_query, num_heads * value_dim
        )
        return self.out_proj(concat), weights


class MultiHeadAttention(_FusedAttention):
    """Multi-head attention, batch-first: the standard layer, and its wide and
    grouped variants.

    ``head_dim=None`` gives the standard layer (``d_model // num_heads``);
    ``head_dim=d_model`` the wide layer; ``num_kv_heads`` < ``num_heads``
    grouped-query attention (1: multi-query). ``value_dim`` (default
    ``head_dim``) sizes the values apart from the queries and keys, so the two
    paths through a head can be widened or shrunk one at a time. ``scale``
    replaces the logits' factor ``1 / sqrt(head_dim)``; ``dropout`` drops
    attention weights in training.
    """

    def __init__(
        self,
        d_model,
        num_heads,
        *,
        head_dim=None,
        value_dim=None,
        num_kv_heads=None,
        bias=True,
        scale=None,
        dropout=0.0,
    ):
        spec = AttentionSpec(
            d_model,
            num_heads,
            head_dim=head_dim,
            value_dim=value_dim,
            num_kv_heads=num_kv_heads,
            bias=bias,
            scale=scale,
            dropout=dropout,
        )
        super().__init__(spec)
        q_width, k_width, v_width, concat_width = spec.widths
        self.q_proj = Linear(d_model, q_width, bias=bias)
        self.k_proj = Linear(d_model, k_width, bias=bias)
        self.v_proj = Linear(d_model, v_width, bias=bias)
        self.out_proj = Linear(concat_width, d_model, bias=bias)

    @staticmethod
    def _split(projected, heads):
        batch, seq, width = projected.shape
        # (batch, seq, heads * size) -> (batch, heads, seq, size)
        return projected.view(batch, seq, heads, width // heads).transpose(
            1, 2
        )

    def project(self, query, key=None, value=None):
        key = query if key is None else key
        value = key if value is None else value
        q = self._split(self.q_proj(query), self.num_heads)
        k = self._split(self.k_proj(key), self.num_kv_heads)
        v = self._split(self.v_proj(value), self.num_kv_heads)
        return q, k, v

    def head_weights(self):
        """The weights, heads first: a :class:`HeadWeights` of views.

        Stacked parameters (:mod:`mha_lib.stacking`) keep their members axis
        first: ``W_Q`` is then ``(members, heads, d_model, head_dim)``.
        """
        heads, kv_heads = self.num_heads, self.num_kv_heads

        def by_head(linear, count):  # (count * size, d) -> (count, d, size)
            return linear.weight.unflatten(-2, (count, -1)).transpose(-2, -1)

        def bias_of(linear, count):
            bias = linear.bias
            return None if bias is None else bias.unflatten(-1, (count, -1))

        # W_O is stored (d_model, heads * value_dim): head i owns a block of
        # columns; (d, heads, value_dim) -> (heads, value_dim, d)
        w_o = self.out_proj.weight.unflatten(-1, (heads, -1)).movedim(-3, -1)
        return HeadWeights(
            by_head(self.q_proj, heads),
            by_head(self.k_proj, kv_heads),
            by_head(self.v_proj, kv_heads),
            w_o,  # (heads, value_dim, d_model)
            bias_of(self.q_proj, heads),
            bias_of(self.k_proj, kv_heads),
            bias_of(self.v_proj, kv_heads),
        )


class ChunkedLinear(nn.Module):
    """``num_heads`` independent Linear maps, map i reading only chunk i of the
    features.

    ``weight``: ``(num_heads, chunk, chunk)`` in PyTorch's (out, in) order per
    head. Equivalent to a Linear(d, d) whose weight is block-diagonal. Like
    :mod:`mha_lib.stacking`'s modules it also runs with weights stacked for
    several members, ``(members, num_heads, chunk, chunk)``.
    """

    def __init__(self, num_heads, chunk, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_heads, chunk, chunk))
        self.bias = (
            nn.Parameter(torch.empty(num_heads, chunk)) if bias else None
        )
        bound = chunk**-0.5  # nn.Linear's default initialisation, per chunk
        nn.init.uniform_(self.weight, -bound, bound)
        if bias:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        """``(batch, seq, heads * chunk)`` -> ``(batch, heads, seq,
        chunk)``."""
        *_, heads, chunk, _ = self.weight.shape
        weight, bias = self.weight, self.bias
        members = weight.shape[0] if weight.dim() == 4 else 1
        if weight.dim() == 3:
            weight = weight.unsqueeze(0)
            bias = None if bias is None else bias.unsqueeze(0)
        batch, seq, _ = x.shape
        # (members * batch, seq, heads * chunk) -> (members, batch, seq, heads,
        # chunk)
        chunks = x.view(members, batch // members, seq, heads, chunk)
        # Stored in (seq, heads) order, the memory layout of the standard
        # layer's projections, and returned as a transposed view: attention's
        # output then comes back in (seq, heads) order too, and concatenating
        # the heads for W_O keeps no extra copy for backward.
        out = torch.einsum("mbshi,mhoi->mbsho", chunks, weight).contiguous()
        if bias is not None:
            out = out + bias[:, None, None, :, :]
        # (members * batch, seq, heads, chunk) -> (..., heads, seq, chunk)
        return out.flatten(0, 1).transpose(1, 2)


class ChunkedAttention(_FusedAttention):
    """Bloem's (2019) "narrow" layer: head i reads only features ``i*d/h ..
    (i+1)*d/h``.

    Each head has its own ``(d/h x d/h)`` query, key and value maps, then one
    full output projection ``W_O`` (d x d) mixes the heads, as in the standard
    layer. Its q/k/v projections hold ``3 d^2 / h`` weights instead of ``3
    d^2``.
    """

    def __init__(self, d_model, num_heads, *, bias=True, dropout=0.0):
        spec = AttentionSpec(
            d_model, num_heads, chunked=True, bias=bias, dropout=dropout
        )
        super().__init__(spec)
        self.q_proj = ChunkedLinear(num_heads, self.head_dim, bias)
        self.k_proj = ChunkedLinear(num_heads, self.head_dim, bias)
        self.v_proj = ChunkedLinear(num_heads, self.head_dim, bias)
        self.out_proj = Linear(d_model, d_model, bias=bias)

    def project(self, query, key=None, value=None):
        key = query if key is None else key
        value = key if value is None else value
        return self.q_proj(query), self.k_proj(key), self.v_proj(value)

    def head_weights(self):
        """The weights, heads first: a :class:`HeadWeights` of views (``reads``
        = chunk)."""
        projections = (self.q_proj, self.k_proj, self.v_proj)
        heads = self.num_heads
        w_o = self.out_proj.weight.unflatten(-1, (heads, -1)).movedim(-3, -1)
        return HeadWeights(
            # (heads, in, out)
            *(p.weight.transpose(-2, -1) for p in projections),
            w_o,
            *(p.bias for p in projections),
        )


class AttentionHead(nn.Module):
    """One head: its own W_Q, W_K, W_V (d_model -> head_dim) and its block
    W_O^i.

    Calling it returns the head's *contribution* to the layer's output,
    ``head_i @ W_O^i``, so a multi-head layer is the sum of its heads'
    contributions plus one shared output bias.
    """

    def __init__(self, d_model, head_dim, bias=True):
        super().__init__()
        self.d_model = d_model = check_positive_int("d_model", d_model)
        self.head_dim = head_dim = check_positive_int("head_dim", head_dim)
        self.q_proj = Linear(d_model, head_dim, bias=bias)
        self.k_proj = Linear(d_model, head_dim, bias=bias)
        self.v_proj = Linear(d_model, head_dim, bias=bias)
        # the output bias is shared
        self.out_proj = Linear(head_dim, d_model, bias=False)

    def extra_repr(self):
        return f"d_model={self.d_model}, head_dim={self.head_dim}"

    def forward(
        self,
        query,
        key=None,
        value=None,
        *,
        attn_mask=None,
        key_padding_mask=None,
        is_causal=False,
        need_weights=False,
    ):
        """``(contribution (batch, n_query, d_model), weights (batch, n_query,
        n_key) | None)``."""
        query, key, value = check_inputs(
            query, key, value, self.d_model, self.q_proj.weight.dtype
        )
        masks = build_mask(
            attn_mask,
            key_padding_mask,
            is_causal,
            batch=query.shape[0],
            num_heads=1,
            n_query=query.shape[1],
            n_key=key.shape[1],
            dtype=query.dtype,
            device=query.device,
        )
        return self.contribution(
            query, key, value, *masks, need_weights=need_weights
        )

    def contribution(
        self,
        query,
        key,
        value,
        logit_mask,
        dead_rows,
        *,
        need_weights,
        scale=None,
        dropout=0.0,
    ):
        """The head's term of the layer's output, from checked inputs and built
        masks.

        ``logit_mask`` and ``dead_rows`` are this head's parts of
        :func:`build_mask`'s output, ``(batch or 1, 1, n_query, ...)``, or
        ``None``. ``scale`` and ``dropout`` are the layer's (default ``1 /
        sqrt(head_dim)`` and none).
        """
        q = self.q_proj(query).unsqueeze(1)  # (batch, 1, n_query, head_dim)
        k = self.k_proj(key).unsqueeze(1)  # (batch, 1, n_key, head_dim)
        v = self.v_proj(value).unsqueeze(1)
        out, weights = attend(
            q,
            k,
            v,
            logit_mask,
            dead_rows,
            scale=self.head_dim**-0.5 if scale is None else scale,
            dropout=dropout,
            need_weights=need_weights,
        )
        # (batch, n_query, d_model)
        contribution = self.out_proj(out.squeeze(1))
        return contribution, None if weights is None else weights.squeeze(1)


class PerHeadAttention(_Heads):
    """Multi-head attention written as ``num_heads`` independent
    :class:`AttentionHead` modules.

    Each head reads the whole input; the layer's output is the sum of the
    heads' contributions plus one shared bias. Same ``forward``, ``scale``
    and ``dropout`` as :class:`MultiHeadAttention`.
    """

    def __init__(
        self,
        d_model,
        num_heads,
        *,
        head_dim=None,
        bias=True,
        scale=None,
        dropout=0.0,
    ):
        super().__init__(
            AttentionSpec(
                d_model,
                num_heads,
                head_dim=head_dim,
                bias=bias,
                scale=scale,
                dropout=dropout,
            )
        )
        self.heads = nn.ModuleList(
            AttentionHead(d_model, self.head_dim, bias)
            for _ in range(num_heads)
        )
        self.out_bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(
        self,
        query,
        key=None,
        value=None,
        *,
        attn_mask=None,
        key_padding_mask=None,
        is_causal=False,
        need_weights=False,
        head_mask=None,
    ):
        query, key, value = self._check_inputs(query, key, value)
        logit_mask, dead_rows = self._masks(
            query, key, attn_mask, key_padding_mask, is_causal
        )
        head_mask = self._check_head_mask(head_mask, query)
        output = (
            torch.zeros_like(query) if self.out_bias is None else self.out_bias
        )
        all_weights = []
        for index, head in enumerate(self.heads):
            contribution, weights = head.contribution(
                query,
                key,
                value,
                _head_part(logit_mask, index),
                _head_part(dead_rows, index),
                need_weights=need_weights,
                scale=self.spec.logit_scale,
                dropout=self.spec.dropout if self.training else 0.0,
            )
            if head_mask is not None:
                contribution = contribution * head_mask[index]
            output = output + contribution
            all_weights.append(weights)
        weights = torch.stack(all_weights, dim=1) if need_weights else None
        return output, weights


def _head_part(mask, index):
    """Head ``index``'s part of a mask from :func:`build_mask`, ``(batch or 1,
    1, ...)``."""
    if mask is None or mask.shape[1] == 1:
        return mask  # the same for every head
    return mask[:, index : index + 1]
