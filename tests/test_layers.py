"""mha_lib's layers against torch.nn.MultiheadAttention, against each other and
against attention written out by hand; bad input to their forward."""

import itertools

import pytest
import torch
from support import (
    ATOL,
    DEVICES,
    LAYERS,
    inputs,
    random_masks,
    reference_pair,
)

import mha_lib

pytestmark = pytest.mark.core

# (d_model, num_heads, n_query, n_key): self-attention (n_key None) and
# cross-attention
CONFIGS = [
    (8, 1, 5, None),
    (16, 2, 7, None),
    (24, 3, 4, 9),
    (32, 4, 6, 3),
    (64, 8, 11, None),
    (48, 16, 5, 12),
    (512, 2, 12, None),
]


@pytest.mark.parametrize("d_model,num_heads,n_query,n_key", CONFIGS)
@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_unmasked(d_model, num_heads, n_query, n_key, bias):
    reference, ours = reference_pair(d_model, num_heads, bias)
    query, key, value = inputs(3, n_query, n_key, d_model)
    expected, expected_weights = reference(
        query, key, value, average_attn_weights=False
    )
    fast, none = ours(query, key, value)
    slow, weights = ours(query, key, value, need_weights=True)
    assert none is None
    assert weights.shape == (3, num_heads, n_query, n_key or n_query)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(slow, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_masks_mean_what_they_mean_in_torch_on_purpose(need_weights):
    """Followed on purpose, as attention.py's docstring says: a float mask
    is added to the logits, so a float 0/1 "keep" mask hides nothing and a
    float key_padding_mask is additive too; with batch equal to n_key a
    transposed key_padding_mask is read as (batch, n_key), as torch reads
    it."""
    reference, ours = reference_pair(16, 4)
    query, key, value = inputs(3, 5, 3, 16)  # batch 3 = n_key 3
    keep = torch.tensor([[1.0, 1.0, 0.0]] * 5)  # (n_query, n_key), 1: keep
    padding = torch.tensor([[0.0, 0.0, 2.0], [0.0, 1.0, 0.0], [0.5] * 3])
    hide = torch.tensor([[0, 0, 1], [0, 1, 0], [0, 0, 0]]).bool()
    for masks in (
        dict(attn_mask=keep),
        dict(key_padding_mask=padding),
        dict(key_padding_mask=hide.T),  # (n_key, batch), read as (b, n)
    ):
        expected, expected_weights = reference(
            query, key, value, **masks, average_attn_weights=False
        )
        got, weights = ours(
            query, key, value, **masks, need_weights=need_weights
        )
        torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
        if need_weights:
            torch.testing.assert_close(
                weights, expected_weights, atol=ATOL, rtol=0
            )
    hidden = ours(query, key, value, attn_mask=keep == 0, need_weights=True)
    added = ours(query, key, value, attn_mask=keep, need_weights=True)
    assert (hidden[1][..., 2] == 0).all(), "a bool mask hides key 2"
    assert (added[1][..., 2] > 0).all(), "a float 1.0 hides no key"


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("d_model,num_heads,n_query,n_key", CONFIGS[:6])
@pytest.mark.parametrize("need_weights", [True, False])
def test_matches_torch_with_masks(
    d_model, num_heads, n_query, n_key, need_weights
):
    reference, ours = reference_pair(d_model, num_heads)
    query, key, value = inputs(2, n_query, n_key, d_model)
    n_key = n_key or n_query
    attn_mask, padding, per_head = random_masks(
        2, num_heads, n_query, n_key, seed=d_model
    )
    for mask, pad in [
        (attn_mask, None),
        (None, padding),
        (attn_mask, padding),
        (per_head, padding),
    ]:
        expected, expected_weights = reference(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=pad,
            average_attn_weights=False,
        )
        got, weights = ours(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=pad,
            need_weights=need_weights,
        )
        torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
        if need_weights:
            torch.testing.assert_close(
                weights, expected_weights, atol=ATOL, rtol=0
            )


@pytest.mark.parametrize("d_model,num_heads", [(16, 2), (64, 8)])
def test_causal_matches_torch_and_hides_the_future(d_model, num_heads):
    reference, ours = reference_pair(d_model, num_heads)
    query, key, value = inputs(2, 9, None, d_model)
    future = torch.ones(9, 9, dtype=torch.bool).triu(1)
    expected, _ = reference(
        query, key, value, attn_mask=future, is_causal=True
    )
    got, weights = ours(query, is_causal=True, need_weights=True)
    fast, _ = ours(query, is_causal=True)
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)
    assert torch.all(weights.masked_select(future) == 0), (
        "a query attended to a later key"
    )
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
        output, weights = ours(
            query,
            attn_mask=attn_mask,
            key_padding_mask=padding,
            need_weights=need_weights,
        )
        assert torch.isfinite(output).all(), "a fully masked row produced NaN"
        bias = ours.out_proj.bias.expand(5, 16)
        # zero attention output, then W_O adds bias
        torch.testing.assert_close(output[0, 2], bias[2])
        torch.testing.assert_close(output[1], bias)
        if need_weights:
            assert torch.all(weights[0, :, 2] == 0) and torch.all(
                weights[1] == 0
            )
            torch.testing.assert_close(
                weights[0, :, [0, 1, 3, 4]].sum(-1), torch.ones(4, 4)
            )
        output.sum().backward()
        assert torch.isfinite(query.grad).all(), "gradient is not finite"
        assert torch.all(query.grad[1] == 0), (
            "a fully padded sequence received gradient"
        )
        query.grad = None


