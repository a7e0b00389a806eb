"""Synthetic tasks whose answers need attention to several places (Chapters 4 and 5)."""

from dataclasses import dataclass

import torch

from .checks import check_positive_int


@dataclass(frozen=True)
class OffsetCopy:
    """Regress ``[x_{t-o_1}; x_{t-o_2}; ...]`` from a sequence of random vectors ``x_t``.

    Every ``x_t`` is standard normal in ``d_in`` dimensions, so each target entry has variance 1
    and the mean squared error is already the error as a fraction of the target variance.
    Positions before ``max(offsets)`` have no target; ``sample`` returns targets for positions
    ``first = max(offsets)`` to ``seq_len - 1`` only. With offsets (1, 3) one head cannot do
    better than about half the variance.
    """

    offsets: tuple = (1, 3)
    seq_len: int = 16
    d_in: int = 8

    def __post_init__(self):
        check_positive_int("seq_len", self.seq_len)
        check_positive_int("d_in", self.d_in)
        if not isinstance(self.offsets, tuple) or not self.offsets:
            raise TypeError(f"offsets must be a non-empty tuple of ints, got {self.offsets!r}")
        for offset in self.offsets:
            check_positive_int("every offset", offset)
        if max(self.offsets) >= self.seq_len:
            raise ValueError(f"offsets must be smaller than seq_len={self.seq_len}, got {self.offsets}")

    @property
    def first(self):
        """First position that has a target."""
        return max(self.offsets)

    @property
    def d_out(self):
        return len(self.offsets) * self.d_in

    def sample(self, batch, *, generator=None, device=None):
        """``(x (batch, seq_len, d_in), target (batch, seq_len - first, d_out))``.

        Drawn on the CPU from ``generator`` and then moved, so a seed gives the same data on
        every device.
        """
        check_positive_int("batch", batch)
        x = torch.randn(batch, self.seq_len, self.d_in, generator=generator)
        positions = torch.arange(self.first, self.seq_len)
        # one (batch, seq_len - first, d_in) slice per offset, side by side
        target = torch.cat([x[:, positions - offset] for offset in self.offsets], dim=-1)
        return x.to(device), target.to(device)
