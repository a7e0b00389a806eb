"""Modules with stacked parameters give each member what its own module
would."""

import pytest
import torch
from torch import nn

from mha_lib.course.stacking import broadcast_add, stacked, unstack
from mha_lib.layers import ChunkedLinear, MultiHeadAttention

pytestmark = pytest.mark.core


def members_of(module_class, *args, count=3):
    modules = []
    for seed in range(count):
        torch.manual_seed(seed)
        modules.append(module_class(*args))
        with torch.no_grad():  # non-trivial affine weights for the norms
            for parameter in modules[-1].parameters():
                parameter.add_(0.1 * torch.randn_like(parameter))
    return modules


@pytest.mark.parametrize(
    "module_class,args,inputs",
    [
        (nn.Linear, (5, 4), lambda: torch.randn(3 * 2, 7, 5)),
        (nn.Embedding, (11, 4), lambda: torch.randint(11, (3 * 2, 7))),
        (nn.LayerNorm, (5,), lambda: torch.randn(3 * 2, 7, 5)),
        (ChunkedLinear, (2, 3), lambda: torch.randn(3 * 2, 7, 6)),
        (MultiHeadAttention, (6, 2), lambda: torch.randn(3 * 2, 7, 6)),
    ],
    ids=["linear", "embedding", "layernorm", "chunked", "attention"],
)
def test_stacked_module_runs_each_member_on_its_rows(
    module_class, args, inputs
):
    modules = members_of(module_class, *args)
    x = inputs()
    together = stacked(modules)
    assert all(p.shape[0] == 3 for p in together.parameters())
    first = lambda out: out[0] if isinstance(out, tuple) else out  # noqa
    expected = [first(m(rows)) for m, rows in zip(modules, x.chunk(3))]
    assert torch.allclose(first(together(x)), torch.cat(expected), atol=1e-6)


def test_linear_without_bias_and_broadcast_add():
    modules = [nn.Linear(4, 2, bias=False) for _ in range(2)]
    x = torch.randn(2 * 3, 4)
    expected = torch.cat([m(rows) for m, rows in zip(modules, x.chunk(2))])
    assert torch.allclose(stacked(modules)(x), expected, atol=1e-6)
    table = torch.randn(2, 5, 4)  # one (5, 4) table per member
    x = torch.randn(2 * 3, 5, 4)
    expected = torch.cat([rows + t for rows, t in zip(x.chunk(2), table)])
    assert torch.equal(broadcast_add(x, table), expected)
    assert torch.equal(broadcast_add(x, table[0]), x + table[0])


def test_unstack_copies_each_member_back():
    modules = members_of(nn.Linear, 3, 2, count=2)
    together = stacked(modules)
    with torch.no_grad():
        together.weight.mul_(2)
    unstack(together, modules)
    for index, module in enumerate(modules):
        assert torch.equal(module.weight, together.weight[index])
    with pytest.raises(ValueError, match="at least one model"):
        stacked([])


def test_stacked_shares_no_parameter_with_its_members():
    models = [
        nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)) for _ in range(3)
    ]
    together = stacked(models)
    theirs = {id(p) for model in models for p in model.parameters()}
    assert not theirs & {id(p) for p in together.parameters()}
    weight = models[0][1].weight
    together[1].weight.data += 1  # training the stack leaves them alone
    assert torch.equal(weight, torch.ones(4))


@pytest.mark.parametrize(
    "module_class,args,rows",
    [
        (nn.Linear, (5, 4), lambda: torch.randn(4, 7, 5)),
        (nn.Embedding, (11, 4), lambda: torch.randint(11, (4, 7))),
        (nn.LayerNorm, (5,), lambda: torch.randn(4, 7, 5)),
        (ChunkedLinear, (2, 3), lambda: torch.randn(4, 7, 6)),
        (MultiHeadAttention, (64, 8), lambda: torch.randn(4, 5, 64)),
    ],
)
def test_a_batch_that_does_not_split_into_the_members_is_refused(
    module_class, args, rows
):
    together = stacked(members_of(module_class, *args))  # 3 members
    with pytest.raises(ValueError, match=r"stack of 3 models .* 4 rows do"):
        together(rows())
    with pytest.raises(ValueError, match="do not split into 3"):
        broadcast_add(torch.randn(4, 7, 5), torch.randn(3, 7, 5))


