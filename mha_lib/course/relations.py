"""Clark et al.'s (2019) analyses of a model's heads, on a gold treebank.

Two kinds of job a head can have. By position: :func:`attention_statistics` and
:func:`classify_heads` (previous token, next token, [CLS], [SEP], broad). By
syntax: does a head's most-attended word find the word that a gold dependency
arc links to? The arcs come from the English part of the Parallel Universal
Dependencies treebank (1,000 news and Wikipedia sentences, UD v2,
hand-corrected; CC BY-SA 3.0), shipped in
``mha_lib/course/data/ud-english-pud`` with its README and licence, unchanged
from Universal Dependencies release :data:`UD_RELEASE` (the repository
UniversalDependencies/UD_English-PUD at :data:`UD_COMMIT`). A head
follows a relation only where it beats two baselines chosen and scored the same
way: the best fixed offset, and the best rule that knows the gold word classes
("the nearest NOUN to the right").
"""

import math
from dataclasses import dataclass
from importlib import resources

import torch

from ..checks import check_tensor

TREEBANK = "data/ud-english-pud/en_pud-ud-test.conllu"
TREEBANK_SHA256 = (
    "c80584f2bc2b31d5bada78a1136f9feec7ac49e5e18898db02dea434b5b8f0aa"
)
# where the three files come from: the release whose tag (r2.18) holds them
# byte for byte, and its commit
UD_RELEASE = "2.18"
UD_COMMIT = "e173a1be1b442faf34e7d5a502189ad5d9d1e197"
# UD relations tested, by their base label; "poss" is UD's nmod:poss
RELATIONS = (
    "det",
    "amod",
    "nsubj",
    "obj",
    "obl",
    "case",
    "advmod",
    "aux",
    "mark",
    "poss",
    "compound",
)
DIRECTIONS = ("dependent to head", "head to dependent")
# the universal word classes
UPOS = tuple(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM "
    "VERB X".split()
)
# what the word-class rule may look for: one class, or one of these groups
WORD_CLASSES = UPOS + ("NOUN|PROPN", "NOUN|PROPN|PRON", "VERB|AUX")


@dataclass(frozen=True)
class Sentence:
    """One treebank sentence: its text, its words, their word classes (UPOS),
    the index of each word's syntactic head (``-1`` for the root), the
    relation labels, and its ``sent_id``."""

    text: str
    words: tuple
    upos: tuple
    heads: tuple
    relations: tuple
    sent_id: str = ""

    @property
    def document(self):
        """The source document: PUD's ids are a document's id and a
        three-digit sentence number (``n01001011``: document ``n01001``)."""
        return self.sent_id[:-3]


def relation_of(label):
    """The tested relation of a UD label (``nmod:poss`` -> ``poss``,
    ``obl:tmod`` -> ``obl``)."""
    return "poss" if label == "nmod:poss" else label.split(":")[0]


def read_conllu(text):
    """The sentences of a CoNLL-U text; multiword tokens and empty nodes are
    skipped, so word indices are the 0-based positions of the syntactic words.
    """
    sentences, rows, comments = [], [], {}
    for line in text.splitlines() + [""]:
        if line.startswith("# ") and " = " in line:
            key, _, value = line[2:].partition(" = ")
            comments[key] = value
        if line.startswith("#"):
            continue
        if not line.strip():
            if rows:
                words, upos, heads, labels = zip(*rows)
                sentence = Sentence(
                    comments.get("text", ""),
                    words,
                    upos,
                    heads,
                    labels,
                    comments.get("sent_id", ""),
                )
                sentences.append(sentence)
            rows, comments = [], {}
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            raise ValueError(f"a CoNLL-U word line has 10 columns: {line!r}")
        if not columns[0].isdigit():  # "3-4" multiword token, "5.1" empty node
            continue
        rows.append((columns[1], columns[3], int(columns[6]) - 1, columns[7]))
    return sentences


def load_treebank(expected=TREEBANK_SHA256):
    """The 1,000 sentences of the shipped treebank, its SHA-256 checked."""
    import hashlib

    data = (resources.files(__package__) / TREEBANK).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ValueError(
            f"{TREEBANK} has SHA-256 {digest}, expected {expected}"
        )
    return read_conllu(data.decode("utf-8"))


def relation_items(sentences, relation, direction):
    """What a classifier must find, for every arc of ``relation``.

    ``direction`` "dependent to head": one item per dependent, its target the
    head. "head to dependent": one item per head word with such dependents,
    any of them correct. Returns a list of ``(sentence index, query word,
    frozenset of target words)``.
    """
    if relation not in RELATIONS:
        raise ValueError(
            f"relation must be one of {RELATIONS}, got {relation!r}"
        )
    if direction not in DIRECTIONS:
        raise ValueError(
            f"direction must be one of {DIRECTIONS}, got {direction!r}"
        )
    items = []
    for index, sentence in enumerate(sentences):
        arcs = [
            (dependent, head)
            for dependent, (head, label) in enumerate(
                zip(sentence.heads, sentence.relations)
            )
            if head >= 0 and relation_of(label) == relation
        ]
        if direction == DIRECTIONS[0]:
            items += [(index, d, frozenset([h])) for d, h in arcs]
        else:
            for head in sorted({h for _, h in arcs}):
                dependents = frozenset(d for d, h in arcs if h == head)
                items.append((index, head, dependents))
    return items


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