def test_head_mask_scales_each_head_and_is_differentiable():
    _, ours = reference_pair(32, 4)
    per_head = mha_lib.to_per_head(ours)
    x = torch.randn(2, 6, 32)
    head_mask = torch.tensor([1.0, 0.0, 0.5, 1.0], requires_grad=True)
    got, _ = ours(x, head_mask=head_mask)
    expected, _ = per_head(x, head_mask=head_mask.detach())
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    # By hand: head outputs summed through their own W_O blocks.
    _, weights = ours(x, need_weights=True)
    # (batch, heads, seq, head_dim)
    values = ours.v_proj(x).view(2, 6, 4, 8).transpose(1, 2)
    heads = weights @ values
    blocks = ours.out_proj.weight.view(32, 4, 8)  # (d_model, heads, head_dim)
    manual = (
        torch.einsum("bhsk,dhk,h->bsd", heads, blocks, head_mask.detach())
        + ours.out_proj.bias
    )
    torch.testing.assert_close(got, manual, atol=ATOL, rtol=0)
    got.pow(2).sum().backward()
    assert head_mask.grad is not None and torch.all(head_mask.grad != 0)
    ones, _ = ours(x, head_mask=torch.ones(4))
    torch.testing.assert_close(ones, ours(x)[0])


@pytest.mark.parametrize(
    "num_heads,head_dim,value_dim,num_kv_heads",
    [
        (4, 8, None, 2),
        (4, 8, None, 1),
        (2, 32, None, None),
        (3, 5, None, None),
        (4, 2, 32, None),
        (4, 32, 8, None),
        (4, 8, 3, 2),
    ],
)
def test_variants_equal_an_explicit_computation(
    num_heads, head_dim, value_dim, num_kv_heads
):
    """Wide, custom, grouped-query and value-sized layers against attention
    written out head by head."""
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(
        32,
        num_heads,
        head_dim=head_dim,
        value_dim=value_dim,
        num_kv_heads=num_kv_heads,
    )
    kv_heads, value_size = num_kv_heads or num_heads, value_dim or head_dim
    x = torch.randn(2, 7, 32)
    got, weights = layer(x, need_weights=True)
    fast, _ = layer(x)
    q = layer.q_proj(x).view(2, 7, num_heads, head_dim)
    k = layer.k_proj(x).view(2, 7, kv_heads, head_dim)
    v = layer.v_proj(x).view(2, 7, kv_heads, value_size)
    outputs = []
    for head in range(num_heads):
        # the key/value head this query head shares
        kv = head // (num_heads // kv_heads)
        scores = q[:, :, head] @ k[:, :, kv].transpose(1, 2) / head_dim**0.5
        attention = scores.softmax(-1)
        torch.testing.assert_close(
            weights[:, head], attention, atol=ATOL, rtol=0
        )
        outputs.append(attention @ v[:, :, kv])
    expected = layer.out_proj(torch.cat(outputs, dim=-1))
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)


