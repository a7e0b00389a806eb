"""Train one small model per seed, all seeds at once (Chapters 4 and 5).

Our models are so small that much of a training step is per-call overhead, so ``M`` models in
one computation cost far less than ``M`` models one after another. Every parameter is stacked into
one tensor with a leading ``members`` dimension; each linear layer becomes one batched matmul
with one weight matrix per member, and the members are folded into the batch for attention.
Members stay independent: each gets the initial weights, data stream and Adam state that
:func:`~mha_lib.training.train_from_seed` gives its seed, so results match one-at-a-time runs up
to floating-point rounding.
"""

import math
from numbers import Real

import torch
import torch.nn.functional as F

from .attention import attend, build_mask
from .checks import check_int, check_positive_int
from .layers import ChunkedAttention
from .model import AttentionModel
from .runtime import seed_everything


def train_seeds(task, *, seeds, steps, lr=3e-3, device=None, batch_size=64, record_every=10, **sizes):
    """Train one :class:`AttentionModel` of ``sizes`` per seed on ``task``, together.

    Returns a list of ``(model, history)``, one per seed, as ``train_from_seed(task, seed=seed,
    ...)`` would: ordinary models on ``device`` and histories in :func:`~mha_lib.training.train`'s
    format. ``lr`` is one learning rate or one per seed (a learning-rate grid is one call).
    """
    seeds = _check_seeds(seeds)
    rates = _check_lr(lr, len(seeds))
    for name, value in (("steps", steps), ("batch_size", batch_size), ("record_every", record_every)):
        check_positive_int(name, value)
    models = []
    for seed in seeds:
        seed_everything(seed)
        models.append(AttentionModel.for_task(task, **sizes).to(device))
    # {name: (members, *shape of that parameter)}, leaves that autograd differentiates
    params = {
        name: torch.stack([dict(model.named_parameters())[name].detach() for model in models]).requires_grad_()
        for name, _ in models[0].named_parameters()
    }
    device = params["position"].device
    adam = _Adam(list(params.values()), rates)
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    recorded_steps, recorded_losses = [], []
    for step in range(steps):
        batches = [task.sample(batch_size, generator=generator) for generator in generators]
        x = torch.stack([x for x, _ in batches]).to(device)  # (members, batch, seq, d_in)
        target = torch.stack([target for _, target in batches]).to(device)  # (members, batch, seq - first, d_out)
        prediction = _forward(models[0], params, x)  # (members, batch, seq, d_out)
        error = F.mse_loss(prediction[:, :, task.first :], target, reduction="none")
        losses = error.flatten(1).mean(dim=1)  # (members,): each member's own training loss
        adam.step(torch.autograd.grad(losses.sum(), list(params.values())))
        if step % record_every == 0 or step == steps - 1:
            recorded_steps.append(step)
            recorded_losses.append(losses.detach())
    per_member = torch.stack(recorded_losses, dim=1).tolist()  # (members, records)
    with torch.no_grad():
        for index, model in enumerate(models):
            for name, parameter in model.named_parameters():
                parameter.copy_(params[name][index])
    return [(model, {"step": list(recorded_steps), "loss": history}) for model, history in zip(models, per_member)]


def _check_seeds(seeds):
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of ints, got {type(seeds).__name__}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed, got none")
    for seed in seeds:
        check_int("every seed", seed)
    return seeds


def _check_lr(lr, members):
    """One positive learning rate per member, from one number or a sequence of ``members``."""
    rates = [lr] * members if isinstance(lr, Real) else lr
    if isinstance(rates, (str, bytes)) or not hasattr(rates, "__len__"):
        raise TypeError(f"lr must be a number or a sequence of numbers, got {type(lr).__name__}")
    if len(rates) != members:
        raise ValueError(f"lr must be one number or one per seed ({members}), got {len(rates)} values")
    for rate in rates:
        if isinstance(rate, bool) or not isinstance(rate, Real):
            raise TypeError(f"every learning rate must be a number, got {type(rate).__name__} ({rate!r})")
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"every learning rate must be positive and finite, got {rate}")
    return [float(rate) for rate in rates]


def _linear(params, name, x):
    """``x @ W^T + b`` for every member: ``x`` (members, rows, in) -> (members, rows, out)."""
    return torch.baddbmm(params[f"{name}.bias"].unsqueeze(1), x, params[f"{name}.weight"].transpose(1, 2))


def _heads(layer, params, name, hidden, batch):
    """One of a layer's q/k/v projections for every member, split into heads.

    ``hidden`` (members, batch * seq, d_model) -> (members * batch, heads, seq, head_dim).
    """
    members, rows, _ = hidden.shape
    seq, heads, head_dim = rows // batch, layer.num_heads, layer.head_dim
    if isinstance(layer, ChunkedAttention):  # head i maps only chunk i, with its own (chunk x chunk) block
        chunks = hidden.view(members, batch, seq, heads, head_dim)  # (members, batch, seq, heads, chunk)
        out = torch.einsum("mbshi,mhoi->mbhso", chunks, params[f"{name}.weight"])  # (members, batch, heads, seq, chunk)
        return (out + params[f"{name}.bias"][:, None, :, None, :]).flatten(0, 1)
    projected = _linear(params, name, hidden)  # (members, batch * seq, heads * size); values may have their own size
    return projected.view(members * batch, seq, heads, -1).transpose(1, 2)


def _forward(template, params, x):
    """:meth:`AttentionModel.forward` of every member: ``x`` (members, batch, seq, d_in)."""
    members, batch, seq, _ = x.shape
    embedded = _linear(params, "embed", x.flatten(1, 2)).view(members, batch, seq, -1)
    hidden = (embedded + params["position"][:, None, :seq]).flatten(1, 2)  # (members, batch * seq, d_model)
    logit_mask, dead_rows = build_mask(
        None, None, True, batch=1, num_heads=1, n_query=seq, n_key=seq, dtype=x.dtype, device=x.device
    )  # the causal mask, (1, 1, seq, seq)
    for index, layer in enumerate(template.layers):
        name = f"layers.{index}"
        q, k, v = (_heads(layer, params, f"{name}.{proj}", hidden, batch) for proj in ("q_proj", "k_proj", "v_proj"))
        out, _ = attend(q, k, v, logit_mask, dead_rows)  # (members * batch, heads, seq, head_dim)
        concat = out.transpose(1, 2).reshape(members, batch * seq, -1)  # (members, batch * seq, heads * head_dim)
        hidden = hidden + _linear(params, f"{name}.out_proj", concat)
    return _linear(params, "readout", hidden).view(members, batch, seq, -1)


class _Adam:
    """``torch.optim.Adam`` with its defaults, on stacked parameters with one lr per member.

    The same operations in the same order as PyTorch's implementation, so a member's update
    rounds as the one-model optimizer's does.
    """

    def __init__(self, params, rates, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.rates, self.betas, self.eps, self.steps = params, rates, betas, eps, 0
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, grads):
        beta1, beta2 = self.betas
        self.steps += 1
        correction1 = 1 - beta1**self.steps
        correction2_sqrt = (1 - beta2**self.steps) ** 0.5
        device = self.params[0].device
        step_size = torch.tensor([-rate / correction1 for rate in self.rates], device=device)  # (members,)
        for param, grad, exp_avg, exp_avg_sq in zip(self.params, grads, self.exp_avg, self.exp_avg_sq):
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / correction2_sqrt).add_(self.eps)
            size = step_size.view(-1, *[1] * (param.dim() - 1))  # (members, 1, ...)
            param.add_(size * exp_avg / denom)
