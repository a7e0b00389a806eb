"""Measuring what layers compute: how outputs differ, where attention goes, how
alike heads are."""

import torch

from ..checks import check_tensor


def relative_difference(output, reference):
    """``||output - reference|| / ||reference||`` as a float (Frobenius norms
    over all entries)."""
    if not isinstance(output, torch.Tensor) or not isinstance(
        reference, torch.Tensor
    ):
        raise TypeError("relative_difference expects two torch.Tensors")
    if output.shape != reference.shape:
        raise ValueError(
            "relative_difference needs tensors of one shape, got "
            f"{tuple(output.shape)} and {tuple(reference.shape)}"
        )
    return ((output - reference).norm() / reference.norm()).item()


def moved_lengths(attention, hidden):
    """How much each head can move from each token: ``(batch, heads, n)``,
    the length of the vector head ``h`` of ``attention`` (a
    :class:`mha_lib.MultiHeadAttention`) adds to the layer's output per unit
    of attention on token ``j`` of ``hidden`` ``(batch, n, d_model)``,
    ``|(x_j W_V^h + b_V^h) W_O^h|`` (Kobayashi et al. 2020). A large weight
    on a token whose vector is short moves little."""
    if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3:
        raise ValueError(
            "hidden must be a tensor (batch, n, d_model), got "
            f"{getattr(hidden, 'shape', type(hidden).__name__)}"
        )
    heads = attention.spec.num_heads
    if attention.spec.num_kv_heads != heads:
        raise ValueError(
            "moved_lengths needs one value head per head, got "
            f"{attention.spec.num_kv_heads} for {heads}"
        )
    # (batch, n, heads * value_dim) -> (batch, n, heads, value_dim)
    values = attention.v_proj(hidden).unflatten(-1, (heads, -1))
    w_o = attention.head_weights().W_O  # (heads, value_dim, d_model)
    moved = torch.einsum("bnhv,hvd->bhnd", values, w_o)
    return moved.norm(dim=-1)


def js_distance(p, q):
    """Jensen-Shannon distance (base 2, in [0, 1]) between distributions along
    the last axis.

    ``p`` and ``q`` must be distributions: non-negative, each row summing to 1
    (within ``1e-3``, float32 softmax rounding); anything else would give a
    number outside [0, 1] that means nothing.
    """
    for name, rows in (("p", p), ("q", q)):
        check_distributions(name, rows)
    return _js_from_entropies(entropy((p + q) / 2), entropy(p), entropy(q))


def entropy(a):
    """Entropy in bits along the last axis; 0 * log(0) counts as 0."""
    return -torch.where(a > 0, a * a.clamp_min(1e-30).log2(), 0.0).sum(-1)


def _js_from_entropies(middle, entropy_p, entropy_q):
    """JS^2 = H((p + q) / 2) - (H(p) + H(q)) / 2: the two KL terms to the
    middle, summed out; its root, from the three entropies."""
    return (middle - (entropy_p + entropy_q) / 2).clamp_min(0).sqrt()


def check_distributions(name, rows, tolerance=1e-3):
    """Refuse ``rows`` unless they are probability distributions along the
    last axis."""
    if not isinstance(rows, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(rows).__name__}"
        )
    if (rows < 0).any():
        raise ValueError(
            f"{name} must hold probabilities, got a negative entry "
            f"({rows.min().item():.3g})"
        )
    sums = rows.sum(-1)
    worst = (sums - 1).abs().max().item() if sums.numel() else 0.0
    if not worst <= tolerance:  # NaN fails too
        raise ValueError(
            f"every row of {name} must sum to 1 (a distribution along the "
            f"last axis), got a row sum off by {worst:.3g}"
        )


def pairwise_head_distance(weights):
    """Mean Jensen-Shannon distance between every pair of heads' attention
    rows.

    ``weights``: ``(batch, heads, n_query, n_key)``, rows summing to 1 (heads
    of several layers may be concatenated along dim 1). Returns a ``(heads,
    heads)`` matrix, averaged over the batch and the queries.
    """
    if weights.dim() != 4:
        raise ValueError(
            "weights must be (batch, heads, n_query, n_key), got "
            f"{tuple(weights.shape)}"
        )
    check_distributions("weights", weights)
    heads = weights.shape[1]
    # each pair once (the distance is symmetric, 0 from a head to itself),
    # each head's own entropy once: (batch, heads, n_query)
    first, second = torch.triu_indices(
        heads, heads, offset=1, device=weights.device
    )
    own = entropy(weights)
    # (batch, pairs, n_query, n_key) -> (batch, pairs, n_query)
    middle = entropy((weights[:, first] + weights[:, second]) / 2)
    each = _js_from_entropies(middle, own[:, first], own[:, second])
    distance = weights.new_zeros(heads, heads)
    distance[first, second] = distance[second, first] = each.mean(dim=(0, 2))
    return distance


def offset_profile(weights, first=0):
    """Mean attention each head pays to the key ``k`` positions back: ``(heads,
    n_key)``.

    ``weights``: ``(batch, heads, n, n)`` of causal self-attention. Entry ``[i,
    k]`` averages head i's weight on key ``t - k`` over queries ``t >=
    max(first, k)`` and the batch.
    """
    check_tensor("weights", weights)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        hint = "; add a batch axis with .unsqueeze(0)" * (weights.dim() == 3)
        raise ValueError(
            "weights must have shape (batch, heads, n, n), got "
            f"{tuple(weights.shape)}{hint}"
        )
    batch, heads, n, _ = weights.shape
    profile = torch.zeros(heads, n, device=weights.device)
    for k in range(n):
        queries = torch.arange(max(first, k), n, device=weights.device)
        if len(queries):
            profile[:, k] = weights[:, :, queries, queries - k].mean(
                dim=(0, 2)
            )
    return profile
