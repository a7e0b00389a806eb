"""The synthetic tasks: targets, seeding, bad sizes."""

import pytest
import torch

from mha_lib.course.tasks import AssociativeRecall, OffsetCopy

pytestmark = pytest.mark.core


def test_offset_copy_targets_are_the_earlier_inputs():
    task = OffsetCopy(offsets=(1, 3), seq_len=10, d_in=4)
    x, target = task.sample(5, generator=torch.Generator().manual_seed(0))
    assert (
        x.shape == (5, 10, 4)
        and target.shape == (5, 10 - 3, 8)
        and task.d_out == 8
    )
    for row, t in enumerate(range(task.first, 10)):
        assert torch.equal(target[:, row, :4], x[:, t - 1])
        assert torch.equal(target[:, row, 4:], x[:, t - 3])


@pytest.mark.parametrize("make_task", [OffsetCopy, AssociativeRecall])
def test_tasks_are_seeded_and_device_independent(make_task):
    task = make_task()
    a = task.sample(3, generator=torch.Generator().manual_seed(1))
    b = task.sample(
        3, generator=torch.Generator().manual_seed(1), device="cpu"
    )
    assert all(torch.equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(offsets=(1, 16)), ValueError),
        (dict(offsets=(0,)), ValueError),
        (dict(offsets=[1, 2]), TypeError),
        (dict(offsets=()), TypeError),
        (dict(seq_len=0), ValueError),
        (dict(d_in=2.0), TypeError),
    ],
)
def test_offset_copy_rejects_bad_sizes(kwargs, error):
    with pytest.raises(error):
        OffsetCopy(**kwargs)


def test_associative_recall_answers_each_query_with_its_stored_value():
    task = AssociativeRecall(d_key=6, d_value=3, num_pairs=5, num_queries=4)
    x, target = task.sample(7, generator=torch.Generator().manual_seed(0))
    assert (task.seq_len, task.first, task.d_in, task.d_out) == (9, 5, 9, 3)
    assert x.shape == (7, 9, 9) and target.shape == (7, 4, 3)
    keys, values = x[:, :5, :6], x[:, :5, 6:]
    assert torch.allclose(keys.norm(dim=-1), torch.full((7, 5), 6**0.5)), (
        "keys have length sqrt(d_key)"
    )
    assert torch.all(x[:, 5:, 6:] == 0), "queries carry no value"
    for b in range(7):
        asked = []
        for q in range(4):
            query = x[b, 5 + q, :6]
            match = (keys[b] == query).all(-1).nonzero().flatten()
            assert len(match) == 1, "every query is one of the stored keys"
            assert torch.equal(target[b, q], values[b, match[0]])
            asked.append(match.item())
        assert len(set(asked)) == 4, "each stored key is asked at most once"


def test_associative_recall_targets_have_unit_variance():
    _, target = AssociativeRecall().sample(
        2048, generator=torch.Generator().manual_seed(1)
    )
    assert abs(target.var().item() - 1) < 0.05, (
        "MSE should read as a fraction of the target variance"
    )


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(num_queries=9, num_pairs=8), ValueError, "num_queries"),
        (dict(d_key=0), ValueError, "d_key"),
        (dict(d_value=2.0), TypeError, "d_value"),
        (dict(num_pairs=True), TypeError, "num_pairs"),
    ],
)
def test_associative_recall_rejects_bad_sizes(kwargs, error, match):
    with pytest.raises(error, match=match):
        AssociativeRecall(**kwargs)


def test_associative_recall_rejects_a_bad_batch():
    with pytest.raises(ValueError, match="batch"):
        AssociativeRecall().sample(0)
