"""Statistics: rank correlation, intervals, Fisher's test, the choice of a
learning rate."""

import math

import pytest
import torch

from mha_lib.course.statistics import (
    best_rate,
    fisher_one_sided,
    paired_bootstrap,
    paired_t_interval,
    rank_correlation,
    seeds_and_text_bootstrap,
    smallest_resolvable,
    student_t_quantile,
    wilson_interval,
)

pytestmark = pytest.mark.core


def test_rank_correlation():
    assert math.isclose(rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
    assert math.isclose(rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
    assert math.isclose(rank_correlation([1, 2, 3], [1, 100, 2]), 0.5)
    with pytest.raises(ValueError):
        rank_correlation([1, 2], [1, 2, 3])


def test_rank_correlation_averages_tied_ranks():
    # ranks (0, 1.5, 1.5, 3) against (0, 1, 2, 3): 0.949, whichever of the
    # tied items comes first (scipy.stats.spearmanr agrees)
    expected = 0.9 / math.sqrt(0.9)
    assert math.isclose(
        rank_correlation([1, 2, 2, 3], [1, 2, 3, 4]), expected, rel_tol=1e-9
    )
    assert math.isclose(
        rank_correlation([1, 2, 2, 3], [1, 3, 2, 4]), expected, rel_tol=1e-9
    )


def test_rank_correlation_matches_scipy_with_many_ties():
    stats = pytest.importorskip("scipy.stats")
    generator = torch.Generator().manual_seed(0)
    for _ in range(20):
        a, b = torch.randint(4, (2, 12), generator=generator)
        if len(a.unique()) > 1 and len(b.unique()) > 1:
            expected = stats.spearmanr(a.tolist(), b.tolist())[0]
            assert math.isclose(
                rank_correlation(a, b), expected, abs_tol=1e-12
            )


@pytest.mark.parametrize("constant", [[2, 2, 2], [0.5, 0.5, 0.5]])
def test_rank_correlation_refuses_a_constant_sequence(constant):
    with pytest.raises(ValueError, match="constant"):
        rank_correlation(constant, [1, 2, 3])
    with pytest.raises(ValueError, match="constant"):
        rank_correlation([3, 1, 2], constant)


def test_wilson_interval_known_values():
    low, high = wilson_interval(7, 20)  # a textbook case: 0.35 of 20
    assert abs(low - 0.181) < 1e-3 and abs(high - 0.567) < 1e-3
    assert wilson_interval(0, 20)[0] == 0 and wilson_interval(20, 20)[1] == 1
    assert wilson_interval(0, 20)[1] > 0.1, "no successes still leaves doubt"
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_paired_bootstrap_finds_a_real_difference_and_not_a_false_one():
    generator = torch.Generator().manual_seed(0)
    groups = torch.arange(600) // 3
    better = torch.rand(600, generator=generator) < 0.7
    worse = torch.rand(600, generator=generator) < 0.5
    gain, low, high = paired_bootstrap(better, worse, groups)
    assert low > 0 and low < gain < high
    _, low, high = paired_bootstrap(better, better.clone(), groups)
    assert low == high == 0
    _, wide_low, wide_high = paired_bootstrap(
        better, worse, groups, confidence=1 - 0.05 / 22, resamples=10_000
    )
    _, low, high = paired_bootstrap(better, worse, groups)
    assert wide_low < low and wide_high > high, "more confidence, wider"
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap(better, worse, groups, confidence=95)


def runs_on_pieces(seeds, pieces, seed_spread, piece_spread, gap, seed=0):
    """``(first, second, characters)``: losses summed over each piece, where
    ``first`` costs ``gap`` bits a character more on average, each seed
    moves the gap by ``seed_spread`` and each piece by ``piece_spread``.
    ``pieces``: how many, of 50 to 500 characters drawn, or each one's
    characters (a tensor)."""
    generator = torch.Generator().manual_seed(seed)
    if isinstance(pieces, int):
        pieces = torch.randint(50, 500, (pieces,), generator=generator)
    characters = pieces
    pieces = len(characters)
    base = 2 + 0.3 * torch.rand(seeds, pieces, generator=generator)
    shift = (
        gap
        + seed_spread * torch.randn(seeds, 1, generator=generator)
        + piece_spread * torch.randn(1, pieces, generator=generator)
    )
    per_character = base.double(), (base + shift).double()
    second, first = (x * characters for x in per_character)
    return first, second, characters


def test_seeds_and_text_bootstrap_resolves_a_gap_and_widens_for_the_text():
    first, second, characters = runs_on_pieces(15, 40, 0.002, 0.0, 0.01)
    mean, low, high = seeds_and_text_bootstrap(first, second, characters)
    by_seed = (first - second).sum(1) / characters.sum()
    assert abs(mean - by_seed.mean().item()) < 1e-12, "seeds' mean gap"
    assert 0 < low < mean < high
    _, low, high = seeds_and_text_bootstrap(first, first.clone(), characters)
    assert low == high == 0
    # the seeds agree, the pieces do not: over seeds alone the gap looks
    # resolved, over seeds and text it is not
    first, second, characters = runs_on_pieces(15, 12, 0.0005, 0.05, 0.01, 1)
    by_seed = (first - second).sum(1) / characters.sum()
    _, seed_low, _ = paired_t_interval(by_seed, torch.zeros(15))
    _, low, high = seeds_and_text_bootstrap(first, second, characters)
    assert seed_low > 0 and low < 0 < high
    with pytest.raises(ValueError, match=r"\(seeds, pieces\)"):
        seeds_and_text_bootstrap(first[:, :3], second, characters)
    with pytest.raises(ValueError, match="positive number of characters"):
        seeds_and_text_bootstrap(first, second, characters * 0)


@pytest.mark.parametrize("pieces", [6, 40])
def test_seeds_and_text_bootstrap_covers_no_gap_at_its_level(pieces):
    """Where the gap is zero on average over seeds and pieces, the 95 %
    interval holds zero in at least 90 % of 200 drawn experiments (the six
    books of the Bible's scored text, or more documents)."""
    covered = 0
    for draw in range(200):
        first, second, characters = runs_on_pieces(
            15, pieces, 0.004, 0.02, 0.0, seed=100 + draw
        )
        _, low, high = seeds_and_text_bootstrap(
            first, second, characters, resamples=500, seed=draw
        )
        covered += low <= 0 <= high
    assert covered >= 180, f"covered zero in {covered} of 200"


def test_seeds_and_text_bootstrap_counts_uneven_pieces_by_their_weight():
    """The Bible's six scored books, one of them 69 % of the characters,
    count as about two: where the books differ, the 95 % interval holds a
    zero gap in at least 94 % of drawn experiments (counted as six, 90 %)."""
    books = torch.tensor([8566, 12557, 1530, 1571, 3469, 61075])
    covered = 0
    for draw in range(200):
        first, second, _ = runs_on_pieces(15, books, 0, 0.02, 0, 300 + draw)
        _, low, high = seeds_and_text_bootstrap(
            first, second, books, resamples=500, seed=draw
        )
        covered += low <= 0 <= high
    assert covered >= 188, f"covered zero in {covered} of 200"


def test_best_rate_counts_solved_seeds_before_the_median():
    losses = {
        0.01: [0.25, 0.25, 0.25, 0.25],  # a plateau, lowest median
        0.03: [0.001, 0.3, 0.3, 0.3],  # one seed solved
        0.1: [0.5, 0.5, 0.5, 0.5],
    }
    assert best_rate(losses, solved_below=0.05) == 0.03
    assert best_rate({0.01: [0.3], 0.1: [0.2]}, solved_below=0.05) == 0.1
    with pytest.raises(ValueError, match="empty"):
        best_rate({}, solved_below=0.05)


def test_fisher_one_sided_is_the_hypergeometric_tail():
    from scipy.stats import fisher_exact

    for a, b in ((36, 31), (10, 3), (5, 5), (0, 4), (20, 0)):
        expected = fisher_exact(
            [[a, 40 - a], [b, 40 - b]], alternative="greater"
        ).pvalue
        assert abs(fisher_one_sided(a, 40, b, 40) - expected) < 1e-12
    with pytest.raises(ValueError, match="first"):
        fisher_one_sided(5, 4, 1, 4)


def test_smallest_resolvable_says_what_the_seeds_could_tell_apart():
    assert smallest_resolvable(0, 20) == 5  # 5 of 20 against 0 of 20
    assert fisher_one_sided(5, 20, 0, 20) < 0.05
    assert fisher_one_sided(4, 20, 0, 20) >= 0.05
    assert smallest_resolvable(18, 20) is None  # nothing above is resolvable


@pytest.mark.parametrize(
    "p, df, expected",  # from printed tables of Student's t
    [
        (0.975, 4, 2.776445),
        (0.975, 10, 2.228139),
        (0.995, 4, 4.604095),
        (0.999, 2, 22.327125),
        (0.9, 30, 1.310415),
        (0.5, 3, 0.0),
    ],
)
def test_student_t_quantile_matches_the_tables(p, df, expected):
    assert student_t_quantile(p, df) == pytest.approx(expected, abs=1e-5)
    assert student_t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-5)


def test_student_t_quantile_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    for p in (0.6, 0.9, 0.99, 0.9989):
        for df in (1, 4, 7.5, 50):
            expected = stats.t.ppf(p, df)
            assert student_t_quantile(p, df) == pytest.approx(
                expected, rel=1e-6
            )


def test_paired_t_interval_known_values():
    first, second = [2.0, 2.1, 1.9, 2.3, 2.2], [1.9, 2.0, 1.9, 2.0, 2.0]
    mean, low, high = paired_t_interval(first, second)
    # differences 0.1 0.1 0 0.3 0.2: mean 0.14, sd 0.1140, t(0.975, 4)
    half = 2.776445 * 0.114018 / 5**0.5
    assert mean == pytest.approx(0.14)
    assert (low, high) == pytest.approx((0.14 - half, 0.14 + half), abs=1e-5)
    wider = paired_t_interval(first, second, confidence=0.999)
    assert wider[1] < low and wider[2] > high


def test_paired_t_interval_refuses_bad_input():
    with pytest.raises(ValueError, match="one length >= 2"):
        paired_t_interval([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="one length >= 2"):
        paired_t_interval([1.0], [1.0])
    with pytest.raises(ValueError, match="confidence"):
        paired_t_interval([1.0, 2.0], [1.0, 1.0], confidence=95)
    with pytest.raises(ValueError, match="probability"):
        student_t_quantile(1.5, 3)
    with pytest.raises(ValueError, match="df"):
        student_t_quantile(0.9, 0)


def test_a_wilson_interval_refuses_what_is_not_a_count_or_a_positive_z():
    from mha_lib.course.statistics import wilson_interval

    with pytest.raises(ValueError, match="z must be a positive"):
        wilson_interval(5, 10, z=-1.96)
    with pytest.raises(TypeError, match="whole number"):
        wilson_interval(2.5, 10)
    with pytest.raises(TypeError, match="whole number"):
        wilson_interval(True, 10)


def test_the_lowest_median_rate_ignores_one_lucky_seed():
    losses = {0.001: [2.0, 2.1, 2.2], 0.002: [1.5, 2.3, 2.4]}
    assert best_rate(losses) == 0.001  # 0.002 has the best single
    assert best_rate({0.1: [1.0], 0.2: [1.0]}) == 0.1  # a tie
    with pytest.raises(ValueError, match="no rate"):
        best_rate({})


NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
@pytest.mark.parametrize(
    "interval",
    [
        lambda a, b: paired_t_interval(a, b),
        lambda a, b: paired_bootstrap(a, b, [0, 1, 2, 3], resamples=10),
        lambda a, b: rank_correlation(a, b),
    ],
)
def test_an_interval_refuses_scores_that_are_not_numbers(interval, bad):
    clean = [2.0, 3.0, 4.0, 3.5]
    for first, second in (([1.0, bad, 3.0, 2.0], clean), (clean, [bad] * 4)):
        with pytest.raises(ValueError, match=r"must be finite numbers, got"):
            interval(first, second)


def test_quantiles_and_wilson_refuse_what_is_not_a_number():
    for p, df in ((NAN, 3), (0.9, NAN), (0.9, INF)):
        with pytest.raises(ValueError):
            student_t_quantile(p, df)
    for z in (NAN, INF):
        with pytest.raises(ValueError, match="z must be"):
            wilson_interval(3, 5, z=z)
    with pytest.raises(TypeError, match="whole number"):
        wilson_interval(NAN, 5)


def test_a_diverged_run_ranks_last_wherever_it_stands():
    clean = {1e-3: [0.1, 0.2, 0.3]}
    # two of three seeds diverged: the rate ranks below a clean one, whether
    # listed first or last (a NaN median once won or lost by its place)
    for diverged in ([0.02, NAN, NAN], [NAN, INF, 0.02], [-INF, NAN, 0.02]):
        for order in ((3e-3, 1e-3), (1e-3, 3e-3)):
            rates = {**clean, 3e-3: diverged}
            rates = {rate: rates[rate] for rate in order}
            assert best_rate(rates) == 1e-3
            assert best_rate(rates, solved_below=0.5) == 1e-3
    # one diverged seed of three is that rate's worst loss, not its best
    assert best_rate({**clean, 3e-3: [NAN, 0.01, 0.02]}) == 3e-3
    assert best_rate({**clean, 3e-3: [-INF, 0.4, 0.5]}, solved_below=0.35) == (
        1e-3
    )
    with pytest.raises(ValueError, match="solved_below must be a finite"):
        best_rate(clean, solved_below=NAN)


def test_diverged_counts_the_runs_whose_loss_is_no_finite_number():
    from mha_lib.course.statistics import diverged

    assert diverged([0.5, float("nan"), None, float("inf"), 2, -1.0]) == 3
    assert diverged([]) == 0


def test_best_rate_reads_none_as_diverged_and_refuses_all_diverged():
    """``None`` is what a results file stores for a diverged run: ranked
    like NaN. Where every run diverged there is nothing to choose from."""
    assert best_rate({1e-3: [0.3, 0.2], 3e-3: [None, 0.01]}) == 1e-3
    assert best_rate({1e-3: [None, 0.2], 3e-3: [NAN, None]}) == 1e-3
    for losses in ([NAN, INF], [None, None], [-INF, NAN]):
        for solved_below in (None, 0.5):
            with pytest.raises(
                ValueError,
                match=r"every run diverged at every rate \(\[0.001, 0.003\]"
                r"\): no rate to choose",
            ):
                best_rate({1e-3: losses, 3e-3: [NAN]}, solved_below)
    with pytest.raises(
        TypeError, match=r"rate 0.001: a loss must be a number, or None"
    ):
        best_rate({1e-3: ["0.3"]})


def test_fisher_and_smallest_resolvable_refuse_what_is_not_a_count():
    for bad in (2.5, NAN, True):
        with pytest.raises(TypeError, match="first must be a whole number"):
            fisher_one_sided(bad, 10, 1, 10)
        with pytest.raises(TypeError, match="count must be a whole number"):
            smallest_resolvable(bad, 10)
    with pytest.raises(ValueError, match="need 0 <= count <= total"):
        smallest_resolvable(11, 10)
    with pytest.raises(TypeError, match="second_total must be a whole"):
        fisher_one_sided(3, 10, 1, 10.0)
    for level in (NAN, 0, 1.5, -0.05):
        with pytest.raises(
            ValueError, match=r"level must be a probability in \(0, 1\)"
        ):
            smallest_resolvable(0, 20, level=level)


def test_sequences_of_scores_are_one_dimensional():
    """A table is not one long row: rank_correlation and the intervals
    refuse it instead of flattening it."""
    table = [[1.0, 2.0, 3.0], [4.0, 6.0, 5.0]]
    row = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    with pytest.raises(
        ValueError,
        match=r"a must be one sequence of numbers "
        r"\(1-D\), got shape \(2, 3\)",
    ):
        rank_correlation(table, row)
    with pytest.raises(ValueError, match="second must be one sequence"):
        paired_t_interval(row, table)
    with pytest.raises(ValueError, match="first must be one sequence"):
        paired_bootstrap(table, row, range(6))


def test_paired_bootstrap_refuses_nan_group_ids():
    scores = torch.tensor([1.0, 0.0, 1.0, 1.0])
    with pytest.raises(
        ValueError, match=r"groups must name each item's group .* items \[2\]"
    ):
        paired_bootstrap(scores, scores.flip(0), [0.0, 1.0, NAN, 1.0])
    with pytest.raises(
        ValueError,
        match=r"one entry per item, got shapes "
        r"\(4,\), \(4,\), \(2, 2\)",
    ):
        paired_bootstrap(scores, scores, [[0, 0], [1, 1]])
