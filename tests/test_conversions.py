"""Moving weights between torch's layer, the fused layer and one module per
head."""

import pytest
import torch
from support import ATOL, inputs
from torch import nn

import mha_lib

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    "d_model,num_heads,head_dim", [(16, 2, None), (24, 3, 24), (20, 4, 3)]
)
@pytest.mark.parametrize("bias", [True, False])
def test_per_head_and_fused_round_trip(d_model, num_heads, head_dim, bias):
    torch.manual_seed(3)
    layer = mha_lib.MultiHeadAttention(
        d_model, num_heads, head_dim=head_dim, bias=bias
    )
    per_head = mha_lib.to_per_head(layer)
    back = mha_lib.to_fused(per_head)
    query, key, value = inputs(2, 5, 8, d_model)
    mask = torch.rand(5, 8) < 0.3
    mask[:, 0] = False
    results = [
        model(query, key, value, attn_mask=mask, need_weights=True)
        for model in (layer, per_head, back)
    ]
    for output, weights in results[1:]:
        torch.testing.assert_close(output, results[0][0], atol=ATOL, rtol=0)
        torch.testing.assert_close(weights, results[0][1], atol=ATOL, rtol=0)
    for name, tensor in layer.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), (
            f"{name} changed in the round trip"
        )
    assert sum(p.numel() for p in per_head.parameters()) == sum(
        p.numel() for p in layer.parameters()
    )


def test_per_head_weights_are_the_fused_blocks():
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(12, 3)
    per_head = mha_lib.to_per_head(layer)
    for index, head in enumerate(per_head.heads):
        rows = slice(4 * index, 4 * (index + 1))
        assert torch.equal(head.q_proj.weight, layer.q_proj.weight[rows])
        assert torch.equal(head.v_proj.bias, layer.v_proj.bias[rows])
        assert torch.equal(
            head.out_proj.weight, layer.out_proj.weight[:, rows]
        )


@pytest.mark.parametrize(
    "d_model,num_heads,bias", [(16, 4, True), (24, 2, False)]
)
def test_to_torch_round_trip(d_model, num_heads, bias):
    torch.manual_seed(5)
    layer = mha_lib.MultiHeadAttention(d_model, num_heads, bias=bias)
    reference = mha_lib.to_torch(layer)
    assert reference.batch_first
    query, key, value = inputs(2, 4, 6, d_model)
    expected, expected_weights = reference(
        query, key, value, average_attn_weights=False
    )
    got, weights = layer(query, key, value, need_weights=True)
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)
    again = mha_lib.from_torch(reference)
    for name, tensor in layer.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor)


def test_float64_and_devices_follow_the_source():
    reference = nn.MultiheadAttention(
        8, 2, batch_first=True, dtype=torch.float64
    )
    ours = mha_lib.from_torch(reference)
    assert ours.q_proj.weight.dtype == torch.float64
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    torch.testing.assert_close(
        ours(x)[0], reference(x, x, x)[0], atol=1e-12, rtol=0
    )


def test_interleaved_layout_converts_to_stacked():
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(12, 3, batch_first=True)
    weight, bias = (
        reference.in_proj_weight.detach(),
        reference.in_proj_bias.detach(),
    )
    interleaved = mha_lib.stacked_to_interleaved(weight, 3)
    # Head 1's key rows sit right after head 1's query rows in the interleaved
    # layout.
    # rows: q0 k0 v0 q1 k1 ...
    assert torch.equal(interleaved[16:20], weight[12 + 4 : 12 + 8])
    assert torch.equal(mha_lib.interleaved_to_stacked(interleaved, 3), weight)
    assert torch.equal(
        mha_lib.interleaved_to_stacked(
            mha_lib.stacked_to_interleaved(bias, 3), 3
        ),
        bias,
    )
    with pytest.raises(ValueError, match="3 \\* num_heads = 15"):
        mha_lib.interleaved_to_stacked(weight, 5)


