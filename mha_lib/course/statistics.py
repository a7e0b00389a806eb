"""Statistics for claims that must survive new seeds: rank correlation,
intervals for a proportion and for a paired difference (by resampling, or
Student's t for a handful of seeds, or over seeds and the pieces of a text
together), and the choice of a learning rate from several seeds."""

import functools
import math
import numbers
import statistics

import torch


def finite(name, values):
    """``values``, one sequence of numbers, as a 1-D float64 tensor; refused
    (``ValueError`` naming ``name`` and the values) where it has another
    shape (a table would be read as one long row) or a value is NaN or
    infinite: a diverged run is no number to take a mean, a median or an
    interval of."""
    values = torch.as_tensor(values, dtype=torch.float64)
    if values.dim() != 1:
        raise ValueError(
            f"{name} must be one sequence of numbers (1-D), got shape "
            f"{tuple(values.shape)}"
        )
    if not torch.isfinite(values).all():
        shown = values.tolist()
        shown = shown if len(shown) <= 8 else [*shown[:8], "..."]
        raise ValueError(
            f"{name} must be finite numbers, got {shown} (NaN or infinity: a "
            "training diverged? count it apart, as a failure)"
        )
    return values


def diverged(scores):
    """How many of ``scores`` (one final loss per run) are no finite number:
    the runs that diverged (NaN or infinite, or ``None`` where a results file
    stored one). A diverged run is a result, counted, not a score."""
    return sum(
        not (isinstance(s, numbers.Real) and math.isfinite(s)) for s in scores
    )


def rank_correlation(a, b):
    """Spearman rank correlation of two equally long sets of numbers.

    Tied values share their average rank (as ``scipy.stats.spearmanr``
    ranks them), so the result does not depend on the order of the items. A
    constant sequence has no ranking to correlate: refused.
    """
    a, b = finite("a", a), finite("b", b)
    if a.shape != b.shape or a.numel() < 2:
        raise ValueError(
            "rank_correlation needs two sequences of one length >= 2, got "
            f"{a.numel()} and {b.numel()}"
        )
    for name, values in (("a", a), ("b", b)):
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
    first, second = finite("first", first), finite("second", second)
    groups = torch.as_tensor(groups)
    if not first.shape == second.shape == groups.shape:
        raise ValueError(
            "first, second and groups need one entry per item, got shapes "
            f"{tuple(first.shape)}, {tuple(second.shape)}, "
            f"{tuple(groups.shape)}"
        )
    if groups.is_floating_point() and groups.isnan().any():
        raise ValueError(
            "groups must name each item's group (an id per item), got NaN "
            f"for items {groups.isnan().nonzero().flatten().tolist()[:8]}"
        )
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


