"""Per-head surgery and measurement: each head's parameters, copying heads, removing heads.

A head is removed with a ``head_mask`` (1 keeps a head, 0 removes its output). The removal
loops take a ``score(head_mask)`` function, so the same code serves the small trained models
and the pretrained encoder (Chapters 4 and 6).
"""

import torch

from .checks import check_instance, check_positive_int
from .layers import ChunkedAttention, MultiHeadAttention
from .training import evaluate, task_loss


def _head_blocks(layer):
    """Views of every parameter of a layer with heads first, each ``(num_heads, ...)``.

    Standard and wide layers: q/k/v weights ``(heads, head_dim, d_model)`` and biases
    ``(heads, head_dim)``; chunked layers: ``(heads, head_dim, head_dim)``. W_O's column block
    of head i is ``(d_model, head_dim)``. The shared output bias is not a head's.
    """
    check_instance(layer, (MultiHeadAttention, ChunkedAttention), "per-head parameters")
    if layer.num_kv_heads != layer.num_heads:
        raise ValueError("per-head parameters need num_kv_heads == num_heads (no shared key/value heads)")
    if getattr(layer, "value_dim", layer.head_dim) != layer.head_dim:
        raise ValueError("per-head parameters need value_dim == head_dim")
    heads, head_dim = layer.num_heads, layer.head_dim
    blocks = []
    for proj in (layer.q_proj, layer.k_proj, layer.v_proj):
        blocks.append(proj.weight.view(heads, head_dim, -1))  # rows of head i
        if proj.bias is not None:
            blocks.append(proj.bias.view(heads, head_dim))
    # (d_model, heads * head_dim) -> (heads, d_model, head_dim): the columns of head i
    blocks.append(layer.out_proj.weight.view(layer.d_model, heads, head_dim).permute(1, 0, 2))
    return blocks


def head_parameters(layer):
    """All of each head's own parameters as one row: ``(num_heads, parameters per head)``.

    The output bias is shared by all heads and not included. Returns a detached copy.
    """
    return torch.cat([block.detach().reshape(layer.num_heads, -1) for block in _head_blocks(layer)], dim=1)


def head_spread(layer):
    """How different a layer's heads are: RMS distance of each head's parameters from the heads'
    mean, relative to the RMS size of a head's parameters. 0 means identical heads.
    """
    params = head_parameters(layer)  # (heads, parameters per head)
    return ((params - params.mean(0)).pow(2).sum(1).mean().sqrt() / params.pow(2).sum(1).mean().sqrt()).item()


def copy_head(layer, source=0, targets=None):
    """Give heads ``targets`` (default: every head) the weights of head ``source``, in place.

    Returns ``layer``. Identical heads receive identical gradients, so they stay identical.
    """
    blocks = _head_blocks(layer)
    targets = range(layer.num_heads) if targets is None else targets
    for index in (source, *targets):
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < layer.num_heads:
            raise ValueError(f"source and targets must be head indices in [0, {layer.num_heads}), got {index!r}")
    with torch.no_grad():
        for block in blocks:
            for target in targets:
                block[target] = block[source]
    return layer


def _check_head_shape(head_shape):
    if not isinstance(head_shape, tuple) or not head_shape:
        raise TypeError(f"head_shape must be a tuple such as (num_layers, num_heads), got {head_shape!r}")
    for size in head_shape:
        check_positive_int("every entry of head_shape", size)


def single_removals(score, head_shape, *, device=None):
    """``score(head_mask)`` with each head removed alone: a tensor of shape ``head_shape``.

    ``score`` takes a float mask of shape ``head_shape`` on ``device`` and returns a number.
    """
    _check_head_shape(head_shape)
    scores = torch.zeros(head_shape)
    for index in range(scores.numel()):
        head_mask = torch.ones(head_shape, device=device)
        head_mask.view(-1)[index] = 0.0
        scores.view(-1)[index] = float(score(head_mask))
    return scores


def removal_curve(score, head_shape, order, *, device=None):
    """Remove heads one after another in ``order`` (flat indices), scoring after each removal.

    Returns a list: entry k is ``score(head_mask)`` with the first k + 1 heads of ``order`` removed.
    """
    _check_head_shape(head_shape)
    head_mask = torch.ones(head_shape, device=device)
    total = head_mask.numel()
    scores = []
    for index in order:
        index = int(index)
        if not 0 <= index < total:
            raise ValueError(f"order holds flat head indices in [0, {total}), got {index}")
        head_mask.view(-1)[index] = 0.0
        scores.append(float(score(head_mask.clone())))
    return scores


def ablation_cost(model, task, *, seed=10_000, batch_size=1024):
    """Increase of the evaluation loss when each head alone is removed: ``(num_layers, num_heads)``."""
    device = next(model.parameters()).device
    base = evaluate(model, task, seed=seed, batch_size=batch_size)

    def loss(head_mask):
        return evaluate(model, task, seed=seed, batch_size=batch_size, head_mask=head_mask)

    return single_removals(loss, model.head_shape, device=device) - base


def head_importance(model, task, *, seed=20_000, batches=16, batch_size=32, per_example=False):
    """Michel et al. (2019) importance of every head, ``E |dL/d xi_h|`` at ``xi = 1``: ``(layers, heads)``.

    ``xi`` is the head mask, so ``dL/d xi_h`` is ``Att_h(x)^T dL/dAtt_h(x)``, the first-order
    change of the loss when head h is removed. By default the absolute value is taken of each
    batch's mean gradient (as Michel et al.'s code does) and averaged over ``batches`` batches;
    ``per_example=True`` takes it per sequence, as their formula reads.
    """
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    shape = model.head_shape
    total = torch.zeros(shape, device=device)
    for _ in range(batches):
        x, target = task.sample(batch_size, generator=generator, device=device)
        groups = [(x[i : i + 1], target[i : i + 1]) for i in range(batch_size)] if per_example else [(x, target)]
        for inputs, targets in groups:
            head_mask = torch.ones(shape, device=device, requires_grad=True)
            (gradient,) = torch.autograd.grad(task_loss(model, task, inputs, targets, head_mask), head_mask)
            total += gradient.abs()
    return total / (batches * (batch_size if per_example else 1))
