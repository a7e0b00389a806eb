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


def activation_elements(d_model, num_heads, seq_len, *, batch=1, head_dim=None):
    """Elements a self-attention layer keeps for the backward pass on the fused path (Chapter 5).

    With ``need_weights=False`` the layer calls ``scaled_dot_product_attention``, which does not
    store the ``n x n`` weights. What autograd keeps is the input ``x`` (``n * d``), the
    projected ``q``, ``k``, ``v`` (``3 * n * h * head_dim``), the concatenated head outputs
    (``n * h * head_dim``) and one log-sum-exp per query and head (``h * n``), per sequence.
    Multiply by the element size for bytes; :func:`mha_lib.memory.saved_activation_bytes`
    measures it.
    """
    head_dim, _ = resolve_heads(d_model, num_heads, head_dim, None)
    per_sequence = seq_len * d_model + 4 * seq_len * num_heads * head_dim + num_heads * seq_len
    return batch * per_sequence
