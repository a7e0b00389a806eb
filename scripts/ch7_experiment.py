"""Chapter 7's full experiment: attention layers in a character model of real
text.

    python3 scripts/ch7_experiment.py   # 2 GPU-hours; days on 2 CPU cores

writes ``mha_lib/course/results/ch7_experiment.json`` (with the command,
device, versions and wall time), which Chapter 7 reads. Every model is a
``CharTransformer`` on the King James Bible (the last six books held out),
context 64, batch 32, Adam with warm-up and cosine decay over 1,500 steps;
held-out bits per character on every validation window every 150 steps.

Each variant trains six seeds at each of six peak learning rates, all together
(seeds share their stream of training windows across rates and variants, so
comparisons are paired). The variant's rate is the one at which seed 0 scores
best; seed 0 is used for nothing else, and seeds 1 to 5 at that rate are the
variant's results. Then every variant's five models are tested for copying on
repeated English (an induction test), and for the standard layer with 8 heads
the heads are measured (offset profiles, distances between heads, the cost of
removing each).

Workers can share the run: ``--worker I --workers N`` trains every N-th
variant, starting at the I-th, and a plain run afterwards gathers the parts
(a run that stops resumes: finished variants are kept in a partial file beside
the result and skipped). Step times are measured apart, on the CPU the course
targets, by ``scripts/ch7_step_times.py``.
"""

import argparse
import json
import math

import checkout  # this checkout's mha_lib, first
import torch
import torch.nn.functional as F

import mha_lib
from mha_lib.course import results
from mha_lib.course.ablation import single_removals
from mha_lib.course.analysis import offset_profile, pairwise_head_distance
from mha_lib.course.corpus import load_bible, windows
from mha_lib.course.language_model import CharTransformer
from mha_lib.course.language_training import (
    held_out_bits,
    train_language_models,
)
from mha_lib.course.statistics import best_rate
from mha_lib.spec import AttentionSpec

CONTEXT, BATCH, STEPS, EVERY = 64, 32, 1500, 150
RATES = [1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2, 3.2e-2]  # a factor 2 apart
TUNING_SEED, SEEDS = 0, [1, 2, 3, 4, 5]
SIZED_32 = (
    "sized 32 x 16"  # wide 8 x 64's cost in heads of 16: not in the grid
)
HEADS_OF = "standard 8 x 8"  # the variant whose heads are measured
D = 64


def variants():
    """``{name: (AttentionSpec, num_layers, group)}``: every model of the
    chapter."""
    table = {}

    def add(name, spec, group, layers=2):
        table[name] = (spec, layers, group)

    for h in (1, 2, 4, 8, 16, 32):  # Table 3 (A): heads at a fixed d_model
        add(f"standard {h} x {D // h}", AttentionSpec(D, h), "A")
    for size in (4, 2):  # Table 3 (B): one path shrunk, at 8 heads
        add(
            f"queries/keys {size}, values 8",
            AttentionSpec(D, 8, head_dim=size, value_dim=8),
            "B",
        )
        add(
            f"queries/keys 8, values {size}",
            AttentionSpec(D, 8, head_dim=8, value_dim=size),
            "B",
        )
    # per-head size against the layer's total width: the same head sizes at
    # 32 heads (totals 4 times larger) and at 2 heads (totals 4 times smaller)
    for h, qk, v in ((32, 8, 2), (32, 2, 8), (2, 32, 8), (2, 8, 32)):
        add(
            f"{h} heads, queries/keys {qk}, values {v}",
            AttentionSpec(D, h, head_dim=qk, value_dim=v),
            "totals",
        )
    for h in (8, 16):  # Bhojanapalli et al.: head size set apart from h
        add(f"sized {h} x 16", AttentionSpec(D, h, head_dim=16), "sized")
    for h in (2, 4, 8):
        add(f"wide {h} x {D}", AttentionSpec(D, h, head_dim=D), "wide")
    for d_model in (96, 128):  # the wide layer's extra compute, on width
        add(f"d_model {d_model}", AttentionSpec(d_model, 8), "wider")
    for layers, h in ((4, 8), (4, 1)):  # ... or on depth
        add(
            f"{layers} layer{'s' * (layers > 1)}, {h} head{'s' * (h > 1)}",
            AttentionSpec(D, h),
            "depth",
            layers,
        )
    return table


