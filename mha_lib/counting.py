"""Closed-form parameter and FLOP counts for every attention variant, and a counter for real
modules to check them against (Chapter 1)."""

from .checks import check_positive_int
from .shapes import resolve_heads


def count_trainable(module):
    """Count the trainable parameters of a real module (the formulas below are checked against it)."""
    return sum(parameter.numel() for parameter in module.parameters() if parameter.requires_grad)


def _resolve(d_model, num_heads, head_dim, num_kv_heads, chunked, value_dim=None):
    """``(head_dim, num_kv_heads, q/k/v input width per head, value_dim)``; chunked heads read d/h features."""
    if chunked and (head_dim is not None or num_kv_heads is not None or value_dim is not None):
        raise ValueError(
            "the chunked layer fixes head_dim = value_dim = d_model / num_heads and has no shared key/value heads"
        )
    head_dim, num_kv_heads = resolve_heads(d_model, num_heads, head_dim, num_kv_heads)
    value_dim = head_dim if value_dim is None else check_positive_int("value_dim", value_dim)
    return head_dim, num_kv_heads, head_dim if chunked else d_model, value_dim


def parameter_count(d_model, num_heads, *, head_dim=None, value_dim=None, num_kv_heads=None, bias=True, chunked=False):
    """Number of trainable parameters of an attention layer with these sizes, from the formula.

    Query and output projections each hold ``d_model * num_heads * head_dim`` weights; key and
    value projections ``d_model * num_kv_heads * head_dim`` each. For the standard layer
    (``head_dim = d_model / num_heads``, no sharing) this is ``4 d^2 + 4 d`` whatever ``num_heads``.
    ``chunked=True`` counts :class:`~mha_lib.layers.ChunkedAttention`, whose q/k/v maps read only
    ``d/h`` features each: ``3 d^2 / h + d^2 + 4 d``. ``value_dim`` (default ``head_dim``) sizes
    the value and output projections apart from the query and key projections.
    """
    head_dim, num_kv_heads, reads, value_dim = _resolve(d_model, num_heads, head_dim, num_kv_heads, chunked, value_dim)
    q_width, k_width = num_heads * head_dim, num_kv_heads * head_dim
    v_width, concat_width = num_kv_heads * value_dim, num_heads * value_dim
    weights = reads * (q_width + k_width + v_width) + concat_width * d_model
    biases = q_width + k_width + v_width + d_model
    return weights + (biases if bias else 0)


def attention_flops(
    d_model, num_heads, n_query, n_key=None, *, head_dim=None, value_dim=None, num_kv_heads=None, chunked=False
):
    """Multiply-add FLOPs (2 per multiply-add) of one forward pass for one sequence.

    Returns a dict with ``projections`` (the four projections), ``scores`` (Q K^T),
    ``mixing`` (weights @ V) and ``total``. Softmax and bias additions are left out: they are
    O(n^2 h) and O(n d), small next to the matrix products.
    """
    head_dim, num_kv_heads, reads, value_dim = _resolve(d_model, num_heads, head_dim, num_kv_heads, chunked, value_dim)
    n_key = n_query if n_key is None else check_positive_int("n_key", n_key)
    check_positive_int("n_query", n_query)
    q_width, k_width = num_heads * head_dim, num_kv_heads * head_dim
    v_width, concat_width = num_kv_heads * value_dim, num_heads * value_dim
    projections = 2 * reads * (n_query * q_width + n_key * (k_width + v_width)) + 2 * n_query * concat_width * d_model
    scores = 2 * num_heads * n_query * n_key * head_dim
    mixing = 2 * num_heads * n_query * n_key * value_dim
    return {
        "projections": projections,
        "scores": scores,
        "mixing": mixing,
        "total": projections + scores + mixing,
    }


def activation_elements(d_model, num_heads, seq_len, *, batch=1, head_dim=None, num_kv_heads=None):
    """Elements a self-attention layer keeps for the backward pass on the fused path.

    With ``need_weights=False`` the layer calls ``scaled_dot_product_attention``, which does not
    store the ``n x n`` weights. What autograd keeps is the input ``x`` (``n * d``), the
    projected ``q``, ``k``, ``v`` (``3 * n * h * head_dim``), the concatenated head outputs
    (``n * h * head_dim``) and one log-sum-exp per query and head (``h * n``), per sequence.
    ``num_kv_heads`` changes nothing: shared key/value heads are repeated to every query head
    before attention, so in training they save parameters, not activations (their saving is
    the key/value cache at inference). Multiply by the element size for bytes;
    :func:`mha_lib.memory.saved_activation_bytes` measures it.
    """
    head_dim, _ = resolve_heads(d_model, num_heads, head_dim, num_kv_heads)
    check_positive_int("seq_len", seq_len)
    check_positive_int("batch", batch)
    per_sequence = seq_len * d_model + 4 * seq_len * num_heads * head_dim + num_heads * seq_len
    return batch * per_sequence
