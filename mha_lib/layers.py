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
are the spec's fields, declared there once. Each layer names the fields it
implements (``implements``) and refuses a spec that sets any other, so a field
a new kind adds is built by its own layer, or refused, never dropped.
"""

import torch
from torch import nn

from .attention import attend, check_inputs, logit_mask, self_attention
from .checks import check_shape
from .heads import head_weights
from .spec import AttentionSpec


def layer_for(spec):
    """The module a spec describes: a :class:`ChunkedAttention` or a
    :class:`MultiHeadAttention`."""
    if not isinstance(spec, AttentionSpec):
        raise TypeError(
            "layer_for takes an AttentionSpec, got "
            f"{type(spec).__name__} {spec!r}; for a kind the book names: "
            "layer_for(AttentionSpec.named(kind, d_model, num_heads))"
        )
    return (ChunkedAttention if spec.chunked else MultiHeadAttention)(spec)


class MultiHeadAttention(nn.Module):
    """Multi-head attention from an :class:`AttentionSpec` or its sizes:
    ``(64, 8)`` standard, ``head_dim=64`` wide, ``num_kv_heads=2`` GQA."""

    # the spec's fields it builds, besides d_model and num_heads
    implements = (
        "head_dim",
        "value_dim",
        "num_kv_heads",
        "bias",
        "scale",
        "dropout",
    )

    def __init__(self, d_model, num_heads=None, **sizes):
        super().__init__()
        self.spec = spec = AttentionSpec.of(self, d_model, num_heads, sizes)
        d, heads, kv_heads = spec.d_model, spec.num_heads, spec.num_kv_heads
        self.q_proj = nn.Linear(d, heads * spec.head_dim, bias=spec.bias)
        self.k_proj = nn.Linear(d, kv_heads * spec.head_dim, bias=spec.bias)
        self.v_proj = nn.Linear(d, kv_heads * spec.value_dim, bias=spec.bias)
        self.out_proj = nn.Linear(heads * spec.value_dim, d, bias=spec.bias)

    def extra_repr(self):
        return self.spec.sizes

    def project(self, query, key=None, value=None):
        """``(q, k, v)``, each ``(batch, heads or kv_heads, seq, size)``."""
        query, key, value = self_attention(query, key, value)
        heads, kv_heads = self.spec.num_heads, self.spec.num_kv_heads
        # (batch, seq, heads * size) -> (batch, heads, seq, size)
        q = self.q_proj(query).unflatten(-1, (heads, -1)).transpose(1, 2)
        k = self.k_proj(key).unflatten(-1, (kv_heads, -1)).transpose(1, 2)
        v = self.v_proj(value).unflatten(-1, (kv_heads, -1)).transpose(1, 2)
        return q, k, v

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
        """``(output, weights | None)``. Masks as in ``nn.MultiheadAttention``
        (True: may not attend); ``head_mask`` scales each head's output."""
        spec = self.spec
        query, key, value = check_inputs(
            query, key, value, spec.d_model, self.out_proj.weight
        )
        mask = logit_mask(  # broadcasts to (b, heads, n_query, n_key)
            attn_mask, key_padding_mask, is_causal, query, key, spec.num_heads
        )
        q, k, v = self.project(query, key, value)  # (b, heads, seq, size)
        dropout = spec.dropout if self.training else 0.0
        out, weights = attend(  # (b, heads, n_query, value_dim), (.., n_key)
            q, k, v, mask, spec.scale, dropout, need_weights
        )
        if head_mask is not None:
            check_shape("head_mask", head_mask, num_heads=spec.num_heads)
            out = out * head_mask.to(out)[:, None, None]  # (heads, 1, 1)
        concat = out.transpose(1, 2).flatten(2)  # (b, n_query, heads * value)
        return self.out_proj(concat), weights  # (b, n_query, d_model)

    def head_weights(self):
        """The weights, heads first: :func:`mha_lib.heads.head_weights`."""
        return head_weights(self)


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

    implements = ("chunked", "bias", "scale", "dropout")  # sizes fixed

    def __init__(self, d_model, num_heads=None, **sizes):
        nn.Module.__init__(self)
        self.spec = spec = AttentionSpec.of(
            self, d_model, num_heads, sizes, chunked=True
        )
        heads, chunk, bias = spec.num_heads, spec.head_dim, spec.bias
        self.q_proj = ChunkedLinear(heads, chunk, bias)
        self.k_proj = ChunkedLinear(heads, chunk, bias)
        self.v_proj = ChunkedLinear(heads, chunk, bias)
        self.out_proj = nn.Linear(spec.d_model, spec.d_model, bias=bias)

    def project(self, query, key=None, value=None):
        query, key, value = self_attention(query, key, value)
        return self.q_proj(query), self.k_proj(key), self.v_proj(value)


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
            query, key, value, self.d_model, self.q_proj.weight
        )
        mask = logit_mask(
            attn_mask, key_padding_mask, is_causal, query, key, 1
        )
        return self.contribution(query, key, value, mask, need_weights)

    def contribution(
        self, query, key, value, mask, need_weights, scale=None, dropout=0.0
    ):
        """The head's term of the layer's output, from checked inputs and this
        head's part of :func:`~mha_lib.attention.logit_mask`'s mask (or
        ``None``). ``scale`` and ``dropout`` are the layer's (default ``1 /
        sqrt(head_dim)`` and none)."""
        q = self.q_proj(query).unsqueeze(1)  # (batch, 1, n_query, head_dim)
        k = self.k_proj(key).unsqueeze(1)  # (batch, 1, n_key, head_dim)
        v = self.v_proj(value).unsqueeze(1)
        out, weights = attend(
            q,
            k,
            v,
            mask,
            scale=scale,
            dropout=dropout,
            need_weights=need_weights,
        )
        contribution = self.out_proj(out.squeeze(1))  # (batch, n_query, d)
        return contribution, None if weights is None else weights.squeeze(1)


