"""Chapter 7's full experiment: attention layers in a character model of real
text.

    python3 scripts/ch7_experiment.py   # about two hours on a 2-core CPU

writes ``mha_lib/results/ch7_experiment.json`` (with the command, device,
versions and wall time), which Chapter 7 reads. Every model is a
``CharTransformer`` on the King James Bible (the last six books held out),
context 64, batch 32, Adam with warm-up and cosine decay over 1,500 steps;
held-out bits per character on every validation window every 150 steps. Each
variant's peak learning rate is chosen from 1e-3, 3e-3 and 1e-2 on seed 0, then
seeds 1 and 2 train at it. Then, for the standard layer with 8 heads, the heads
of the three trained models are measured (offset profiles, copying on repeated
text, distances between heads, the cost of removing each), and every variant's
training step is timed.

A run that stops can be started again: finished variants are kept in a partial
file beside the result and skipped.
"""

import torch
import torch.nn.functional as F

import mha_lib
from mha_lib import results
from mha_lib.ablation import single_removals
from mha_lib.analysis import offset_profile, pairwise_head_distance
from mha_lib.corpus import load_bible, windows
from mha_lib.language_model import CharTransformer
from mha_lib.language_training import held_out_bits, train_language_models
from mha_lib.spec import AttentionSpec
from mha_lib.timing import summarize, time_round_robin

CONTEXT, BATCH, STEPS, EVERY = 64, 32, 1500, 150
RATES, TUNING_SEED, MORE_SEEDS = [1e-3, 3e-3, 1e-2], 0, [1, 2]
HEADS_OF = "standard 8 x 8"  # the variant whose heads are measured
D = 64


def variants():
    """``{name: (AttentionSpec, num_layers, group)}``: every model of the
    chapter."""
    table = {}
    for h in (1, 2, 4, 8, 16, 32):  # Table 3 (A): heads at a fixed d_model
        table[f"standard {h} x {D // h}"] = (AttentionSpec(D, h), 2, "A")
    for size in (4, 2):  # Table 3 (B): one path shrunk, at 8 heads
        qk = AttentionSpec(D, 8, head_dim=size, value_dim=8)
        table[f"queries/keys {size}, values 8"] = (qk, 2, "B")
        values = AttentionSpec(D, 8, head_dim=8, value_dim=size)
        table[f"queries/keys 8, values {size}"] = (values, 2, "B")
    for h in (8, 16):  # Bhojanapalli et al.: head size set apart from h
        table[f"sized {h} x 16"] = (
            AttentionSpec(D, h, head_dim=16),
            2,
            "sized",
        )
    for h in (2, 8):
        table[f"chunked {h} x {D // h}"] = (
            AttentionSpec(D, h, chunked=True),
            2,
            "chunked",
        )
    for h in (2, 4, 8):
        table[f"wide {h} x {D}"] = (AttentionSpec(D, h, head_dim=D), 2, "wide")
    for d_model in (96, 128):  # the wide layer's extra compute, spent on width
        table[f"d_model {d_model}, 8 heads"] = (
            AttentionSpec(d_model, 8),
            2,
            "wider",
        )
    for layers in (4,):  # ... or on depth
        table[f"{layers} layers, 8 heads"] = (
            AttentionSpec(D, 8),
            layers,
            "deeper",
        )
    return table


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


