"""The small attention-only model trained in Chapters 4 and 5."""

import torch
from torch import nn

from ..checks import check_instance, check_positive_int, check_shape
from ..layers import layer_for
from ..spec import AttentionSpec
from .stacking import broadcast_add


class AttentionModel(nn.Module):
    """Embed, then ``num_layers`` causal attention layers with residuals, then
    a readout.

    No MLP and no normalisation, so every way information moves between
    positions is an attention head, which is what we want to watch. Positions
    are learned embeddings added to the embedded input. Every layer is built
    from one :class:`~mha_lib.spec.AttentionSpec`, given as ``attention`` or by
    its sizes (``d_model``, ``num_heads``, ``head_dim``, ``value_dim``,
    ``chunked``).
    """

    stacked_in_place = ("position",)  # added with broadcast_add

    def __init__(
        self, d_in, d_out, *, seq_len, num_layers=1, attention=None, **sizes
    ):
        super().__init__()
        for name, value in (
            ("d_in", d_in),
            ("d_out", d_out),
            ("seq_len", seq_len),
        ):
            check_positive_int(name, value)
        check_positive_int("num_layers", num_layers)
        if attention is None:
            attention = AttentionSpec(**sizes)
        elif sizes:
            raise ValueError(
                "give the layer as attention or by its sizes, not both: "
                f"{sizes}"
            )
        self.attention = check_instance(
            attention, AttentionSpec, "AttentionModel"
        )
        d_model = attention.d_model
        self.embed = nn.Linear(d_in, d_model)
        self.position = nn.Parameter(
            torch.randn(seq_len, d_model) / d_model**0.5
        )
        self.layers = nn.ModuleList(
            layer_for(attention) for _ in range(num_layers)
        )
        self.readout = nn.Linear(d_model, d_out)

    @property
    def head_shape(self):
        """``(num_layers, num_heads)``: the shape of a ``head_mask`` and of
        per-head scores."""
        return len(self.layers), self.attention.num_heads

    @classmethod
    def for_task(cls, task, **sizes):
        """A model whose input and output sizes fit ``task`` (e.g. an
        :class:`~mha_lib.course.tasks.OffsetCopy`)."""
        return cls(task.d_in, task.d_out, seq_len=task.seq_len, **sizes)

    def forward_flops(self, seq_len=None):
        """Multiply-add FLOPs of one forward pass over one sequence (matrix
        products only)."""
        seq_len = self.position.shape[-2] if seq_len is None else seq_len
        attention = self.attention.flops(seq_len)["total"] * len(self.layers)
        ends = self.embed.in_features + self.readout.out_features
        return attention + 2 * seq_len * self.attention.d_model * ends

    def forward(self, x, *, head_mask=None, need_weights=False):
        """``x`` (batch, seq, d_in) -> ``(prediction (batch, seq, d_out),
        weights)``.

        ``head_mask``: ``(num_layers, num_heads)``, scales each head's output
        (1 keeps, 0 removes). ``weights``: one ``(batch, num_heads, seq, seq)``
        tensor per layer, or None.
        """
        d_in, seq_len = self.embed.in_features, self.position.shape[-2]
        if x.dim() != 3 or x.shape[-1] != d_in:
            raise ValueError(
                f"x must have shape (batch, seq, {d_in}), got {tuple(x.shape)}"
            )
        if x.shape[1] > seq_len:
            raise ValueError(
                f"sequences longer than seq_len={seq_len}: got {x.shape[1]}"
            )
        if head_mask is not None:
            layers, heads = self.head_shape
            check_shape(
                "head_mask", head_mask, num_layers=layers, num_heads=heads
            )
        # (batch, seq, d_model) + (seq, d_model): one learned vector per
        # position
        hidden = broadcast_add(
            self.embed(x), self.position[..., : x.shape[1], :]
        )
        all_weights = []
        for index, layer in enumerate(self.layers):
            mask = None if head_mask is None else head_mask[index]
            out, weights = layer(
                hidden,
                is_causal=True,
                need_weights=need_weights,
                head_mask=mask,
            )
            hidden = hidden + out
            all_weights.append(weights)
        return self.readout(hidden), all_weights if need_weights else None