class GatedAttention(MultiHeadAttention):
    """A kind no twin was written for: one learned gate per head, a parameter
    of the layer itself."""

    def __init__(self, d_model, num_heads):
        super().__init__(d_model, num_heads)
        self.gate = nn.Parameter(torch.ones(num_heads))

    def forward(self, query, **masks):
        return super().forward(query, head_mask=self.gate, **masks)


def test_any_module_with_parameters_of_its_own_is_stacked_exactly():
    torch.manual_seed(0)
    models = [
        nn.Sequential(nn.Linear(4, 8), GatedAttention(8, 2)) for _ in range(3)
    ]
    for index, model in enumerate(models):
        model[1].gate.data.fill_(index + 0.5)  # members differ
    together = stacked(models)
    assert isinstance(together[0], nn.Module) and together[1].gate.shape == (
        3,
        2,
    )
    assert [n for n, _ in together.named_parameters()] == [
        n for n, _ in models[0].named_parameters()
    ]
    x = torch.randn(3 * 2, 5, 4)
    for options in ({}, {"is_causal": True, "need_weights": True}):
        hidden = together[0](x)
        out, weights = together[1](hidden, **options)
        rows = zip(models, x.chunk(3))
        expected = [m[1](m[0](r), **options) for m, r in rows]
        assert torch.allclose(
            out, torch.cat([e[0] for e in expected]), atol=1e-6
        )
        if options:
            assert torch.allclose(
                weights, torch.cat([e[1] for e in expected]), atol=1e-6
            )
        else:
            assert weights is None
    out.sum().backward()  # a step on the stack is each member's step
    for index, model in enumerate(models):
        rows = x.chunk(3)[index]
        model[1](model[0](rows), **options)[0].sum().backward()
        assert torch.allclose(
            together[1].gate.grad[index], model[1].gate.grad, atol=1e-5
        )
    with torch.no_grad():
        together[1].gate.mul_(2)
    unstack(together, models)
    assert torch.equal(models[2][1].gate, torch.full((2,), 5.0))


def test_the_per_head_layer_and_its_shared_bias_are_stacked_exactly():
    from mha_lib import PerHeadAttention

    modules = members_of(PerHeadAttention, 6, 3)
    x = torch.randn(3 * 2, 4, 6)
    together = stacked(modules)  # its out_bias is the layer's own
    expected = [
        m(rows, is_causal=True)[0] for m, rows in zip(modules, x.chunk(3))
    ]
    assert torch.allclose(
        together(x, is_causal=True)[0], torch.cat(expected), atol=1e-6
    )
    with pytest.raises(ValueError, match=r"stack of 3 models .* 4 rows do"):
        together(torch.randn(4, 4, 6))


@pytest.mark.parametrize("kind", ["standard", "wide", "chunked"])
def test_the_course_models_stack_through_written_twins_only(kind):
    """Their trainings keep the fast path: no part of them runs under
    vmap."""
    from mha_lib.course.language_model import CharTransformer
    from mha_lib.course.model import AttentionModel
    from mha_lib.course.stacking import Vmapped
    from mha_lib.spec import AttentionSpec

    spec = AttentionSpec.named(kind, 16, 4)
    for make in (
        lambda: AttentionModel(4, 4, seq_len=8, num_layers=2, attention=spec),
        lambda: CharTransformer(11, attention=spec, context=8),
    ):
        together = stacked([make() for _ in range(2)])
        assert not any(isinstance(m, Vmapped) for m in together.modules())
        assert together.position.shape[0] == 2  # stacked in place
