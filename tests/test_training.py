"""Training one model, and many seeds together through the model's own
forward."""

import pytest
import torch
from support import DEVICES

import mha_lib
from mha_lib.course.ablation import ablation_cost, head_importance
from mha_lib.course.model import AttentionModel
from mha_lib.course.tasks import AssociativeRecall, OffsetCopy
from mha_lib.course.training import (
    evaluate,
    train,
    train_from_seed,
    train_seeds,
)

CHAPTER_4 = OffsetCopy(offsets=(1, 3), seq_len=16, d_in=8)
CHAPTER_5 = OffsetCopy(offsets=(1, 2, 4, 7), seq_len=16, d_in=4)
RECALL = AssociativeRecall()

# Largest |loss difference| to the one-at-a-time run that we accept. Measured
# on the 2-core CPU: 0 (bitwise equal) for every case below, and at the
# chapters' full lengths (150-600 steps). The margin leaves room for other BLAS
# and GPU kernels, whose rounding may differ between a batched and a plain
# matrix product.
TOLERANCE = 1e-4


def test_training_lowers_the_loss_and_is_repeatable():
    task = OffsetCopy(offsets=(1,), seq_len=8, d_in=4)
    losses = []
    for _ in range(2):
        mha_lib.seed_everything(0)
        model = AttentionModel.for_task(task, d_model=16, num_heads=2)
        before = evaluate(model, task, batch_size=256)
        history = train(model, task, steps=150, seed=0)
        losses.append(evaluate(model, task, batch_size=256))
    assert history["step"][-1] == 149 and len(history["loss"]) == len(
        history["step"]
    )
    assert losses[0] < 0.3 * before, "one offset is easy for one head"
    assert losses[0] == losses[1], "same seed, same result"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "task,sizes,lr",
    [
        (CHAPTER_4, dict(d_model=32, num_heads=2), 3e-3),
        (CHAPTER_5, dict(d_model=64, num_heads=8, num_layers=2), 3e-3),
        (CHAPTER_5, dict(d_model=32, num_heads=8), 1e-2),
        (CHAPTER_5, dict(d_model=32, num_heads=8, head_dim=32), 1e-2),
        (CHAPTER_5, dict(d_model=32, num_heads=8, chunked=True), 1e-2),
        (
            RECALL,
            dict(d_model=32, num_heads=16, head_dim=8, value_dim=2),
            1e-2,
        ),
    ],
    ids=["ch4", "two-layers", "ch5", "wide", "chunked", "value-dim"],
)
def test_members_match_one_at_a_time_runs(task, sizes, lr, device):
    seeds, steps = [3, 0], 15
    together = train_seeds(
        task, seeds=seeds, steps=steps, lr=lr, device=device, **sizes
    )
    assert len(together) == len(seeds)
    for seed, (model, history) in zip(seeds, together):
        alone, alone_history = train_from_seed(
            task, seed=seed, steps=steps, lr=lr, device=device, **sizes
        )
        assert history["step"] == alone_history["step"]
        gaps = [
            abs(a - b) for a, b in zip(history["loss"], alone_history["loss"])
        ]
        assert max(gaps) < TOLERANCE
        gap = abs(evaluate(model, task) - evaluate(alone, task))
        assert gap < TOLERANCE, f"seed {seed}"


def test_one_learning_rate_per_member():
    rates = [1e-3, 1e-2]
    sizes = dict(d_model=16, num_heads=4)
    together = train_seeds(
        CHAPTER_5, seeds=[1, 1], steps=20, lr=rates, **sizes
    )
    losses = [evaluate(model, CHAPTER_5) for model, _ in together]
    for rate, loss in zip(rates, losses):
        alone, _ = train_from_seed(
            CHAPTER_5, seed=1, steps=20, lr=rate, **sizes
        )
        assert abs(loss - evaluate(alone, CHAPTER_5)) < TOLERANCE
    assert abs(losses[0] - losses[1]) > 1e-3, (
        "same seed, different rates must differ"
    )


def test_members_are_ordinary_models():
    sizes = dict(d_model=8, num_heads=2, num_layers=2)
    (model, history), _ = train_seeds(
        CHAPTER_4, seeds=[0, 1], steps=3, **sizes
    )
    assert history["step"] == [0, 2] and len(history["loss"]) == 2
    assert all(p.requires_grad and p.grad is None for p in model.parameters())
    assert all(p.dim() <= 2 for p in model.parameters()), (
        "parameters are unstacked"
    )
    importance = head_importance(model, CHAPTER_4, batches=1)
    assert (
        importance.shape == ablation_cost(model, CHAPTER_4, batch_size=8).shape
    )
    x = CHAPTER_4.sample(2)[0]
    _, weights = model(x, need_weights=True, head_mask=torch.ones(2, 2))
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


def test_init_and_evaluate_hooks_see_every_member():
    from mha_lib.heads import copy_head, head_spread

    def identical_heads(model, seed):
        copy_head(model.layers[0])

    def spreads(forward):  # the stacked model: one spread per member
        return head_spread(forward.layers[0])

    runs = train_seeds(
        CHAPTER_4,
        seeds=[0, 1],
        steps=6,
        record_every=2,
        init=identical_heads,
        evaluate=spreads,
        d_model=8,
        num_heads=2,
    )
    for model, history in runs:
        assert history["eval"] == [0.0] * 4, "identical heads stay identical"
        assert head_spread(model.layers[0]) == 0.0
    with pytest.raises(ValueError, match="not both"):
        train_seeds(
            CHAPTER_4, seeds=[0], steps=1, curve_batch=4, evaluate=spreads
        )