def every_variant():
    """``variants()`` and sized 32 x 16 (32 heads of size 16 at ``d_model``
    64: the parameters and FLOPs of wide 8 x 64), trained after the grid by
    ``scripts/ch7_apart.py``."""
    return {
        **variants(),
        SIZED_32: (AttentionSpec(D, 32, head_dim=16), 2, "sized"),
    }


def describe(name, spec, num_layers, group, vocab):
    model = CharTransformer(
        vocab, attention=spec, context=CONTEXT, num_layers=num_layers
    )
    flops = model.forward_flops()
    embedding = model.token.weight.numel() + model.position.numel()
    return {
        "variant": name,
        "group": group,
        "kind": spec.kind,
        "d_model": spec.d_model,
        "heads": spec.num_heads,
        "head_dim": spec.head_dim,
        "value_dim": spec.value_dim,
        "num_layers": num_layers,
        "parameters": mha_lib.count_trainable(model),
        "non_embedding_parameters": mha_lib.count_trainable(model) - embedding,
        "forward_flops": flops,
        # forward and backward (about twice the forward) for every training
        # sequence
        "training_flops": 3 * flops * BATCH * STEPS,
    }


def train(corpus, validation, spec, num_layers, seeds, rates, device, steps):
    """``seeds[i]`` at peak rate ``rates[i]``, all together: the ``[(model,
    history)]`` of the runs and one record of each."""
    runs = train_language_models(
        corpus,
        attention=spec,
        seeds=seeds,
        steps=steps,
        lr=rates,
        context=CONTEXT,
        num_layers=num_layers,
        batch_size=BATCH,
        evaluate_every=EVERY,
        validation=validation,
        device=device,
    )
    records = [
        {
            "seed": seed,
            "lr": lr,
            "steps": history["step"],
            "held_out": [round(b, 5) for b in history["eval"]],
            "train": [round(b, 5) for b in history["loss"]],
        }
        for (_, history), seed, lr in zip(runs, seeds, rates)
    ]
    return runs, records


def check_workers(parser, args):
    """Refuse, through ``parser``, a ``--worker I --workers N`` that names
    no share of the run: I must lie in [0, N), N be at least 1, and N come
    with I (a worker 30 of 2 would exit having trained nothing, a worker -1
    train the last part)."""
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.worker is None:
        if args.workers != 1:
            parser.error("--workers N needs --worker I (which share is this)")
    elif not 0 <= args.worker < args.workers:
        parser.error(
            f"--worker must lie in 0 to {args.workers - 1} (--workers "
            f"{args.workers}), got {args.worker}"
        )


