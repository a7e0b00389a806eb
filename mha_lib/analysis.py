"""Measuring what layers compute: how outputs differ and where attention goes."""

import math

import torch


def relative_difference(output, reference):
    """``||output - reference|| / ||reference||`` as a float (Frobenius norms over all entries)."""
    if not isinstance(output, torch.Tensor) or not isinstance(reference, torch.Tensor):
        raise TypeError("relative_difference expects two torch.Tensors")
    if output.shape != reference.shape:
        raise ValueError(
            f"relative_difference needs tensors of one shape, got {tuple(output.shape)} and {tuple(reference.shape)}"
        )
    return ((output - reference).norm() / reference.norm()).item()


def js_distance(p, q):
    """Jensen-Shannon distance (base 2, in [0, 1]) between distributions along the last axis."""
    middle = (p + q) / 2

    def kl(a, b):  # 0 * log(0 / b) counts as 0
        return torch.where(a > 0, a * (a.clamp_min(1e-30).log2() - b.clamp_min(1e-30).log2()), 0.0).sum(-1)

    return ((kl(p, middle) + kl(q, middle)) / 2).clamp_min(0).sqrt()


def pairwise_head_distance(weights):
    """Mean Jensen-Shannon distance between every pair of heads' attention rows.

    ``weights``: ``(batch, heads, n_query, n_key)``, rows summing to 1 (heads of several layers
    may be concatenated along dim 1). Returns a ``(heads, heads)`` matrix, averaged over the
    batch and the queries.
    """
    if weights.dim() != 4:
        raise ValueError(f"weights must be (batch, heads, n_query, n_key), got {tuple(weights.shape)}")
    p, q = weights.unsqueeze(2), weights.unsqueeze(1)  # (batch, heads, 1, ..) and (batch, 1, heads, ..)
    return js_distance(p, q).mean(dim=(0, 3))


def rank_correlation(a, b):
    """Spearman rank correlation of two equally long sets of numbers (ties broken by order)."""
    a, b = torch.as_tensor(a, dtype=torch.float64).flatten(), torch.as_tensor(b, dtype=torch.float64).flatten()
    if a.shape != b.shape or a.numel() < 2:
        raise ValueError(f"rank_correlation needs two sequences of one length >= 2, got {a.numel()} and {b.numel()}")
    rank_a, rank_b = (values.argsort().argsort().double() for values in (a, b))
    return torch.corrcoef(torch.stack([rank_a, rank_b]))[0, 1].item()


def offset_profile(weights, first=0):
    """Mean attention each head pays to the key ``k`` positions back: ``(heads, n_key)``.

    ``weights``: ``(batch, heads, n, n)`` of causal self-attention. Entry ``[i, k]`` averages head
    i's weight on key ``t - k`` over queries ``t >= max(first, k)`` and the batch.
    """
    batch, heads, n, _ = weights.shape
    profile = torch.zeros(heads, n, device=weights.device)
    for k in range(n):
        queries = torch.arange(max(first, k), n, device=weights.device)
        if len(queries):
            profile[:, k] = weights[:, :, queries, queries - k].mean(dim=(0, 2))
    return profile


def attention_statistics(weights):
    """Where each head's attention goes in one sequence (after Clark et al. 2019).

    ``weights``: ``(..., n, n)`` attention of one sentence whose first token is ``[CLS]`` and
    last is ``[SEP]``. Returns a dict of ``(...)`` tensors, each averaged over the queries:
    ``previous`` and ``next`` (weight on the neighbouring token, over the queries that have
    one), ``cls``, ``sep``, ``self`` and ``entropy`` (of each row, divided by ``log n``, so 1 is
    uniform).
    """
    n = weights.shape[-1]
    if weights.shape[-2] != n or n < 3:
        raise ValueError(f"weights must end in (n, n) with n >= 3, got {tuple(weights.shape)}")
    index = torch.arange(n, device=weights.device)
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1) / math.log(n)
    return {
        "previous": weights[..., index[1:], index[1:] - 1].mean(-1),
        "next": weights[..., index[:-1], index[:-1] + 1].mean(-1),
        "cls": weights[..., :, 0].mean(-1),
        "sep": weights[..., :, -1].mean(-1),
        "self": weights[..., index, index].mean(-1),
        "entropy": entropy.mean(-1),
    }


HEAD_CLASSES = ("previous token", "next token", "[CLS]", "[SEP]", "broad", "mixed")


def classify_heads(statistics, *, share=0.5, broad=0.75):
    """Label every head with the first rule it meets.

    "previous token" / "next token" / "[CLS]" / "[SEP]" when at least ``share`` of its attention
    goes there on average; "broad" when its mean normalised entropy is at least ``broad``;
    otherwise "mixed". ``statistics`` is :func:`attention_statistics` output, averaged over
    sentences. Returns a nested list with the shape of the statistics, e.g. (layers, heads).
    """
    rules = [("previous token", "previous"), ("next token", "next"), ("[CLS]", "cls"), ("[SEP]", "sep")]

    def label(position):
        for name, key in rules:
            if statistics[key][position] >= share:
                return name
        return "broad" if statistics["entropy"][position] >= broad else "mixed"

    shape = statistics["entropy"].shape
    return [[label((layer, head)) for head in range(shape[1])] for layer in range(shape[0])]