def test_every_combination_of_mask_kinds_on_per_head_layer():
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(16, 4)
    per_head = mha_lib.to_per_head(layer)
    query, key, value = inputs(2, 5, 6, 16)
    attn_mask, padding, per_head_mask = random_masks(2, 4, 5, 6, seed=9)
    for mask, pad in itertools.product(
        [None, attn_mask, per_head_mask], [None, padding]
    ):
        a, wa = layer(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=pad,
            need_weights=True,
        )
        b, wb = per_head(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=pad,
            need_weights=True,
        )
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
        torch.testing.assert_close(wa, wb, atol=ATOL, rtol=0)


LAYER = mha_lib.MultiHeadAttention(16, 4)


X = torch.randn(2, 5, 16)


@pytest.mark.parametrize(
    "call,error,words",
    [
        (
            lambda: LAYER(torch.randn(2, 5, 8)),
            ValueError,
            r"shape \(batch, seq, d_model=16\), got \(2, 5, 8\)",
        ),
        (
            lambda: LAYER(torch.randn(5, 16)),
            ValueError,
            r"shape \(batch, seq, d_model=16\).*unsqueeze",
        ),
        (
            lambda: LAYER(torch.randn(1, 2, 5, 16)),
            ValueError,
            r"must have shape \(batch, seq",
        ),
        (
            lambda: LAYER(X.numpy()),
            TypeError,
            "query must be a tensor, got ndarray",
        ),
        (
            lambda: LAYER(torch.ones(2, 5, 16, dtype=torch.long)),
            TypeError,
            r"query has dtype torch.int64.*cast the input",
        ),
        (
            lambda: LAYER(X, torch.randn(3, 5, 16)),
            ValueError,
            "share the batch size",
        ),
        (
            lambda: LAYER(X, torch.randn(2, 6, 16), torch.randn(2, 7, 16)),
            ValueError,
            "key and value the length",
        ),
        (
            lambda: LAYER(X, attn_mask=torch.zeros(5, 4, dtype=torch.bool)),
            ValueError,
            r"attn_mask has shape \(5, 4\)",
        ),
        (
            lambda: LAYER(X, attn_mask=torch.zeros(5, 5, dtype=torch.long)),
            TypeError,
            "attn_mask must be a bool",
        ),
        (
            lambda: LAYER(X, key_padding_mask=torch.zeros(5, 2).bool()),
            ValueError,
            "key_padding_mask must have shape \\(batch, n_key\\)",
        ),
        (
            lambda: LAYER(X, key_padding_mask=[[True] * 5] * 2),
            TypeError,
            "key_padding_mask must be a tensor, got list",
        ),
        (
            lambda: LAYER(X, head_mask=torch.ones(3)),
            ValueError,
            r"head_mask must have shape \(num_heads\) = \(4,\)",
        ),
        (
            lambda: LAYER(X, head_mask=[1, 1, 1, 1]),
            TypeError,
            "head_mask must be a tensor, got list",
        ),
    ],
)
def test_bad_forward_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_head_is_callable_and_the_per_head_layer_is_the_sum_of_its_heads():
    torch.manual_seed(0)
    per_head = mha_lib.to_per_head(mha_lib.MultiHeadAttention(24, 3))
    query, key, value = inputs(2, 5, 7, 24)
    attn_mask, padding, per_head_mask = random_masks(2, 3, 5, 7, seed=4)
    for mask in (attn_mask, per_head_mask):
        output, weights = per_head(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=padding,
            need_weights=True,
        )
        total = per_head.out_bias.expand_as(output)
        for index, head in enumerate(per_head.heads):
            head_mask = (
                mask if mask.dim() == 2 else mask.view(2, 3, 5, 7)[:, index]
            )
            contribution, head_weights = head(
                query,
                key,
                value,
                attn_mask=head_mask,
                key_padding_mask=padding,
                need_weights=True,
            )
            assert contribution.shape == (2, 5, 24) and head_weights.shape == (
                2,
                5,
                7,
            )
            torch.testing.assert_close(
                head_weights, weights[:, index], atol=ATOL, rtol=0
            )
            total = total + contribution
        torch.testing.assert_close(output, total, atol=ATOL, rtol=0)
    fast, none = per_head.heads[0](query)
    assert none is None and fast.shape == (2, 5, 24)
    with pytest.raises(ValueError, match="d_model=24"):
        per_head.heads[0](torch.randn(2, 5, 8))