def shared_run_arguments(doc, *switches):
    """The command line of a long run that workers share, read and applied:
    ``--threads`` (CPU threads, default 1, which leaves the other core of a
    2-core machine free) and ``--worker I --workers N`` (every N-th part,
    from the I-th); ``switches``, ``(name, help)`` of the run's own on/off
    options."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    checkout.add_threads(parser)
    parser.add_argument("--worker", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1)
    for name, help in switches:
        parser.add_argument(name, action="store_true", help=help)
    args = parser.parse_args()
    check_workers(parser, args)
    checkout.use_threads(args.threads)
    return args


def curves(corpus, validation, name, seeds, rates, device, steps):
    """Variant ``name`` trained on ``seeds`` at ``rates`` for ``steps``: one
    record per run with its held-out curve only (the runs beyond the grid
    keep no training loss)."""
    spec, num_layers, _ = every_variant()[name]
    _, records = train(
        corpus, validation, spec, num_layers, seeds, rates, device, steps
    )
    return [{k: v for k, v in r.items() if k != "train"} for r in records]


def tuned_rate(tuning):
    """The rate whose tuning run (one record per rate) ends lowest on
    held-out text; a run that diverged (NaN) ranks last, wherever it
    stands (``min`` would keep a NaN that came first)."""
    return best_rate({r["lr"]: [r["held_out"][-1]] for r in tuning})


def run_variant(corpus, validation, spec, num_layers, device):
    """Every seed at every rate, together: one record per run, the chosen rate
    (seed 0's best) and the models of seeds 1 to 5 at it."""
    seeds = [TUNING_SEED, *SEEDS]
    pairs = [(seed, lr) for lr in RATES for seed in seeds]
    runs, records = train(
        corpus,
        validation,
        spec,
        num_layers,
        [seed for seed, _ in pairs],
        [lr for _, lr in pairs],
        device,
        STEPS,
    )
    tuning = [r for r in records if r["seed"] == TUNING_SEED]
    chosen = tuned_rate(tuning)
    models = [
        model
        for (model, _), (seed, lr) in zip(runs, pairs)
        if lr == chosen and seed != TUNING_SEED
    ]
    return records, chosen, models


def repeated_english(corpus, count, half, seed=0):
    """Held-out English fragments of ``half`` characters, each followed by
    itself (``repeated``) or by another fragment's first half then itself
    (``control``): two ``(count, 2 * half)`` id tensors whose second halves
    are the same characters, with an earlier copy only in ``repeated``."""
    ids = corpus.encode(corpus.validation)
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(ids) - half, (2, count), generator=generator)
    offsets = torch.arange(half)
    fragment = ids[starts[0][:, None] + offsets]  # (count, half)
    other = ids[starts[1][:, None] + offsets]
    repeated = torch.cat([fragment, fragment], dim=1)
    control = torch.cat([other, fragment], dim=1)
    return repeated, control


