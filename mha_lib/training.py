"""Training and evaluating the small models of Chapters 4 and 5, the same way for every variant."""

import torch

from .checks import check_positive_int
from .model import AttentionModel
from .runtime import seed_everything


def task_loss(model, task, x, target, head_mask=None):
    """Mean squared error of ``model`` on the positions of ``x`` that have a target."""
    prediction, _ = model(x, head_mask=head_mask)
    return torch.nn.functional.mse_loss(prediction[:, task.first :], target)


def train(model, task, *, steps, seed, batch_size=64, lr=3e-3, record_every=10, before_step=None):
    """Train ``model`` on ``task`` with Adam; returns ``{"step": [...], "loss": [...]}``.

    The data stream depends on ``seed`` alone, so models compared in a chapter see the same
    batches in the same order. ``before_step(step)`` is called before each update (to record the
    heads' weights, say). Losses are training-batch MSE, which for
    :class:`~mha_lib.tasks.OffsetCopy` is the error as a fraction of the target variance.
    """
    check_positive_int("steps", steps)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = {"step": [], "loss": []}
    for step in range(steps):
        if before_step is not None:
            before_step(step)
        x, target = task.sample(batch_size, generator=generator, device=device)
        loss = task_loss(model, task, x, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % record_every == 0 or step == steps - 1:
            history["step"].append(step)
            history["loss"].append(loss.item())
    return history


def train_from_seed(task, *, seed, steps, device=None, lr=3e-3, **sizes):
    """Seed everything, build an :class:`AttentionModel` of ``sizes`` for ``task`` on ``device``
    and :func:`train` it: ``(model, history)``."""
    seed_everything(seed)
    model = AttentionModel.for_task(task, **sizes).to(device)
    return model, train(model, task, steps=steps, seed=seed, lr=lr)


@torch.no_grad()
def evaluate(model, task, *, seed=10_000, batch_size=1024, head_mask=None):
    """Mean squared error on a fresh batch, seeded apart from training."""
    device = next(model.parameters()).device
    x, target = task.sample(batch_size, generator=torch.Generator().manual_seed(seed), device=device)
    return task_loss(model, task, x, target, head_mask).item()
