"""Chapter 7's longer budget: two variants of ``scripts/ch7_experiment.py``
trained three times as long.

    python3 scripts/ch7_long.py   # about 40 minutes on a 2-core CPU

writes ``mha_lib/course/results/ch7_long.json``. The standard layer with 1 head
and with 8, 4,500 steps instead of 1,500 (the same warm-up, the cosine decay
stretched over the longer run), held-out bits per character every 150 steps.
Seed 0 tries the rate each variant chose at 1,500 steps, half of it and twice
it, and is reported nowhere; seeds 1 to 5 train at seed 0's best. A run that
stops resumes: finished variants are kept in a partial file and skipped.
"""

from ch7_experiment import CONTEXT, EVERY, SEEDS, TUNING_SEED, curves

import mha_lib
from mha_lib.course import results
from mha_lib.course.corpus import load_bible, windows

LONG_STEPS = 4500
LONG = ["standard 1 x 64", "standard 8 x 8"]


def main():
    device = mha_lib.pick_device()
    corpus = load_bible()
    validation = windows(corpus.encode(corpus.validation), CONTEXT)
    short = {
        v["variant"]: v
        for v in results.load("ch7_experiment")["data"]["variants"]
    }
    parts = results.Parts("ch7_long")

    def train_long(name, seeds, rates):
        return curves(
            corpus, validation, name, seeds, rates, device, LONG_STEPS
        )

    def run(name):
        around = short[name]["chosen_lr"]
        rates = [around / 2, around, around * 2]
        tuning = train_long(name, [TUNING_SEED] * len(rates), rates)
        chosen = min(tuning, key=lambda r: r["held_out"][-1])["lr"]
        reported = train_long(name, SEEDS, [chosen] * len(SEEDS))
        return {
            "variant": name,
            "chosen_lr": chosen,
            "runs": tuning + reported,
        }

    done = [parts.get(name, lambda name=name: run(name)) for name in LONG]
    data = {
        "settings": {
            "steps": LONG_STEPS,
            "evaluate_every": EVERY,
            "seeds": SEEDS,
        },
        "variants": [
            {**v, "wall_seconds": parts.seconds_of(v["variant"])} for v in done
        ],
    }
    parts.save(data, device=device)


if __name__ == "__main__":
    main()
