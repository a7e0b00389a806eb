"""parameter_count and attention_flops against real modules and hand
formulas."""

import pytest
import torch
from torch import nn

import mha_lib

pytestmark = pytest.mark.core


def divisors(n):
    return [h for h in range(1, n + 1) if n % h == 0]


@pytest.mark.parametrize("num_heads", divisors(512))
def test_torch_layer_has_the_same_parameters_for_every_head_count(num_heads):
    layer = nn.MultiheadAttention(512, num_heads)
    shapes = [tuple(parameter.shape) for parameter in layer.parameters()]
    assert shapes == [(1536, 512), (1536,), (512, 512), (512,)]
    assert mha_lib.count_trainable(layer) == 4 * 512**2 + 4 * 512 == 1_050_624
    assert mha_lib.parameter_count(512, num_heads) == mha_lib.count_trainable(
        layer
    )


@pytest.mark.parametrize(
    "d_model,num_heads,head_dim,num_kv_heads",
    [
        (64, 8, None, None),  # standard
        (64, 4, 64, None),  # wide: every head as wide as the model
        (64, 8, 64, None),
        (48, 6, 5, None),  # any head size
        (64, 8, None, 2),  # grouped-query
        (64, 8, None, 1),  # multi-query
        (64, 8, 16, 4),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_formula_matches_real_modules(
    d_model, num_heads, head_dim, num_kv_heads, bias
):
    layer = mha_lib.MultiHeadAttention(
        d_model,
        num_heads,
        head_dim=head_dim,
        num_kv_heads=num_kv_heads,
        bias=bias,
    )
    expected = mha_lib.count_trainable(layer)
    assert (
        mha_lib.parameter_count(
            d_model,
            num_heads,
            head_dim=head_dim,
            num_kv_heads=num_kv_heads,
            bias=bias,
        )
        == expected
    )
    if num_kv_heads is None:
        per_head = mha_lib.PerHeadAttention(
            d_model, num_heads, head_dim=head_dim, bias=bias
        )
        assert mha_lib.count_trainable(per_head) == expected


def test_wide_grows_linearly_and_kv_sharing_shrinks():
    d = 128
    standard = [mha_lib.parameter_count(d, h) for h in (1, 2, 4, 8)]
    wide = [mha_lib.parameter_count(d, h, head_dim=d) for h in (1, 2, 4, 8)]
    assert len(set(standard)) == 1
    assert [w - d for w in wide] == [
        h * (4 * d * d + 3 * d) for h in (1, 2, 4, 8)
    ]
    gqa = [mha_lib.parameter_count(d, 8, num_kv_heads=g) for g in (8, 4, 2, 1)]
    assert gqa == sorted(gqa, reverse=True) and gqa[0] == standard[0]
    # Each halving of the key/value heads removes half of the remaining K/V
    # weights and biases.
    assert gqa[0] - gqa[1] == 2 * (d * d // 2 + d // 2)


def test_flops_of_standard_attention_do_not_depend_on_heads():
    totals = {
        mha_lib.attention_flops(256, h, 100)["total"]
        for h in (1, 2, 4, 8, 16, 32)
    }
    assert len(totals) == 1
    flops = mha_lib.attention_flops(256, 8, 100)
    assert flops["projections"] == 2 * 4 * 100 * 256 * 256
    assert flops["scores"] == flops["mixing"] == 2 * 100 * 100 * 256
    wide = mha_lib.attention_flops(256, 8, 100, head_dim=256)
    assert wide["total"] == 8 * flops["total"], (
        "wide heads should cost exactly h times the FLOPs"
    )


def test_flops_match_a_profiler_count():
    layer = mha_lib.MultiHeadAttention(64, 4)
    x = torch.randn(1, 10, 64)
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        layer(x, need_weights=True)
    assert (
        counter.get_total_flops()
        == mha_lib.attention_flops(64, 4, 10)["total"]
    )


@pytest.mark.parametrize(
    "d_model,num_heads,bias", [(64, 1, True), (64, 8, True), (48, 6, False)]
)
def test_chunked_layer_formula_and_flops(d_model, num_heads, bias):
    from torch.utils.flop_counter import FlopCounterMode

    layer = mha_lib.ChunkedAttention(d_model, num_heads, bias=bias)
    formula = mha_lib.parameter_count(
        d_model, num_heads, bias=bias, chunked=True
    )
    assert formula == mha_lib.count_trainable(layer)
    assert formula == 3 * d_model**2 // num_heads + d_model**2 + (
        4 * d_model if bias else 0
    )
    with FlopCounterMode(display=False) as counter:
        layer(torch.randn(1, 10, d_model), need_weights=True)
    assert (
        counter.get_total_flops()
        == mha_lib.attention_flops(d_model, num_heads, 10, chunked=True)[
            "total"
        ]
    )
    with pytest.raises(ValueError, match="chunked layer fixes head_dim"):
        mha_lib.parameter_count(
            d_model, num_heads, head_dim=d_model // num_heads + 1, chunked=True
        )


@pytest.mark.parametrize("head_dim,value_dim", [(2, 32), (32, 4), (8, 3)])
def test_value_dim_formula_and_flops_match_real_modules(head_dim, value_dim):
    from torch.utils.flop_counter import FlopCounterMode

    layer = mha_lib.MultiHeadAttention(
        32, 4, head_dim=head_dim, value_dim=value_dim
    )
    formula = mha_lib.parameter_count(
        32, 4, head_dim=head_dim, value_dim=value_dim
    )
    assert formula == mha_lib.count_trainable(layer)
    with FlopCounterMode(display=False) as counter:
        layer(torch.randn(1, 10, 32), need_weights=True)
    flops = mha_lib.attention_flops(
        32, 4, 10, head_dim=head_dim, value_dim=value_dim
    )
    assert counter.get_total_flops() == flops["total"]
    assert flops["mixing"] == 2 * 4 * 10 * 10 * value_dim
    with pytest.raises(ValueError, match="chunked layer fixes"):
        mha_lib.parameter_count(32, 4, value_dim=2, chunked=True)


def test_counting_a_module_refuses_what_is_not_one():
    for bad in ("x", nn.MultiheadAttention):  # a string, a class
        with pytest.raises(TypeError, match="module must be a torch.nn.Mod"):
            mha_lib.count_trainable(bad)
