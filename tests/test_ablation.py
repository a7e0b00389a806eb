"""Removing heads and scoring them."""

import math

import pytest
import torch

import mha_lib
from mha_lib.course.ablation import (
    ablation_cost,
    each_head_removed,
    head_importance,
    heads_removed_in_order,
    removal_curve,
    single_removals,
)
from mha_lib.course.model import AttentionModel
from mha_lib.course.tasks import OffsetCopy
from mha_lib.course.training import evaluate, task_loss

pytestmark = pytest.mark.core

TASK = OffsetCopy(offsets=(1, 2), seq_len=8, d_in=2)


def test_ablation_cost_is_the_loss_rise_of_each_removal():
    mha_lib.seed_everything(0)
    model = AttentionModel.for_task(TASK, d_model=8, num_heads=2, num_layers=2)
    cost = ablation_cost(model, TASK, batch_size=64)
    assert cost.shape == (2, 2)
    base = evaluate(model, TASK, batch_size=64)
    head_mask = torch.ones(2, 2)
    head_mask[1, 0] = 0
    without = evaluate(model, TASK, batch_size=64, head_mask=head_mask)
    assert math.isclose(cost[1, 0].item(), without - base, abs_tol=1e-6)


@pytest.mark.parametrize("per_example", [False, True])
def test_importance_is_the_size_of_the_head_mask_gradient(per_example):
    """Against a finite difference of the loss in each head's mask value, on
    the same data."""
    mha_lib.seed_everything(0)
    model = AttentionModel.for_task(TASK, d_model=8, num_heads=2, num_layers=2)
    importance = head_importance(
        model, TASK, batches=1, batch_size=4, per_example=per_example
    )
    x, target = TASK.sample(4, generator=torch.Generator().manual_seed(20_000))
    groups = (
        [(x[i : i + 1], target[i : i + 1]) for i in range(4)]
        if per_example
        else [(x, target)]
    )
    expected = torch.zeros(2, 2)
    for index in range(4):
        for inputs, targets in groups:
            losses = []
            for step in (1e-3, -1e-3):
                head_mask = torch.ones(2, 2, dtype=torch.float64)
                head_mask.view(-1)[index] += step
                with torch.no_grad():
                    model.double()
                    losses.append(
                        task_loss(
                            model,
                            TASK,
                            inputs.double(),
                            targets.double(),
                            head_mask,
                        )
                    )
                    model.float()
            expected.view(-1)[index] += abs(losses[0] - losses[1]) / 2e-3
    expected /= len(groups)
    assert torch.allclose(importance, expected, rtol=1e-3, atol=1e-6)
    if not per_example:  # |mean of gradients| <= mean of |gradients|
        per_item = head_importance(
            model, TASK, batches=1, batch_size=4, per_example=True
        )
        assert torch.all(per_item >= importance - 1e-7)


def test_removal_helpers_mask_the_right_heads():
    removed = []

    def score(head_mask):
        removed.append(head_mask.clone())
        return (1 - head_mask).sum().item() * 10 + head_mask[0, 1].item()

    singles = single_removals(score, (2, 3))
    assert (
        singles.shape == (2, 3) and singles[0, 1] == 10 and singles[1, 2] == 11
    )
    assert all(mask.sum() == 5 for mask in removed)
    curve = removal_curve(score, (2, 3), order=[4, 1, 0])
    assert curve == [11, 20, 30], "each step removes one more head, in order"
    with pytest.raises(ValueError, match="flat head indices"):
        removal_curve(score, (2, 3), order=[6])
    with pytest.raises(TypeError, match="head_shape"):
        single_removals(score, [2, 3])


def test_removal_masks_can_be_kept_and_scored_any_way():
    alone = list(each_head_removed((2, 2)))
    assert [index for index, _ in alone] == [0, 1, 2, 3]
    assert all(mask.view(-1)[i] == 0 and mask.sum() == 3 for i, mask in alone)
    steps = list(heads_removed_in_order((2, 2), [3, 0]))
    assert steps[0].tolist() == [[1, 1], [1, 0]], "the first mask is kept"
    assert steps[1].tolist() == [[0, 1], [1, 0]]
