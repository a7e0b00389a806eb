"""The attention layers: fused (the paper's and PyTorch's), chunked, and one
module per head.

``MultiHeadAttention`` is the standard layer: one ``nn.Linear`` per
projection, reshaped into heads (``head_dim=d_model`` gives the wide layer,
``num_kv_heads`` grouped-query attention). ``ChunkedAttention`` is the layer
Bloem (2019) called "narrow": each head reads only its own chunk of the input.
``PerHeadAttention`` is the drawing in the blog posts, literally a sum of
``AttentionHead`` modules; :mod:`mha_lib.conversions` moves weights between it
and the fused layer. Every layer is made from its sizes,
``MultiHeadAttention(64, 8, head_dim=64)``, or from an
:class:`~mha_lib.spec.AttentionSpec`, ``MultiHeadAttention(spec)``; the sizes
are the spec's fields, declared there once.
"""

from typing import NamedTuple, Optional

import torch
from torch import nn

from .attention import attend, build_mask, check_head_mask, check_inputs
from .spec import AttentionSpec


class _SpecSize:
    """A layer's size, read from its spec: ``layer.num_heads`` is
    ``layer.spec.num_heads``."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, layer, owner=None):
        return self if layer is None else getattr(layer.spec, self.name)

    def __set__(self, layer, value):
        raise AttributeError(
            f"{self.name} is read from the layer's spec; make a new layer "
            "for other sizes"
        )


class _SizedBySpec:
    """The sizes of a layer that holds an :class:`AttentionSpec` as
    ``spec``, and its one-line description."""

    d_model = _SpecSize()
    num_heads = _SpecSize()
    head_dim = _SpecSize()
    value_dim = _SpecSize()
    num_kv_heads = _SpecSize()

    def extra_repr(self):
        return _sizes(self.spec)


def layer_for(spec):
    """The module a spec describes: a :class:`ChunkedAttention` or a
    :class:`MultiHeadAttention`."""
    return (ChunkedAttention if spec.chunked else MultiHeadAttention)(spec)


class MultiHeadAttention(_SizedBySpec, nn.Module):
    """Multi-head attention, batch-first: the standard layer, and its wide and
    grouped variants.

    The sizes are :class:`~mha_lib.spec.AttentionSpec`'s: ``head_dim=None``
    gives the standard layer (``d_model // num_heads``); ``head_dim=d_model``
    the wide layer; ``num_kv_heads`` < ``num_heads`` grouped-query attention
    (1: multi-query). ``value_dim`` (default ``head_dim``) sizes the values
    apart from the queries and keys. ``scale`` replaces the logits' factor
    ``1 / sqrt(head_dim)``; ``dropout`` drops attention weights in training.
    """

    def __init__(self, d_model, num_heads=None, **sizes):
        super().__init__()
        self.spec = spec = _spec(d_model, num_heads, sizes, chunked=False)
        q_width, k_width, v_width, concat_width = spec.widths
        self.q_proj = nn.Linear(spec.d_model, q_width, bias=spec.bias)
        self.k_proj = nn.Linear(spec.d_model, k_width, bias=spec.bias)
        self.v_proj = nn.Linear(spec.d_model, v_width, bias=spec.bias)
        self.out_proj = nn.Linear(concat_width, spec.d_model, bias=spec.bias)

    def project(self, query, key=None, value=None):
        """``(q, k, v)``, each ``(batch, heads, seq, size)``; k and v have
        ``num_kv_heads`` heads."""
        key = query if key is None else key
        value = key if value is None else value
        spec = self.spec
        # (batch, seq, heads * size) -> (batch, heads, seq, size)
        q = self.q_proj(query).unflatten(-1, (spec.num_heads, -1))
        k = self.k_proj(key).unflatten(-1, (spec.num_kv_heads, -1))
        v = self.v_proj(value).unflatten(-1, (spec.num_kv_heads, -1))
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

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
        spec = self.spec
        query, key, value = check_inputs(
            query, key, value, spec.d_model, self.out_proj.weight.dtype
        )
        masks = build_mask(
            attn_mask, key_padding_mask, is_causal, query, key, spec.num_heads
        )
        q, k, v = self.project(query, key, value)
        heads, weights = attend(  # (batch, heads, n_query, value_dim)
            q,
            k,
            v,
            *masks,
            scale=spec.logit_scale,
            dropout=spec.dropout if self.training else 0.0,
            need_weights=need_weights,
        )
        if head_mask is not None:
            head_mask = check_head_mask(head_mask, num_heads=spec.num_heads)
            heads = heads * head_mask.to(heads)[:, None, None]  # (h, 1, 1)
        # (batch, heads, n_query, value_dim) -> (batch, n_query, heads *
        # value_dim)
        concat = heads.transpose(1, 2).flatten(2)
        return self.out_proj(concat), weights

    def head_weights(self):
        """The weights, heads first: a :class:`HeadWeights` of views."""
        heads, kv_heads = self.num_heads, self.num_kv_heads

        def by_head(linear, count):  # (count * size, d) -> (count, d, size)
            return linear.weight.unflatten(-2, (count, -1)).transpose(-2, -1)

        def bias_of(linear, count):  # (count * size,) -> (count, size)
            bias = linear.bias
            return None if bias is None else bias.unflatten(-1, (count, -1))

        return HeadWeights(
            by_head(self.q_proj, heads),
            by_head(self.k_proj, kv_heads),
            by_head(self.v_proj, kv_heads),
            _output_blocks(self.out_proj, heads),
            bias_of(self.q_proj, heads),
            bias_of(self.k_proj, kv_heads),
            bias_of(self.v_proj, kv_heads),
        )


class ChunkedLinear(nn.Module):
    """``num_heads`` independent Linear maps, map i reading only chunk i of the
    features: a Linear(d, d) whose weight is block-diagonal.

    ``weight``: ``(num_heads, chunk, chunk)`` in PyTorch's (out, in) order per
    head.
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
        chunks = x.unflatten(-1, self.weight.shape[:2])  # (b, s, heads, chunk)
        # Computed in (seq, heads) order, the standard layer's memory layout,
        # and returned as a transposed view, so that concatenating the heads
        # for W_O keeps no extra copy for backward.
        out = torch.einsum("bshi,hoi->bsho", chunks, self.weight).contiguous()
        if self.bias is not None:
            out = out + self.bias
        return out.transpose(1, 2)


class ChunkedAttention(MultiHeadAttention):
    """Bloem's (2019) "narrow" layer: head i reads only features ``i*d/h ..
    (i+1)*d/h``.

    Each head has its own ``(d/h x d/h)`` query, key and value maps, then one
    full output projection ``W_O`` (d x d) mixes the heads, as in the standard
    layer. Its q/k/v projections hold ``3 d^2 / h`` weights instead of ``3
    d^2``. The forward pass is the standard layer's; only :meth:`project`
    differs.
    """

    def __init__(self, d_model, num_heads=None, **sizes):
        nn.Module.__init__(self)
        self.spec = spec = _spec(d_model, num_heads, sizes, chunked=True)
        heads, chunk, bias = spec.num_heads, spec.head_dim, spec.bias
        self.q_proj = ChunkedLinear(heads, chunk, bias)
        self.k_proj = ChunkedLinear(heads, chunk, bias)
        self.v_proj = ChunkedLinear(heads, chunk, bias)
        self.out_proj = nn.Linear(spec.d_model, spec.d_model, bias=bias)

    def project(self, query, key=None, value=None):
        key = query if key is None else key
        value = key if value is None else value
        return self.q_proj(query), self.k_proj(key), self.v_proj(value)

    def head_weights(self):
        """The weights, heads first: a :class:`HeadWeights` of views (``reads``
        = chunk)."""
        projections = (self.q_proj, self.k_proj, self.v_proj)
        return HeadWeights(
            # (heads, out, in) -> (heads, in, out)
            *(p.weight.transpose(-2, -1) for p in projections),
            _output_blocks(self.out_proj, self.num_heads),
            *(p.bias for p in projections),
        )


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


def _output_blocks(out_proj, heads):
    """W_O is stored ``(d_model, heads * value_dim)``: head i owns a block of
    columns; returns ``(heads, value_dim, d_model)``."""
    return out_proj.weight.unflatten(-1, (heads, -1)).movedim(-3, -1)


class AttentionHead(nn.Module):
    """One head: its own W_Q, W_K, W_V (d_model -> head_dim) and its block
    W_O^i.

    Calling it returns the head's *contribution* to the layer's output,
    ``head_i @ W_O^i``, so a multi-head layer is the sum of its heads'
    contributions plus one shared output bias.
    """

    def __init__(self, d_model, head_dim, bias=True):
        super().__init__()
        spec = AttentionSpec(d_model, 1, head_dim=head_dim, bias=bias)
        self.d_model, self.head_dim = spec.d_model, spec.head_dim
        self.q_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, head_dim, bias=bias)
        # the output bias is shared
        self.out_proj = nn.Linear(head_dim, d_model, bias=False)

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
        masks = build_mask(attn_mask, key_padding_mask, is_causal, query, key)
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
        :func:`~mha_lib.attention.build_mask`'s output, ``(batch or 1, 1,
        n_query, ...)``, or ``None``. ``scale`` and ``dropout`` are the
        layer's (default ``1 / sqrt(head_dim)`` and none).
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


