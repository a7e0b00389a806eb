"""Adam on stacked parameters: one optimiser for many models trained
together, each member with its own learning rate
(:func:`mha_lib.course.training.train_together`)."""

import torch


class StackedAdam:
    """``torch.optim.Adam`` with its defaults, on stacked parameters, one lr
    per member.

    The same operations in the same order as PyTorch's implementation, so a
    member's update rounds as the one-model optimiser's does.
    """

    def __init__(self, params, rates, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.rates, self.betas, self.eps = (
            params,
            rates,
            betas,
            eps,
        )
        self.steps = 0
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, grads, factor=1.0):
        """One update with ``grads`` (one per parameter), every rate times
        ``factor``."""
        beta1, beta2 = self.betas
        self.steps += 1
        correction1 = 1 - beta1**self.steps
        correction2_sqrt = (1 - beta2**self.steps) ** 0.5
        device = self.params[0].device
        sizes = [-rate * factor / correction1 for rate in self.rates]
        step_size = torch.tensor(sizes, device=device)  # (members,)
        moments = zip(self.params, grads, self.exp_avg, self.exp_avg_sq)
        for param, grad, exp_avg, exp_avg_sq in moments:
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / correction2_sqrt).add_(self.eps)
            # (members, 1, ...)
            size = step_size.view(-1, *[1] * (param.dim() - 1))
            param.add_(size * exp_avg / denom)
