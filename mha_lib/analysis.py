"""Measuring what layers compute: how outputs differ, where attention goes, how
alike heads are."""

import math
import statistics

import torch


def relative_difference(output, reference):
    """``||output - reference|| / ||reference||`` as a float (Frobenius norms
    over all entries)."""
    if not isinstance(output, torch.Tensor) or not isinstance(
        reference, torch.Tensor
    ):
        raise TypeError("relative_difference expects two torch.Tensors")
    if output.shape != reference.shape:
        raise ValueError(
            "relative_difference needs tensors of one shape, got "
            f"{tuple(output.shape)} and {tuple(reference.shape)}"
        )
    return ((output - reference).norm() / reference.norm()).item()


def js_distance(p, q):
    """Jensen-Shannon distance (base 2, in [0, 1]) between distributions along
    the last axis."""
    middle = (p + q) / 2

    def kl(a, b):  # 0 * log(0 / b) counts as 0
        return torch.where(
            a > 0,
            a * (a.clamp_min(1e-30).log2() - b.clamp_min(1e-30).log2()),
            0.0,
        ).sum(-1)

    return ((kl(p, middle) + kl(q, middle)) / 2).clamp_min(0).sqrt()


def pairwise_head_distance(weights):
    """Mean Jensen-Shannon distance between every pair of heads' attention
    rows.

    ``weights``: ``(batch, heads, n_query, n_key)``, rows summing to 1 (heads
    of several layers may be concatenated along dim 1). Returns a ``(heads,
    heads)`` matrix, averaged over the batch and the queries.
    """
    if weights.dim() != 4:
        raise ValueError(
            "weights must be (batch, heads, n_query, n_key), got "
            f"{tuple(weights.shape)}"
        )
    # (batch, heads, 1, ..) and (batch, 1, heads, ..)
    p, q = (
        weights.unsqueeze(2),
        weights.unsqueeze(1),
    )
    return js_distance(p, q).mean(dim=(0, 3))


def rank_correlation(a, b):
    """Spearman rank correlation of two equally long sets of numbers (ties
    broken by order)."""
    a, b = (
        torch.as_tensor(a, dtype=torch.float64).flatten(),
        torch.as_tensor(b, dtype=torch.float64).flatten(),
    )
    if a.shape != b.shape or a.numel() < 2:
        raise ValueError(
            "rank_correlation needs two sequences of one length >= 2, got "
            f"{a.numel()} and {b.numel()}"
        )
    rank_a, rank_b = (values.argsort().argsort().double() for values in (a, b))
    return torch.corrcoef(torch.stack([rank_a, rank_b]))[0, 1].item()


def offset_profile(weights, first=0):
    """Mean attention each head pays to the key ``k`` positions back: ``(heads,
    n_key)``.

    ``weights``: ``(batch, heads, n, n)`` of causal self-attention. Entry ``[i,
    k]`` averages head i's weight on key ``t - k`` over queries ``t >=
    max(first, k)`` and the batch.
    """
    batch, heads, n, _ = weights.shape
    profile = torch.zeros(heads, n, device=weights.device)
    for k in range(n):
        queries = torch.arange(max(first, k), n, device=weights.device)
        if len(queries):
            profile[:, k] = weights[:, :, queries, queries - k].mean(
                dim=(0, 2)
            )
    return profile


def paired_bootstrap(
    first, second, groups, *, confidence=0.95, resamples=2000, seed=0
):
    """How much better ``first`` scores than ``second`` on the same items,
    with an interval (95 % by default) from resampling whole groups (e.g.
    documents).

    ``first``, ``second``: per-item scores (hits as 0/1); ``groups``: each
    item's group. For several comparisons at once, pass a Bonferroni
    ``confidence`` (``1 - 0.05 / comparisons``) and more ``resamples``.
    Returns ``(difference of means, low, high)``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    first = torch.as_tensor(first, dtype=torch.float64).flatten()
    second = torch.as_tensor(second, dtype=torch.float64).flatten()
    groups = torch.as_tensor(groups).flatten()
    if not first.shape == second.shape == groups.shape:
        raise ValueError("first, second and groups need one entry per item")
    _, groups = torch.unique(groups, return_inverse=True)
    count = int(groups.max()) + 1
    per_group = [
        torch.bincount(groups, weights=w, minlength=count)
        for w in (first - second, torch.ones_like(first))
    ]  # (groups,) each: summed difference and number of items
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(count, (resamples, count), generator=generator)
    differences = per_group[0][picks].sum(1) / per_group[1][picks].sum(1)
    tail = (1 - confidence) / 2
    low, high = torch.quantile(
        differences, torch.tensor([tail, 1 - tail], dtype=torch.float64)
    )
    return (first - second).mean().item(), low.item(), high.item()


def wilson_interval(successes, trials, z=1.96):
    """The Wilson score interval of a proportion (95 % by default): ``(low,
    high)``. Sensible at 0 and at ``trials`` successes, unlike the normal
    approximation."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(
            "need 0 <= successes <= trials and trials > 0, got "
            f"{successes} and {trials}"
        )
    p = successes / trials
    centre = (p + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2))
    half /= 1 + z**2 / trials
    return max(0.0, centre - half), min(1.0, centre + half)


def best_rate(losses_by_rate, solved_below):
    """The learning rate whose runs solved the most seeds (a final loss below
    ``solved_below``), ties broken by the lowest median loss.

    ``losses_by_rate``: ``{rate: [final loss of each seed]}``. Counting solved
    seeds first keeps a rate that solves some seeds from losing to one whose
    median sits lower on a plateau.
    """
    if not losses_by_rate:
        raise ValueError("losses_by_rate is empty: no rate to choose")

    def rank(rate):
        losses = losses_by_rate[rate]
        solved = sum(loss < solved_below for loss in losses)
        return -solved, statistics.median(losses)

    return min(losses_by_rate, key=rank)
