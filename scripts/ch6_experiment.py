"""Chapter 6's long runs: removing MiniLM's heads, and splitting its weights
into other head counts, scored on the 1,000 treebank sentences.

    python3 scripts/ch6_experiment.py   # about 30 minutes on a 2-core CPU

writes ``mha_lib/course/results/ch6_experiment.json`` (with the command,
device, versions and wall time), which Chapter 6 reads. Every score compares
the sentence embeddings of all-MiniLM-L6-v2 with those of a changed model, over
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

Each score also gives the rank correlation of every scored sentence's
similarities before and after (``similarity_rho``), and, for the single heads
and the head counts, each of the first 200 sentences' own move
(``moved_checked``): the chapter encodes those 200 again to check the file.
"""

import checkout  # this checkout's mha_lib, first
import torch

import mha_lib
from mha_lib.course import results
from mha_lib.course.ablation import each_head_removed, heads_removed_in_order
from mha_lib.course.pretrained import D_MODEL, embedding_change, load_minilm
from mha_lib.course.relations import load_treebank

CHECKED = 200  # the sentences whose moves the chapter checks live


def main():
    checkout.threads_only(__doc__)
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

    def scored(changed, rows=None):
        """``embedding_change`` and the first sentences' own moves."""
        first = (original[:CHECKED] * changed[:CHECKED]).sum(-1)
        return {
            **embedding_change(original, changed, rows),
            "moved_checked": (1 - first).tolist(),
        }

    # every step kept on disk as it ends, so a stopped run resumes
    parts = results.Parts("ch6_experiment")
    shape = model.head_shape

    def removed_alone(head_mask):
        changed = encode(model, head_mask)
        even_moved = embedding_change(original, changed, even)["moved_mean"]
        return {**scored(changed), "even_moved": even_moved}

    single, single_even = torch.zeros(shape).tolist(), []
    for index, head_mask in each_head_removed(shape, device=device):
        layer, head = divmod(index, shape[1])
        part = dict(  # a copy: the stored part keeps its even_moved
            parts.get(
                f"head {layer + 1}-{head + 1} removed",
                lambda mask=head_mask: removed_alone(mask),
            )
        )
        single_even.append(part.pop("even_moved"))
        single[layer][head] = part
    # least disruptive first, chosen on the even documents
    order = torch.tensor(single_even).argsort().tolist()
    pruning = []
    masks = heads_removed_in_order(shape, order, device=device)
    for count, head_mask in enumerate(masks, start=1):
        changed = parts.get(
            f"{count} heads removed",
            lambda mask=head_mask: embedding_change(
                original, encode(model, mask), odd
            ),
        )
        pruning.append({"removed": count, **changed})
    head_counts = []
    for num_heads in (1, 3, 6, 24, 48):
        new_scale = (D_MODEL // num_heads) ** -0.5
        for change, variant in (
            ("both", model.with_num_heads(num_heads)),
            ("split", model.with_num_heads(num_heads, keep_scale=True)),
            ("temperature", model.with_num_heads(12, scale=new_scale)),
        ):
            changed = parts.get(
                f"{num_heads} heads, {change}",
                lambda variant=variant: scored(encode(variant)),
            )
            head_counts.append(
                {"heads": num_heads, "change": change, **changed}
            )
    data = {
        "sentences": len(texts),
        "checked_sentences": CHECKED,
        "documents": len(documents),
        "even": even.tolist(),
        "odd": odd.tolist(),
        "single": single,
        "order": order,
        "pruning": pruning,
        "head_counts": head_counts,
    }
    parts.save(data, device=device)


if __name__ == "__main__":
    main()
