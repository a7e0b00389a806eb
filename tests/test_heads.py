"""Per-head weights: the heads-first view, copying heads, how far apart they
are."""

import pytest
import torch

import mha_lib
from mha_lib.heads import copy_head, head_parameters, head_spread

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    "layer",
    [
        mha_lib.MultiHeadAttention(16, 4),
        mha_lib.MultiHeadAttention(
            16, 4, head_dim=6, value_dim=3, num_kv_heads=2
        ),
        mha_lib.ChunkedAttention(16, 4),
    ],
    ids=["standard", "sized-grouped", "chunked"],
)
def test_head_weights_are_views_that_compute_the_layer(layer):
    weights = layer.head_weights()
    x = torch.randn(2, 5, 16)
    q, k, v = layer.project(x)  # (batch, heads, seq, size)
    reads = (
        x.view(2, 5, 4, 4).transpose(1, 2)
        if layer.spec.chunked
        else x[:, None]
    )
    group = layer.spec.num_heads // layer.spec.num_kv_heads
    assert torch.allclose(
        q, reads @ weights.W_Q[None] + weights.b_Q[None, :, None], atol=1e-6
    )
    k_reads = reads if layer.spec.chunked else x[:, None]
    assert torch.allclose(
        k, k_reads @ weights.W_K[None] + weights.b_K[None, :, None], atol=1e-6
    )
    assert weights.W_V.shape == (
        layer.spec.num_kv_heads,
        layer.spec.reads,
        layer.spec.value_dim,
    )
    # W_O: head i's block, (value_dim, d_model); the layer output is the sum
    # over heads
    heads = torch.randn(2, layer.spec.num_heads, 5, layer.spec.value_dim)
    concat = heads.transpose(1, 2).reshape(2, 5, -1)
    summed = (
        torch.einsum("bhsv,hvd->bsd", heads, weights.W_O) + layer.out_proj.bias
    )
    assert torch.allclose(layer.out_proj(concat), summed, atol=1e-5)
    with torch.no_grad():
        weights.W_Q[0].zero_()
    assert torch.all(layer.project(x)[0][:, 0] == weights.b_Q[0]), (
        "a view changes the layer"
    )
    assert group >= 1


@pytest.mark.parametrize("head_dim", [None, 16])
def test_copy_head_makes_heads_identical_and_they_stay_so(head_dim):
    mha_lib.seed_everything(0)
    layer = mha_lib.MultiHeadAttention(16, 4, head_dim=head_dim)
    assert head_spread(layer) > 0.3
    params = head_parameters(layer)
    size = layer.spec.head_dim
    assert params.shape == (4, 3 * size * 16 + 3 * size + 16 * size)
    copy_head(layer, source=2)
    assert (
        torch.equal(head_parameters(layer)[0], params[2])
        and head_spread(layer) == 0
    )
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(3):
        output, _ = layer(torch.randn(2, 5, 16))
        output.pow(2).mean().backward()
        optimizer.step()
    assert head_spread(layer) < 1e-6


def test_copy_head_rejects_shared_kv_heads_and_bad_index():
    with pytest.raises(ValueError, match="num_kv_heads"):
        copy_head(mha_lib.MultiHeadAttention(16, 4, num_kv_heads=2))
    with pytest.raises(ValueError, match="source"):
        copy_head(mha_lib.MultiHeadAttention(16, 4), source=4)
    with pytest.raises(TypeError):
        head_parameters(torch.nn.MultiheadAttention(16, 4))


def test_copy_head_works_on_chunked_layers():
    mha_lib.seed_everything(0)
    layer = mha_lib.ChunkedAttention(16, 4)
    assert head_parameters(layer).shape == (4, 3 * 4 * 4 + 3 * 4 + 16 * 4)
    copy_head(layer, source=1)
    assert head_spread(layer) == 0


def test_attention_dropout_breaks_the_symmetry_of_identical_heads():
    """Without dropout identical heads get identical gradients; with it each
    head drops its own weights, so their gradients differ (training only)."""
    x = torch.randn(4, 6, 16)
    gaps = {}
    for dropout in (0.0, 0.1):
        mha_lib.seed_everything(0)
        layer = copy_head(mha_lib.MultiHeadAttention(16, 2, dropout=dropout))
        layer(x, is_causal=True)[0].pow(2).mean().backward()
        grad = layer.q_proj.weight.grad.view(2, -1)
        gaps[dropout] = (grad[0] - grad[1]).abs().max().item()
        layer.eval()
        first, second = layer(x)[0], layer(x)[0]
        assert torch.equal(first, second), "no dropout outside training"
    assert gaps[0.0] == 0.0 and gaps[0.1] > 1e-6


def test_a_layer_with_a_parameter_beyond_its_projections_is_refused():
    """A gate per head, say, would not be copied with the head: copying,
    comparing or reading heads refuses such a layer instead."""
    layer = mha_lib.MultiHeadAttention(16, 4)
    layer.gate = torch.nn.Parameter(torch.ones(4))
    for surgery in (lambda: layer.head_weights(), lambda: copy_head(layer)):
        with pytest.raises(TypeError, match=r"also holds \['gate'\]"):
            surgery()
    with pytest.raises(TypeError, match="also holds"):
        head_spread(layer)
