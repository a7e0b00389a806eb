"""mha_lib's layers against torch.nn.MultiheadAttention and against each other."""

import itertools

import pytest
import torch
from torch import nn

import mha_lib

ATOL = 1e-5

# (d_model, num_heads, n_query, n_key): self-attention (n_key None) and cross-attention
CONFIGS = [
    (8, 1, 5, None),
    (16, 2, 7, None),
    (24, 3, 4, 9),
    (32, 4, 6, 3),
    (64, 8, 11, None),
    (48, 16, 5, 12),
    (512, 2, 12, None),
]


def reference_pair(d_model, num_heads, bias=True, seed=0):
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True).eval()
    with torch.no_grad():  # non-zero biases, so that a bias copied to the wrong place shows
        for parameter in reference.parameters():
            if parameter.dim() == 1:
                parameter.normal_()
    return reference, mha_lib.from_torch(reference)


def inputs(batch, n_query, n_key, d_model, seed=1):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(batch, n_query, d_model, generator=generator)
    if n_key is None:
        return query, query, query
    key = torch.randn(batch, n_key, d_model, generator=generator)
    value = torch.randn(batch, n_key, d_model, generator=generator)
    return query, key, value


def random_masks(batch, num_heads, n_query, n_key, seed):
    """A bool attn_mask, 3-D per-head float mask and key padding that never hide a whole row."""
    generator = torch.Generator().manual_seed(seed)
    attn_mask = torch.rand(n_query, n_key, generator=generator) < 0.3
    attn_mask[:, 0] = False
    padding = torch.zeros(batch, n_key, dtype=torch.bool)
    padding[-1, n_key // 2 + 1 :] = True
    per_head = torch.randn(batch * num_heads, n_query, n_key, generator=generator)
    return attn_mask, padding, per_head


@pytest.mark.parametrize("d_model,num_heads,n_query,n_key", CONFIGS)
@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_unmasked(d_model, num_heads, n_query, n_key, bias):
    reference, ours = reference_pair(d_model, num_heads, bias)
    query, key, value = inputs(3, n_query, n_key, d_model)
    expected, expected_weights = reference(query, key, value, average_attn_weights=False)
    fast, none = ours(query, key, value)
    slow, weights = ours(query, key, value, need_weights=True)
    assert none is None
    assert weights.shape == (3, num_heads, n_query, n_key or n_query)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(slow, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("d_model,num_heads,n_query,n_key", CONFIGS[:6])
@pytest.mark.parametrize("need_weights", [True, False])
def test_matches_torch_with_masks(d_model, num_heads, n_query, n_key, need_weights):
    reference, ours = reference_pair(d_model, num_heads)
    query, key, value = inputs(2, n_query, n_key, d_model)
    n_key = n_key or n_query
    attn_mask, padding, per_head = random_masks(2, num_heads, n_query, n_key, seed=d_model)
    for mask, pad in [(attn_mask, None), (None, padding), (attn_mask, padding), (per_head, padding)]:
        expected, expected_weights = reference(
            query, key, value, attn_mask=mask, key_padding_mask=pad, average_attn_weights=False
        )
        got, weights = ours(query, key, value, attn_mask=mask, key_padding_mask=pad, need_weights=need_weights)
        torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
        if need_weights:
            torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)


@pytest.mark.parametrize("d_model,num_heads", [(16, 2), (64, 8)])
def test_causal_matches_torch_and_hides_the_future(d_model, num_heads):
    reference, ours = reference_pair(d_model, num_heads)
    query, key, value = inputs(2, 9, None, d_model)
    future = torch.ones(9, 9, dtype=torch.bool).triu(1)
    expected, _ = reference(query, key, value, attn_mask=future, is_causal=True)
    got, weights = ours(query, is_causal=True, need_weights=True)
    fast, _ = ours(query, is_causal=True)
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)
    assert torch.all(weights.masked_select(future) == 0), "a query attended to a later key"
    # Changing the last token must not change any earlier output.
    changed = query.clone()
    changed[:, -1] += 1.0
    later, _ = ours(changed, is_causal=True)
    torch.testing.assert_close(later[:, :-1], fast[:, :-1], atol=ATOL, rtol=0)