class PerHeadAttention(_SizedBySpec, nn.Module):
    """Multi-head attention written as ``num_heads`` independent
    :class:`AttentionHead` modules.

    Each head reads the whole input; the layer's output is the sum of the
    heads' contributions plus one shared bias. Same sizes (``head_dim``,
    ``bias``, ``scale``, ``dropout``) and ``forward`` as
    :class:`MultiHeadAttention`.
    """

    def __init__(self, d_model, num_heads=None, **sizes):
        super().__init__()
        self.spec = spec = _spec(d_model, num_heads, sizes, chunked=False)
        if (
            spec.value_dim != spec.head_dim
            or spec.num_kv_heads != spec.num_heads
        ):
            raise ValueError(
                "PerHeadAttention has one size per head and no shared "
                f"key/value heads; got {_sizes(spec)}"
            )
        self.heads = nn.ModuleList(
            AttentionHead(spec.d_model, spec.head_dim, spec.bias)
            for _ in range(spec.num_heads)
        )
        bias = torch.zeros(spec.d_model)
        self.out_bias = nn.Parameter(bias) if spec.bias else None

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
        spec = self.spec
        query, key, value = check_inputs(
            query, key, value, spec.d_model, self.heads[0].q_proj.weight.dtype
        )
        logit_mask, dead_rows = build_mask(
            attn_mask, key_padding_mask, is_causal, query, key, spec.num_heads
        )
        if head_mask is not None:
            head_mask = check_head_mask(head_mask, num_heads=spec.num_heads)
            head_mask = head_mask.to(query)
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
                scale=spec.logit_scale,
                dropout=spec.dropout if self.training else 0.0,
            )
            if head_mask is not None:
                contribution = contribution * head_mask[index]
            output = output + contribution
            all_weights.append(weights)
        weights = torch.stack(all_weights, dim=1) if need_weights else None
        return output, weights


