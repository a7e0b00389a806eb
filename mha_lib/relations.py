"""Do heads follow syntax? Hand-labelled dependency arcs and Clark et al.'s
(2019) head test (Chapter 6).

``data/relations.jsonl`` holds one sentence per line: ``text`` (words separated
by single spaces, punctuation as words of its own) and, for each relation in
:data:`RELATIONS`, a list of ``[dependent, head]`` word indices (0-based)
labelled by hand:

- ``det``: a determiner (the, a, this, every, ...) -> its noun;
- ``dobj``: a direct object (the noun) -> its verb;
- ``pobj``: the object of a preposition (the noun) -> the preposition;
- ``poss``: a possessive pronoun (my, his, their, ...) -> its noun.

Arcs point from the dependent to its syntactic head, the direction in which
Clark et al. found BERT's best heads for these four relations. A head is scored
as a classifier: it predicts, for a dependent word, the other word it attends
to most.
"""

import json
import math
from importlib import resources

import torch

from .checks import check_tensor

RELATIONS = ("det", "dobj", "pobj", "poss")


def load_relations():
    """The labelled sentences: a list of dicts ``{"words": [...], relation:
    [(dependent, head), ...]}``."""
    text = (
        resources.files("mha_lib")
        .joinpath("data/relations.jsonl")
        .read_text(encoding="utf-8")
    )
    sentences = []
    for line in text.splitlines():
        record = json.loads(line)
        sentences.append(
            {
                "words": record["text"].split(" "),
                **{r: [tuple(arc) for arc in record[r]] for r in RELATIONS},
            }
        )
    return sentences


def word_attention(weights, word_ids):
    """Token-to-token attention -> word-to-word attention, as Clark et al.
    (2019) convert it.

    ``weights``: ``(..., n_tokens, n_tokens)``; ``word_ids``: the word of each
    token (``None`` for special tokens such as [CLS] and [SEP], which are
    dropped). Attention *from* a word split into pieces is the mean over its
    pieces' rows; attention *to* it is the sum over its pieces' columns.
    Returns ``(..., n_words, n_words)``.
    """
    check_tensor("weights", weights)
    if (
        weights.dim() < 2
        or weights.shape[-1] != weights.shape[-2]
        or weights.shape[-1] != len(word_ids)
    ):
        raise ValueError(
            "weights must end in (n_tokens, n_tokens) with n_tokens = "
            f"len(word_ids) = {len(word_ids)}, "
            f"got {tuple(weights.shape)}"
        )
    words = sorted({w for w in word_ids if w is not None})
    if words != list(range(len(words))):
        raise ValueError(
            "word_ids must number the words 0, 1, 2, ... without gaps, got "
            f"{word_ids}"
        )
    pieces = torch.zeros(
        len(words), len(word_ids), dtype=weights.dtype, device=weights.device
    )
    for token, word in enumerate(word_ids):
        if word is not None:
            pieces[word, token] = (
                1.0  # (n_words, n_tokens): which tokens make up each word
            )
    mean_rows = pieces / pieces.sum(1, keepdim=True)
    return mean_rows @ weights @ pieces.T  # (..., n_words, n_words)


def most_attended(word_weights):
    """For every word, the index of the *other* word it attends to most:
    ``(..., n_words)``."""
    n = word_weights.shape[-1]
    itself = torch.eye(n, dtype=torch.bool, device=word_weights.device)
    return word_weights.masked_fill(itself, float("-inf")).argmax(-1)


def head_accuracy(word_maps, sentences, relation):
    """Fraction of the relation's arcs for which each head's most-attended word
    is the syntactic head.

    ``word_maps``: one ``(layers, heads, n_words, n_words)`` tensor per
    sentence (see :func:`word_attention`). Returns ``(accuracy (layers, heads),
    number of arcs)``.
    """
    if relation not in RELATIONS:
        raise ValueError(
            f"relation must be one of {RELATIONS}, got {relation!r}"
        )
    if len(word_maps) != len(sentences):
        raise ValueError(
            f"one word map per sentence expected: {len(word_maps)} maps, "
            f"{len(sentences)} sentences"
        )
    hits, total = 0, 0
    for maps, sentence in zip(word_maps, sentences):
        predicted = most_attended(maps)  # (layers, heads, n_words)
        for dependent, head in sentence[relation]:
            hits = hits + (predicted[..., dependent] == head).double()
            total += 1
    if total == 0:
        raise ValueError(f"no {relation!r} arcs in these sentences")
    return hits / total, total


def offset_accuracy(sentences, relation, offsets=range(-5, 6)):
    """Accuracy of the fixed-offset baseline "the head is the word ``k`` places
    away": ``{k: accuracy}``."""
    arcs = [(d, h) for sentence in sentences for d, h in sentence[relation]]
    if not arcs:
        raise ValueError(f"no {relation!r} arcs in these sentences")
    return {
        k: sum(h == d + k for d, h in arcs) / len(arcs)
        for k in offsets
        if k != 0
    }


def attention_statistics(weights):
    """Where each head's attention goes in one sequence (after Clark et al.
    2019).

    ``weights``: ``(..., n, n)`` attention of one sentence whose first token is
    ``[CLS]`` and last is ``[SEP]``. Returns a dict of ``(...)`` tensors, each
    averaged over the queries: ``previous`` and ``next`` (weight on the
    neighbouring token, over the queries that have one), ``cls``, ``sep``,
    ``self`` and ``entropy`` (of each row, divided by ``log n``, so 1 is
    uniform).
    """
    n = weights.shape[-1]
    if weights.shape[-2] != n or n < 3:
        raise ValueError(
            "weights must end in (n, n) with n >= 3, got "
            f"{tuple(weights.shape)}"
        )
    index = torch.arange(n, device=weights.device)
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1) / math.log(n)
    return {
        "previous": weights[..., index[1:], index[1:] - 1].mean(-1),
        "next": weights[..., index[:-1], index[:-1] + 1].mean(-1),
        "cls": weights[..., :, 0].mean(-1),
        "sep": weights[..., :, -1].mean(-1),
        "self": weights[..., index, index].mean(-1),
        "entropy": entropy.mean(-1),
    }


HEAD_CLASSES = (
    "previous token",
    "next token",
    "[CLS]",
    "[SEP]",
    "broad",
    "mixed",
)


def classify_heads(statistics, *, share=0.5, broad=0.75):
    """Label every head with the first rule it meets.

    "previous token" / "next token" / "[CLS]" / "[SEP]" when at least ``share``
    of its attention goes there on average; "broad" when its mean normalised
    entropy is at least ``broad``; otherwise "mixed". ``statistics`` is
    :func:`attention_statistics` output, averaged over sentences. Returns a
    nested list with the shape of the statistics, e.g. (layers, heads).
    """
    rules = [
        ("previous token", "previous"),
        ("next token", "next"),
        ("[CLS]", "cls"),
        ("[SEP]", "sep"),
    ]

    def label(position):
        for name, key in rules:
            if statistics[key][position] >= share:
                return name
        return "broad" if statistics["entropy"][position] >= broad else "mixed"

    shape = statistics["entropy"].shape
    return [
        [label((layer, head)) for head in range(shape[1])]
        for layer in range(shape[0])
    ]
