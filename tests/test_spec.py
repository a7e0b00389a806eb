"""One description of a layer: sizes checked, kinds named, module and costs
from one place."""

import ast
import math
from pathlib import Path

import numpy
import pytest

import mha_lib
from mha_lib import spec as spec_module
from mha_lib.spec import AttentionSpec

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    "make,error,words",
    [
        (
            lambda: mha_lib.MultiHeadAttention(10, 3),
            ValueError,
            "d_model=10 is not divisible",
        ),
        (
            lambda: mha_lib.MultiHeadAttention(16, 4, num_kv_heads=3),
            ValueError,
            "num_kv_heads=3 must divide",
        ),
        (
            lambda: mha_lib.MultiHeadAttention(0, 1),
            ValueError,
            "d_model must be a positive",
        ),
        (
            lambda: mha_lib.MultiHeadAttention(16, -2),
            ValueError,
            "num_heads must be a positive",
        ),
        (
            lambda: mha_lib.MultiHeadAttention(16, 4, head_dim=0),
            ValueError,
            "head_dim must be a positive",
        ),
        (
            lambda: mha_lib.MultiHeadAttention(16.0, 4),
            TypeError,
            "d_model must be an int",
        ),
        (lambda: mha_lib.parameter_count(16, 5), ValueError, "not divisible"),
        (
            lambda: mha_lib.PerHeadAttention(16, True),
            TypeError,
            "num_heads must be an int",
        ),
        (
            lambda: AttentionSpec(16, 4, chunked=True, head_dim=8),
            ValueError,
            "chunked",
        ),
        (
            lambda: AttentionSpec(16, 4, chunked=1),
            TypeError,
            "chunked must be True or False",
        ),
        (
            lambda: AttentionSpec(16, 4, scale=-1.0),
            ValueError,
            "scale must be a positive",
        ),
        (
            lambda: AttentionSpec(16, 4, scale=math.inf),
            ValueError,
            "scale must be a positive, finite number, got inf",
        ),
        (
            lambda: mha_lib.MultiHeadAttention(16, 4, scale=math.nan),
            ValueError,
            "scale must be a positive, finite number, got nan",
        ),
        (
            lambda: AttentionSpec(16, 4, scale=True),
            TypeError,
            r"scale must be a number, got bool \(True\)",
        ),
        (
            lambda: AttentionSpec(16, 4, dropout=True),
            TypeError,
            "dropout must be a number, got bool",
        ),
        (
            lambda: AttentionSpec.named("narrow", 16, 4),
            ValueError,
            "kind must be one of",
        ),
        (lambda: AttentionSpec.named("sized", 16, 4), ValueError, "head_dim"),
    ],
)
def test_bad_sizes(make, error, words):
    with pytest.raises(error, match=words):
        make()


@pytest.mark.parametrize(
    "spec,kind,label",
    [
        (AttentionSpec(32, 8), "standard", "standard 8 x 4"),
        (AttentionSpec(32, 1), "standard", "standard 1 x 32"),
        (AttentionSpec(32, 8, head_dim=32), "wide", "wide 8 x 32"),
        (AttentionSpec(32, 8, chunked=True), "chunked", "chunked 8 x 4"),
        (AttentionSpec(32, 8, head_dim=8), "sized", "sized 8 x 8"),
        (
            AttentionSpec(32, 16, head_dim=8, value_dim=2),
            "sized",
            "sized 16 x 8, values 2",
        ),
        (
            AttentionSpec(32, 8, num_kv_heads=2),
            "standard",
            "standard 8 x 4, 2 K/V heads",
        ),
    ],
)
def test_kind_and_label(spec, kind, label):
    assert (spec.kind, spec.label) == (kind, label)


