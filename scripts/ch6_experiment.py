"""Chapter 6's long runs: removing MiniLM's heads, and splitting its weights
into other head counts, scored on the 1,000 treebank sentences.

    python3 scripts/ch6_experiment.py   # about ten minutes on a 2-core CPU

writes ``mha_lib/results/ch6_experiment.json`` (with the command, device,
versions and wall time), which Chapter 6 reads. Every score compares the
sentence embeddings of all-MiniLM-L6-v2 with those of a changed model, over
sentences of the English PUD treebank: how far each embedding moves (1 -
cosine, mean and largest), for how many sentences the nearest neighbour among
the other 999 stays the same, and for how many it stays among the 10 nearest.

- ``single``: each of the 72 heads removed alone, scored on all sentences and
  on the sentences of the even-numbered documents;
- ``pruning``: heads removed one after another, the least disruptive first,
  the order chosen on the even documents and every step scored on the odd
  ones (held out); then every head removed (no attention at all);
- ``head_counts``: the same weights split into 1, 3, 6, 24 and 48 heads, with
  the logit scale of the new heads, with the trained 1/sqrt(32) (the split
  alone), and 12 heads at the new heads' scale (the temperature alone).
"""

import time

import torch

import mha_lib
from mha_lib import results
from mha_lib.ablation import each_head_removed, heads_removed_in_order
from mha_lib.pretrained import D_MODEL, embedding_change, load_minilm
from mha_lib.relations import load_treebank


def main():
    started = time.time()
    device = mha_lib.pick_device()
    model = load_minilm(device)
    treebank = load_treebank()
    texts = [sentence.text for sentence in treebank]
    documents = sorted({sentence.document for sentence in treebank})
    parity = [documents.index(s.document) % 2 for s in treebank]
    even = torch.tensor([p == 0 for p in parity]).nonzero().flatten()
    odd = torch.tensor([p == 1 for p in parity]).nonzero().flatten()

    def encode(model, head_mask=None):
        return model.encode(texts, head_mask=head_mask, batch_size=32).cpu()

    original = encode(model)
    shape = model.head_shape
    single, single_even = torch.zeros(shape).tolist(), []
    for index, head_mask in each_head_removed(shape, device=device):
        layer, head = divmod(index, shape[1])
        changed = encode(model, head_mask)
        single[layer][head] = embedding_change(original, changed)
        even_scores = embedding_change(original, changed, even)
        single_even.append(even_scores["moved_mean"])
        print(f"head {layer + 1}-{head + 1} removed", flush=True)
    # least disruptive first, chosen on the even documents
    order = torch.tensor(single_even).argsort().tolist()
    pruning = []
    masks = heads_removed_in_order(shape, order, device=device)
    for count, head_mask in enumerate(masks, start=1):
        scores = embedding_change(original, encode(model, head_mask), odd)
        pruning.append({"removed": count, **scores})
        print(f"{count} heads removed: {scores}", flush=True)
    head_counts = []
    for num_heads in (1, 3, 6, 24, 48):
        new_scale = (D_MODEL // num_heads) ** -0.5
        for change, variant in (
            ("both", model.with_num_heads(num_heads)),
            ("split", model.with_num_heads(num_heads, keep_scale=True)),
            ("temperature", model.with_num_heads(12, scale=new_scale)),
        ):
            scores = embedding_change(original, encode(variant))
            head_counts.append(
                {"heads": num_heads, "change": change, **scores}
            )
            print(f"{num_heads} heads, {change}: {scores}", flush=True)
    data = {
        "sentences": len(texts),
        "documents": len(documents),
        "even": even.tolist(),
        "odd": odd.tolist(),
        "single": single,
        "order": order,
        "pruning": pruning,
        "head_counts": head_counts,
    }
    seconds = time.time() - started
    path = results.save("ch6_experiment", data, device=device, seconds=seconds)
    print(f"wrote {path} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