def run_variant(corpus, validation, spec, num_layers, device):
    """Seed 0 at every rate, then seeds 1 and 2 at the best: one record per
    run, and the three models trained at the best rate."""

    def train(seeds, rates):
        runs = train_language_models(
            corpus,
            attention=spec,
            seeds=seeds,
            steps=STEPS,
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
        return records, [model for model, _ in runs]

    tuning, tuned = train([TUNING_SEED] * len(RATES), RATES)
    best = min(range(len(RATES)), key=lambda i: tuning[i]["held_out"][-1])
    more, models = train(MORE_SEEDS, [RATES[best]] * len(MORE_SEEDS))
    return tuning + more, [tuned[best], *models]


def repeated_text(corpus, count, half, seed=0):
    """Random characters, each sequence a random half repeated: ``(count, 2 *
    half)``."""
    generator = torch.Generator().manual_seed(seed)
    first = torch.randint(
        len(corpus.alphabet), (count, half), generator=generator
    )
    return torch.cat([first, first], dim=1)


def mean_distance(weights, chunk=8):
    """Chapter 4's Jensen-Shannon distance between heads, averaged over windows
    in chunks (all windows at once would need gigabytes): ``(heads, heads)``.
    """
    parts = [pairwise_head_distance(w) for w in weights.split(chunk)]
    return torch.stack(parts).mean(0)


@torch.no_grad()
def heads_of(model, corpus, validation):
    """What each head of a trained model does, measured (Chapter 4's tools)."""
    inputs, targets = validation
    probe = inputs[:64]
    _, weights = model(
        probe, need_weights=True
    )  # one (batch, heads, n, n) per layer
    profiles = [offset_profile(w, first=0)[:, :16] for w in weights]
    attention = torch.cat(weights, dim=1)  # (batch, layers * heads, n, n)
    distance = mean_distance(attention)
    # induction: on random characters repeated once, a query in the second copy
    # can look at the character after its previous occurrence, offset half - 1
    half = CONTEXT // 2
    repeated = repeated_text(corpus, 128, half)
    logits, rep_weights = model(repeated[:, :-1], need_weights=True)
    loss = F.cross_entropy(
        logits.transpose(1, 2), repeated[:, 1:], reduction="none"
    )  # (batch, positions)
    bits = loss.mean(0) / torch.log(torch.tensor(2.0))
    queries = torch.arange(half, 2 * half - 1)
    induction = [
        w[:, :, queries, queries - half + 1].mean((0, 2)) for w in rep_weights
    ]
    base = held_out_bits(model, inputs, targets).item()

    def bits_without(head_mask):
        return held_out_bits(_Masked(model, head_mask), inputs, targets)

    removal = single_removals(bits_without, model.head_shape) - base
    return {
        "held_out": base,
        "offset_profiles": [p.tolist() for p in profiles],
        "distance": distance.tolist(),
        "repeated_bits_first_copy": bits[: half - 1].mean().item(),
        "repeated_bits_second_copy": bits[half:].mean().item(),
        "induction": [i.tolist() for i in induction],
        "removal_cost": removal.tolist(),
    }


class _Masked(torch.nn.Module):
    """A model with some heads removed, callable as ``model(ids)``."""

    def __init__(self, model, head_mask):
        super().__init__()
        self.model, self.head_mask = model, head_mask

    def forward(self, ids):
        return self.model(ids, head_mask=self.head_mask)


def measure_heads(models, lr, corpus, validation):
    """The heads of the three models trained at the best rate, measured."""
    models = [model.cpu().eval() for model in models]
    probe = validation[0][:64]
    with torch.no_grad():
        maps = [torch.cat(m(probe, need_weights=True)[1], 1) for m in models]
    return {
        "variant": HEADS_OF,
        "lr": lr,
        "seeds": [TUNING_SEED, *MORE_SEEDS],
        "models": [heads_of(m, corpus, validation) for m in models],
        # (batch, seeds * layers * heads, n, n): every pair of heads
        "distance_across_seeds": mean_distance(torch.cat(maps, 1)).tolist(),
    }


def step_seconds(corpus, table, device, repeats=7):
    """Median seconds of one training step of one model, for every variant,
    timed round-robin so that changes in machine load hit every variant alike.
    """
    steps = {}
    for name, (spec, num_layers, _) in table.items():
        model = CharTransformer(
            len(corpus.alphabet),
            attention=spec,
            context=CONTEXT,
            num_layers=num_layers,
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        ids = torch.randint(len(corpus.alphabet), (BATCH, CONTEXT + 1)).to(
            device
        )

        def step(model=model, optimizer=optimizer, ids=ids):
            logits, _ = model(ids[:, :-1])
            targets = ids[:, 1:]
            loss = F.cross_entropy(logits.transpose(1, 2), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        steps[name] = step
    times = time_round_robin(steps, device, repeats=repeats, warmup=2)
    return {name: summarize(values)[0] for name, values in times.items()}


def main():
    device = mha_lib.pick_device()
    corpus = load_bible()
    validation = windows(corpus.encode(corpus.validation), CONTEXT)
    parts = results.Parts("ch7_experiment")
    table = variants()

    def train_variant(name):
        spec, num_layers, group = table[name]
        runs, models = run_variant(
            corpus, validation, spec, num_layers, device
        )
        vocab = len(corpus.alphabet)
        done = {**describe(name, spec, num_layers, group, vocab), "runs": runs}
        if name == HEADS_OF:
            lr = runs[-1]["lr"]
            measured = measure_heads(models, lr, corpus, validation)
            done["head_measurements"] = measured
        return done

    trained = {
        name: parts.get(name, lambda name=name: train_variant(name))
        for name in table
    }
    timed = step_seconds(corpus, table, device)
    data = {
        "settings": {
            "context": CONTEXT,
            "batch_size": BATCH,
            "steps": STEPS,
            "evaluate_every": EVERY,
            "rates": RATES,
            "tuning_seed": TUNING_SEED,
            "more_seeds": MORE_SEEDS,
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
                    if k != "head_measurements"
                },
                "wall_seconds": parts.seconds_of(name),
                "step_seconds": timed[name],
            }
            for name in table
        ],
        "heads": trained[HEADS_OF]["head_measurements"],
    }
    parts.save(data, device=device)


if __name__ == "__main__":
    main()
