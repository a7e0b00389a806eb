"""Per-head parameters, copying heads, and removing them."""

import math

import pytest
import torch

import mha_lib
import mha_lib.heads
from mha_lib.heads import ablation_cost, copy_head, head_importance, head_parameters, head_spread
from mha_lib.model import AttentionModel
from mha_lib.tasks import OffsetCopy
from mha_lib.training import evaluate


def test_importance_and_ablation_have_one_entry_per_head():
    task = OffsetCopy(offsets=(1, 2), seq_len=8, d_in=2)
    model = AttentionModel.for_task(task, d_model=8, num_heads=2, num_layers=2)
    importance = head_importance(model, task, batches=2)
    cost = ablation_cost(model, task, batch_size=64)
    assert importance.shape == cost.shape == (2, 2) and torch.all(importance >= 0)
    base = evaluate(model, task, batch_size=64)
    head_mask = torch.ones(2, 2)
    head_mask[1, 0] = 0
    without = evaluate(model, task, batch_size=64, head_mask=head_mask)
    assert math.isclose(cost[1, 0].item(), without - base, abs_tol=1e-6)


@pytest.mark.parametrize("head_dim", [None, 16])
def test_copy_head_makes_heads_identical_and_they_stay_so(head_dim):
    mha_lib.seed_everything(0)
    layer = mha_lib.MultiHeadAttention(16, 4, head_dim=head_dim)
    assert head_spread(layer) > 0.3
    params = head_parameters(layer)
    assert params.shape == (4, 3 * layer.head_dim * 16 + 3 * layer.head_dim + 16 * layer.head_dim)
    copy_head(layer, source=2)
    assert torch.equal(head_parameters(layer)[0], params[2]) and head_spread(layer) == 0
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(3):
        output, _ = layer(torch.randn(2, 5, 16))
        output.pow(2).mean().backward()
        optimizer.step()
    assert head_spread(layer) < 1e-6


def test_copy_head_rejects_shared_kv_heads_and_bad_index():
    with pytest.raises(ValueError, match="num_kv_heads"):
        copy_head(mha_lib.MultiHeadAttention(16, 4, num_kv_heads=2))
    with pytest.raises(ValueError, match="source"):
        copy_head(mha_lib.MultiHeadAttention(16, 4), source=4)
    with pytest.raises(TypeError):
        head_parameters(torch.nn.MultiheadAttention(16, 4))


def test_removal_helpers_mask_the_right_heads():
    removed = []

    def score(head_mask):
        removed.append(head_mask.clone())
        return (1 - head_mask).sum().item() * 10 + head_mask[0, 1].item()

    singles = mha_lib.heads.single_removals(score, (2, 3))
    assert singles.shape == (2, 3) and singles[0, 1] == 10 and singles[1, 2] == 11
    assert all(mask.sum() == 5 for mask in removed)
    curve = mha_lib.heads.removal_curve(score, (2, 3), order=[4, 1, 0])
    assert curve == [11, 20, 30], "each step removes one more head, in order"
    with pytest.raises(ValueError, match="flat head indices"):
        mha_lib.heads.removal_curve(score, (2, 3), order=[6])
    with pytest.raises(TypeError, match="head_shape"):
        mha_lib.heads.single_removals(score, [2, 3])


def test_importance_per_example_is_at_least_the_batch_version():
    task = OffsetCopy(offsets=(1, 2), seq_len=8, d_in=2)
    mha_lib.seed_everything(0)
    model = AttentionModel.for_task(task, d_model=8, num_heads=2)
    per_batch = head_importance(model, task, batches=2, batch_size=8)
    per_example = head_importance(model, task, batches=2, batch_size=8, per_example=True)
    # |mean of gradients| <= mean of |gradients| (the triangle inequality)
    assert torch.all(per_example >= per_batch - 1e-7) and per_example.shape == (1, 2)


def test_copy_head_works_on_chunked_layers():
    mha_lib.seed_everything(0)
    layer = mha_lib.ChunkedAttention(16, 4)
    assert head_parameters(layer).shape == (4, 3 * 4 * 4 + 3 * 4 + 16 * 4)
    copy_head(layer, source=1)
    assert head_spread(layer) == 0