def test_fully_masked_rows_give_zero_attention_and_finite_gradients():
    _, ours = reference_pair(16, 4)
    query = torch.randn(2, 5, 16, requires_grad=True)
    attn_mask = torch.zeros(5, 5, dtype=torch.bool)
    attn_mask[2] = True  # query 2 may attend to nothing
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1] = True  # the whole second sequence is padding
    for need_weights in (True, False):
        output, weights = ours(query, attn_mask=attn_mask, key_padding_mask=padding, need_weights=need_weights)
        assert torch.isfinite(output).all(), "a fully masked row produced NaN"
        bias = ours.out_proj.bias.expand(5, 16)
        torch.testing.assert_close(output[0, 2], bias[2])  # zero attention output, then W_O adds bias
        torch.testing.assert_close(output[1], bias)
        if need_weights:
            assert torch.all(weights[0, :, 2] == 0) and torch.all(weights[1] == 0)
            torch.testing.assert_close(weights[0, :, [0, 1, 3, 4]].sum(-1), torch.ones(4, 4))
        output.sum().backward()
        assert torch.isfinite(query.grad).all(), "gradient is not finite"
        assert torch.all(query.grad[1] == 0), "a fully padded sequence received gradient"
        query.grad = None


def test_head_mask_scales_each_head_and_is_differentiable():
    _, ours = reference_pair(32, 4)
    per_head = mha_lib.split_heads(ours)
    x = torch.randn(2, 6, 32)
    head_mask = torch.tensor([1.0, 0.0, 0.5, 1.0], requires_grad=True)
    got, _ = ours(x, head_mask=head_mask)
    expected, _ = per_head(x, head_mask=head_mask.detach())
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    # By hand: head outputs summed through their own W_O blocks.
    _, weights = ours(x, need_weights=True)
    values = ours.v_proj(x).view(2, 6, 4, 8).transpose(1, 2)  # (batch, heads, seq, head_dim)
    heads = weights @ values
    blocks = ours.out_proj.weight.view(32, 4, 8)  # (d_model, heads, head_dim)
    manual = torch.einsum("bhsk,dhk,h->bsd", heads, blocks, head_mask.detach()) + ours.out_proj.bias
    torch.testing.assert_close(got, manual, atol=ATOL, rtol=0)
    got.pow(2).sum().backward()
    assert head_mask.grad is not None and torch.all(head_mask.grad != 0)
    ones, _ = ours(x, head_mask=torch.ones(4))
    torch.testing.assert_close(ones, ours(x)[0])


