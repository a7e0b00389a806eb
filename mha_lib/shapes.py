"""Head geometry: how d_model, num_heads, head_dim and num_kv_heads fit together (Chapter 1)."""

from .checks import check_positive_int


def resolve_heads(d_model, num_heads, head_dim=None, num_kv_heads=None):
    """Validate a layer's sizes and fill in the defaults; returns ``(head_dim, num_kv_heads)``.

    ``head_dim=None`` means the standard split ``d_model // num_heads``;
    ``num_kv_heads=None`` means one key/value head per query head (no sharing).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if head_dim is None:
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}; "
                f"choose num_heads among the divisors of {d_model}, or pass head_dim explicitly"
            )
        head_dim = d_model // num_heads
    check_positive_int("head_dim", head_dim)
    if num_kv_heads is None:
        num_kv_heads = num_heads
    check_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}: "
            "each key/value head serves a whole group of query heads"
        )
    return head_dim, num_kv_heads