class PerHeadAttention(nn.Module):
    """Multi-head attention written as ``num_heads`` independent
    :class:`AttentionHead` modules.

    Each head reads the whole input; the layer's output is the sum of the
    heads' contributions plus one shared bias. Same sizes (``head_dim``,
    ``bias``, ``scale``, ``dropout``) and ``forward`` as
    :class:`MultiHeadAttention`.
    """

    # one size per head, no shared key/value heads
    implements = ("head_dim", "bias", "scale", "dropout")

    def __init__(self, d_model, num_heads=None, **sizes):
        super().__init__()
        self.spec = spec = AttentionSpec.of(self, d_model, num_heads, sizes)
        self.heads = nn.ModuleList(
            AttentionHead(spec.d_model, spec.head_dim, spec.bias)
            for _ in range(spec.num_heads)
        )
        bias = torch.zeros(spec.d_model)
        self.out_bias = nn.Parameter(bias) if spec.bias else None

    extra_repr = MultiHeadAttention.extra_repr

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
            query, key, value, spec.d_model, self.heads[0].q_proj.weight
        )
        mask = logit_mask(
            attn_mask, key_padding_mask, is_causal, query, key, spec.num_heads
        )
        if mask is not None:
            while mask.dim() < 4:  # (.., heads or 1, n_query, n_key)
                mask = mask[None]
        if head_mask is not None:
            check_shape("head_mask", head_mask, num_heads=spec.num_heads)
        output = 0.0 if self.out_bias is None else self.out_bias
        all_weights = []
        for i, head in enumerate(self.heads):
            own = None if mask is None else mask[:, i % mask.shape[1], None]
            contribution, weights = head.contribution(
                query,
                key,
                value,
                own,  # (batch or 1, 1, n_query, n_key)
                need_weights,
                scale=spec.scale,
                dropout=spec.dropout if self.training else 0.0,
            )
            if head_mask is not None:
                contribution = contribution * head_mask[i].to(contribution)
            output = output + contribution
            all_weights.append(weights)
        weights = torch.stack(all_weights, dim=1) if need_weights else None
        return output, weights
