"""Attention-pattern measurements: distances, correlations, offsets, head
classes."""

import math

import pytest
import torch

from mha_lib.analysis import (
    js_distance,
    offset_profile,
    pairwise_head_distance,
    rank_correlation,
)


def test_js_distance_known_values():
    p = torch.tensor([1.0, 0.0])
    assert js_distance(p, p).item() == 0
    assert math.isclose(
        js_distance(p, torch.tensor([0.0, 1.0])).item(), 1.0, rel_tol=1e-6
    )
    half = torch.tensor([0.5, 0.5])
    # m = (0.75, 0.25); JS = (KL(p, m) + KL(half, m)) / 2, by hand
    expected = math.sqrt(
        0.5 * math.log2(4 / 3)
        + 0.5 * (0.5 * math.log2(2 / 3) + 0.5 * math.log2(2))
    )
    assert math.isclose(js_distance(p, half).item(), expected, rel_tol=1e-5)


def test_pairwise_head_distance_is_symmetric_with_zero_diagonal():
    weights = torch.rand(3, 4, 5, 6).softmax(-1)
    distance = pairwise_head_distance(weights)
    assert distance.shape == (4, 4)
    assert torch.allclose(distance, distance.T) and torch.all(
        distance.diagonal() < 1e-6
    )
    with pytest.raises(ValueError):
        pairwise_head_distance(weights[0])


def test_rank_correlation():
    assert math.isclose(rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
    assert math.isclose(rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
    assert math.isclose(rank_correlation([1, 2, 3], [1, 100, 2]), 0.5)
    with pytest.raises(ValueError):
        rank_correlation([1, 2], [1, 2, 3])


def test_offset_profile_finds_a_fixed_offset():
    n = 6
    weights = torch.zeros(1, 2, n, n)
    for t in range(n):
        weights[0, 0, t, max(t - 1, 0)] = 1  # previous token
        weights[0, 1, t, t] = 1  # itself
    profile = offset_profile(weights, first=1)
    assert torch.equal(profile[0], torch.tensor([0.0, 1, 0, 0, 0, 0]))
    assert profile[1, 0] == 1


def test_wilson_interval_known_values():
    from mha_lib.analysis import wilson_interval

    low, high = wilson_interval(7, 20)  # a textbook case: 0.35 of 20
    assert abs(low - 0.181) < 1e-3 and abs(high - 0.567) < 1e-3
    assert wilson_interval(0, 20)[0] == 0 and wilson_interval(20, 20)[1] == 1
    assert wilson_interval(0, 20)[1] > 0.1, "no successes still leaves doubt"
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_paired_bootstrap_finds_a_real_difference_and_not_a_false_one():
    from mha_lib.analysis import paired_bootstrap

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


def test_best_rate_counts_solved_seeds_before_the_median():
    from mha_lib.analysis import best_rate

    losses = {
        0.01: [0.25, 0.25, 0.25, 0.25],  # a plateau, lowest median
        0.03: [0.001, 0.3, 0.3, 0.3],  # one seed solved
        0.1: [0.5, 0.5, 0.5, 0.5],
    }
    assert best_rate(losses, solved_below=0.05) == 0.03
    assert best_rate({0.01: [0.3], 0.1: [0.2]}, solved_below=0.05) == 0.1
    with pytest.raises(ValueError, match="empty"):
        best_rate({}, solved_below=0.05)