@pytest.mark.parametrize("kind", ["chunked", "standard", "wide"])
def test_named_kinds_build_modules_whose_costs_come_from_the_spec(kind):
    spec = AttentionSpec.named(kind, 32, 4)
    assert spec.kind == kind
    layer = mha_lib.layer_for(spec)
    assert layer.spec == spec, (
        "the module keeps the description it was built from"
    )
    assert mha_lib.count_trainable(layer) == spec.parameter_count()
    assert AttentionSpec.named("sized", 32, 4, head_dim=16).head_dim == 16


def test_defaults_are_filled_in_so_equal_layers_compare_equal():
    assert AttentionSpec(32, 8) == AttentionSpec(
        32, 8, head_dim=4, value_dim=4, num_kv_heads=8
    )
    assert AttentionSpec(32, 8).logit_scale == 4**-0.5
    assert AttentionSpec(32, 8, scale=0.1).logit_scale == 0.1


def test_numpy_integers_are_sizes_stored_as_ints():
    sizes = numpy.arange(1, 65)  # sizes picked from a NumPy array
    spec = AttentionSpec(sizes[31], sizes[3], num_kv_heads=sizes[1])
    assert spec == AttentionSpec(32, 4, num_kv_heads=2)
    assert all(
        type(size) is int
        for size in (spec.d_model, spec.num_heads, spec.head_dim)
    )
    layer = mha_lib.MultiHeadAttention(sizes[15], sizes[1])
    assert layer.q_proj.weight.shape == (16, 16)
    assert mha_lib.parameter_count(sizes[15], sizes[1]) == 4 * 16**2 + 4 * 16


def test_the_library_has_no_import_cycle():
    """Module-level imports between mha_lib's modules form no cycle (a lazy
    import inside a function, such as ``build``'s, is not one)."""
    folder = Path(mha_lib.__file__).parent
    imports = {}
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        found = set()
        for node in tree.body:  # top level only
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else []
                names += [alias.name for alias in node.names]
                found |= {name for name in names if name}
        imports[path.stem] = found & {p.stem for p in folder.glob("*.py")}
    imports.pop("__init__")
    visiting, done = [], set()

    def visit(module):
        assert module not in visiting, "import cycle: " + " -> ".join(
            [*visiting, module]
        )
        if module in done:
            return
        visiting.append(module)
        for other in sorted(imports.get(module, ())):
            visit(other)
        visiting.pop()
        done.add(module)

    for module in sorted(imports):
        visit(module)
    assert "layers" not in imports["spec"]


def test_a_new_kind_is_one_row_of_the_table(monkeypatch):
    """A kind added to NAMED_KINDS alone is named, recognised, counted, built
    and drawn in its own colour."""
    pytest.importorskip("matplotlib")
    from mha_lib.course import plotting

    monkeypatch.setitem(
        spec_module.NAMED_KINDS,
        "double",
        lambda d_model, num_heads: dict(head_dim=2 * d_model // num_heads),
    )
    spec = AttentionSpec.named("double", 32, 4)
    assert (spec.head_dim, spec.kind, spec.label) == (
        16,
        "double",
        "double 4 x 16",
    )
    assert AttentionSpec(32, 4, head_dim=16, num_kv_heads=2).kind == "double"
    assert (
        mha_lib.parameter_count(32, 4, head_dim=16) == spec.parameter_count()
    )
    assert (
        mha_lib.count_trainable(mha_lib.layer_for(spec))
        == spec.parameter_count()
    )
    assert "double" in plotting.layer_styles()
    assert AttentionSpec(32, 4).kind == "standard", "the old kinds stay"


def test_widths_are_those_of_the_built_projections():
    spec = AttentionSpec(32, 8, head_dim=6, value_dim=3, num_kv_heads=2)
    layer = mha_lib.layer_for(spec)
    assert spec.widths == (48, 12, 6, 24)
    assert spec.widths.query == layer.q_proj.out_features
    assert spec.widths.key == layer.k_proj.out_features
    assert spec.widths.value == layer.v_proj.out_features
    assert spec.widths.concat == layer.out_proj.in_features