@pytest.mark.parametrize("num_heads,head_dim,num_kv_heads", [(4, 8, 2), (4, 8, 1), (2, 32, None), (3, 5, None)])
def test_variants_equal_an_explicit_computation(num_heads, head_dim, num_kv_heads):
    """Wide, custom and grouped-query layers against attention written out head by head."""
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(32, num_heads, head_dim=head_dim, num_kv_heads=num_kv_heads)
    kv_heads = num_kv_heads or num_heads
    x = torch.randn(2, 7, 32)
    got, weights = layer(x, need_weights=True)
    fast, _ = layer(x)
    q = layer.q_proj(x).view(2, 7, num_heads, head_dim)
    k = layer.k_proj(x).view(2, 7, kv_heads, head_dim)
    v = layer.v_proj(x).view(2, 7, kv_heads, head_dim)
    outputs = []
    for head in range(num_heads):
        kv = head // (num_heads // kv_heads)  # the key/value head this query head shares
        scores = q[:, :, head] @ k[:, :, kv].transpose(1, 2) / head_dim**0.5
        attention = scores.softmax(-1)
        torch.testing.assert_close(weights[:, head], attention, atol=ATOL, rtol=0)
        outputs.append(attention @ v[:, :, kv])
    expected = layer.out_proj(torch.cat(outputs, dim=-1))
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("d_model,num_heads,head_dim", [(16, 2, None), (24, 3, 24), (20, 4, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_split_merge_round_trip(d_model, num_heads, head_dim, bias):
    torch.manual_seed(3)
    layer = mha_lib.MultiHeadAttention(d_model, num_heads, head_dim=head_dim, bias=bias)
    per_head = mha_lib.split_heads(layer)
    back = mha_lib.merge_heads(per_head)
    query, key, value = inputs(2, 5, 8, d_model)
    mask = torch.rand(5, 8) < 0.3
    mask[:, 0] = False
    results = [
        model(query, key, value, attn_mask=mask, need_weights=True) for model in (layer, per_head, back)
    ]
    for output, weights in results[1:]:
        torch.testing.assert_close(output, results[0][0], atol=ATOL, rtol=0)
        torch.testing.assert_close(weights, results[0][1], atol=ATOL, rtol=0)
    for name, tensor in layer.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), f"{name} changed in the round trip"
    assert sum(p.numel() for p in per_head.parameters()) == sum(p.numel() for p in layer.parameters())


def test_per_head_weights_are_the_fused_blocks():
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(12, 3)
    per_head = mha_lib.split_heads(layer)
    for index, head in enumerate(per_head.heads):
        rows = slice(4 * index, 4 * (index + 1))
        assert torch.equal(head.q_proj.weight, layer.q_proj.weight[rows])
        assert torch.equal(head.v_proj.bias, layer.v_proj.bias[rows])
        assert torch.equal(head.out_proj.weight, layer.out_proj.weight[:, rows])


@pytest.mark.parametrize("d_model,num_heads,bias", [(16, 4, True), (24, 2, False)])
def test_to_torch_round_trip(d_model, num_heads, bias):
    torch.manual_seed(5)
    layer = mha_lib.MultiHeadAttention(d_model, num_heads, bias=bias)
    reference = mha_lib.to_torch(layer)
    assert reference.batch_first
    query, key, value = inputs(2, 4, 6, d_model)
    expected, expected_weights = reference(query, key, value, average_attn_weights=False)
    got, weights = layer(query, key, value, need_weights=True)
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)
    again = mha_lib.from_torch(reference)
    for name, tensor in layer.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor)


def test_float64_and_devices_follow_the_source():
    reference = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    ours = mha_lib.from_torch(reference)
    assert ours.q_proj.weight.dtype == torch.float64
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    torch.testing.assert_close(ours(x)[0], reference(x, x, x)[0], atol=1e-12, rtol=0)


def test_every_combination_of_mask_kinds_on_per_head_layer():
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(16, 4)
    per_head = mha_lib.split_heads(layer)
    query, key, value = inputs(2, 5, 6, 16)
    attn_mask, padding, per_head_mask = random_masks(2, 4, 5, 6, seed=9)
    for mask, pad in itertools.product([None, attn_mask, per_head_mask], [None, padding]):
        a, wa = layer(query, key, value, attn_mask=mask, key_padding_mask=pad, need_weights=True)
        b, wb = per_head(query, key, value, attn_mask=mask, key_padding_mask=pad, need_weights=True)
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
        torch.testing.assert_close(wa, wb, atol=ATOL, rtol=0)


def test_interleaved_layout_converts_to_stacked():
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(12, 3, batch_first=True)
    weight, bias = reference.in_proj_weight.detach(), reference.in_proj_bias.detach()
    interleaved = mha_lib.stacked_to_interleaved(weight, 3)
    # Head 1's key rows sit right after head 1's query rows in the interleaved layout.
    assert torch.equal(interleaved[16:20], weight[12 + 4 : 12 + 8])  # rows: q0 k0 v0 q1 k1 ...
    assert torch.equal(mha_lib.interleaved_to_stacked(interleaved, 3), weight)
    assert torch.equal(mha_lib.interleaved_to_stacked(mha_lib.stacked_to_interleaved(bias, 3), 3), bias)
    with pytest.raises(ValueError, match="3 \\* num_heads = 15"):
        mha_lib.interleaved_to_stacked(weight, 5)
