"""Softmax attention over heads: a custom logit scale on both paths."""

import pytest
import torch
from support import ATOL, DEVICES

import mha_lib
from mha_lib.attention import attend

pytestmark = pytest.mark.core


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", [None, 0.05, 1.0])
def test_a_custom_scale_gives_one_answer_on_the_fast_and_the_weights_path(
    scale, device
):
    """The fused kernel (no weights) and the written-out softmax use the same
    logit scale: the one given, else 1/sqrt(head_dim). Needs no optional
    package (Chapter 6 checks the same on the pretrained model)."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 5, 8).to(device)  # (batch, heads, n, size)
    fast, _ = attend(q, k, v, scale=scale)
    slow, weights = attend(q, k, v, scale=scale, need_weights=True)
    factor = 8**-0.5 if scale is None else scale
    expected = (q @ k.transpose(-2, -1) * factor).softmax(-1) @ v
    torch.testing.assert_close(slow, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(fast, expected, atol=ATOL, rtol=0)


def test_a_layer_with_a_custom_scale_computes_another_function():
    torch.manual_seed(0)
    layer = mha_lib.MultiHeadAttention(16, 4)
    cooler = mha_lib.MultiHeadAttention(16, 4, scale=0.1)
    cooler.load_state_dict(layer.state_dict())
    x = torch.randn(2, 6, 16)
    fast, _ = cooler(x)
    slow, weights = cooler(x, need_weights=True)
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=0)
    assert not torch.allclose(fast, layer(x)[0], atol=1e-3), (
        "the scale was ignored"
    )
    q = layer.q_proj(x).view(2, 6, 4, 4).transpose(1, 2)
    k = layer.k_proj(x).view(2, 6, 4, 4).transpose(1, 2)
    expected = (q @ k.transpose(-2, -1) * 0.1).softmax(-1)
    torch.testing.assert_close(weights, expected, atol=ATOL, rtol=0)
