"""Statistics for claims that must survive new seeds: rank correlation,
intervals for a proportion and for a paired difference, and the choice of a
learning rate from several seeds."""

import math
import statistics

import torch


def rank_correlation(a, b):
    """Spearman rank correlation of two equally long sets of numbers.

    Tied values share their average rank (as ``scipy.stats.spearmanr``
    ranks them), so the result does not depend on the order of the items. A
    constant sequence has no ranking to correlate: refused.
    """
    a, b = (
        torch.as_tensor(a, dtype=torch.float64).flatten(),
        torch.as_tensor(b, dtype=torch.float64).flatten(),
    )
    if a.shape != b.shape or a.numel() < 2:
        raise ValueError(
            "rank_correlation needs two sequences of one length >= 2, got "
            f"{a.numel()} and {b.numel()}"
        )
    for name, values in (("a", a), ("b", b)):
        if not torch.isfinite(values).all():
            raise ValueError(f"{name} holds NaN or infinite values")
        if (values == values[0]).all():
            raise ValueError(
                f"{name} is constant: its rank correlation is undefined"
            )
    ranks = torch.stack([average_ranks(a), average_ranks(b)])
    return torch.corrcoef(ranks)[0, 1].item()


def average_ranks(values):
    """Ranks 0, 1, ... of a 1-D tensor, tied values sharing their mean
    rank."""
    ranks = torch.empty_like(values)
    ranks[values.argsort()] = torch.arange(len(values), dtype=values.dtype)
    _, group, counts = torch.unique(
        values, return_inverse=True, return_counts=True
    )
    sums = torch.zeros(len(counts), dtype=values.dtype)
    sums.index_add_(0, group, ranks)  # (distinct values,)
    return (sums / counts)[group]


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


def fisher_one_sided(first, first_total, second, second_total):
    """One-sided Fisher exact test that the first group's rate is higher:
    the probability of ``first`` or more successes in the first group if
    both groups had the same rate (hypergeometric tail)."""
    for name, count, total in (
        ("first", first, first_total),
        ("second", second, second_total),
    ):
        if not 0 <= count <= total or total <= 0:
            raise ValueError(
                f"{name}: need 0 <= successes <= trials and trials > 0, got "
                f"{count} of {total}"
            )
    successes, everyone = first + second, first_total + second_total
    tail = sum(
        math.comb(successes, k)
        * math.comb(everyone - successes, first_total - k)
        for k in range(first, min(first_total, successes) + 1)
    )
    return tail / math.comb(everyone, first_total)


def smallest_resolvable(count, total, level=0.05):
    """The fewest successes out of ``total`` that a second group would need
    for a one-sided Fisher test to tell it above ``count`` of ``total`` at
    ``level``; None where no count would: what these seeds can resolve."""
    return next(
        (
            better
            for better in range(count + 1, total + 1)
            if fisher_one_sided(better, total, count, total) < level
        ),
        None,
    )