def block_diagonal_twin(chunked):
    """A MultiHeadAttention computing what ``chunked`` computes, with
    block-diagonal q/k/v weights."""
    d, h = chunked.spec.d_model, chunked.spec.num_heads
    twin = mha_lib.MultiHeadAttention(d, h)
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj"):
            source, target = getattr(chunked, name), getattr(twin, name)
            # (d, d), head i's block on the diagonal
            target.weight.copy_(torch.block_diag(*source.weight))
            target.bias.copy_(source.bias.flatten())
        twin.out_proj.load_state_dict(chunked.out_proj.state_dict())
    return twin


@pytest.mark.parametrize("d_model,num_heads", [(16, 4), (24, 3), (8, 1)])
def test_chunked_layer_is_a_standard_layer_with_block_diagonal_projections(
    d_model, num_heads
):
    torch.manual_seed(1)
    chunked = mha_lib.ChunkedAttention(d_model, num_heads)
    twin = block_diagonal_twin(chunked)
    query, key, value = inputs(2, 5, 6, d_model)
    attn_mask, padding, per_head_mask = random_masks(
        2, num_heads, 5, 6, seed=2
    )
    for mask, pad, need_weights in [
        (None, None, False),
        (attn_mask, padding, True),
        (per_head_mask, None, True),
    ]:
        got, weights = chunked(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=pad,
            need_weights=need_weights,
        )
        expected, expected_weights = twin(
            query,
            key,
            value,
            attn_mask=mask,
            key_padding_mask=pad,
            need_weights=need_weights,
        )
        torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
        if need_weights:
            torch.testing.assert_close(
                weights, expected_weights, atol=ATOL, rtol=0
            )
    assert mha_lib.count_trainable(chunked) == mha_lib.parameter_count(
        d_model, num_heads, chunked=True
    )


def test_a_chunked_head_reads_only_its_own_chunk():
    torch.manual_seed(0)
    chunked = mha_lib.ChunkedAttention(16, 4)
    x = torch.randn(1, 5, 16, requires_grad=True)
    x_again = x.detach().clone().requires_grad_()
    _, weights = chunked(x, need_weights=True)
    weights[0, 1].sum().backward()  # head 1's attention pattern
    # (d_model,): the features it depends on
    reads = x.grad.abs().sum(dim=(0, 1)) > 0
    assert reads.tolist() == [False] * 4 + [True] * 4 + [False] * 8, (
        "head 1 should read features 4-7 only"
    )
    output, _ = chunked(x_again)
    output.sum().backward()
    assert torch.all(x_again.grad.abs().sum(dim=(0, 1)) > 0), (
        "W_O mixes every head into every output"
    )
    with pytest.raises(ValueError, match="not divisible"):
        mha_lib.ChunkedAttention(10, 4)
    with pytest.raises(ValueError, match=r"d_model=16\), got \(1, 5, 8\)"):
        chunked(torch.randn(1, 5, 8))


def test_value_dim_defaults_to_head_dim_and_is_checked():
    layer = mha_lib.MultiHeadAttention(16, 4)
    assert (
        layer.spec.value_dim == layer.spec.head_dim == 4
        and "value_dim" not in layer.spec.sizes
    )
    sized = mha_lib.MultiHeadAttention(16, 4, head_dim=16, value_dim=4)
    assert sized.v_proj.weight.shape == sized.out_proj.weight.shape
    assert sized.v_proj.weight.shape == (16, 16)
    assert "value_dim=4" in sized.extra_repr()
    with pytest.raises(ValueError, match="value_dim"):
        mha_lib.MultiHeadAttention(16, 4, value_dim=0)
    with pytest.raises(ValueError, match="value_dim == head_dim"):
        mha_lib.to_per_head(sized)
    with pytest.raises(ValueError, match="standard layer"):
        mha_lib.to_torch(mha_lib.MultiHeadAttention(16, 4, value_dim=8))


def layer_of_kind(kind):
    torch.manual_seed(0)
    fused = mha_lib.MultiHeadAttention(16, 4)
    return {
        "fused": fused,
        "per-head": mha_lib.to_per_head(fused),
        "chunked": mha_lib.ChunkedAttention(16, 4),
        "one head": mha_lib.to_per_head(fused).heads[0],
    }[kind]


