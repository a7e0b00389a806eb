"""The character model of Chapter 7: shapes, causality, head masks, FLOPs."""

import pytest
import torch

from mha_lib.counting import count_trainable
from mha_lib.course.language_model import CharTransformer
from mha_lib.spec import AttentionSpec

pytestmark = pytest.mark.core

VOCAB, CONTEXT = 11, 8


def model_of(spec=None, num_layers=2):
    torch.manual_seed(0)
    spec = AttentionSpec(16, 4) if spec is None else spec
    return CharTransformer(
        VOCAB, attention=spec, context=CONTEXT, num_layers=num_layers
    )


@pytest.mark.parametrize(
    "spec",
    [
        AttentionSpec(16, 4),
        AttentionSpec(16, 2, chunked=True),
        AttentionSpec(16, 2, head_dim=16),
    ],
    ids=lambda spec: spec.label,
)
def test_shapes_of_logits_and_weights(spec):
    model = model_of(spec, num_layers=3)
    ids = torch.randint(VOCAB, (5, 6))
    logits, weights = model(ids, need_weights=True)
    assert logits.shape == (5, 6, VOCAB)
    assert len(weights) == 3
    assert all(w.shape == (5, spec.num_heads, 6, 6) for w in weights)
    assert model.head_shape == (3, spec.num_heads)


def test_a_position_sees_only_the_characters_before_it():
    model = model_of().eval()
    ids = torch.randint(VOCAB, (2, CONTEXT))
    changed = ids.clone()
    changed[:, 5] = (changed[:, 5] + 1) % VOCAB
    before, _ = model(ids)
    after, _ = model(changed)
    assert torch.allclose(before[:, :5], after[:, :5], atol=1e-6), (
        "a change at position 5 reached an earlier position"
    )
    assert not torch.allclose(before[:, 5:], after[:, 5:]), (
        "a change at position 5 changed nothing after it"
    )


def test_a_head_mask_of_ones_changes_nothing_and_zeros_change_the_output():
    model = model_of().eval()
    ids = torch.randint(VOCAB, (2, CONTEXT))
    plain, _ = model(ids)
    kept, _ = model(ids, head_mask=torch.ones(model.head_shape))
    removed, _ = model(ids, head_mask=torch.zeros(model.head_shape))
    assert torch.allclose(plain, kept, atol=1e-6)
    assert not torch.allclose(plain, removed, atol=1e-3)


def test_bad_inputs_are_refused():
    model = model_of()
    with pytest.raises(ValueError, match="context"):
        model(torch.zeros(1, CONTEXT + 1, dtype=torch.long))
    with pytest.raises(ValueError, match="head_mask"):
        model(torch.zeros(1, 4, dtype=torch.long), head_mask=torch.ones(4))
    with pytest.raises(TypeError):
        CharTransformer(VOCAB, attention=dict(d_model=16), context=CONTEXT)


def test_forward_flops_add_attention_mlp_and_readout():
    spec = AttentionSpec(16, 4)
    model = model_of(spec, num_layers=2)
    n, d = CONTEXT, 16
    mlp = 2 * 2 * n * d * 4 * d  # two maps d -> 4d -> d
    readout = 2 * n * d * VOCAB
    expected = 2 * (spec.flops(n)["total"] + mlp) + readout
    assert model.forward_flops() == expected
    assert count_trainable(model) > 2 * spec.parameter_count()
