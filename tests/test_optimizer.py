"""Adam on stacked parameters matches PyTorch's Adam, member by member."""

import pytest
import torch

from mha_lib.course.optimizer import StackedAdam

pytestmark = pytest.mark.core


def test_adam_matches_torch_per_member_and_scales_with_the_factor():
    torch.manual_seed(0)
    start = torch.randn(2, 5, 3)  # (members, *shape)
    ours = start.clone()
    rates, factors = [1e-2, 3e-1], [1.0, 0.5, 0.25, 1.0, 2.0]
    adam = StackedAdam([ours], rates)
    reference = [start[i].clone().requires_grad_() for i in range(2)]
    optimizers = [
        torch.optim.Adam([p], lr=lr) for p, lr in zip(reference, rates)
    ]
    for factor in factors:
        grad = torch.randn(2, 5, 3)
        adam.step([grad], factor)
        for p, optimizer, g, rate in zip(reference, optimizers, grad, rates):
            optimizer.param_groups[0]["lr"] = rate * factor
            p.grad = g.clone()
            optimizer.step()
    expected = torch.stack([p.detach() for p in reference])
    assert torch.allclose(ours, expected, rtol=0, atol=1e-6)
