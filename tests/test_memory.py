"""The activation-memory model against the tensors autograd really saves."""

import pytest
import torch
from support import DEVICES

import mha_lib
from mha_lib.course.memory import (
    activation_elements,
    kernel_padding_bytes,
    peak_training_bytes,
    saved_activation_bytes,
)
from mha_lib.spec import NAMED_KINDS

pytestmark = pytest.mark.core


def ampere_or_newer():
    """Float32's memory-efficient kernel needs head sizes divisible by 4 on
    GPUs of compute capability 8 and above (on older ones, 1)."""
    return torch.cuda.get_device_capability()[0] >= 8


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "d_model,num_heads,head_dim,value_dim",
    [
        (64, 1, None, None),
        (64, 8, None, None),
        (64, 4, 64, None),
        (48, 6, 5, None),
    ],
)
def test_activation_model_matches_saved_tensors(
    d_model, num_heads, head_dim, value_dim, device
):
    layer = mha_lib.MultiHeadAttention(
        d_model, num_heads, head_dim=head_dim, value_dim=value_dim
    )
    layer = layer.to(device)
    x = torch.randn(3, 20, d_model).to(device)
    if device == "cuda" and layer.spec.head_dim % 4 and ampere_or_newer():
        with pytest.raises(ValueError, match="divisible by 4"):
            saved_activation_bytes(layer, x)
        return
    sizes = dict(head_dim=head_dim, value_dim=value_dim)
    expected = 4 * activation_elements(
        d_model, num_heads, 20, batch=3, **sizes
    ) + kernel_padding_bytes(layer.spec, 20, 3, device)
    assert saved_activation_bytes(layer, x) == expected
    peak = peak_training_bytes(layer, x)
    if device == "cpu":
        assert peak is None, "PyTorch keeps no peak counter on the CPU"
    else:  # all it saves but the input (there before) is held at once
        assert peak >= expected - x.nbytes
        # cuBLAS's workspace (32 MiB on an H200) is not the layer's
        assert peak < 2**25


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", NAMED_KINDS)
@pytest.mark.parametrize("num_heads", [1, 4])
def test_every_kind_keeps_what_its_spec_says(kind, num_heads, device):
    spec = mha_lib.AttentionSpec.named(kind, 64, num_heads)
    layer = mha_lib.layer_for(spec).to(device)
    x = torch.randn(3, 20, 64).to(device)
    expected = 4 * spec.activation_elements(20, batch=3)
    padding = kernel_padding_bytes(spec, 20, 3, device)
    assert saved_activation_bytes(layer, x) == expected + padding


@pytest.mark.parametrize("num_kv_heads", [8, 2, 1])
def test_shared_key_value_heads_save_no_training_memory(num_kv_heads):
    """k and v are repeated to every query head before attention, so
    grouped-query layers keep as much for backward as the standard layer; what
    they save is parameters and the inference cache."""
    layer = mha_lib.MultiHeadAttention(64, 8, num_kv_heads=num_kv_heads)
    x = torch.randn(2, 16, 64)
    expected = 4 * activation_elements(
        64, 8, 16, batch=2, num_kv_heads=num_kv_heads
    )
    assert (
        saved_activation_bytes(layer, x)
        == expected
        == 4 * activation_elements(64, 8, 16, batch=2)
    )
    with pytest.raises(ValueError, match="must divide"):
        activation_elements(64, 8, 16, num_kv_heads=3)


def test_a_layer_without_a_fused_kernel_is_refused_not_mismeasured():
    """The CPU's flash kernel needs values as wide as queries; the math path
    would keep the n x n weights, which the formula leaves out, so the
    measurement fails instead."""
    layer = mha_lib.MultiHeadAttention(64, 8, head_dim=8, value_dim=2)
    with pytest.raises(ValueError, match="values as wide as queries"):
        saved_activation_bytes(layer, torch.randn(2, 16, 64))


def test_only_cuda_pads_the_kernels_memory():
    """CUDA's kernel pads each head's log-sum-exp to 32 queries and keeps 16
    bytes of random-number state (checked against the saved tensors by the
    tests above, on a GPU)."""
    spec = mha_lib.AttentionSpec(64, 4)
    assert kernel_padding_bytes(spec, 20, 3, "cpu") == 0
    assert kernel_padding_bytes(spec, 20, 3, "cuda") == 4 * 3 * 4 * 12 + 16
    assert kernel_padding_bytes(spec, 64, 3, torch.device("cuda:0")) == 16
