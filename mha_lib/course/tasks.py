"""Synthetic tasks whose answers need attention to several places (Chapters 4
and 5).

Every task has the same interface: ``sample(batch, *, generator, device)``
returns ``(x, target)`` with targets for positions ``first`` to ``seq_len -
1``, and ``d_in``, ``d_out``, ``seq_len`` size the model, so training and
evaluation treat all tasks alike. Targets are standard normal, so the mean
squared error is the error as a fraction of the target variance.
"""

from dataclasses import dataclass

import torch

from ..checks import check_positive_int


@dataclass(frozen=True)
class OffsetCopy:
    """Regress ``[x_{t-o_1}; x_{t-o_2}; ...]`` from a sequence of random
    vectors ``x_t``.

    Every ``x_t`` is standard normal in ``d_in`` dimensions, so each target
    entry has variance 1 and the mean squared error is already the error as a
    fraction of the target variance. Positions before ``max(offsets)`` have no
    target; ``sample`` returns targets for positions ``first = max(offsets)``
    to ``seq_len - 1`` only. With offsets (1, 3) one head cannot do better than
    about half the variance.
    """

    offsets: tuple = (1, 3)
    seq_len: int = 16
    d_in: int = 8

    def __post_init__(self):
        check_positive_int("seq_len", self.seq_len)
        check_positive_int("d_in", self.d_in)
        if not isinstance(self.offsets, tuple) or not self.offsets:
            raise TypeError(
                "offsets must be a non-empty tuple of ints, got "
                f"{self.offsets!r}"
            )
        for offset in self.offsets:
            check_positive_int("every offset", offset)
        if max(self.offsets) >= self.seq_len:
            raise ValueError(
                f"offsets must be smaller than seq_len={self.seq_len}, got "
                f"{self.offsets}"
            )

    @property
    def first(self):
        """First position that has a target."""
        return max(self.offsets)

    @property
    def d_out(self):
        return len(self.offsets) * self.d_in

    def sample(self, batch, *, generator=None, device=None):
        """``(x (batch, seq_len, d_in), target (batch, seq_len - first,
        d_out))``.

        Drawn on the CPU from ``generator`` and then moved, so a seed gives the
        same data on every device.
        """
        check_positive_int("batch", batch)
        x = torch.randn(batch, self.seq_len, self.d_in, generator=generator)
        positions = torch.arange(self.first, self.seq_len)
        # one (batch, seq_len - first, d_in) slice per offset, side by side
        target = torch.cat(
            [x[:, positions - offset] for offset in self.offsets], dim=-1
        )
        return x.to(device), target.to(device)


@dataclass(frozen=True)
class AssociativeRecall:
    """Read ``num_pairs`` (key, value) pairs, then answer ``num_queries`` of
    the keys with their values.

    Keys are random directions in ``d_key`` dimensions (scaled to length
    ``sqrt(d_key)``), fresh in every sequence; values are standard normal
    vectors of ``d_value`` entries. Positions ``0 .. num_pairs - 1`` hold
    ``[key; value]``, the next ``num_queries`` positions hold ``[key; 0]`` for
    stored keys, each asked once, and the target there is the value stored with
    that key. To answer, a head must compare its query with every stored key; a
    head whose query-key size is below ``d_key`` sees only a projection of the
    keys and confuses some.
    """

    d_key: int = 8
    d_value: int = 4
    num_pairs: int = 8
    num_queries: int = 8

    def __post_init__(self):
        for name in ("d_key", "d_value", "num_pairs", "num_queries"):
            check_positive_int(name, getattr(self, name))
        if self.num_queries > self.num_pairs:
            raise ValueError(
                f"num_queries={self.num_queries} must not exceed "
                f"num_pairs={self.num_pairs}: "
                "each stored key is asked once"
            )

    @property
    def seq_len(self):
        return self.num_pairs + self.num_queries

    @property
    def first(self):
        """First position that has a target: the first query."""
        return self.num_pairs

    @property
    def d_in(self):
        return self.d_key + self.d_value

    @property
    def d_out(self):
        return self.d_value

    def sample(self, batch, *, generator=None, device=None):
        """``(x (batch, seq_len, d_key + d_value), target (batch, num_queries,
        d_value))``.

        Drawn on the CPU from ``generator`` and then moved, so a seed gives the
        same data on every device.
        """
        check_positive_int("batch", batch)
        keys = torch.randn(
            batch, self.num_pairs, self.d_key, generator=generator
        )
        # (batch, pairs, d_key)
        keys = keys * (self.d_key**0.5 / keys.norm(dim=-1, keepdim=True))
        values = torch.randn(
            batch, self.num_pairs, self.d_value, generator=generator
        )
        asked = torch.rand(batch, self.num_pairs, generator=generator).argsort(
            -1
        )[:, : self.num_queries]
        # (batch, queries, d_key)
        queries = keys.gather(1, asked[..., None].expand(-1, -1, self.d_key))
        # (batch, queries, d_value)
        target = values.gather(
            1, asked[..., None].expand(-1, -1, self.d_value)
        )
        no_value = torch.zeros(batch, self.num_queries, self.d_value)
        # (batch, seq, d_in)
        x = torch.cat(
            [
                torch.cat([keys, values], -1),
                torch.cat([queries, no_value], -1),
            ],
            1,
        )
        return x.to(device), target.to(device)
