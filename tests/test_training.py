"""Tasks, the small model, training and head analysis (Chapters 4 and 5)."""

import math

import pytest
import torch

import mha_lib
from mha_lib.analysis import head_spread, js_distance, offset_profile, pairwise_head_distance, rank_correlation
from mha_lib.conversions import copy_head, head_parameters
from mha_lib.model import AttentionModel
from mha_lib.tasks import OffsetCopy
from mha_lib.training import ablation_cost, evaluate, head_importance, train


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


def test_model_shapes_weights_and_head_mask():
    task = OffsetCopy(offsets=(1, 2), seq_len=8, d_in=3)
    model = AttentionModel.for_task(task, d_model=16, num_heads=4, num_layers=2)
    x, _ = task.sample(2)
    prediction, weights = model(x, need_weights=True)
    assert prediction.shape == (2, 8, 6) and len(weights) == 2 and weights[0].shape == (2, 4, 8, 8)
    assert torch.all(weights[0].triu(1) == 0), "attention must be causal"
    kept, _ = model(x, head_mask=torch.ones(2, 4))
    assert torch.allclose(kept, prediction, atol=1e-6)
    removed, _ = model(x, head_mask=torch.zeros(2, 4))
    assert not torch.allclose(removed, prediction)
    with pytest.raises(ValueError, match="head_mask"):
        model(x, head_mask=torch.ones(4))
    with pytest.raises(ValueError, match="shape"):
        model(x[..., :2])


def test_training_lowers_the_loss_and_is_repeatable():
    task = OffsetCopy(offsets=(1,), seq_len=8, d_in=4)
    losses = []
    for _ in range(2):
        mha_lib.seed_everything(0)
        model = AttentionModel.for_task(task, d_model=16, num_heads=2)
        before = evaluate(model, task, batch_size=256)
        history = train(model, task, steps=150, seed=0)
        losses.append(evaluate(model, task, batch_size=256))
    assert history["step"][-1] == 149 and len(history["loss"]) == len(history["step"])
    assert losses[0] < 0.3 * before, "one offset is easy for one head"
    assert losses[0] == losses[1], "same seed, same result"


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


def test_js_distance_known_values():
    p = torch.tensor([1.0, 0.0])
    assert js_distance(p, p).item() == 0
    assert math.isclose(js_distance(p, torch.tensor([0.0, 1.0])).item(), 1.0, rel_tol=1e-6)
    half = torch.tensor([0.5, 0.5])
    # m = (0.75, 0.25); JS = (KL(p, m) + KL(half, m)) / 2, by hand
    expected = math.sqrt(0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5 * math.log2(2)))
    assert math.isclose(js_distance(p, half).item(), expected, rel_tol=1e-5)


def test_pairwise_head_distance_is_symmetric_with_zero_diagonal():
    weights = torch.rand(3, 4, 5, 6).softmax(-1)
    distance = pairwise_head_distance(weights)
    assert distance.shape == (4, 4)
    assert torch.allclose(distance, distance.T) and torch.all(distance.diagonal() < 1e-6)
    with pytest.raises(ValueError):
        pairwise_head_distance(weights[0])


def test_rank_correlation():
    assert math.isclose(rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
    assert math.isclose(rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
    assert math.isclose(rank_correlation([1, 2, 3], [1, 100, 2]), 0.5)
    with pytest.raises(ValueError):
        rank_correlation([1, 2], [1, 2, 3])


def test_offset_profile_finds_a_fixed_offset():
    n = 6
    weights = torch.zeros(1, 2, n, n)
    for t in range(n):
        weights[0, 0, t, max(t - 1, 0)] = 1  # previous token
        weights[0, 1, t, t] = 1  # itself
    profile = offset_profile(weights, first=1)
    assert torch.equal(profile[0], torch.tensor([0.0, 1, 0, 0, 0, 0]))
    assert profile[1, 0] == 1


def test_figures_draw():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from mha_lib.plotting import attention_grid, learning_curves

    history = {"step": [0, 1, 2], "loss": [1.0, 0.5, 0.25]}
    ax = learning_curves({"a": [history, history]})
    assert len(ax.lines) == 1
    figure = attention_grid(torch.rand(2, 3, 4, 4), row_labels=["x", "y"], column_labels=list("abc"))
    assert len(figure.axes) == 6


def test_attention_statistics_and_classification():
    from mha_lib.analysis import HEAD_CLASSES, attention_statistics, classify_heads

    n = 6
    previous = torch.zeros(n, n)
    previous[0, 0] = 1
    previous[torch.arange(1, n), torch.arange(n - 1)] = 1
    to_cls = torch.zeros(n, n)
    to_cls[:, 0] = 1
    uniform = torch.full((n, n), 1 / n)
    maps = torch.stack([previous, to_cls, uniform]).view(1, 3, n, n)  # (layers, heads, n, n)
    stats = attention_statistics(maps)
    assert stats["previous"][0, 0] == 1 and stats["cls"][0, 1] == 1
    assert math.isclose(stats["entropy"][0, 2].item(), 1.0, rel_tol=1e-5)
    labels = classify_heads(stats)
    assert labels == [["previous token", "[CLS]", "broad"]]
    assert set(HEAD_CLASSES) >= {label for row in labels for label in row}
    with pytest.raises(ValueError):
        attention_statistics(torch.rand(2, 3))
