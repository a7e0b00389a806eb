"""Chapter 6's long runs: removing MiniLM's heads, and splitting its weights
into other head counts, scored on the 1,000 treebank sentences.

    python3 scripts/ch6_experiment.py   # about twenty minutes on a 2-core CPU

writes ``mha_lib/results/ch6_experiment.json`` (with the command, device,
versions and wall time), which Chapter 6 reads. Every score compares the
sentence embeddings of all-MiniLM-L6-v2 with those of a changed model, over
the 1,000 sentences of the English PUD treebank: how far each embedding moves
(1 - cosine, mean and largest) and for how many sentences the nearest
neighbour among the other 999 stays the same.

- ``single``: each of the 72 heads removed alone;
- ``pruning``: heads removed one after another, the least disruptive first
  (the order of ``single``), and every head removed (no attention at all);
- ``head_counts``: the same weights split into 1, 3, 6, 24 and 48 heads, with
  the logit scale of the new heads and with the trained 1/sqrt(32).
"""

import time

import torch

import mha_lib
from mha_lib import results
from mha_lib.pretrained import load_minilm
from mha_lib.relations import load_treebank


def neighbours(embeddings):
    """Each sentence's nearest neighbour among the others (cosine)."""
    similarity = embeddings @ embeddings.T
    similarity.fill_diagonal_(-2.0)
    return similarity.argmax(1)


def compare(original, nearest, changed):
    """How far ``changed`` embeddings are from ``original`` ones."""
    moved = 1 - (original * changed).sum(-1)  # 1 - cos, per sentence
    kept = (neighbours(changed) == nearest).float().mean().item()
    return {
        "moved_mean": moved.mean().item(),
        "moved_max": moved.max().item(),
        "neighbour_kept": kept,
    }


def main():
    started = time.time()
    device = mha_lib.pick_device()
    model = load_minilm(device)
    texts = [sentence.text for sentence in load_treebank()]

    def encode(model, head_mask=None):
        return model.encode(texts, head_mask=head_mask, batch_size=32).cpu()

    original = encode(model)
    nearest = neighbours(original)
    shape = model.head_shape
    single = torch.zeros(shape).tolist()
    for index in range(shape[0] * shape[1]):
        head_mask = torch.ones(shape, device=device)
        head_mask.view(-1)[index] = 0
        layer, head = divmod(index, shape[1])
        single[layer][head] = compare(
            original, nearest, encode(model, head_mask)
        )
        print(f"head {layer + 1}-{head + 1} removed", flush=True)
    moved = torch.tensor(
        [[cell["moved_mean"] for cell in row] for row in single]
    )
    order = moved.flatten().argsort().tolist()  # least disruptive first
    head_mask = torch.ones(shape, device=device)
    pruning = []
    for count, index in enumerate(order, start=1):
        head_mask.view(-1)[index] = 0
        scores = compare(original, nearest, encode(model, head_mask))
        pruning.append({"removed": count, **scores})
        print(f"{count} heads removed: {scores}", flush=True)
    head_counts = []
    for num_heads in (1, 3, 6, 24, 48):
        for keep_scale in (False, True):
            variant = model.with_num_heads(num_heads, keep_scale=keep_scale)
            scores = compare(original, nearest, encode(variant))
            head_counts.append(
                {"heads": num_heads, "keep_scale": keep_scale, **scores}
            )
            print(f"{num_heads} heads, keep_scale={keep_scale}: {scores}")
    data = {
        "sentences": len(texts),
        "single": single,
        "order": order,
        "pruning": pruning,
        "head_counts": head_counts,
    }
    seconds = time.time() - started
    path = results.save("ch6_experiment", data, device=device, seconds=seconds)
    print(f"wrote {path} in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