@pytest.mark.parametrize("kind", ["fused", "per-head", "chunked", "one head"])
@pytest.mark.parametrize(
    "call,error,words",
    [
        (
            lambda layer: layer(X.double()),
            TypeError,
            r"query has dtype torch.float64, but the layer's weights are "
            r"torch.float32; cast the input with .to\(torch.float32\)",
        ),
        (
            lambda layer: layer(X.bfloat16()),
            TypeError,
            "query has dtype torch.bfloat16.*torch.float32",
        ),
        (
            lambda layer: layer(X, X.double()),
            TypeError,
            "key has dtype torch.float64",
        ),
        (
            lambda layer: layer(X.to("meta")),
            ValueError,
            r"query is on meta, but the layer's weights are on cpu; move the "
            r"input with .to\('cpu'\) or the layer with .to\('meta'\)",
        ),
        (
            lambda layer: layer(X.to("meta"), X),
            ValueError,
            "query is on meta",
        ),
        (
            lambda layer: layer(X, is_causal="no"),
            TypeError,
            r"is_causal must be True or False, got 'no'",
        ),
        (
            lambda layer: layer(X, need_weights="False"),
            TypeError,
            r"need_weights must be True or False, got 'False'",
        ),
    ],
)
def test_wrong_dtypes_and_flags_are_refused_by_every_layer(
    kind, call, error, words
):
    with pytest.raises(error, match=words):
        call(layer_of_kind(kind))


@pytest.mark.parametrize("kind", ["fused", "per-head", "chunked", "one head"])
def test_a_layer_on_the_meta_device_gives_shapes_without_data(kind):
    """Meta tensors carry shapes alone (PyTorch uses them to plan memory):
    a layer moved there takes them, and a float64 one is still refused."""
    layer = layer_of_kind(kind).to("meta")
    output, weights = layer(X.to("meta"), need_weights=True)
    assert output.device.type == "meta" and output.shape == X.shape
    assert weights.shape[-2:] == (X.shape[1], X.shape[1])
    with pytest.raises(TypeError, match="query has dtype torch.float64"):
        layer(X.to("meta", torch.float64))


def test_a_float64_layer_asks_for_float64_input():
    layer = mha_lib.MultiHeadAttention(16, 4).double()
    with pytest.raises(TypeError, match="cast the input with .to\\(torch.f"):
        layer(X)
    assert layer(X.double())[0].dtype == torch.float64


@pytest.mark.parametrize("kind", ["fused", "per-head", "chunked"])
@pytest.mark.parametrize(
    "batch,n_query,n_key", [(0, 3, 3), (2, 0, 3), (2, 0, 0), (2, 3, 0)]
)
@pytest.mark.parametrize("need_weights", [False, True])
def test_empty_batches_and_sequences_give_empty_outputs_like_torch(
    kind, batch, n_query, n_key, need_weights
):
    """nn.MultiheadAttention returns an empty output for an empty batch or
    query sequence; with no keys at all every query attends to nothing,
    so the output is the output bias, as for a fully masked row."""
    reference, fused = reference_pair(16, 4)
    layer = {
        "fused": fused,
        "per-head": mha_lib.to_per_head(fused),
        "chunked": mha_lib.ChunkedAttention(16, 4),
    }[kind]
    query, key, value = inputs(batch, n_query, n_key, 16)
    output, weights = layer(query, key, value, need_weights=need_weights)
    assert output.shape == (batch, n_query, 16)
    if need_weights:
        assert weights.shape == (batch, 4, n_query, n_key)
    if n_key == 0:
        bias = layer.out_proj.bias if kind != "per-head" else layer.out_bias
        torch.testing.assert_close(output, bias.expand_as(output))
    if kind != "chunked":
        expected, _ = reference(query, key, value)
        torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)


def test_a_row_masked_in_one_head_only_is_dead_in_that_head_alone():
    """A per-head attn_mask that blocks a whole query row of one head: that
    head's row attends to nothing (zero weights, zero contribution), the
    other heads' same row attends as usual, and the per-head layer agrees
    with the fused one."""
    from mha_lib import MultiHeadAttention, to_per_head

    torch.manual_seed(0)
    batch, n, d, h = 2, 5, 16, 4
    fused = MultiHeadAttention(d, h).eval()
    per_head = to_per_head(fused).eval()
    x = torch.randn(batch, n, d)
    mask = torch.zeros(batch * h, n, n, dtype=torch.bool)
    mask[1, 2, :] = True  # batch 0, head 1, query 2
    mask[h + 3, 0, :] = True  # batch 1, head 3, query 0
    out_fused, w_fused = fused(x, attn_mask=mask, need_weights=True)
    out_heads, w_heads = per_head(x, attn_mask=mask, need_weights=True)
    torch.testing.assert_close(out_heads, out_fused, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w_heads, w_fused, atol=1e-5, rtol=1e-5)
    for weights in (w_fused, w_heads):
        assert weights[0, 1, 2].abs().sum() == 0
        assert weights[1, 3, 0].abs().sum() == 0
        for head in (0, 2, 3):  # the same row, other heads: a distribution
            torch.testing.assert_close(
                weights[0, head, 2].sum(), torch.tensor(1.0)
            )


