"""Head geometry: how d_model, num_heads, head_dim and num_kv_heads fit together (Chapter 1)."""


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")


def resolve_heads(d_model, num_heads, head_dim=None, num_kv_heads=None):
    """Validate a layer's sizes and fill in the defaults; returns ``(head_dim, num_kv_heads)``.

    ``head_dim=None`` means the standard "narrow" split ``d_model // num_heads``;
    ``num_kv_heads=None`` means one key/value head per query head (no sharing).
    """
    _check_positive_int("d_model", d_model)
    _check_positive_int("num_heads", num_heads)
    if head_dim is None:
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}; "
                f"choose num_heads among the divisors of {d_model}, or pass head_dim explicitly"
            )
        head_dim = d_model // num_heads
    _check_positive_int("head_dim", head_dim)
    if num_kv_heads is None:
        num_kv_heads = num_heads
    _check_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}: "
            "each key/value head serves a whole group of query heads"
        )
    return head_dim, num_kv_heads
