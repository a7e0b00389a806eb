"""The best low-rank fit to an attention pattern."""

import pytest
import torch

from mha_lib.course.low_rank import fit_attention

pytestmark = pytest.mark.core


def test_low_rank_fit_needs_rank_close_to_n():

    target = torch.randn(
        12, 12, generator=torch.Generator().manual_seed(0)
    ).softmax(-1)
    kl = fit_attention(target, [1, 6, 12], steps=800)
    assert kl[0] > kl[1] > kl[2] and kl[2] < 1e-3 and kl[1] > 10 * kl[2]
    with pytest.raises(ValueError):
        fit_attention(torch.ones(3, 4) / 4, [1])
    with pytest.raises(ValueError):
        fit_attention(torch.eye(3), [1])  # zeros in the target