@pytest.mark.parametrize(
    "call,error,words",
    [
        (
            lambda: mha_lib.from_torch(nn.Linear(4, 4)),
            TypeError,
            "expects torch.nn.MultiheadAttention",
        ),
        (
            lambda: mha_lib.from_torch(nn.MultiheadAttention(8, 2, kdim=4)),
            ValueError,
            "kdim == vdim",
        ),
        (
            lambda: mha_lib.from_torch(
                nn.MultiheadAttention(8, 2, add_bias_kv=True)
            ),
            ValueError,
            "add_bias_kv",
        ),
        (
            lambda: mha_lib.from_torch(nn.MultiheadAttention(8, 2)),
            ValueError,
            r"batch_first=True.*\(seq, batch, d_model\).*transpose",
        ),
        (
            lambda: mha_lib.to_torch(
                mha_lib.MultiHeadAttention(8, 2, scale=0.2)
            ),
            ValueError,
            r"1 / sqrt\(head_dim\) = 0.5, and this layer uses scale=0.2",
        ),
        (
            lambda: mha_lib.to_torch(
                mha_lib.MultiHeadAttention(8, 2, head_dim=8)
            ),
            ValueError,
            "standard layer",
        ),
        (
            lambda: mha_lib.to_torch(
                mha_lib.MultiHeadAttention(8, 2, num_kv_heads=1)
            ),
            ValueError,
            "standard layer",
        ),
        (
            lambda: mha_lib.to_per_head(
                mha_lib.MultiHeadAttention(8, 4, num_kv_heads=2)
            ),
            ValueError,
            "one key/value head per query head",
        ),
        (
            lambda: mha_lib.to_per_head(nn.MultiheadAttention(8, 2)),
            TypeError,
            "expects mha_lib.MultiHeadAttention",
        ),
        (
            lambda: mha_lib.to_fused(mha_lib.MultiHeadAttention(8, 2)),
            TypeError,
            "expects mha_lib.PerHeadAttention",
        ),
    ],
)
def test_bad_conversions(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_per_head_and_fused_keep_a_custom_scale_and_dropout():
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(16, 4, scale=0.2, dropout=0.1).eval()
    per_head = mha_lib.to_per_head(layer)
    back = mha_lib.to_fused(per_head)
    assert per_head.spec.scale == back.spec.scale == 0.2
    assert per_head.spec.dropout == back.spec.dropout == 0.1
    assert back.spec == layer.spec, "the round trip changed the layer"
    assert not per_head.training and not back.training, (
        "the training mode, which decides whether dropout acts, was lost"
    )
    query, key, value = inputs(2, 5, 6, 16)
    expected, expected_weights = layer(query, key, value, need_weights=True)
    for model in (per_head, back):
        output, weights = model(query, key, value, need_weights=True)
        torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
        torch.testing.assert_close(
            weights, expected_weights, atol=ATOL, rtol=0
        )
    per_head.train()
    assert not torch.equal(per_head(query)[0], per_head(query)[0]), (
        "the per-head layer's dropout does not act in training"
    )


def test_torch_layers_keep_their_dropout_both_ways():
    reference = nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=True)
    ours = mha_lib.from_torch(reference.eval())
    assert ours.spec.dropout == 0.1 and not ours.training
    back = mha_lib.to_torch(ours.train())
    assert back.dropout == 0.1 and back.training
    # the default scale written out is the default scale
    explicit = mha_lib.MultiHeadAttention(8, 2, scale=4**-0.5)
    assert mha_lib.to_torch(explicit).batch_first


def test_a_chunked_or_stacked_layer_is_refused_with_a_reason():
    from mha_lib.course.stacking import stacked

    chunked = mha_lib.ChunkedAttention(16, 4)
    together = stacked([mha_lib.MultiHeadAttention(16, 4) for _ in range(3)])
    for convert in (mha_lib.to_per_head, mha_lib.to_torch):
        with pytest.raises(ValueError, match="chunk"):
            convert(chunked)
        with pytest.raises(TypeError, match="several seeds"):
            convert(together)


class GatedAttention(mha_lib.MultiHeadAttention):
    """A layer with one parameter more than the conversions know: a gate on
    each head's output."""

    def __init__(self, d_model, num_heads):
        super().__init__(d_model, num_heads)
        self.gate = nn.Parameter(torch.ones(num_heads))


class GatedPerHead(mha_lib.PerHeadAttention):
    def __init__(self, d_model, num_heads):
        super().__init__(d_model, num_heads)
        self.register_buffer("gate", torch.ones(num_heads))


def test_a_parameter_the_conversion_does_not_know_is_refused_not_dropped():
    gated = GatedAttention(16, 4)
    for convert in (mha_lib.to_per_head, mha_lib.to_torch):
        with pytest.raises(ValueError, match=r"would drop \['gate'\]"):
            convert(gated)
    with pytest.raises(ValueError, match=r"to_fused would drop \['gate'\]"):
        mha_lib.to_fused(GatedPerHead(16, 4))
    torch_layer = nn.MultiheadAttention(16, 4, batch_first=True)
    torch_layer.register_parameter("gate", nn.Parameter(torch.ones(4)))
    with pytest.raises(ValueError, match=r"from_torch would drop \['gate'\]"):
        mha_lib.from_torch(torch_layer)
    # what the conversions know goes across whole, biases or none
    for bias in (True, False):
        layer = mha_lib.MultiHeadAttention(16, 4, bias=bias)
        per_head = mha_lib.to_per_head(layer)
        assert mha_lib.count_trainable(per_head) == (
            mha_lib.count_trainable(mha_lib.to_fused(per_head))
        )
        assert mha_lib.to_torch(layer).in_proj_weight.shape == (48, 16)
