"""One description of a layer: sizes checked, kinds named, module and costs
from one place."""

import ast
import math
import re
from pathlib import Path

import numpy
import pytest
from support import LAYERS, named_specs

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
            lambda: AttentionSpec(16, 4, bias="False"),
            TypeError,
            "bias must be True or False, got 'False'",
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


@pytest.mark.parametrize("kind", spec_module.NAMED_KINDS)
def test_named_kinds_build_modules_whose_costs_come_from_the_spec(kind):
    """Every row of NAMED_KINDS, plain and with each option a kind may add:
    recognised, built by layer_for, counted as the module counts."""
    for spec in named_specs(kind):
        if spec.num_heads > 1:  # one head: standard and wide are one
            assert spec.kind == kind and spec.label.startswith(kind)
        layer = mha_lib.layer_for(spec)
        assert layer.spec is spec, (
            "the module keeps the description it was built from"
        )
        assert mha_lib.count_trainable(layer) == spec.parameter_count(), (
            f"the formula miscounts {spec.label}"
        )
    assert AttentionSpec.named("sized", 32, 4, head_dim=16).head_dim == 16


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.__name__)
@pytest.mark.parametrize("kind", spec_module.NAMED_KINDS)
def test_every_layer_builds_each_named_kind_or_refuses_it(kind, layer):
    """Every layer of mha_lib.layers, given a spec of any named kind, builds
    it (the parameters the spec counts) or refuses it, naming the field it
    lacks or saying it builds another kind: a field a new kind adds is
    never dropped without a word."""
    name = layer.__name__
    for spec in named_specs(kind):
        lacks = set(spec.changes) - set(layer.implements)
        try:
            built = layer(spec)
        except ValueError as error:
            expected = (  # a field it lacks, else a field it sets itself
                f"{name} does not implement ({'|'.join(lacks)})="
                if lacks
                else f"not what {name} builds"
            )
            assert re.search(expected, str(error)), error
            continue
        assert not lacks, f"{name} built {spec.sizes} without {lacks}"
        assert built.spec is spec
        assert mha_lib.count_trainable(built) == spec.parameter_count()


def test_a_spec_names_its_changes_in_its_sizes_and_label():
    """``sizes``, the repr and the label come from the fields: any field
    not at its default shows, a new one included."""
    spec = AttentionSpec(32, 8, head_dim=32, bias=False, dropout=0.1)
    assert spec.changes == dict(head_dim=32, bias=False, dropout=0.1)
    assert spec.sizes == (
        "d_model=32, num_heads=8, head_dim=32, bias=False, dropout=0.1"
    )
    assert spec.label == "wide 8 x 32, no bias, dropout 0.1"
    assert AttentionSpec(32, 8).sizes == "d_model=32, num_heads=8"
    assert AttentionSpec(32, 8, chunked=True).changes == dict(chunked=True)
    assert AttentionSpec(10, 3, head_dim=4).changes == dict(head_dim=4)
    layer = mha_lib.MultiHeadAttention(32, 8, num_kv_heads=2, scale=0.5)
    assert "num_kv_heads=2, scale=0.5" in repr(layer)


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
