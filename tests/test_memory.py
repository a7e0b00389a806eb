"""The activation-memory model against the tensors autograd really saves."""

import pytest
import torch

import mha_lib
from mha_lib.counting import activation_elements
from mha_lib.memory import peak_training_bytes, saved_activation_bytes


@pytest.mark.parametrize("d_model,num_heads,head_dim", [(64, 1, None), (64, 8, None), (64, 4, 64), (48, 6, 5)])
def test_activation_model_matches_saved_tensors(d_model, num_heads, head_dim):

    layer = mha_lib.MultiHeadAttention(d_model, num_heads, head_dim=head_dim)
    x = torch.randn(3, 20, d_model)
    expected = 4 * activation_elements(d_model, num_heads, 20, batch=3, head_dim=head_dim)
    assert saved_activation_bytes(layer, x) == expected
    assert peak_training_bytes(layer, x) is None  # CPU: no peak counter


@pytest.mark.parametrize("num_kv_heads", [8, 2, 1])
def test_shared_key_value_heads_save_no_training_memory(num_kv_heads):
    """k and v are repeated to every query head before attention, so grouped-query layers keep as
    much for backward as the standard layer; what they save is parameters and the inference cache."""
    layer = mha_lib.MultiHeadAttention(64, 8, num_kv_heads=num_kv_heads)
    x = torch.randn(2, 16, 64)
    expected = 4 * activation_elements(64, 8, 16, batch=2, num_kv_heads=num_kv_heads)
    assert saved_activation_bytes(layer, x) == expected == 4 * activation_elements(64, 8, 16, batch=2)
    with pytest.raises(ValueError, match="must divide"):
        activation_elements(64, 8, 16, num_kv_heads=3)
