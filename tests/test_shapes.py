"""Layer sizes: bad combinations raise errors that name both numbers."""

import pytest

import mha_lib


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
