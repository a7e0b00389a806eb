"""Closed-form parameter and FLOP counts for every attention variant (Chapter 1)."""

from .shapes import resolve_heads


def count_parameters(module):
    """Trainable parameters of a real module, counted (Chapter 1 checks the formula against it)."""
    return sum(parameter.numel() for parameter in module.parameters() if parameter.requires_grad)


def parameter_count(d_model, num_heads, *, head_dim=None, num_kv_heads=None, bias=True):
    """Number of trainable parameters of ``MultiHeadAttention`` with these sizes.

    Query and output projections each hold ``d_model * num_heads * head_dim`` weights; key and
    value projections ``d_model * num_kv_heads * head_dim`` each. For the narrow layer
    (``head_dim = d_model / num_heads``, no sharing) this is ``4 d^2 + 4 d`` whatever ``num_heads``.
    """
    head_dim, num_kv_heads = resolve_heads(d_model, num_heads, head_dim, num_kv_heads)
    q_width, kv_width = num_heads * head_dim, num_kv_heads * head_dim
    weights = d_model * q_width + 2 * d_model * kv_width + q_width * d_model
    biases = q_width + 2 * kv_width + d_model
    return weights + (biases if bias else 0)


def attention_flops(d_model, num_heads, n_query, n_key=None, *, head_dim=None, num_kv_heads=None):
    """Multiply-add FLOPs (2 per multiply-add) of one forward pass for one sequence.

    Returns a dict with ``projections`` (the four Linear layers), ``scores`` (Q K^T),
    ``mixing`` (weights @ V) and ``total``. Softmax and bias additions are left out: they are
    O(n^2 h) and O(n d), small next to the matrix products.
    """
    head_dim, num_kv_heads = resolve_heads(d_model, num_heads, head_dim, num_kv_heads)
    n_key = n_query if n_key is None else n_key
    q_width, kv_width = num_heads * head_dim, num_kv_heads * head_dim
    projections = 2 * d_model * (n_query * q_width + 2 * n_key * kv_width + n_query * q_width)
    scores = 2 * num_heads * n_query * n_key * head_dim
    mixing = 2 * num_heads * n_query * n_key * head_dim
    return {
        "projections": projections,
        "scores": scores,
        "mixing": mixing,
        "total": projections + scores + mixing,
    }