def _head_part(mask, index):
    """Head ``index``'s part of a mask from
    :func:`~mha_lib.attention.build_mask`, ``(batch or 1, 1, ...)``."""
    if mask is None or mask.shape[1] == 1:
        return mask  # the same for every head
    return mask[:, index : index + 1]


def _spec(d_model, num_heads, sizes, *, chunked):
    """The layer's :class:`AttentionSpec`: ``d_model`` is one, or the sizes
    make one."""
    if "chunked" in sizes:
        raise TypeError(
            "the class sets chunked: use ChunkedAttention for the chunked "
            "layer, MultiHeadAttention for the others"
        )
    if not isinstance(d_model, AttentionSpec):
        return AttentionSpec(d_model, num_heads, chunked=chunked, **sizes)
    if num_heads is not None or sizes:
        raise TypeError(
            "give a layer an AttentionSpec or its sizes, not both; got a spec "
            f"and num_heads={num_heads!r}, {sizes}"
        )
    if d_model.chunked != chunked:
        wanted = (
            "ChunkedAttention" if d_model.chunked else "MultiHeadAttention"
        )
        raise ValueError(
            f"this spec describes a {d_model.kind} layer; build it with "
            f"{wanted}, or with mha_lib.layer_for(spec)"
        )
    return d_model


def _sizes(spec):
    text = (
        f"d_model={spec.d_model}, num_heads={spec.num_heads}, "
        f"head_dim={spec.head_dim}, num_kv_heads={spec.num_kv_heads}"
    )
    if spec.value_dim != spec.head_dim:
        text += f", value_dim={spec.value_dim}"
    return text
