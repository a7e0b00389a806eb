"""Training and evaluating the small models of Chapters 4 and 5, the same way for every variant."""

import torch

from .model import AttentionModel
from .runtime import seed_everything
from .shapes import _check_positive_int


def _loss(model, task, x, target, head_mask=None):
    prediction, _ = model(x, head_mask=head_mask)
    return torch.nn.functional.mse_loss(prediction[:, task.first :], target)


def train(model, task, *, steps, seed, batch_size=64, lr=3e-3, record_every=10, before_step=None):
    """Train ``model`` on ``task`` with Adam; returns ``{"step": [...], "loss": [...]}``.

    The data stream depends on ``seed`` alone, so models compared in a chapter see the same
    batches in the same order. ``before_step(step)`` is called before each update (Chapter 4
    records the heads' weights with it). Losses are training-batch MSE, which for
    :class:`~mha_lib.tasks.OffsetCopy` is the error as a fraction of the target variance.
    """
    _check_positive_int("steps", steps)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = {"step": [], "loss": []}
    for step in range(steps):
        if before_step is not None:
            before_step(step)
        x, target = task.sample(batch_size, generator=generator, device=device)
        loss = _loss(model, task, x, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % record_every == 0 or step == steps - 1:
            history["step"].append(step)
            history["loss"].append(loss.item())
    return history


def train_from_seed(task, *, seed, steps, device=None, lr=3e-3, **sizes):
    """Seed everything, build an :class:`AttentionModel` of ``sizes`` for ``task`` on ``device``
    and :func:`train` it: ``(model, history)`` (Chapters 4 and 5)."""
    seed_everything(seed)
    model = AttentionModel.for_task(task, **sizes).to(device)
    return model, train(model, task, steps=steps, seed=seed, lr=lr)


@torch.no_grad()
def evaluate(model, task, *, seed=10_000, batch_size=1024, head_mask=None):
    """Mean squared error on a fresh batch, seeded apart from training (Chapters 4, 5)."""
    device = next(model.parameters()).device
    x, target = task.sample(batch_size, generator=torch.Generator().manual_seed(seed), device=device)
    return _loss(model, task, x, target, head_mask).item()


def head_importance(model, task, *, seed=20_000, batches=16, batch_size=32):
    """Michel et al. (2019) importance of every head: ``E |dL/d xi_h|`` at ``xi = 1`` (Chapter 4).

    ``xi`` is the head mask, so ``dL/d xi_h`` is ``Att_h(x)^T dL/dAtt_h(x)``, the first-order
    change of the loss when head h is removed. The expectation is over ``batches`` small batches.
    Returns a ``(num_layers, num_heads)`` tensor.
    """
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    shape = model.head_shape
    total = torch.zeros(shape, device=device)
    for _ in range(batches):
        x, target = task.sample(batch_size, generator=generator, device=device)
        head_mask = torch.ones(shape, device=device, requires_grad=True)
        (gradient,) = torch.autograd.grad(_loss(model, task, x, target, head_mask), head_mask)
        total += gradient.abs()
    return total / batches


def ablation_cost(model, task, *, seed=10_000, batch_size=1024):
    """Increase of the evaluation loss when each head alone is removed (Chapter 4): ``(num_layers, num_heads)``."""
    device = next(model.parameters()).device
    shape = model.head_shape
    base = evaluate(model, task, seed=seed, batch_size=batch_size)
    cost = torch.zeros(shape)
    for layer in range(shape[0]):
        for head in range(shape[1]):
            head_mask = torch.ones(shape, device=device)
            head_mask[layer, head] = 0.0
            cost[layer, head] = evaluate(model, task, seed=seed, batch_size=batch_size, head_mask=head_mask) - base
    return cost