def head_hits(predicted, items):
    """Which items each head gets right: ``(layers, heads, items)`` bools.

    ``predicted``: per sentence, :func:`most_attended` of its word map,
    ``(layers, heads, n_words)``.
    """
    hits = [
        torch.isin(predicted[s][..., query], torch.tensor(sorted(targets)))
        for s, query, targets in items
    ]
    return torch.stack(hits, dim=-1)


def offset_hits(sentences, items, offsets=range(-5, 6)):
    """The baseline "the word ``k`` places away": ``{k: (items,) bools}``."""
    return {
        k: torch.tensor([query + k in targets for _, query, targets in items])
        for k in offsets
        if k != 0
    }


def nearest_of_class(upos, query, step, word_class):
    """The nearest word from ``query`` in direction ``step`` (+1 right, -1
    left) whose word class is ``word_class`` (one class, or several joined by
    ``|``), or ``None``."""
    classes = set(word_class.split("|"))
    position = query + step
    while 0 <= position < len(upos):
        if upos[position] in classes:
            return position
        position += step
    return None


def class_rule_hits(sentences, items):
    """The baseline "the nearest word of class C to the left or right", for
    every class or group of :data:`WORD_CLASSES` and side: ``{(side, class):
    (items,) bools}``."""
    rules = {}
    for step, side in ((1, "right"), (-1, "left")):
        for word_class in WORD_CLASSES:
            rules[side, word_class] = torch.tensor(
                [
                    nearest_of_class(
                        sentences[s].upos, query, step, word_class
                    )
                    in targets
                    for s, query, targets in items
                ]
            )
    return rules


def held_out(hits, first, second):
    """The best of several classifiers, chosen on one half of the items and
    scored on the other, both ways.

    ``hits``: ``{name: (items,) bools}``, or a tensor ``(layers, heads,
    items)``; ``first`` and ``second`` split the item indices in two. Returns
    ``(scored, chosen)``: for every item whether the classifier chosen on the
    other half gets it right, ``(items,)``, and the two choices (names, or
    ``(layer, head)`` pairs counted from 0).
    """
    count = len(first) + len(second)
    scored, chosen = torch.zeros(count, dtype=torch.bool), []
    for choose, test in ((first, second), (second, first)):
        if isinstance(hits, dict):
            name = max(hits, key=lambda k: hits[k][choose].float().mean())
            scored[test] = hits[name][test]
        else:
            flat = hits.flatten(0, -2)  # (candidates, items)
            best = flat[:, choose].float().mean(1).argmax().item()
            name = divmod(best, hits.shape[-2])
            scored[test] = flat[best, test]
        chosen.append(name)
    return scored, chosen


def probe_features(word_maps, items):
    """Clark et al.'s attention-only probe reads, for a query word and every
    candidate word of its sentence, the attention between the two in every
    head, both ways.

    ``word_maps``: per sentence, ``(layers, heads, words, words)``;
    ``items``: from :func:`relation_items`. Returns ``(features, candidates,
    targets)``: ``(items, n, 2 * layers * heads)`` (zero past a sentence's
    end), and two ``(items, n)`` masks: every other word of the sentence, and
    the words that are right.
    """
    n = max(word_maps[s].shape[-1] for s, _, _ in items)
    layers, heads = word_maps[0].shape[:2]
    features = torch.zeros(len(items), n, 2 * layers * heads)
    candidates = torch.zeros(len(items), n, dtype=torch.bool)
    targets = torch.zeros_like(candidates)
    for row, (s, query, right) in enumerate(items):
        maps = word_maps[s]
        words = maps.shape[-1]
        # (layers, heads, words) twice -> (words, 2 * layers * heads)
        both = torch.cat([maps[..., query, :], maps[..., :, query]], dim=1)
        features[row, :words] = both.flatten(0, 1).T
        candidates[row, :words] = True
        candidates[row, query] = False
        targets[row, sorted(right)] = True
    return features, candidates, targets


def fit_probe(features, candidates, targets, *, decay=1e-3, steps=100):
    """One weight per feature (per head and direction), fitted by L-BFGS so
    that a softmax over each item's candidates puts its mass on the right
    words, with an L2 penalty ``decay``; deterministic."""
    weights = torch.zeros(features.shape[-1], requires_grad=True)
    optimizer = torch.optim.LBFGS(
        [weights], max_iter=steps, line_search_fn="strong_wolfe"
    )
    # the candidates' features alone, (candidates, features): two fifths of
    # the padded (items, n, features) in Chapter 6, read twice a step
    item, word = candidates.nonzero(as_tuple=True)
    read = features[item, word]
    padded = torch.full(candidates.shape, -torch.inf)  # (items, n)

    def loss():
        optimizer.zero_grad()
        logits = padded.index_put((item, word), read @ weights)
        right = logits.masked_fill(~targets, -torch.inf)
        value = (logits.logsumexp(-1) - right.logsumexp(-1)).mean()
        value = value + decay * weights.pow(2).sum()
        value.backward()
        return value

    optimizer.step(loss)
    return weights.detach()


def probe_hits(features, candidates, targets, first, second):
    """The probe fitted on one half of the items (``first`` or ``second``,
    item indices) and scored on the other, both ways, as :func:`held_out`
    scores one head: ``(items,)`` bools, whether its top candidate is
    right."""
    scored = torch.zeros(len(features), dtype=torch.bool)
    for fit, test in ((first, second), (second, first)):
        weights = fit_probe(features[fit], candidates[fit], targets[fit])
        logits = features[test] @ weights
        best = logits.masked_fill(~candidates[test], -torch.inf).argmax(-1)
        scored[test] = targets[test].gather(-1, best[:, None])[:, 0]
    return scored


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
