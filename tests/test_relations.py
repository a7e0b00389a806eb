"""The hand-labelled dependency arcs and the head-as-classifier scoring of
Clark et al. (2019)."""

import math

import pytest
import torch

from mha_lib.relations import (
    HEAD_CLASSES,
    RELATIONS,
    attention_statistics,
    classify_heads,
    head_accuracy,
    load_relations,
    most_attended,
    offset_accuracy,
    word_attention,
)

DETERMINERS = {
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "every",
    "each",
    "some",
}
POSSESSIVES = {"my", "your", "his", "her", "its", "our", "their"}
PREPOSITIONS = {
    "to",
    "over",
    "about",
    "before",
    "in",
    "on",
    "from",
    "under",
    "with",
    "at",
    "for",
    "by",
    "across",
    "into",
    "along",
    "behind",
    "near",
    "during",
    "of",
    "off",
    "without",
    "after",
}


@pytest.fixture(scope="module")
def sentences():
    return load_relations()


def test_the_labelled_file_is_intact(sentences):
    assert len(sentences) >= 40
    counts = {
        relation: sum(len(s[relation]) for s in sentences)
        for relation in RELATIONS
    }
    assert min(counts.values()) >= 25, counts
    texts = [" ".join(s["words"]) for s in sentences]
    assert len(set(texts)) == len(texts), "a sentence appears twice"
    for sentence in sentences:
        words = [w.lower() for w in sentence["words"]]
        assert all(words), f"empty word (double space?) in {sentence['words']}"
        arcs = [arc for relation in RELATIONS for arc in sentence[relation]]
        for dependent, head in arcs:
            assert (
                0 <= dependent < len(words)
                and 0 <= head < len(words)
                and dependent != head
            )
        for dependent, head in sentence["det"]:
            assert words[dependent] in DETERMINERS and head > dependent, (
                words,
                dependent,
                head,
            )
        for dependent, head in sentence["poss"]:
            assert words[dependent] in POSSESSIVES and head > dependent, (
                words,
                dependent,
                head,
            )
        for dependent, head in sentence["pobj"]:
            assert words[head] in PREPOSITIONS and head < dependent, (
                words,
                dependent,
                head,
            )
        for dependent, head in sentence["dobj"]:
            assert (
                head < dependent
                and words[head] not in PREPOSITIONS | DETERMINERS
            ), (words, dependent, head)
        for relation in ("dobj", "pobj"):
            dependents = [d for d, _ in sentence[relation]]
            assert len(set(dependents)) == len(dependents), (
                f"a word has two {relation} heads"
            )


def test_word_attention_merges_pieces_as_clark_et_al():
    # tokens: [CLS] w0 w1a w1b w2 [SEP]; rows sum to 1
    weights = torch.softmax(torch.randn(2, 6, 6), dim=-1)
    word_ids = [None, 0, 1, 1, 2, None]
    words = word_attention(weights, word_ids)
    assert words.shape == (2, 3, 3)
    # to a word: sum
    torch.testing.assert_close(
        words[:, 0, 1], weights[:, 1, 2] + weights[:, 1, 3]
    )
    # from: mean
    torch.testing.assert_close(
        words[:, 1, 0], (weights[:, 2, 1] + weights[:, 3, 1]) / 2
    )
    torch.testing.assert_close(words[:, 2, 2], weights[:, 4, 4])
    with pytest.raises(ValueError, match="n_tokens"):
        word_attention(weights, word_ids[:-1])
    with pytest.raises(ValueError, match="without gaps"):
        word_attention(weights, [None, 0, 2, 2, 3, None])


def test_head_accuracy_and_offset_baseline():
    sentences = [
        {
            "words": ["the", "dog", "saw", "a", "cat"],
            "det": [(0, 1), (3, 4)],
            "dobj": [(4, 2)],
            "pobj": [],
            "poss": [],
        }
    ]
    maps = torch.zeros(1, 2, 5, 5)  # (layers, heads, n_words, n_words)
    maps[0, 0, 0, 1] = maps[0, 0, 3, 4] = (
        1.0  # head 0: each determiner -> the next word
    )
    maps[0, 1, 0, 0] = (
        5.0  # head 1: attends to itself, which does not count as a prediction
    )
    maps[0, 1, 0, 2] = maps[0, 1, 3, 2] = 1.0
    assert most_attended(maps)[0, 1, 0].item() == 2
    accuracy, n = head_accuracy([maps], sentences, "det")
    assert n == 2 and accuracy[0].tolist() == [1.0, 0.0]
    baseline = offset_accuracy(sentences, "det")
    assert baseline[1] == 1.0 and baseline[-1] == 0.0 and 0 not in baseline
    assert offset_accuracy(sentences, "dobj")[-2] == 1.0
    with pytest.raises(ValueError, match="relation"):
        head_accuracy([maps], sentences, "nsubj")
    with pytest.raises(ValueError, match="no 'pobj' arcs"):
        offset_accuracy(sentences, "pobj")


def test_attention_statistics_and_classification():
    n = 6
    previous = torch.zeros(n, n)
    previous[0, 0] = 1
    previous[torch.arange(1, n), torch.arange(n - 1)] = 1
    to_cls = torch.zeros(n, n)
    to_cls[:, 0] = 1
    uniform = torch.full((n, n), 1 / n)
    # (layers, heads, n, n)
    maps = torch.stack([previous, to_cls, uniform]).view(1, 3, n, n)
    stats = attention_statistics(maps)
    assert stats["previous"][0, 0] == 1 and stats["cls"][0, 1] == 1
    assert math.isclose(stats["entropy"][0, 2].item(), 1.0, rel_tol=1e-5)
    labels = classify_heads(stats)
    assert labels == [["previous token", "[CLS]", "broad"]]
    assert set(HEAD_CLASSES) >= {label for row in labels for label in row}
    with pytest.raises(ValueError):
        attention_statistics(torch.rand(2, 3))