def seeds_and_text_bootstrap(
    first, second, characters, *, confidence=0.95, resamples=4000, seed=0
):
    """How much ``first`` exceeds ``second`` per character, paired by seed,
    with an interval that covers the sampling of the text as well as of the
    seeds: ``(mean difference, low, high)``.

    ``first`` and ``second`` are ``(seeds, pieces)``: each run's loss summed
    over each piece of the scored text (a document, a book), row ``s`` of
    both from seed ``s``; ``characters`` is each piece's length. A run's
    score is its summed loss over the summed length. Each resample draws
    the seeds and, apart, the pieces with replacement (Owen's pigeonhole
    bootstrap) and averages the seeds' paired differences over the drawn
    pieces. The interval is Student's t on the resamples' spread, with the
    degrees of freedom and small-sample widening of the fewer of seeds and
    pieces, pieces counted by their effective number ``(sum c)^2 / sum
    c^2`` of their characters ``c``: plain percentiles covered a zero gap
    in only 87 % of drawn experiments with 6 pieces; counting the Bible's six
    scored books as six covered it in 90 % where the books differ; this
    covered it in 94-96 % at 15 seeds and 6 to 300 even pieces and at the
    Bible's 33 scored chapters, and in all at its six books, whose interval
    is then too wide to resolve anything (``tests/test_statistics.py``).
    For several comparisons at once, pass a Bonferroni ``confidence``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    first, second = (
        torch.as_tensor(x, dtype=torch.float64) for x in (first, second)
    )
    characters = finite("characters", characters)
    if (
        first.ndim != 2
        or first.shape != second.shape
        or first.shape[1] != characters.numel()
        or min(first.shape) < 2
    ):
        raise ValueError(
            "first and second must be (seeds, pieces), at least 2 of each, "
            f"and characters one length per piece; got {tuple(first.shape)}, "
            f"{tuple(second.shape)} and {characters.numel()} lengths"
        )
    if not (first.isfinite().all() and second.isfinite().all()):
        raise ValueError("a run's loss on a piece is not a finite number")
    if (characters <= 0).any():
        raise ValueError("every piece needs a positive number of characters")
    differences = first - second  # (seeds, pieces)
    seeds, pieces = differences.shape
    generator = torch.Generator().manual_seed(seed)

    def counts(n):  # (resamples, n): how often each was drawn
        picks = torch.randint(n, (resamples, n), generator=generator)
        drawn = torch.zeros(resamples, n, dtype=torch.float64)
        return drawn.scatter_add_(1, picks, torch.ones_like(drawn))

    by_seed, by_piece = counts(seeds), counts(pieces)
    # each resample: sum over drawn seeds of (drawn pieces' loss difference
    # over their characters), over the number of seeds
    summed = ((by_seed @ differences) * by_piece).sum(1)
    resampled = summed / (seeds * (by_piece @ characters))
    mean = (differences.sum(1) / characters.sum()).mean().item()
    # the resamples' spread, widened for the fewer of seeds and pieces,
    # counting pieces of unequal length by their effective number (Kish's:
    # six books, one of them 69 % of the text, count as two)
    effective = (characters.sum() ** 2 / (characters**2).sum()).item()
    fewer = min(seeds, effective)
    spread = resampled.std().item() * math.sqrt(fewer / (fewer - 1))
    half = student_t_quantile((1 + confidence) / 2, fewer - 1) * spread
    return mean, mean - half, mean + half


@functools.lru_cache(maxsize=256)  # a chapter asks for a few, many times
def student_t_quantile(p, df):
    """The ``p``-quantile of Student's t distribution with ``df`` degrees of
    freedom: bisection on its distribution function, whose density is
    integrated with Simpson's rule (about 1e-9 accurate)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be a probability in (0, 1), got {p}")
    if not (df > 0 and math.isfinite(df)):
        raise ValueError(f"df must be a positive finite number, got {df}")
    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    log_scale = (
        math.lgamma((df + 1) / 2)
        - math.lgamma(df / 2)
        - 0.5 * math.log(df * math.pi)
    )

    def above_half(t):  # P(0 < T < t)
        x = torch.linspace(0, t, 4001, dtype=torch.float64)
        density = torch.exp(log_scale - (df + 1) / 2 * torch.log1p(x**2 / df))
        weights = torch.ones(4001, dtype=torch.float64)
        weights[1:-1:2], weights[2:-1:2] = 4, 2
        return (weights * density).sum().item() * t / 4000 / 3

    low, high = 0.0, 1.0
    while above_half(high) < p - 0.5:
        low, high = high, 2 * high
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (
            (middle, high) if above_half(middle) < p - 0.5 else (low, middle)
        )
    return (low + high) / 2


