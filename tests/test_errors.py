"""Bad input raises ValueError/TypeError with a message that names the problem."""

import pytest
import torch
from torch import nn

import mha_lib

LAYER = mha_lib.MultiHeadAttention(16, 4)
X = torch.randn(2, 5, 16)


@pytest.mark.parametrize(
    "make,error,words",
    [
        (lambda: mha_lib.MultiHeadAttention(10, 3), ValueError, "d_model=10 is not divisible by num_heads=3"),
        (lambda: mha_lib.MultiHeadAttention(16, 4, num_kv_heads=3), ValueError, "num_kv_heads=3 must divide"),
        (lambda: mha_lib.MultiHeadAttention(0, 1), ValueError, "d_model must be a positive integer"),
        (lambda: mha_lib.MultiHeadAttention(16, -2), ValueError, "num_heads must be a positive integer"),
        (lambda: mha_lib.MultiHeadAttention(16, 4, head_dim=0), ValueError, "head_dim must be a positive"),
        (lambda: mha_lib.MultiHeadAttention(16.0, 4), TypeError, "d_model must be an int"),
        (lambda: mha_lib.parameter_count(16, 5), ValueError, "not divisible"),
        (lambda: mha_lib.PerHeadAttention(16, True), TypeError, "num_heads must be an int"),
    ],
)
def test_bad_sizes(make, error, words):
    with pytest.raises(error, match=words):
        make()


@pytest.mark.parametrize(
    "call,error,words",
    [
        (lambda: LAYER(torch.randn(2, 5, 8)), ValueError, "feature size 8, but the layer expects d_model=16"),
        (lambda: LAYER(torch.randn(5, 16)), ValueError, r"shape \(batch, seq, d_model=16\).*unsqueeze"),
        (lambda: LAYER(torch.randn(1, 2, 5, 16)), ValueError, r"must have shape \(batch, seq"),
        (lambda: LAYER(X.numpy()), TypeError, "query must be a torch.Tensor"),
        (lambda: LAYER(torch.ones(2, 5, 16, dtype=torch.long)), TypeError, "floating-point"),
        (lambda: LAYER(X, torch.randn(3, 5, 16)), ValueError, "share the batch size"),
        (lambda: LAYER(X, torch.randn(2, 6, 16), torch.randn(2, 7, 16)), ValueError, "same length"),
        (lambda: LAYER(X, attn_mask=torch.zeros(5, 4, dtype=torch.bool)), ValueError, r"attn_mask has shape \(5, 4\)"),
        (lambda: LAYER(X, attn_mask=torch.zeros(5, 5, dtype=torch.long)), TypeError, "attn_mask must be a bool"),
        (lambda: LAYER(X, key_padding_mask=torch.zeros(5, 2).bool()), ValueError, "key_padding_mask has shape"),
        (lambda: LAYER(X, key_padding_mask=[[True] * 5] * 2), TypeError, "key_padding_mask must be a torch.Tensor"),
        (lambda: LAYER(X, head_mask=torch.ones(3)), ValueError, r"head_mask must have shape \(num_heads,\) = \(4,\)"),
        (lambda: LAYER(X, head_mask=[1, 1, 1, 1]), TypeError, "head_mask must be a torch.Tensor"),
    ],
)
def test_bad_forward_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize(
    "call,error,words",
    [
        (lambda: mha_lib.from_torch(nn.Linear(4, 4)), TypeError, "expects torch.nn.MultiheadAttention"),
        (lambda: mha_lib.from_torch(nn.MultiheadAttention(8, 2, kdim=4)), ValueError, "kdim == vdim"),
        (lambda: mha_lib.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True)), ValueError, "add_bias_kv"),
        (lambda: mha_lib.to_torch(mha_lib.MultiHeadAttention(8, 2, head_dim=8)), ValueError, "narrow layer"),
        (lambda: mha_lib.to_torch(mha_lib.MultiHeadAttention(8, 2, num_kv_heads=1)), ValueError, "narrow layer"),
        (
            lambda: mha_lib.split_heads(mha_lib.MultiHeadAttention(8, 4, num_kv_heads=2)),
            ValueError,
            "one key/value head per query head",
        ),
        (lambda: mha_lib.split_heads(nn.MultiheadAttention(8, 2)), TypeError, "expects mha_lib.MultiHeadAttention"),
        (lambda: mha_lib.merge_heads(LAYER), TypeError, "expects mha_lib.PerHeadAttention"),
        (lambda: mha_lib.seed_everything("1"), TypeError, "seed must be an int"),
    ],
)
def test_bad_conversions(call, error, words):
    with pytest.raises(error, match=words):
        call()
