"""Training many seeds at once matches training them one at a time."""

import pytest
import torch

from mha_lib.ensemble import _Adam, train_seeds
from mha_lib.heads import ablation_cost, head_importance
from mha_lib.tasks import OffsetCopy
from mha_lib.training import evaluate, train_from_seed

CHAPTER_4 = OffsetCopy(offsets=(1, 3), seq_len=16, d_in=8)
CHAPTER_5 = OffsetCopy(offsets=(1, 2, 4, 7), seq_len=16, d_in=4)

# Largest |evaluation loss difference| to the one-at-a-time run that we accept. Measured on the
# 2-core CPU: 0 (bitwise equal) for every case below, at these lengths and at the chapters' full
# lengths (5 seeds, 250-400 steps). The margin leaves room for other BLAS kernels, whose
# rounding may differ between a batched and a plain matmul.
TOLERANCE = 1e-4


@pytest.mark.parametrize(
    "task,sizes,lr",
    [
        (CHAPTER_4, dict(d_model=32, num_heads=2), 3e-3),
        (CHAPTER_5, dict(d_model=64, num_heads=8, num_layers=2), 3e-3),
        (CHAPTER_5, dict(d_model=32, num_heads=8), 1e-2),
        (CHAPTER_5, dict(d_model=32, num_heads=8, head_dim=32), 1e-2),
        (CHAPTER_5, dict(d_model=32, num_heads=8, chunked=True), 1e-2),
        (CHAPTER_5, dict(d_model=32, num_heads=16, head_dim=8, value_dim=2), 1e-2),
    ],
    ids=["chapter4", "chapter4-two-layers", "chapter5", "chapter5-wide", "chapter5-chunked", "chapter5-value-dim"],
)
def test_members_match_one_at_a_time_runs(task, sizes, lr):
    seeds, steps = [3, 0], 15
    together = train_seeds(task, seeds=seeds, steps=steps, lr=lr, **sizes)
    assert len(together) == len(seeds)
    for seed, (model, history) in zip(seeds, together):
        alone, alone_history = train_from_seed(task, seed=seed, steps=steps, lr=lr, **sizes)
        assert history["step"] == alone_history["step"]
        assert max(abs(a - b) for a, b in zip(history["loss"], alone_history["loss"])) < TOLERANCE
        assert abs(evaluate(model, task) - evaluate(alone, task)) < TOLERANCE, f"seed {seed}"


def test_one_learning_rate_per_member():
    rates = [1e-3, 1e-2]
    together = train_seeds(CHAPTER_5, seeds=[1, 1], steps=20, lr=rates, d_model=16, num_heads=4)
    losses = [evaluate(model, CHAPTER_5) for model, _ in together]
    for rate, loss in zip(rates, losses):
        alone, _ = train_from_seed(CHAPTER_5, seed=1, steps=20, lr=rate, d_model=16, num_heads=4)
        assert abs(loss - evaluate(alone, CHAPTER_5)) < TOLERANCE
    assert abs(losses[0] - losses[1]) > 1e-3, "same seed, different learning rates must differ"


def test_adam_matches_torch_per_member():
    torch.manual_seed(0)
    start = torch.randn(2, 5, 3)  # (members, *shape)
    ours = start.clone()
    adam = _Adam([ours], [1e-2, 3e-1])
    reference = [start[i].clone().requires_grad_() for i in range(2)]
    optimizers = [torch.optim.Adam([p], lr=lr) for p, lr in zip(reference, [1e-2, 3e-1])]
    for _ in range(5):
        grad = torch.randn(2, 5, 3)
        adam.step([grad])
        for p, optimizer, g in zip(reference, optimizers, grad):
            p.grad = g.clone()
            optimizer.step()
    assert torch.allclose(ours, torch.stack([p.detach() for p in reference]), rtol=0, atol=1e-6)


def test_members_are_ordinary_models():
    (model, history), _ = train_seeds(CHAPTER_4, seeds=[0, 1], steps=3, d_model=8, num_heads=2, num_layers=2)
    assert history["step"] == [0, 2] and len(history["loss"]) == 2
    assert all(p.requires_grad and p.grad is None for p in model.parameters())
    assert head_importance(model, CHAPTER_4, batches=1).shape == ablation_cost(model, CHAPTER_4, batch_size=8).shape
    _, weights = model(CHAPTER_4.sample(2)[0], need_weights=True, head_mask=torch.ones(2, 2))
    assert weights[1].shape == (2, 2, 16, 16)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        (dict(seeds=[]), ValueError, "at least one seed"),
        (dict(seeds=5), TypeError, "sequence of ints"),
        (dict(seeds=[0, 1.0]), TypeError, "every seed must be an int"),
        (dict(seeds=[True]), TypeError, "every seed must be an int"),
        (dict(lr=[1e-3, 1e-2, 1e-1]), ValueError, "one per seed"),
        (dict(lr="0.01"), TypeError, "lr must be a number"),
        (dict(lr=[1e-3, -1.0]), ValueError, "positive"),
        (dict(steps=0), ValueError, "steps"),
        (dict(steps=2.5), TypeError, "steps"),
    ],
)
def test_bad_input_is_rejected(kwargs, error, message):
    arguments = dict(seeds=[0, 1], steps=2, d_model=8, num_heads=2) | kwargs
    with pytest.raises(error, match=message):
        train_seeds(CHAPTER_4, **arguments)
