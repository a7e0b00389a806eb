"""One description of an attention layer, and everything that follows from it.

An :class:`AttentionSpec` names a layer by its sizes: ``d_model``, the number
of heads, the query/key size of a head, its value size, the number of key/value
heads, and whether each head reads only its own chunk of the input. Its
parameter count, its FLOPs and the activations it keeps for the backward pass
all come from it, and every layer of :mod:`mha_lib.layers` is made from one
(``MultiHeadAttention(spec)``, or :func:`mha_lib.layers.layer_for`). The kinds
the book names are one table, :data:`NAMED_KINDS`: a new kind made of these
sizes is a new row there, and the counting functions, the small models and the
figures pick it up. (A layer that needs a new forward pass also needs its
module in :mod:`mha_lib.layers`; every layer there declares the fields it
implements and refuses a spec that sets any other, so a new field is never
dropped without a word.)
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields, replace
from typing import NamedTuple

from .attention import default_scale
from .checks import (
    check_bool,
    check_positive_int,
    check_positive_number,
    check_probability,
)

# The kinds the book names: kind -> the sizes it sets, from (d_model,
# num_heads). A kind is a shape of the heads: key/value sharing, biases, the
# logit scale and dropout may be added to any kind (OPTIONS); every other
# field is part of a kind's shape.
NAMED_KINDS = {
    "chunked": lambda d_model, num_heads: dict(chunked=True),
    "standard": lambda d_model, num_heads: {},
    "wide": lambda d_model, num_heads: dict(head_dim=d_model),
}
OPTIONS = ("num_kv_heads", "bias", "scale", "dropout")
# how a label words a field; any other reads "gated", "no bias", "scale 0.5"
LABEL_WORDS = {"value_dim": "values {}", "num_kv_heads": "{} K/V heads"}
SIZES = ("d_model", "num_heads", "head_dim", "value_dim", "num_kv_heads")


def resolve_heads(d_model, num_heads, head_dim=None, num_kv_heads=None):
    """Check a layer's sizes and fill in the defaults: ``(head_dim,
    num_kv_heads)``, by default ``d_model // num_heads`` (the standard split)
    and one key/value head per query head."""
    d_model = check_positive_int("d_model", d_model)
    num_heads = check_positive_int("num_heads", num_heads)
    if head_dim is None and d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}; "
            f"choose num_heads among the divisors of {d_model}, or pass "
            "head_dim explicitly"
        )
    head_dim = d_model // num_heads if head_dim is None else head_dim
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}: "
            "each key/value head serves a whole group of query heads"
        )
    return check_positive_int("head_dim", head_dim), num_kv_heads


class ProjectionWidths(NamedTuple):
    """Output widths of a layer's query, key, value projections, and of the
    concatenated heads."""

    query: int
    key: int
    value: int
    concat: int


@dataclass(frozen=True)
class AttentionSpec:
    """The sizes of one attention layer; unset sizes are filled in on creation.

    - ``head_dim``: query/key size of a head, default ``d_model // num_heads``
      (the standard layer); ``head_dim=d_model`` is the wide layer.
    - ``value_dim``: value size of a head, default ``head_dim``.
    - ``num_kv_heads``: key/value heads, each shared by ``num_heads /
      num_kv_heads`` query heads (grouped-query attention; 1 is multi-query),
      default ``num_heads``.
    - ``chunked``: head i reads only features ``i*d/h .. (i+1)*d/h`` of its
      input, with its own ``(d/h x d/h)`` maps (Bloem's "narrow" layer); its
      sizes are then fixed.
    - ``scale``: the factor of the attention logits, default ``1 /
      sqrt(head_dim)``.
    - ``dropout``: the probability of dropping an attention weight in
      training (BERT uses 0.1); the sizes and costs do not change.
    """

    d_model: int
    num_heads: int
    head_dim: int | None = None
    value_dim: int | None = None
    num_kv_heads: int | None = None
    chunked: bool = False
    bias: bool = True
    scale: float | None = None
    dropout: float = 0.0

    def __post_init__(self):
        for field in fields(self):  # annotated "bool": True or False only
            if field.type == "bool":
                check_bool(field.name, getattr(self, field.name))
        head_dim, num_kv_heads = resolve_heads(
            self.d_model, self.num_heads, self.head_dim, self.num_kv_heads
        )
        if self.chunked:
            self.check_chunked_sizes()
        value_dim = head_dim if self.value_dim is None else self.value_dim
        check_probability("dropout", self.dropout)
        if self.scale is not None:
            check_positive_number("scale", self.scale)
        sizes = self.d_model, self.num_heads, head_dim, value_dim, num_kv_heads
        for field, size in zip(SIZES, sizes):  # as Python ints, checked
            object.__setattr__(self, field, check_positive_int(field, size))

    def check_chunked_sizes(self):
        """Refuse sizes the chunked layer fixes itself, if set otherwise."""
        chunk = self.d_model // self.num_heads
        fixed = (chunk, chunk, self.num_heads)
        given = (self.head_dim, self.value_dim, self.num_kv_heads)
        if any(g is not None and g != f for g, f in zip(given, fixed)):
            raise ValueError(
                "the chunked layer fixes head_dim = value_dim = d_model / "
                "num_heads and has no shared key/value heads; leave those "
                "sizes unset"
            )

    @classmethod
    def of(cls, layer, d_model, num_heads, sizes, **fixed):
        """The spec of ``layer`` from its constructor's arguments, ``fixed``
        being the fields it sets itself (``chunked=True``): see
        :meth:`given`."""
        if sizes or isinstance(d_model, cls):
            return cls.given(layer, d_model, num_heads, sizes, fixed)
        return cls(d_model, num_heads, **fixed)  # the layer's own kind

    @classmethod
    def given(cls, layer, d_model, num_heads, sizes, fixed):
        """The spec a layer was given: ``d_model`` is an AttentionSpec, or
        the sizes make one; refused unless ``layer`` builds it
        (:meth:`check_built_by`)."""
        name = type(layer).__name__
        if not isinstance(d_model, cls):
            cls.check_size_names(type(layer), sizes, fixed)
            spec = cls(d_model, num_heads, **sizes, **fixed)
        elif num_heads is not None or sizes:
            raise TypeError(
                f"give {name} an AttentionSpec or its sizes, not both; got "
                f"{d_model!r} and num_heads={num_heads!r}, {sizes}"
            )
        else:
            spec = d_model
        spec.check_built_by(type(layer), fixed)
        return spec

    @classmethod
    def check_size_names(cls, layer, sizes, fixed):
        """Refuse sizes the constructor of ``layer`` (a class) does not take:
        unknown ones, and those it sets itself."""
        known = {f.name for f in fields(cls)} - {"d_model", "num_heads"}
        if set(sizes) - known:
            raise TypeError(
                f"{layer.__name__} got unknown sizes "
                f"{sorted(set(sizes) - known)}; expected some of "
                f"{sorted(set(layer.implements) - set(fixed))}"
            )
        if set(sizes) & set(fixed):
            raise TypeError(
                f"{layer.__name__} sets {sorted(set(sizes) & set(fixed))} "
                "itself; leave it out"
            )

    def check_built_by(self, layer, fixed):
        """Refuse this spec for ``layer`` (a class) unless it has the fields
        the layer sets itself (``fixed``) and the layer implements each of
        its :attr:`changes` (``layer.implements`` names them): a layer never
        drops a field it was given."""
        name = layer.__name__
        for field, value in self.changes.items():
            if field not in layer.implements:
                others = ", ".join(layers_implementing(field))
                raise ValueError(
                    f"{name} does not implement {field}={value!r} (of "
                    f"{self.sizes}); "
                    + (
                        f"the layers that do: {others}. mha_lib.layer_for("
                        "spec) builds the layer of any spec"
                        if others
                        else "no layer of mha_lib.layers does yet: add one "
                        "whose implements names it, which layer_for returns"
                    )
                )
        if any(getattr(self, field) != v for field, v in fixed.items()):
            raise ValueError(
                f"this spec describes a {self.kind} layer ({self.sizes}), "
                f"not what {name} builds; mha_lib.layer_for(spec) builds the "
                "layer of any spec"
            )

    @classmethod
    def named(cls, kind, d_model, num_heads, head_dim=None, **options):
        """The layer the book calls ``kind``: a key of :data:`NAMED_KINDS`, or
        ``sized`` with its ``head_dim``. ``options`` are the other fields
        (``num_kv_heads``, ``bias``, ``scale``, ``dropout``)."""
        kinds = (*NAMED_KINDS, "sized")  # sized: any other head size
        if kind not in kinds:
            raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
        if (kind == "sized") != (head_dim is not None):
            raise ValueError("give head_dim for kind 'sized', and only for it")
        if kind == "sized":
            return cls(d_model, num_heads, head_dim=head_dim, **options)
        sizes = NAMED_KINDS[kind](d_model, num_heads)
        return cls(d_model, num_heads, **sizes, **options)

    @property
    def kind(self):
        """The first kind of :data:`NAMED_KINDS` this layer is, but for the
        :data:`OPTIONS` any kind may add, else ``sized``."""
        for kind, sizes in NAMED_KINDS.items():
            try:
                named = AttentionSpec(
                    self.d_model,
                    self.num_heads,
                    **sizes(self.d_model, self.num_heads),
                )
            except ValueError:  # e.g. d_model not divisible by num_heads
                continue
            if set(self.differences(named)) <= set(OPTIONS):
                return kind
        return "sized"

    @property
    def label(self):
        """A short name for tables and legends: the kind, its heads, and each
        field in which the layer differs from its kind's, e.g. ``wide 8 x
        32`` or ``standard 8 x 4, 2 K/V heads``."""
        kind = self.kind
        sized = self.head_dim if kind == "sized" else None
        plain = AttentionSpec.named(
            kind, self.d_model, self.num_heads, head_dim=sized
        )
        words = [f"{kind} {self.num_heads} x {self.head_dim}"]
        for field, value in self.differences(plain).items():
            if field in LABEL_WORDS:
                words.append(LABEL_WORDS[field].format(value))
            elif isinstance(value, bool):
                words.append(field if value else f"no {field}")
            else:
                words.append(f"{field} {value:g}")
        return ", ".join(words)

    @property
    def sizes(self):
        """The keyword arguments that build this spec: ``d_model``,
        ``num_heads`` and its :attr:`changes`, e.g. ``d_model=64,
        num_heads=8, head_dim=64``."""
        given = dict(d_model=self.d_model, num_heads=self.num_heads)
        given.update(self.changes)
        return ", ".join(f"{name}={value!r}" for name, value in given.items())

    @property
    def changes(self):
        """The fields that differ from what leaving them unset gives, as
        ``{name: value}`` in their order: ``{"head_dim": 64}`` for 8 wide
        heads at ``d_model=64``, ``{}`` for the standard layer."""
        changed = {}
        for field in fields(self):
            if field.default is MISSING:  # d_model, num_heads: always given
                continue
            try:
                unset = replace(self, **{field.name: field.default})
            except ValueError:  # e.g. d_model not divisible by num_heads
                unset = None
            value = getattr(self, field.name)
            if unset is None or getattr(unset, field.name) != value:
                changed[field.name] = value
        return changed

    def differences(self, other):
        """The fields in which this spec differs from ``other``, as ``{name:
        this spec's value}``."""
        return {
            field.name: getattr(self, field.name)
            for field in fields(self)
            if getattr(self, field.name) != getattr(other, field.name)
        }

    @property
    def reads(self):
        """Input features each head's query, key and value maps read."""
        return self.head_dim if self.chunked else self.d_model

    @property
    def logit_scale(self):
        if self.scale is None:
            return default_scale(self.head_dim)
        return float(self.scale)

    @property
    def widths(self):
        """Output widths of the projections: ``ProjectionWidths(query, key,
        value, concat)``, concat being what the output projection reads."""
        return ProjectionWidths(
            query=self.num_heads * self.head_dim,
            key=self.num_kv_heads * self.head_dim,
            value=self.num_kv_heads * self.value_dim,
            concat=self.num_heads * self.value_dim,
        )

    def parameter_count(self):
        """Trainable parameters: ``reads * (q + k + v widths) + concat *
        d_model`` weights and, with biases, one per projected feature and
        ``d_model`` for the output."""
        q, k, v, concat = self.widths
        weights = self.reads * (q + k + v) + concat * self.d_model
        biases = q + k + v + self.d_model
        return weights + (biases if self.bias else 0)

    def flops(self, n_query, n_key=None):
        """Multiply-add FLOPs (2 per multiply-add) of one forward pass over one
        sequence.

        A dict with ``projections`` (the four projections), ``scores`` (Q K^T),
        ``mixing`` (weights @ V) and ``total``. Softmax and bias additions are
        left out: they are O(n^2 h) and O(n d), small next to the matrix
        products.
        """
        check_positive_int("n_query", n_query)
        n_key = (
            n_query if n_key is None else check_positive_int("n_key", n_key)
        )
        q, k, v, concat = self.widths
        projections = 2 * self.reads * (n_query * q + n_key * (k + v))
        projections += 2 * n_query * concat * self.d_model
        scores = 2 * self.num_heads * n_query * n_key * self.head_dim
        mixing = 2 * self.num_heads * n_query * n_key * self.value_dim
        return {
            "projections": projections,
            "scores": scores,
            "mixing": mixing,
            "total": projections + scores + mixing,
        }

    def activation_elements(self, seq_len, batch=1):
        """Elements self-attention keeps for the backward pass on the fused
        path.

        With ``need_weights=False`` the layer calls a fused attention kernel,
        which does not store the ``n x n`` weights. Autograd keeps the input
        (``n d``), the projected queries and keys (``2 n h d_k``) and values
        (``n h d_v``), the kernel's output, which is the concatenation read by
        the output projection (``n h d_v``), and one log-sum-exp per query and
        head (``h n``), per sequence. Shared key/value heads change nothing:
        they are repeated to every query head before attention, so they save
        parameters and the inference cache, not training memory.
        """
        check_positive_int("seq_len", seq_len)
        check_positive_int("batch", batch)
        heads = self.num_heads
        per_token = (
            self.d_model
            + 2 * heads * self.head_dim
            + 2 * heads * self.value_dim
        )
        return batch * seq_len * (per_token + heads)


def layers_implementing(field):
    """Names of the layers of :mod:`mha_lib.layers` that implement the spec's
    ``field`` (their ``implements`` names it)."""
    from . import layers  # here: layers imports this module

    return [
        name
        for name, layer in vars(layers).items()
        if field in getattr(layer, "implements", ())
    ]