def per_head_masks(batch, heads, n_query, n_key, seed):
    """A random bool mask per head, ``(batch, heads, n_query, n_key)``, in
    which every head, head 0 included, has whole rows masked, no two heads
    of a batch the same rows; and a key padding that hides the last keys of
    the last batch."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(batch, heads, n_query, n_key, generator=generator) < 0.4
    for b, head in itertools.product(range(batch), range(heads)):
        mask[b, head, (head + b) % heads :: heads] = True  # whole rows
    padding = torch.zeros(batch, n_key, dtype=torch.bool)
    padding[-1, n_key // 2 :] = True
    return mask, padding


def outputs_and_input_gradient(layer, x, masks):
    """``(output, fast output, weights, gradient of the input)``: both
    paths of ``layer``, the one with weights and the fast one."""
    x = x.clone().requires_grad_()
    out, weights = layer(x, **masks, need_weights=True)
    fast, _ = layer(x, **masks)
    (out.square().sum() + fast.sum()).backward()
    return out, fast, weights, x.grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", range(2))
def test_per_head_masks_give_the_fused_layers_output_in_every_head(
    device, seed
):
    """Random masks per head with whole rows masked in every head (head 0
    too), alone and with padding and the causal mask, as bool masks (4-D
    and ``(batch * heads, ..)``) and as float ones: the per-head layer gives
    the fused layer's outputs, weights and input gradient, and a row masked
    whole in one head attends to nothing there and as usual in the
    others."""
    torch.manual_seed(seed)
    batch, n, d, h = 3, 7, 32, 4
    fused = mha_lib.MultiHeadAttention(d, h).to(device).eval()
    per_head = mha_lib.to_per_head(fused).eval()
    x = torch.randn(batch, n, d, device=device)
    mask, padding = per_head_masks(batch, h, n, n, seed)
    floats = torch.where(mask, -torch.inf, torch.randn(mask.shape))
    causal = torch.ones(n, n, dtype=torch.bool).triu(1)
    for attn_mask, pad, is_causal in itertools.product(
        [mask, mask.flatten(0, 1), floats], [None, padding], [False, True]
    ):
        masks = dict(
            attn_mask=attn_mask.to(device),
            key_padding_mask=None if pad is None else pad.to(device),
            is_causal=is_causal,
        )
        expected = outputs_and_input_gradient(fused, x, masks)
        got = outputs_and_input_gradient(per_head, x, masks)
        for name, a, b in zip(
            ["output", "fast", "weights", "grad"], got, expected
        ):
            assert torch.isfinite(a).all(), f"per-head {name} not finite"
            torch.testing.assert_close(
                a,
                b,
                atol=ATOL,
                rtol=0,
                msg=f"per-head and fused {name} differ",
            )
        hidden = mask | causal if is_causal else mask.clone()
        if pad is not None:
            hidden |= pad[:, None, None]  # (batch, 1, 1, n_key)
        dead = hidden.all(-1)  # (batch, heads, n_query)
        assert dead[:, 0].any() and (dead[:, 0] != dead[:, 1:]).any()
        weights = got[2].cpu()
        assert (weights[dead] == 0).all(), "a dead row attends somewhere"
        torch.testing.assert_close(
            weights[~dead].sum(-1), torch.ones((~dead).sum().item())
        )


def test_a_layer_takes_a_spec_or_sizes_and_says_which_class_fits():
    spec = mha_lib.AttentionSpec(16, 4, head_dim=16)
    layer = mha_lib.MultiHeadAttention(spec)
    assert layer.spec is spec and layer.spec.head_dim == 16
    assert isinstance(mha_lib.layer_for(spec), mha_lib.MultiHeadAttention)
    chunked = mha_lib.AttentionSpec(16, 4, chunked=True)
    assert type(mha_lib.layer_for(chunked)) is mha_lib.ChunkedAttention
    for wrong in ("standard", 64, None):  # a kind's name is not its spec
        with pytest.raises(TypeError, match="layer_for takes an AttentionS"):
            mha_lib.layer_for(wrong)
    refusal = (
        r"MultiHeadAttention does not implement chunked=True \(of d_model=16, "
        r"num_heads=4, chunked=True\); the layers that do: ChunkedAttention"
    )
    with pytest.raises(ValueError, match=refusal):
        mha_lib.MultiHeadAttention(chunked)
    with pytest.raises(ValueError, match=refusal):
        mha_lib.MultiHeadAttention(16, 4, chunked=True)
    with pytest.raises(
        ValueError,
        match="ChunkedAttention does not implement head_dim=16 .*; the "
        "layers that do: MultiHeadAttention, .*PerHeadAttention",
    ):
        mha_lib.ChunkedAttention(spec)
    with pytest.raises(
        ValueError, match="standard layer .*, not what ChunkedAttention"
    ):
        mha_lib.ChunkedAttention(mha_lib.AttentionSpec(16, 4))
    with pytest.raises(TypeError, match="not both"):
        mha_lib.MultiHeadAttention(spec, 4)
    with pytest.raises(TypeError, match=r"sets \['chunked'\] itself"):
        mha_lib.ChunkedAttention(16, 4, chunked=True)
    with pytest.raises(TypeError, match=r"unknown sizes \['n_kv_heads'\]"):
        mha_lib.MultiHeadAttention(16, 4, n_kv_heads=2)
    with pytest.raises(
        TypeError,
        match=r"ChunkedAttention got unknown sizes \['heads'\]; expected "
        r"some of \['bias', 'dropout', 'scale'\]",
    ):
        mha_lib.ChunkedAttention(16, 4, heads=2)
    with pytest.raises(
        ValueError,
        match="PerHeadAttention does not implement value_dim=2 .*; the "
        "layers that do: MultiHeadAttention",
    ):
        mha_lib.PerHeadAttention(16, 4, value_dim=2)


def test_a_field_no_layer_implements_is_refused_saying_so(monkeypatch):
    """As a new field is before its layer exists: every layer refuses it."""
    for layer in LAYERS:
        kept = [field for field in layer.implements if field != "scale"]
        monkeypatch.setattr(layer, "implements", tuple(kept))
    with pytest.raises(
        ValueError,
        match=r"MultiHeadAttention does not implement scale=0.5 \(of "
        r"d_model=16, num_heads=4, scale=0.5\); no layer of mha_lib.layers "
        "does yet",
    ):
        mha_lib.MultiHeadAttention(16, 4, scale=0.5)


def test_a_layers_sizes_live_in_its_spec_alone_and_are_read_only():
    layer = mha_lib.MultiHeadAttention(16, 4)
    spec = layer.spec
    assert (spec.d_model, spec.num_heads, spec.head_dim) == (16, 4, 4)
    assert not hasattr(layer, "num_heads")
    with pytest.raises(AttributeError, match="cannot assign to field"):
        spec.num_heads = 8


def test_the_forward_a_learner_follows_is_at_most_200_lines():
    """Every function of the library that building ``MultiHeadAttention(64,
    8)`` and calling it runs, read whole (docstrings and checks included):
    at most 200 lines. The rare cases (masks, a spec given, a chunked layer,
    queries that may attend to nothing) live in functions of their own."""
    import inspect
    import sys
    from pathlib import Path

    library = Path(mha_lib.__file__).parent
    walked = set()

    def tracer(frame, event, arg):
        code = frame.f_code
        inside = Path(code.co_filename).parent == library
        if event == "call" and inside and not code.co_name.startswith("<"):
            walked.add(code)

    x = torch.randn(2, 5, 64)
    sys.settrace(tracer)
    try:
        mha_lib.MultiHeadAttention(64, 8)(x)
    finally:
        sys.settrace(None)
    files = {code.co_filename for code in walked}
    lines = sum(len(inspect.getsourcelines(code)[0]) for code in walked)
    assert len(walked) >= 12 and len(files) == 4  # the walk was traced
    assert lines <= 200, sorted((c.co_name, c.co_filename) for c in walked)
