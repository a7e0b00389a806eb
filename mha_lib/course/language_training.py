"""Training the character model of Chapter 7, many seeds together, and
scoring it in bits per character on held-out text.

Every seed's model trains through
:func:`~mha_lib.course.training.train_together`, with a warm-up and a cosine
decay of the learning rate.
"""

import math

import torch
import torch.nn.functional as F

from ..checks import check_positive_int
from ..runtime import seed_everything
from .corpus import windows
from .language_model import CharTransformer
from .training import check_seeds, train_together


@torch.no_grad()
def held_out_bits(forward, inputs, targets, *, members=1, batch_size=256):
    """Bits per character of each member on the same held-out windows:
    ``(members,)``.

    ``forward`` is a model, or :func:`~mha_lib.course.stacking.stacked` models
    (``members``).
    """
    device = next(forward.parameters()).device
    total = torch.zeros(members, device=device)
    for start in range(0, len(inputs), batch_size):
        x, y = (
            inputs[start : start + batch_size],
            targets[start : start + batch_size],
        )
        x, y = x.repeat(members, 1).to(device), y.repeat(members, 1).to(device)
        logits, _ = forward(x)  # (members * batch, n, vocab)
        loss = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")
        total += loss.view(members, -1).sum(1)
    return (total / (inputs.numel() * math.log(2))).cpu()


@torch.no_grad()
def bits_by_piece(model, inputs, targets, pieces, *, batch_size=256):
    """One model's bits on held-out windows, summed over each piece of the
    text (book, document): ``(sums (count,), characters (count,))``, both
    float64, where ``pieces`` (as ``targets``) names each target's piece,
    ``0`` to ``count - 1`` (:func:`~mha_lib.course.corpus.piece_ids`).

    ``sums.sum() / characters.sum()`` is :func:`held_out_bits` of the model.
    """
    if pieces.shape != targets.shape:
        raise ValueError(
            f"pieces {tuple(pieces.shape)} must name one piece per target "
            f"{tuple(targets.shape)}"
        )
    count = int(pieces.max()) + 1
    device = next(model.parameters()).device
    sums = torch.zeros(count, dtype=torch.float64)
    for start in range(0, len(inputs), batch_size):
        rows = slice(start, start + batch_size)
        logits, _ = model(inputs[rows].to(device))  # (batch, n, vocab)
        loss = F.cross_entropy(
            logits.transpose(1, 2),
            targets[rows].to(device),
            reduction="none",
        )
        sums += torch.bincount(
            pieces[rows].flatten(),
            weights=loss.flatten().double().cpu(),
            minlength=count,
        )
    characters = torch.bincount(pieces.flatten(), minlength=count)
    return sums / math.log(2), characters.double()


def warmup_cosine(steps, warmup=100, floor=0.1):
    """Learning-rate factor per step: a linear warm-up that reaches 1 at step
    ``warmup - 1``, then a cosine decay to ``floor`` at the last step.

    The decay lets every run settle by its last step, so runs of one length
    compare at their end.
    """
    check_positive_int("steps", steps)
    check_positive_int("warmup", warmup)
    if warmup >= steps:
        raise ValueError(
            f"warmup={warmup} must be shorter than steps={steps}: the rate "
            "would never reach its peak"
        )
    if not 0 <= floor <= 1:
        raise ValueError(f"floor must be a fraction in [0, 1], got {floor}")

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - 1 - warmup)
        return floor + (1 - floor) * 0.5 * (
            1 + math.cos(math.pi * min(1.0, progress))
        )

    return factor


def train_language_models(
    corpus,
    *,
    attention,
    seeds,
    steps,
    lr,
    context=64,
    num_layers=2,
    batch_size=32,
    evaluate_every=150,
    warmup=100,
    validation=None,
    device=None,
    stop_after=None,
):
    """Train one :class:`CharTransformer` per seed on ``corpus.train``, all
    together.

    Each seed fixes the initial weights and the stream of training windows
    (random starts in the training text). ``lr`` is one peak learning rate or
    one per seed, scaled by :func:`warmup_cosine` over ``steps`` (``warmup``
    steps of warm-up). Every
    ``evaluate_every`` steps (and after the last) each model's held-out bits
    per character on ``validation`` (``(inputs, targets)``, default every
    window of the validation text) is recorded under ``"eval"``. With
    ``stop_after``, training stops after that many steps of the ``steps``-step
    schedule: the start of a longer run, step for step. Returns
    ``[(model, history), ...]``.
    """
    seeds = check_seeds(seeds)
    train_ids = corpus.encode(corpus.train)
    if validation is None:
        validation = windows(corpus.encode(corpus.validation), context)
    models = []
    for seed in seeds:
        seed_everything(seed)
        model = CharTransformer(
            len(corpus.alphabet),
            attention=attention,
            context=context,
            num_layers=num_layers,
        )
        models.append(model.to(device))
    device = next(models[0].parameters()).device
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    offsets = torch.arange(context + 1)

    def losses(forward, step):
        starts = [
            torch.randint(
                len(train_ids) - context - 1, (batch_size,), generator=g
            )
            for g in generators
        ]
        pieces = train_ids[torch.cat(starts)[:, None] + offsets].to(device)
        # (members * batch, context, vocab): member m owns rows m * batch ...
        logits, _ = forward(pieces[:, :-1])
        loss = F.cross_entropy(
            logits.transpose(1, 2), pieces[:, 1:], reduction="none"
        )
        return loss.view(len(seeds), -1).mean(1)  # (members,)

    def evaluate(forward):
        return held_out_bits(forward, *validation, members=len(seeds))

    histories = train_together(
        models,
        losses,
        steps=steps if stop_after is None else stop_after,
        lr=lr,
        record_every=evaluate_every,
        evaluate=evaluate,
        schedule=warmup_cosine(steps, warmup),
    )
    for history in histories:  # in bits per character, as the held-out one
        history["loss"] = [loss / math.log(2) for loss in history["loss"]]
    return list(zip(models, histories))