@torch.no_grad()
def induction(model, corpus, half=CONTEXT // 2, count=256):
    """Olsson et al.'s copying test on repeated English: bits per character on
    the second copy with and without the first before it, and each head's
    attention, from the second copy, to the character after the earlier
    occurrence of the current one (``(layers, heads)``), beside the share
    that even attention to every earlier character would give there."""
    device = next(model.parameters()).device
    repeated, control = (
        t.to(device) for t in repeated_english(corpus, count, half)
    )

    def second_half_bits(ids):
        logits, weights = model(ids[:, :-1], need_weights=True)
        loss = F.cross_entropy(
            logits.transpose(1, 2), ids[:, 1:], reduction="none"
        )  # (count, positions); position t predicts character t + 1
        return loss[:, half:].mean().item() / math.log(2), weights

    bits_repeated, weights = second_half_bits(repeated)
    bits_control, _ = second_half_bits(control)
    queries = torch.arange(half, 2 * half - 1, device=device)
    targets = queries - half + 1  # the character after the earlier copy
    share = [w[:, :, queries, targets].mean((0, 2)).tolist() for w in weights]
    even = (1 / (queries.float() + 1)).mean().item()
    return {
        "bits_second_copy": bits_repeated,
        "bits_without_first_copy": bits_control,
        "induction_share": share,
        "even_share": even,
    }


def mean_distance(weights, chunk=8):
    """Chapter 4's Jensen-Shannon distance between heads, averaged over windows
    in chunks (all windows at once would need gigabytes): ``(heads, heads)``.
    """
    parts = [pairwise_head_distance(w) for w in weights.split(chunk)]
    return torch.stack(parts).mean(0)


@torch.no_grad()
def heads_of(model, validation):
    """What each head of a trained model does, measured (Chapter 4's tools)."""
    inputs, targets = validation
    device = next(model.parameters()).device
    # one (64, heads, n, n) per layer
    _, weights = model(inputs[:64].to(device), need_weights=True)
    profiles = [offset_profile(w, first=0)[:, :16] for w in weights]
    base = held_out_bits(model, inputs, targets).item()

    def bits_without(head_mask):
        return held_out_bits(_Masked(model, head_mask), inputs, targets)

    removal = single_removals(bits_without, model.head_shape) - base
    return {
        "held_out": base,
        "offset_profiles": [p.tolist() for p in profiles],
        "removal_cost": removal.tolist(),
    }


class _Masked(torch.nn.Module):
    """A model with some heads removed, callable as ``model(ids)``."""

    def __init__(self, model, head_mask):
        super().__init__()
        self.model, self.head_mask = model, head_mask

    def forward(self, ids):
        return self.model(ids, head_mask=self.head_mask)


def measure_heads(models, validation):
    """The heads of the five models at the chosen rate, measured."""
    models = [model.eval() for model in models]
    probe = validation[0][:64].to(next(models[0].parameters()).device)
    with torch.no_grad():
        maps = [torch.cat(m(probe, need_weights=True)[1], 1) for m in models]
    return {
        "models": [heads_of(m, validation) for m in models],
        # (batch, seeds * layers * heads, n, n): every pair of heads
        "distance_across_seeds": mean_distance(torch.cat(maps, 1)).tolist(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--variant", action="append", default=[])
    args = parser.parse_args()
    check_workers(parser, args)
    table = variants()
    unknown = [name for name in args.variant if name not in table]
    if unknown:
        parser.error(
            f"--variant: no variant {unknown}; choose among {list(table)}"
        )
    device = mha_lib.pick_device()
    corpus = load_bible()
    validation = windows(corpus.encode(corpus.validation), CONTEXT)
    parts = results.Parts("ch7_experiment")
    vocab = len(corpus.alphabet)

    def train_variant(name):
        spec, num_layers, group = table[name]
        runs, chosen, models = run_variant(
            corpus, validation, spec, num_layers, device
        )
        done = {
            **describe(name, spec, num_layers, group, vocab),
            "environment": results.environment(device),
            "chosen_lr": chosen,
            "runs": runs,
            "induction": [induction(m.eval(), corpus) for m in models],
        }
        if name == HEADS_OF:
            done["head_measurements"] = measure_heads(models, validation)
        return done

    names = list(table)
    if args.worker is not None or args.variant:
        mine = (
            args.variant
            if args.variant
            else names[args.worker :: args.workers]
        )
        for name in mine:
            parts.get(name, lambda name=name: train_variant(name))
        return
    trained = {
        name: parts.get(name, lambda name=name: train_variant(name))
        for name in names
    }
    data = {
        "settings": {
            "context": CONTEXT,
            "batch_size": BATCH,
            "steps": STEPS,
            "evaluate_every": EVERY,
            "rates": RATES,
            "tuning_seed": TUNING_SEED,
            "seeds": SEEDS,
            "heads_of": HEADS_OF,
            "train_characters": len(corpus.train),
            "validation_characters": len(corpus.validation),
            "validation_windows": len(validation[0]),
            "alphabet": corpus.alphabet,
        },
        "variants": [
            {
                **{
                    k: v
                    for k, v in trained[name].items()
                    if k not in ("head_measurements", "environment")
                },
                "wall_seconds": parts.seconds_of(name),
            }
            for name in names
        ],
        "heads": trained[HEADS_OF]["head_measurements"],
    }
    # where the variants trained (a worker on a GPU), not where they were
    # gathered
    where = {json.dumps(trained[name]["environment"]) for name in names}
    if len(where) != 1:
        raise ValueError(f"the parts ran in {len(where)} environments")
    parts.save(data, device=device, ran_in=json.loads(where.pop()))


if __name__ == "__main__":
    main()
