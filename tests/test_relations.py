"""The gold treebank and Clark et al.'s (2019) head-as-classifier test with
its two baselines, held out."""

import math

import pytest
import torch

from mha_lib.course.relations import (
    DIRECTIONS,
    HEAD_CLASSES,
    RELATIONS,
    WORD_CLASSES,
    attention_statistics,
    class_rule_hits,
    classify_heads,
    head_hits,
    held_out,
    load_treebank,
    most_attended,
    nearest_of_class,
    offset_hits,
    probe_features,
    probe_hits,
    read_conllu,
    relation_items,
    word_attention,
)

pytestmark = pytest.mark.core

# one sentence in CoNLL-U, with a multiword token ("can't") to skip
CONLLU = """# sent_id = w07003002
# text = The dog can't see a cat
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t5\tnsubj\t_\t_
3-4\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
3\tca\tcan\tAUX\t_\t_\t5\taux\t_\t_
4\tn't\tnot\tPART\t_\t_\t5\tadvmod\t_\t_
5\tsee\tsee\tVERB\t_\t_\t0\troot\t_\t_
6\ta\ta\tDET\t_\t_\t7\tdet\t_\t_
7\tcat\tcat\tNOUN\t_\t_\t5\tobj\t_\t_

"""


@pytest.fixture(scope="module")
def treebank():
    return load_treebank()


def test_the_shipped_treebank_is_whole_and_has_every_relation(treebank):
    assert len(treebank) == 1000
    assert len({s.document for s in treebank}) > 300
    for sentence in treebank:
        n = len(sentence.words)
        assert len(sentence.upos) == len(sentence.heads) == n
        assert sum(h == -1 for h in sentence.heads) == 1, "one root"
        assert all(-1 <= h < n for h in sentence.heads)
        assert set(sentence.upos) <= set(WORD_CLASSES)
    for relation in RELATIONS:
        for direction in DIRECTIONS:
            assert len(relation_items(treebank, relation, direction)) >= 300


def test_a_changed_treebank_is_refused():
    with pytest.raises(ValueError, match="SHA-256"):
        load_treebank(expected="0" * 64)


def test_read_conllu_keeps_syntactic_words_and_ids():
    (sentence,) = read_conllu(CONLLU)
    assert sentence.words == ("The", "dog", "ca", "n't", "see", "a", "cat")
    assert sentence.heads == (1, 4, 4, 4, -1, 6, 4)
    assert sentence.sent_id == "w07003002" and sentence.document == "w07003"
    assert sentence.text == "The dog can't see a cat"
    with pytest.raises(ValueError, match="10 columns"):
        read_conllu("1\tThe\tthe\n\n")


def test_items_in_both_directions():
    sentences = read_conllu(CONLLU)
    to_head = relation_items(sentences, "det", DIRECTIONS[0])
    assert to_head == [(0, 0, frozenset({1})), (0, 5, frozenset({6}))]
    # the verb has three dependents of interest in different relations; for
    # "aux" it is one query with one correct answer
    (item,) = relation_items(sentences, "aux", DIRECTIONS[1])
    assert item == (0, 4, frozenset({2}))
    with pytest.raises(ValueError, match="relation"):
        relation_items(sentences, "nmod", DIRECTIONS[0])
    with pytest.raises(ValueError, match="direction"):
        relation_items(sentences, "det", "sideways")


def test_baselines_offset_and_word_class_rule():
    sentences = read_conllu(CONLLU)
    items = relation_items(sentences, "det", DIRECTIONS[0])
    offsets = offset_hits(sentences, items)
    assert offsets[1].tolist() == [True, True] and 0 not in offsets
    rules = class_rule_hits(sentences, items)
    assert rules["right", "NOUN"].tolist() == [True, True]
    assert rules["left", "NOUN"].tolist() == [False, False]  # "dog"
    upos = sentences[0].upos
    assert nearest_of_class(upos, 0, 1, "VERB|AUX") == 2
    assert nearest_of_class(upos, 0, -1, "NOUN") is None


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


def test_heads_as_classifiers_chosen_on_one_half_scored_on_the_other():
    sentences = read_conllu(CONLLU) * 4
    items = relation_items(sentences, "det", DIRECTIONS[0])  # 8 items
    maps = torch.zeros(1, 2, 7, 7)  # (layers, heads, words, words)
    maps[0, 0, 0, 1] = maps[0, 0, 5, 6] = 1.0  # head 0: the next word
    maps[0, 1, 0, 0] = 5.0  # itself: not a prediction
    maps[0, 1, 0, 4] = maps[0, 1, 5, 4] = 1.0  # head 1: the verb
    predicted = [most_attended(maps)] * 4
    assert predicted[0][0, 1, 0].item() == 4
    hits = head_hits(predicted, items)  # (layers, heads, items)
    assert hits[0, 0].all() and not hits[0, 1].any()
    scored, chosen = held_out(hits, [0, 1, 2, 3], [4, 5, 6, 7])
    assert scored.all() and chosen == [(0, 0), (0, 0)]
    # a classifier that is right on one half only is chosen there and
    # scored on the other, where it fails
    half = {"a": torch.tensor([True] * 4 + [False] * 4)}
    half["b"] = ~half["a"]
    scored, chosen = held_out(half, [0, 1, 2, 3], [4, 5, 6, 7])
    assert not scored.any() and chosen == ["a", "b"]


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


def test_the_probe_reads_every_head_both_ways_and_learns_the_one_that_points():
    """Two heads over random sentences: head 1 points each query at its
    target (query + 2), head 0 is noise. Fitted on half, the probe finds
    every target of the other half; its features are the attention between
    query and candidate in each head, both ways."""
    generator = torch.Generator().manual_seed(0)
    word_maps, items = [], []
    for s in range(40):
        n = 6 + s % 5
        maps = torch.rand(1, 2, n, n, generator=generator).softmax(-1)
        pointer = torch.zeros(n, n)
        pointer[torch.arange(n - 2), torch.arange(2, n)] = 1.0
        maps[0, 1] = 0.2 * maps[0, 1] + 0.8 * pointer
        word_maps.append(maps)
        items.append((s, s % (n - 2), frozenset([s % (n - 2) + 2])))
    features, candidates, targets = probe_features(word_maps, items)
    assert features.shape == (40, 10, 4)
    s, query, _ = items[7]
    n = word_maps[s].shape[-1]
    torch.testing.assert_close(features[7, :n, 1], word_maps[s][0, 1, query])
    torch.testing.assert_close(
        features[7, :n, 3], word_maps[s][0, 1, :, query]
    )
    assert not candidates[7, query] and candidates[7, :n].sum() == n - 1
    assert not candidates[7, n:].any() and targets[7].sum() == 1
    first, second = list(range(0, 40, 2)), list(range(1, 40, 2))
    assert probe_hits(features, candidates, targets, first, second).all()
    noise = features.clone()
    noise[..., [1, 3]] = 0  # head 1 gone, both ways: only noise is left
    chance = probe_hits(noise, candidates, targets, first, second)
    assert chance.float().mean() < 0.5, "nothing to learn, little found"
