"""A character-level language model on real text (Chapter 7).

The model is a decoder in the GPT mould, kept small: token embedding and
learned positions, ``num_layers`` pre-LayerNorm blocks of causal attention and
a GELU MLP, a final LayerNorm and an untied linear readout. Its attention is
any layer of the course, given by an :class:`~mha_lib.spec.AttentionSpec`. The
text is :mod:`mha_lib.course.corpus`; :mod:`mha_lib.course.language_training`
trains many seeds together.
"""

import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_instance, check_positive_int, check_shape
from ..layers import layer_for
from ..spec import AttentionSpec
from .stacking import broadcast_add


class Block(nn.Module):
    """Pre-LayerNorm block: ``x + attention(norm(x))``, then ``x +
    mlp(norm(x))``."""

    def __init__(self, attention, mlp_ratio=4):
        super().__init__()
        d_model = attention.d_model
        self.attention_norm = nn.LayerNorm(d_model)
        self.attention = layer_for(attention)
        self.mlp_norm = nn.LayerNorm(d_model)
        self.mlp_in = nn.Linear(d_model, mlp_ratio * d_model)
        self.mlp_out = nn.Linear(mlp_ratio * d_model, d_model)

    def forward(self, x, head_mask=None, need_weights=False):
        attended, weights = self.attention(
            self.attention_norm(x),
            is_causal=True,
            head_mask=head_mask,
            need_weights=need_weights,
        )
        x = x + attended
        x = x + self.mlp_out(F.gelu(self.mlp_in(self.mlp_norm(x))))
        return x, weights


class CharTransformer(nn.Module):
    """Decoder-only character model whose every attention layer is
    ``attention``.

    ``forward(ids (batch, n))`` returns ``(logits (batch, n, vocab),
    weights)``: position t predicts character t + 1 from characters 0 .. t.
    """

    stacked_in_place = ("position",)  # added with broadcast_add

    def __init__(
        self, vocab_size, *, attention, context, num_layers=2, mlp_ratio=4
    ):
        super().__init__()
        check_instance(attention, AttentionSpec, "CharTransformer")
        for name, value in (("vocab_size", vocab_size), ("context", context)):
            check_positive_int(name, value)
        check_positive_int("num_layers", num_layers)
        self.attention, d_model = attention, attention.d_model
        self.token = nn.Embedding(vocab_size, d_model)
        self.position = nn.Parameter(torch.randn(context, d_model) * 0.02)
        blocks = (Block(attention, mlp_ratio) for _ in range(num_layers))
        self.blocks = nn.ModuleList(blocks)
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, vocab_size)
        with torch.no_grad():
            self.token.weight.mul_(0.02)

    @property
    def head_shape(self):
        """``(num_layers, num_heads)``: the shape of a ``head_mask``."""
        return len(self.blocks), self.attention.num_heads

    @property
    def context(self):
        return self.position.shape[-2]

    def forward_flops(self, seq_len=None):
        """Multiply-add FLOPs of one forward pass over one sequence (matrix
        products only)."""
        n = self.context if seq_len is None else seq_len
        d_model, vocab = self.attention.d_model, self.readout.out_features
        mlp = 2 * 2 * n * d_model * self.blocks[0].mlp_in.out_features
        per_block = self.attention.flops(n)["total"] + mlp
        return len(self.blocks) * per_block + 2 * n * d_model * vocab

    def forward(self, ids, *, head_mask=None, need_weights=False):
        if ids.dim() != 2 or ids.shape[1] > self.context:
            raise ValueError(
                "ids must have shape (batch, n) with n <= "
                f"context={self.context}, "
                f"got {tuple(ids.shape)}"
            )
        if head_mask is not None:
            layers, heads = self.head_shape
            check_shape(
                "head_mask", head_mask, num_layers=layers, num_heads=heads
            )
        x = broadcast_add(
            self.token(ids), self.position[..., : ids.shape[1], :]
        )
        all_weights = []
        for index, block in enumerate(self.blocks):
            mask = None if head_mask is None else head_mask[index]
            x, weights = block(x, mask, need_weights)
            all_weights.append(weights)
        logits = self.readout(self.norm(x))  # (batch, n, vocab)
        return logits, (all_weights if need_weights else None)
