"""Training the character model: the learning-rate schedule, held-out bits,
seeds trained together."""

import math

import pytest
import torch
from torch import nn

from mha_lib.course import language_training
from mha_lib.course.corpus import Corpus, piece_ids, windows
from mha_lib.course.language_model import CharTransformer
from mha_lib.course.language_training import (
    bits_by_piece,
    held_out_bits,
    train_language_models,
    warmup_cosine,
)
from mha_lib.spec import AttentionSpec


def test_the_warm_up_starts_above_zero_and_reaches_the_peak():
    factor = warmup_cosine(1000, warmup=100)
    warm = [factor(step) for step in range(100)]
    assert warm[0] > 0, "step 0 would not train"
    assert all(b > a for a, b in zip(warm, warm[1:])), "the warm-up rises"
    assert math.isclose(warm[-1], 1.0), "the warm-up ends at the peak"
    assert math.isclose(factor(100), 1.0), "the decay starts at the peak"
    assert max(factor(step) for step in range(1000)) == pytest.approx(1.0)


def test_the_decay_falls_to_the_floor_at_the_last_step():
    factor = warmup_cosine(501, warmup=50, floor=0.1)
    decay = [factor(step) for step in range(50, 501)]
    assert all(b < a for a, b in zip(decay, decay[1:])), "the decay falls"
    assert math.isclose(factor(500), 0.1)
    assert math.isclose(factor(50 + 225), 0.55), "half-way is half-way down"


@pytest.mark.parametrize(
    "arguments,name",
    [
        (dict(steps=100, warmup=100), "warmup"),
        (dict(steps=10, warmup=0), "warmup"),
        (dict(steps=0), "steps"),
        (dict(steps=1000, floor=1.5), "floor"),
    ],
)
def test_a_schedule_that_cannot_work_is_refused(arguments, name):
    with pytest.raises(ValueError, match=name):
        warmup_cosine(**arguments)


class Uniform(nn.Module):
    """Equal logits for every character: log2(vocab) bits each."""

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, ids):
        return torch.zeros(*ids.shape, self.vocab), None


def test_held_out_bits_of_a_uniform_guess_is_log2_of_the_alphabet():
    inputs, targets = windows(torch.randint(8, (200,)), 9)
    bits = held_out_bits(Uniform(8), inputs, targets, batch_size=5)
    assert bits.shape == (1,)
    assert math.isclose(bits.item(), 3.0, rel_tol=1e-6)


def test_held_out_bits_is_the_cross_entropy_in_bits():
    torch.manual_seed(0)
    model = CharTransformer(6, attention=AttentionSpec(8, 2), context=5)
    inputs, targets = windows(torch.randint(6, (100,)), 5)
    logits, _ = model(inputs)
    nats = nn.functional.cross_entropy(logits.transpose(1, 2), targets)
    bits = held_out_bits(model, inputs, targets, batch_size=7)
    assert math.isclose(bits.item(), nats.item() / math.log(2), rel_tol=1e-5)


def test_bits_by_piece_add_up_to_the_held_out_bits():
    torch.manual_seed(0)
    model = CharTransformer(6, attention=AttentionSpec(8, 2), context=5)
    pieces = [("a", "x" * 40), ("b", "y" * 13), ("c", "z" * 47)]
    inputs, targets = windows(torch.randint(6, (100,)), 5)
    owners = piece_ids(pieces, 5)
    sums, characters = bits_by_piece(model, inputs, targets, owners)
    assert characters.tolist() == [
        (owners == i).sum().item() for i in range(3)
    ]
    total = held_out_bits(model, inputs, targets).item()
    assert math.isclose(sums.sum() / characters.sum(), total, rel_tol=1e-6)
    first = owners == 0  # the first piece alone, from its own targets
    logits, _ = model(inputs)
    nats = nn.functional.cross_entropy(
        logits.transpose(1, 2), targets, reduction="none"
    )[first].sum()
    assert math.isclose(sums[0], nats.item() / math.log(2), rel_tol=1e-5)
    with pytest.raises(ValueError, match="one piece per target"):
        bits_by_piece(model, inputs, targets, owners[:, :3])


TINY = Corpus("abcabcabd\n" * 30, "abcabd\n" * 5, "\nabcd")


def test_seeds_train_together_with_the_warm_up_schedule(monkeypatch):
    schedules = []
    original = language_training.train_together

    def spy(*args, schedule, **options):
        schedules.append(schedule)
        return original(*args, schedule=schedule, **options)

    monkeypatch.setattr(language_training, "train_together", spy)
    runs = train_language_models(
        TINY,
        attention=AttentionSpec(8, 2),
        seeds=[0, 1],
        steps=6,
        warmup=2,
        lr=1e-2,
        context=4,
        batch_size=3,
        evaluate_every=3,
    )
    assert len(runs) == 2
    (first, history), (second, _) = runs
    assert history["step"] == [0, 3, 5]
    assert len(history["eval"]) == 3 and len(history["loss"]) == 3
    assert not torch.equal(first.token.weight, second.token.weight)
    (schedule,) = schedules
    assert schedule(0) == 0.5 and schedule(1) == 1.0, "warmup=2 was used"
