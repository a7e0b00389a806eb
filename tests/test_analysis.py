"""Attention-pattern measurements: distances between heads, offsets."""

import math

import pytest
import torch

from mha_lib import MultiHeadAttention
from mha_lib.course.analysis import (
    js_distance,
    moved_lengths,
    offset_profile,
    pairwise_head_distance,
)

pytestmark = pytest.mark.core


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


def test_pairwise_head_distance_is_each_pairs_mean_distance():
    weights = torch.rand(3, 5, 4, 6).softmax(-1)
    distance = pairwise_head_distance(weights)
    for a in range(5):
        for b in range(5):
            each = js_distance(weights[:, a], weights[:, b]).mean()
            assert torch.allclose(distance[a, b], each, atol=1e-6)


def test_offset_profile_finds_a_fixed_offset():
    n = 6
    weights = torch.zeros(1, 2, n, n)
    for t in range(n):
        weights[0, 0, t, max(t - 1, 0)] = 1  # previous token
        weights[0, 1, t, t] = 1  # itself
    profile = offset_profile(weights, first=1)
    assert torch.equal(profile[0], torch.tensor([0.0, 1, 0, 0, 0, 0]))
    assert profile[1, 0] == 1
    with pytest.raises(
        ValueError,
        match=r"\(batch, heads, n, n\), got \(2, "
        r"6, 6\); add a batch axis with .unsqueeze\(0\)",
    ):
        offset_profile(weights[0], first=1)
    with pytest.raises(ValueError, match=r"got \(1, 2, 6, 5\)$"):
        offset_profile(weights[..., :5])
    with pytest.raises(TypeError, match="weights must be a tensor, got list"):
        offset_profile(weights.tolist())


@pytest.mark.parametrize(
    "p,q,problem",
    [
        (torch.tensor([1.0, 0.88]), torch.tensor([0.0, 1.0]), "sum to 1"),
        (torch.tensor([1.2, -0.2]), torch.tensor([0.5, 0.5]), "negative"),
        (torch.tensor([0.5, 0.5]), torch.tensor([0.0, 0.0]), "sum to 1"),
        (torch.tensor([0.5, 0.5]), torch.tensor([float("nan"), 1]), "sum"),
    ],
)
def test_js_distance_refuses_rows_that_are_not_distributions(p, q, problem):
    with pytest.raises(ValueError, match=problem):
        js_distance(p, q)
    with pytest.raises(TypeError, match="torch.Tensor"):
        js_distance([0.5, 0.5], torch.tensor([0.5, 0.5]))


def test_pairwise_head_distance_refuses_unnormalised_weights():
    weights = torch.rand(2, 3, 4, 5)  # scores, not yet softmaxed
    with pytest.raises(ValueError, match="sum to 1"):
        pairwise_head_distance(weights)


def test_moved_lengths_are_the_lengths_of_what_the_weights_multiply():
    """The layer's output is the sum, over heads and tokens, of each weight
    times the vector that head moves from that token (plus W_O's bias);
    moved_lengths are those vectors' lengths."""
    torch.manual_seed(0)
    layer = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    output, weights = layer(x, need_weights=True)  # weights (2, 4, 5, 5)
    w = layer.head_weights()
    # (batch, heads, n, d): what head h moves from token j
    moved = (
        torch.einsum("bnd,hdv,hve->bhne", x, w.W_V, w.W_O)
        + torch.einsum("hv,hve->he", w.b_V, w.W_O)[None, :, None]
    )
    rebuilt = torch.einsum("bhij,bhjd->bid", weights, moved)
    torch.testing.assert_close(
        rebuilt + layer.out_proj.bias, output, atol=1e-5, rtol=0
    )
    torch.testing.assert_close(
        moved_lengths(layer, x), moved.norm(dim=-1), atol=1e-5, rtol=0
    )
    with pytest.raises(ValueError, match="batch, n, d_model"):
        moved_lengths(layer, x[0])
    with pytest.raises(ValueError, match="one value head per head"):
        moved_lengths(MultiHeadAttention(16, 4, num_kv_heads=2), x)
