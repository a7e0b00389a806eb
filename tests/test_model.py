"""The small attention-only model: shapes, causality, head masks."""

import pytest
import torch

from mha_lib.course.model import AttentionModel
from mha_lib.course.tasks import OffsetCopy

pytestmark = pytest.mark.core


def test_model_shapes_weights_and_head_mask():
    task = OffsetCopy(offsets=(1, 2), seq_len=8, d_in=3)
    model = AttentionModel.for_task(
        task, d_model=16, num_heads=4, num_layers=2
    )
    x, _ = task.sample(2)
    prediction, weights = model(x, need_weights=True)
    assert (
        prediction.shape == (2, 8, 6)
        and len(weights) == 2
        and weights[0].shape == (2, 4, 8, 8)
    )
    assert torch.all(weights[0].triu(1) == 0), "attention must be causal"
    kept, _ = model(x, head_mask=torch.ones(2, 4))
    assert torch.allclose(kept, prediction, atol=1e-6)
    removed, _ = model(x, head_mask=torch.zeros(2, 4))
    assert not torch.allclose(removed, prediction)
    with pytest.raises(ValueError, match="head_mask"):
        model(x, head_mask=torch.ones(4))
    with pytest.raises(ValueError, match="shape"):
        model(x[..., :2])


def test_model_passes_value_dim_and_refuses_it_for_chunked_layers():
    task = OffsetCopy(offsets=(1, 2), seq_len=8, d_in=3)
    model = AttentionModel.for_task(
        task, d_model=16, num_heads=4, head_dim=16, value_dim=2
    )
    assert (model.layers[0].spec.head_dim, model.layers[0].spec.value_dim) == (
        16,
        2,
    )
    assert model(task.sample(2)[0])[0].shape == (2, 8, 6)
    with pytest.raises(ValueError, match="chunked"):
        AttentionModel.for_task(
            task, d_model=16, num_heads=4, value_dim=2, chunked=True
        )