def paired_t_interval(first, second, *, confidence=0.95):
    """How much ``first`` exceeds ``second`` on paired items (e.g. seeds that
    share a stream of data), with Student's t interval: ``(mean difference,
    low, high)``.

    With a handful of pairs a bootstrap interval is too narrow (five values
    resample into few distinct means); t assumes the differences scatter
    normally. For several comparisons at once, pass a Bonferroni
    ``confidence`` (``1 - 0.05 / comparisons``).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    first, second = finite("first", first), finite("second", second)
    if first.shape != second.shape or first.numel() < 2:
        raise ValueError(
            "paired_t_interval needs two sequences of one length >= 2, got "
            f"{first.numel()} and {second.numel()}"
        )
    differences = first - second
    count = differences.numel()
    mean = differences.mean().item()
    half = student_t_quantile((1 + confidence) / 2, count - 1) * (
        differences.std().item() / math.sqrt(count)
    )
    return mean, mean - half, mean + half


def wilson_interval(successes, trials, z=1.96):
    """The Wilson score interval of a proportion (95 % by default): ``(low,
    high)``. Sensible at 0 and at ``trials`` successes, unlike the normal
    approximation."""
    for name, count in (("successes", successes), ("trials", trials)):
        whole_number(name, count)
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(
            "need 0 <= successes <= trials and trials > 0, got "
            f"{successes} and {trials}"
        )
    if not (z > 0 and math.isfinite(z)):
        raise ValueError(
            f"z must be a positive number of standard errors (1.96 for 95 %), "
            f"got {z}"
        )
    p = successes / trials
    centre = (p + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2))
    half /= 1 + z**2 / trials
    return max(0.0, centre - half), min(1.0, centre + half)


def whole_number(name, count):
    """Raise ``TypeError`` unless ``count`` is an integer (NumPy's too, not
    ``bool``): a number of seeds or successes."""
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise TypeError(
            f"{name} must be a whole number of seeds, got {count!r}"
        )
    return count


def share_of_seeds(name, count, total_name, total):
    """Raise unless ``count`` of ``total`` seeds is a share: whole numbers,
    ``0 <= count <= total`` and ``total > 0``."""
    whole_number(name, count)
    whole_number(total_name, total)
    if not 0 <= count <= total or total <= 0:
        raise ValueError(
            f"{name}: need 0 <= {name} <= {total_name} and {total_name} > 0, "
            f"got {count} of {total}"
        )


def ranked_loss(rate, loss):
    """One seed's final loss as :func:`best_rate` ranks it: a NaN, an
    infinity or ``None`` (what a results file stores for a diverged run) is
    a diverged run, ranked as ``inf``."""
    if loss is None:
        return math.inf
    if isinstance(loss, bool) or not isinstance(
        loss, (numbers.Real, torch.Tensor)
    ):
        raise TypeError(
            f"rate {rate}: a loss must be a number, or None for a diverged "
            f"run, got {type(loss).__name__} ({loss!r})"
        )
    return float(loss) if math.isfinite(loss) else math.inf


def best_rate(losses_by_rate, solved_below=None):
    """The learning rate whose runs solved the most seeds (a final loss below
    ``solved_below``), ties broken by the lowest median loss; without
    ``solved_below`` (a task with no "solved", such as text) the lowest median
    alone, the first rate listed on a tie.

    ``losses_by_rate``: ``{rate: [final loss of each seed]}``. Counting solved
    seeds first keeps a rate that solves some seeds from losing to one whose
    median sits lower on a plateau; a median over several tuning seeds is less
    at the mercy of one seed's luck than one seed's best. A seed whose loss
    is NaN, infinite or ``None`` (as results files store it) diverged: it
    counts as the worst loss (never solved), so a rate that diverges ranks
    below every rate that does not. Where every seed diverged at every rate
    there is no rate to choose: ``ValueError``.
    """
    if not losses_by_rate:
        raise ValueError("losses_by_rate is empty: no rate to choose")
    if solved_below is not None and not math.isfinite(solved_below):
        raise ValueError(
            f"solved_below must be a finite loss, got {solved_below}"
        )

    losses = {
        rate: [ranked_loss(rate, loss) for loss in runs]
        for rate, runs in losses_by_rate.items()
    }
    for rate, runs in losses.items():
        if not runs:
            raise ValueError(f"rate {rate} has no losses to rank it by")
    if all(loss == math.inf for runs in losses.values() for loss in runs):
        raise ValueError(
            f"every run diverged at every rate ({sorted(losses)}): no rate "
            "to choose; try lower rates"
        )

    def rank(rate):
        if solved_below is None:
            return statistics.median(losses[rate])
        solved = sum(loss < solved_below for loss in losses[rate])
        return -solved, statistics.median(losses[rate])

    return min(losses, key=rank)


def fisher_one_sided(first, first_total, second, second_total):
    """One-sided Fisher exact test that the first group's rate is higher:
    the probability of ``first`` or more successes in the first group if
    both groups had the same rate (hypergeometric tail)."""
    share_of_seeds("first", first, "first_total", first_total)
    share_of_seeds("second", second, "second_total", second_total)
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
    share_of_seeds("count", count, "total", total)
    if not 0 < level < 1:  # NaN too
        raise ValueError(
            f"level must be a probability in (0, 1), such as 0.05, got "
            f"{level!r}"
        )
    return next(
        (
            better
            for better in range(count + 1, total + 1)
            if fisher_one_sided(better, total, count, total) < level
        ),
        None,
    )
