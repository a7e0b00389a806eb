"""The low-rank bottleneck of one attention head (Chapter 5; Bhojanapalli et
al., 2020)."""

import torch

from ..checks import check_positive_int, check_tensor


def fit_attention(target, ranks, *, steps=1500, lr=0.05, seed=0):
    """Fit softmax(Q K^T) to a target attention matrix with logits of each rank
    in ``ranks``.

    ``target``: ``(n, n)`` with rows that sum to 1 (and no zeros). A head of
    size ``r`` can only make logits ``q_t . k_s`` of rank at most ``r``, so
    this is the best such a head can do. All ranks are fitted at once with Adam
    on the mean KL divergence per row, on ``target``'s device. Returns a CPU
    tensor of the final mean ``KL(target row || fitted row)`` for each rank.
    """
    check_tensor("target", target)
    if target.dim() != 2 or target.shape[0] != target.shape[1]:
        raise ValueError(
            "target must be a square (n, n) attention matrix, got "
            f"{tuple(target.shape)}"
        )
    if (
        not torch.allclose(
            target.sum(-1), torch.ones_like(target[:, 0]), atol=1e-4
        )
        or (target <= 0).any()
    ):
        raise ValueError("target rows must be positive and sum to 1")
    for rank in ranks:
        check_positive_int("every rank", rank)
    n, widest = target.shape[0], max(ranks)
    generator = torch.Generator().manual_seed(seed)
    # one (n, widest) pair of factors per rank; columns beyond the rank are
    # masked to zero
    device, dtype = target.device, target.dtype
    # drawn on the CPU, so a seed gives the same start on every device
    q = (
        (0.1 * torch.randn(len(ranks), n, widest, generator=generator))
        .to(device, dtype)
        .requires_grad_()
    )
    k = (
        (0.1 * torch.randn(len(ranks), n, widest, generator=generator))
        .to(device, dtype)
        .requires_grad_()
    )
    keep = (torch.arange(widest) < torch.tensor(ranks)[:, None]).to(
        device, dtype
    )[:, None, :]  # (ranks, 1, widest)
    optimizer = torch.optim.Adam([q, k], lr=lr)
    log_target = target.log()
    for _ in range(steps):
        # (ranks, n, n), each of rank <= r
        logits = (q * keep) @ (k * keep).transpose(1, 2)
        # (ranks,)
        kl = (target * (log_target - logits.log_softmax(-1))).sum(-1).mean(-1)
        optimizer.zero_grad()
        kl.sum().backward()
        optimizer.step()
    return kl.detach().cpu()
