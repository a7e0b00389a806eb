"""The synthetic tasks: targets, seeding, bad sizes."""

import pytest
import torch

from mha_lib.tasks import OffsetCopy


def test_offset_copy_targets_are_the_earlier_inputs():
    task = OffsetCopy(offsets=(1, 3), seq_len=10, d_in=4)
    x, target = task.sample(5, generator=torch.Generator().manual_seed(0))
    assert x.shape == (5, 10, 4) and target.shape == (5, 10 - 3, 8) and task.d_out == 8
    for row, t in enumerate(range(task.first, 10)):
        assert torch.equal(target[:, row, :4], x[:, t - 1])
        assert torch.equal(target[:, row, 4:], x[:, t - 3])


def test_offset_copy_is_seeded_and_device_independent():
    task = OffsetCopy()
    a = task.sample(3, generator=torch.Generator().manual_seed(1))
    b = task.sample(3, generator=torch.Generator().manual_seed(1), device="cpu")
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
