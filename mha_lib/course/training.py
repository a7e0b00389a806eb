"""Training and evaluating the small models, one at a time or many seeds
together.

Our models are so small that much of a training step is per-call overhead, so
``M`` models in one computation cost far less than ``M`` models one after
another. :func:`train_together` stacks their parameters along a leading members
axis and runs them through the model's own forward
(:mod:`mha_lib.course.stacking`), with one Adam per member. Each member gets
the initial weights, data stream and optimiser that one-at-a-time training
gives its seed (Adam, in :mod:`mha_lib.course.optimizer`), so results match up
to floating-point rounding.
"""

import math
from numbers import Real

import torch
import torch.nn.functional as F

from ..checks import check_int, check_positive_int
from ..runtime import seed_everything
from .model import AttentionModel
from .optimizer import StackedAdam
from .stacking import stacked, unstack


def task_loss(model, task, x, target, head_mask=None):
    """Mean squared error of ``model`` on the positions of ``x`` that have a
    target."""
    prediction, _ = model(x, head_mask=head_mask)
    return F.mse_loss(prediction[:, task.first :], target)


def train(
    model,
    task,
    *,
    steps,
    seed,
    batch_size=64,
    lr=3e-3,
    record_every=10,
    before_step=None,
):
    """Train ``model`` on ``task`` with Adam; returns ``{"step": [...], "loss":
    [...]}``.

    The data stream depends on ``seed`` alone, so models compared in a chapter
    see the same batches in the same order. ``before_step(step)`` is called
    before each update (to record the heads' weights, say). Losses are
    training-batch MSE, which for :class:`~mha_lib.course.tasks.OffsetCopy` is
    the error as a fraction of the target variance.
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


def train_from_seed(
    task, *, seed, steps, device=None, lr=3e-3, batch_size=64, **sizes
):
    """Seed everything, build an :class:`AttentionModel` of ``sizes`` for
    ``task`` on ``device`` and :func:`train` it: ``(model, history)``."""
    seed_everything(seed)
    model = AttentionModel.for_task(task, **sizes).to(device)
    return model, train(
        model, task, steps=steps, seed=seed, lr=lr, batch_size=batch_size
    )


@torch.no_grad()
def evaluate(model, task, *, seed=10_000, batch_size=1024, head_mask=None):
    """Mean squared error on a fresh batch, seeded apart from training."""
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    x, target = task.sample(batch_size, generator=generator, device=device)
    return task_loss(model, task, x, target, head_mask).item()


def train_together(
    models, losses, *, steps, lr, record_every=10, evaluate=None, schedule=None
):
    """Train models of one architecture together; returns one history per
    model.

    ``losses(forward, step)`` returns every member's training loss for this
    step, ``(members,)``, where ``forward`` is the models' own module with
    every parameter stacked (:func:`mha_lib.course.stacking.stacked`): it runs
    the members folded into the batch, rows ``m * B`` to ``(m + 1) * B - 1`` of
    each input belonging to member ``m``. ``lr`` is one learning rate or one
    per member. ``evaluate``, if given, is called the same way (without
    gradients) at every recorded step and returns one number per member, kept
    under ``"eval"``. ``schedule(step)``, if given, multiplies every learning
    rate at that step. The trained weights are copied back into ``models``.
    Histories have :func:`train`'s format.
    """
    rates = check_learning_rates(lr, len(models))
    check_positive_int("steps", steps)
    check_positive_int("record_every", record_every)
    # parameters (members, *shape): the models' own forward
    forward = stacked(models)
    params = list(forward.parameters())
    adam = StackedAdam(params, rates)
    records = {"step": [], "loss": [], "eval": []}
    for step in range(steps):
        loss = losses(forward, step)  # (members,)
        factor = 1.0 if schedule is None else schedule(step)
        adam.step(torch.autograd.grad(loss.sum(), params), factor)
        if step % record_every == 0 or step == steps - 1:
            records["step"].append(step)
            records["loss"].append(loss.detach())
            if evaluate is not None:
                with torch.no_grad():
                    records["eval"].append(torch.as_tensor(evaluate(forward)))
    unstack(forward, models)
    histories = [{"step": list(records["step"])} for _ in models]
    for key in ("loss", "eval"):
        if records[key]:
            per_member = torch.stack(
                records[key], dim=1
            ).tolist()  # (members, records)
            for history, values in zip(histories, per_member):
                history[key] = values
    return histories


def train_seeds(
    task,
    *,
    seeds,
    steps,
    lr=3e-3,
    device=None,
    batch_size=64,
    record_every=10,
    curve_batch=None,
    init=None,
    evaluate=None,
    **sizes,
):
    """Train one :class:`AttentionModel` of ``sizes`` per seed on ``task``,
    together.

    Returns ``[(model, history), ...]``, one per seed, as
    ``train_from_seed(task, seed=seed, ...)`` would: ordinary models on
    ``device``. ``lr`` is one learning rate or one per seed, so a learning-rate
    grid is one call. With ``curve_batch``, each model's loss on that many
    fixed sequences (seeded apart from training and from :func:`evaluate`) is
    recorded at every recorded step too, under ``"eval"``: a learning curve.
    ``evaluate(forward)`` records anything else that way (see
    :func:`train_together`). ``init(model, seed)``, if given, changes each
    model before training (to copy heads, say), right after it is built.
    """
    if curve_batch is not None and evaluate is not None:
        raise ValueError("give curve_batch or evaluate, not both")
    seeds = check_seeds(seeds)
    check_positive_int("batch_size", batch_size)
    models = []
    for seed in seeds:
        seed_everything(seed)
        model = AttentionModel.for_task(task, **sizes)
        if init is not None:
            init(model, seed)
        models.append(model.to(device))
    device = next(models[0].parameters()).device
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]

    def losses(forward, step):
        batches = [task.sample(batch_size, generator=g) for g in generators]
        # (members * batch, seq, d_in)
        x = torch.cat([x for x, _ in batches]).to(device)
        # (members, batch, ...)
        target = torch.stack([t for _, t in batches]).to(device)
        prediction, _ = forward(x)  # (members * batch, seq, d_out)
        prediction = prediction.view(
            len(seeds), batch_size, *prediction.shape[1:]
        )
        error = F.mse_loss(
            prediction[:, :, task.first :], target, reduction="none"
        )
        return error.flatten(1).mean(1)  # (members,): each member's own loss

    curve = evaluate
    if curve_batch is not None:
        generator = torch.Generator().manual_seed(10_001)
        probe_x, probe_target = task.sample(curve_batch, generator=generator)
        probe_x = probe_x.repeat(len(seeds), 1, 1).to(device)
        probe_target = probe_target.to(device)

        def curve(forward):
            prediction, _ = forward(probe_x)  # (members * probe, seq, d_out)
            prediction = prediction.view(
                len(seeds), curve_batch, *prediction.shape[1:]
            )
            error = (prediction[:, :, task.first :] - probe_target).pow(2)
            return error.flatten(1).mean(1).cpu()

    histories = train_together(
        models,
        losses,
        steps=steps,
        lr=lr,
        record_every=record_every,
        evaluate=curve,
    )
    return list(zip(models, histories))


def check_seeds(seeds):
    """A list of ints, at least one."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(
            f"seeds must be a sequence of ints, got {type(seeds).__name__}"
        )
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed, got none")
    for seed in seeds:
        check_int("every seed", seed)
    return seeds


def check_learning_rates(lr, members):
    """One positive learning rate per member, from one number or a sequence of
    ``members``."""
    rates = [lr] * members if isinstance(lr, Real) else lr
    if isinstance(rates, (str, bytes)) or not hasattr(rates, "__len__"):
        raise TypeError(
            "lr must be a number or a sequence of numbers, got "
            f"{type(lr).__name__}"
        )
    if len(rates) != members:
        raise ValueError(
            f"lr must be one number or one per seed ({members}), got "
            f"{len(rates)} values"
        )
    for rate in rates:
        if isinstance(rate, bool) or not isinstance(rate, Real):
            raise TypeError(
                "every learning rate must be a number, got "
                f"{type(rate).__name__} ({rate!r})"
            )
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(
                f"every learning rate must be positive and finite, got {rate}"
            )
    return [float(rate) for rate in rates]
