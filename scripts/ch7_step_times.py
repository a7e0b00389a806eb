"""Chapter 7's step times: one training step of every variant of
``scripts/ch7_experiment.py`` and of sized 32 x 16, on this machine's CPU.

    python3 scripts/ch7_step_times.py   # about two minutes on a 2-core CPU

writes ``mha_lib/course/results/ch7_step_times.json``. The training runs may
have used a GPU, where every one of these small models takes about the same
time (the kernels' launches, not their arithmetic, set it); time on the CPU the
course is read on grows with the work, as it would for a model large enough
to fill a GPU. Each variant's step (one model, a batch of 32 windows of 64
characters, forward, backward and Adam) is timed round-robin on one thread,
so that changes in machine load hit every variant alike.
"""

import time

import checkout  # this checkout's mha_lib, first
import torch
import torch.nn.functional as F
from ch7_experiment import BATCH, CONTEXT, every_variant

from mha_lib.course import results
from mha_lib.course.corpus import load_bible
from mha_lib.course.language_model import CharTransformer
from mha_lib.course.timing import summarize, time_round_robin

REPEATS, WARMUP = 61, 3


def training_step(spec, num_layers, vocab, generator):
    """One Adam step of one model on random windows, as a function."""
    model = CharTransformer(
        vocab, attention=spec, context=CONTEXT, num_layers=num_layers
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(vocab, (BATCH, CONTEXT + 1), generator=generator)

    def step():
        logits, _ = model(ids[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def main():
    args = checkout.threads_only(__doc__)
    begun = time.time()
    device = torch.device("cpu")
    vocab = len(load_bible().alphabet)
    generator = torch.Generator().manual_seed(0)
    steps = {
        name: training_step(spec, num_layers, vocab, generator)
        for name, (spec, num_layers, _) in every_variant().items()
    }
    times = time_round_robin(steps, device, repeats=REPEATS, warmup=WARMUP)
    data = {
        "repeats": REPEATS,
        "threads": args.threads,
        "step_seconds": {
            name: dict(zip(("median", "q1", "q3"), summarize(values)))
            for name, values in times.items()
        },
    }
    path, _ = results.save(
        "ch7_step_times", data, device=device, seconds=time.time() - begun
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
