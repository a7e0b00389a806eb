"""parameter_count and attention_flops against real modules and hand formulas."""

import pytest
import torch
from torch import nn

import mha_lib


def divisors(n):
    return [h for h in range(1, n + 1) if n % h == 0]


@pytest.mark.parametrize("num_heads", divisors(512))
def test_torch_layer_has_the_same_parameters_for_every_head_count(num_heads):
    layer = nn.MultiheadAttention(512, num_heads)
    shapes = [tuple(parameter.shape) for parameter in layer.parameters()]
    assert shapes == [(1536, 512), (1536,), (512, 512), (512,)]
    assert mha_lib.count_parameters(layer) == 4 * 512**2 + 4 * 512 == 1_050_624
    assert mha_lib.parameter_count(512, num_heads) == mha_lib.count_parameters(layer)


@pytest.mark.parametrize(
    "d_model,num_heads,head_dim,num_kv_heads",
    [
        (64, 8, None, None),  # narrow
        (64, 4, 64, None),  # wide: every head as wide as the model
        (64, 8, 64, None),
        (48, 6, 5, None),  # any head size
        (64, 8, None, 2),  # grouped-query
        (64, 8, None, 1),  # multi-query
        (64, 8, 16, 4),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_formula_matches_real_modules(d_model, num_heads, head_dim, num_kv_heads, bias):
    layer = mha_lib.MultiHeadAttention(
        d_model, num_heads, head_dim=head_dim, num_kv_heads=num_kv_heads, bias=bias
    )
    expected = mha_lib.count_parameters(layer)
    assert mha_lib.parameter_count(
        d_model, num_heads, head_dim=head_dim, num_kv_heads=num_kv_heads, bias=bias
    ) == expected
    if num_kv_heads is None:
        per_head = mha_lib.PerHeadAttention(d_model, num_heads, head_dim=head_dim, bias=bias)
        assert mha_lib.count_parameters(per_head) == expected


def test_wide_grows_linearly_and_kv_sharing_shrinks():
    d = 128
    narrow = [mha_lib.parameter_count(d, h) for h in (1, 2, 4, 8)]
    wide = [mha_lib.parameter_count(d, h, head_dim=d) for h in (1, 2, 4, 8)]
    assert len(set(narrow)) == 1
    assert [w - d for w in wide] == [h * (4 * d * d + 3 * d) for h in (1, 2, 4, 8)]
    gqa = [mha_lib.parameter_count(d, 8, num_kv_heads=g) for g in (8, 4, 2, 1)]
    assert gqa == sorted(gqa, reverse=True) and gqa[0] == narrow[0]
    # Each halving of the key/value heads removes half of the remaining K/V weights and biases.
    assert gqa[0] - gqa[1] == 2 * (d * d // 2 + d // 2)


def test_flops_of_narrow_attention_do_not_depend_on_heads():
    totals = {mha_lib.attention_flops(256, h, 100)["total"] for h in (1, 2, 4, 8, 16, 32)}
    assert len(totals) == 1
    flops = mha_lib.attention_flops(256, 8, 100)
    assert flops["projections"] == 2 * 4 * 100 * 256 * 256
    assert flops["scores"] == flops["mixing"] == 2 * 100 * 100 * 256
    wide = mha_lib.attention_flops(256, 8, 100, head_dim=256)
    assert wide["total"] == 8 * flops["total"], "wide heads should cost exactly h times the FLOPs"


def test_flops_match_a_profiler_count():
    layer = mha_lib.MultiHeadAttention(64, 4)
    x = torch.randn(1, 10, 64)
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        layer(x, need_weights=True)
    assert counter.get_total_flops() == mha_lib.attention_flops(64, 4, 10)["total"]


@pytest.mark.parametrize("d_model,num_heads,head_dim", [(64, 1, None), (64, 8, None), (64, 4, 64), (48, 6, 5)])
def test_activation_model_matches_saved_tensors(d_model, num_heads, head_dim):
    from mha_lib.counting import activation_elements
    from mha_lib.memory import peak_training_bytes, saved_activation_bytes

    layer = mha_lib.MultiHeadAttention(d_model, num_heads, head_dim=head_dim)
    x = torch.randn(3, 20, d_model)
    expected = 4 * activation_elements(d_model, num_heads, 20, batch=3, head_dim=head_dim)
    assert saved_activation_bytes(layer, x) == expected
    assert peak_training_bytes(layer, x) is None  # CPU: no peak counter


def test_low_rank_fit_needs_rank_close_to_n():
    from mha_lib.low_rank import fit_attention

    target = torch.randn(12, 12, generator=torch.Generator().manual_seed(0)).softmax(-1)
    kl = fit_attention(target, [1, 6, 12], steps=800)
    assert kl[0] > kl[1] > kl[2] and kl[2] < 1e-3 and kl[1] > 10 * kl[2]
    with pytest.raises(ValueError):
        fit_attention(torch.ones(3, 4) / 4, [1])
    with pytest.raises(ValueError):
        fit_attention(torch.eye(3), [1])  # zeros in the target
