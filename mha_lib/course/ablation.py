"""Removing heads and scoring what they were worth (Chapters 4, 6 and 7).

A head is removed with a ``head_mask`` (1 keeps a head, 0 removes its output).
The removal loops take a ``score(head_mask)`` function, so the same code serves
the small trained models, the language model and the pretrained encoder.
"""

import torch

from ..checks import check_positive_int
from .training import evaluate, task_loss


def _check_head_shape(head_shape):
    if not isinstance(head_shape, tuple) or not head_shape:
        raise TypeError(
            "head_shape must be a tuple such as (num_layers, num_heads), got "
            f"{head_shape!r}"
        )
    for size in head_shape:
        check_positive_int("every entry of head_shape", size)


def each_head_removed(head_shape, *, device=None):
    """Every head removed alone: yields ``(flat index, head_mask)``, the mask
    of shape ``head_shape`` with a 0 at that head."""
    _check_head_shape(head_shape)
    for index in range(torch.Size(head_shape).numel()):
        head_mask = torch.ones(head_shape, device=device)
        head_mask.view(-1)[index] = 0.0
        yield index, head_mask


def heads_removed_in_order(head_shape, order, *, device=None):
    """Heads removed one after another in ``order`` (flat indices): yields the
    mask with the first 1, 2, ... heads of ``order`` removed (a fresh tensor
    each time)."""
    _check_head_shape(head_shape)
    head_mask = torch.ones(head_shape, device=device)
    total = head_mask.numel()
    for index in order:
        index = int(index)
        if not 0 <= index < total:
            raise ValueError(
                f"order holds flat head indices in [0, {total}), got {index}"
            )
        head_mask.view(-1)[index] = 0.0
        yield head_mask.clone()


def single_removals(score, head_shape, *, device=None):
    """``score(head_mask)`` with each head removed alone: a tensor of shape
    ``head_shape``.

    ``score`` takes a float mask of shape ``head_shape`` on ``device`` and
    returns a number.
    """
    scores = torch.zeros(head_shape)
    for index, head_mask in each_head_removed(head_shape, device=device):
        scores.view(-1)[index] = float(score(head_mask))
    return scores


def removal_curve(score, head_shape, order, *, device=None):
    """Remove heads one after another in ``order`` (flat indices), scoring
    after each.

    Returns a list: entry k is ``score(head_mask)`` with the first k + 1 heads
    of ``order`` removed.
    """
    masks = heads_removed_in_order(head_shape, order, device=device)
    return [float(score(head_mask)) for head_mask in masks]


def ablation_cost(model, task, *, seed=10_000, batch_size=1024):
    """Rise of the evaluation loss when each head alone is removed: ``(layers,
    heads)``."""
    device = next(model.parameters()).device
    base = evaluate(model, task, seed=seed, batch_size=batch_size)

    def loss(head_mask):
        return evaluate(
            model, task, seed=seed, batch_size=batch_size, head_mask=head_mask
        )

    return single_removals(loss, model.head_shape, device=device) - base


def head_importance(
    model, task, *, seed=20_000, batches=16, batch_size=32, per_example=False
):
    """Michel et al. (2019) importance of every head, ``E |dL/d xi_h|`` at ``xi
    = 1``.

    ``xi`` is the head mask, so ``dL/d xi_h`` is ``Att_h(x)^T dL/dAtt_h(x)``,
    the first-order change of the loss when head h is removed. By default the
    absolute value is taken of each batch's mean gradient (as Michel et al.'s
    code does) and averaged over ``batches`` batches; ``per_example=True``
    takes it per sequence, as their formula reads. Returns ``(layers, heads)``.
    """
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    shape = model.head_shape
    total = torch.zeros(shape, device=device)
    for _ in range(batches):
        x, target = task.sample(batch_size, generator=generator, device=device)
        if per_example:
            groups = [
                (x[i : i + 1], target[i : i + 1]) for i in range(batch_size)
            ]
        else:
            groups = [(x, target)]
        for inputs, targets in groups:
            head_mask = torch.ones(shape, device=device, requires_grad=True)
            loss = task_loss(model, task, inputs, targets, head_mask)
            (gradient,) = torch.autograd.grad(loss, head_mask)
            total += gradient.abs()
    return total / (batches * (batch_size if per_example else 1))
