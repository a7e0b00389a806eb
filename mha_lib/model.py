"""The small attention-only model trained in Chapters 4 and 5."""

import torch
from torch import nn

from .checks import check_positive_int
from .layers import ChunkedAttention, MultiHeadAttention


class AttentionModel(nn.Module):
    """Embed, then ``num_layers`` causal attention layers with residuals, then a linear readout.

    No MLP and no normalisation, so every way information moves between positions is an
    attention head, which is what we want to watch. Positions are learned embeddings added to
    the embedded input. Every layer is a :class:`~mha_lib.layers.MultiHeadAttention` with
    ``head_dim`` and ``value_dim`` (``head_dim=d_model`` gives wide heads), or with ``chunked=True`` a
    :class:`~mha_lib.layers.ChunkedAttention`.
    """

    def __init__(
        self, d_in, d_out, *, d_model, num_heads, seq_len, num_layers=1, head_dim=None, value_dim=None, chunked=False
    ):
        super().__init__()
        for name, value in (("d_in", d_in), ("d_out", d_out), ("seq_len", seq_len), ("num_layers", num_layers)):
            check_positive_int(name, value)
        if chunked and (head_dim is not None or value_dim is not None):
            raise ValueError("chunked layers fix head_dim = value_dim = d_model / num_heads; leave both unset")
        self.embed = nn.Linear(d_in, d_model)
        self.position = nn.Parameter(torch.randn(seq_len, d_model) / d_model**0.5)
        def layer():
            if chunked:
                return ChunkedAttention(d_model, num_heads)
            return MultiHeadAttention(d_model, num_heads, head_dim=head_dim, value_dim=value_dim)

        self.layers = nn.ModuleList(layer() for _ in range(num_layers))
        self.readout = nn.Linear(d_model, d_out)

    @property
    def head_shape(self):
        """``(num_layers, num_heads)``: the shape of a ``head_mask`` and of per-head scores."""
        return len(self.layers), self.layers[0].num_heads

    @classmethod
    def for_task(cls, task, **sizes):
        """A model whose input and output sizes fit ``task`` (e.g. an :class:`~mha_lib.tasks.OffsetCopy`)."""
        return cls(task.d_in, task.d_out, seq_len=task.seq_len, **sizes)

    def forward(self, x, *, head_mask=None, need_weights=False):
        """``x`` (batch, seq, d_in) -> ``(prediction (batch, seq, d_out), weights)``.

        ``head_mask``: ``(num_layers, num_heads)``, scales each head's output (1 keeps, 0 removes).
        ``weights``: a list with one ``(batch, num_heads, seq, seq)`` tensor per layer, or ``None``.
        """
        if x.dim() != 3 or x.shape[-1] != self.embed.in_features:
            raise ValueError(f"x must have shape (batch, seq, {self.embed.in_features}), got {tuple(x.shape)}")
        if x.shape[1] > self.position.shape[0]:
            raise ValueError(f"sequences longer than seq_len={self.position.shape[0]}: got {x.shape[1]}")
        if head_mask is not None and tuple(head_mask.shape) != self.head_shape:
            raise ValueError(
                f"head_mask must have shape (num_layers, num_heads) = {self.head_shape}, "
                f"got {tuple(head_mask.shape)}"
            )
        hidden = self.embed(x) + self.position[: x.shape[1]]
        all_weights = []
        for index, layer in enumerate(self.layers):
            mask = None if head_mask is None else head_mask[index]
            out, weights = layer(hidden, is_causal=True, need_weights=need_weights, head_mask=mask)
            hidden = hidden + out
            all_weights.append(weights)
        return self.readout(hidden), all_weights if need_weights else None
