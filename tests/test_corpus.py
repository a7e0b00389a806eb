"""The text of Chapter 7: its hash check, its split, its encoding, its
windows."""

import gzip
import hashlib
import json

import pytest
import torch

from mha_lib.course.corpus import (
    HELD_OUT_BOOKS,
    TEXT_SHA256,
    WEB_TEXT_FILE,
    WEB_TEXT_SHA256,
    Corpus,
    bible_pieces,
    load_bible,
    load_web_text,
    piece_ids,
    text_path,
    web_documents,
    windows,
)

pytestmark = pytest.mark.core


def test_windows_cut_inputs_and_next_characters():
    ids = torch.arange(20)
    inputs, targets = windows(ids, 4)
    assert inputs.shape == targets.shape == (3, 4)
    assert torch.equal(inputs[1], torch.tensor([5, 6, 7, 8]))
    assert torch.equal(targets, inputs + 1), "each target is the next id"
    overlapping, _ = windows(ids, 4, step=2)
    assert torch.equal(overlapping[:, 0], torch.arange(0, 15, 2))


@pytest.mark.parametrize(
    "arguments,name",
    [
        (dict(context=-3), "context"),
        (dict(context=0), "context"),
        (dict(context=4, step=0), "step"),
        (dict(context=2.5), "context"),
    ],
)
def test_windows_refuse_bad_sizes(arguments, name):
    with pytest.raises((ValueError, TypeError), match=name):
        windows(torch.arange(20), **arguments)


def test_windows_refuse_a_batch_of_ids():
    with pytest.raises(ValueError, match="ids"):
        windows(torch.zeros(2, 20, dtype=torch.long), 4)


def test_corpus_encodes_and_decodes_its_alphabet():
    corpus = Corpus("abca\n", "cab\n", "\nabc")
    ids = corpus.encode("cab\n")
    assert ids.tolist() == [3, 1, 2, 0]
    assert corpus.decode(ids) == "cab\n"
    with pytest.raises(ValueError, match="alphabet"):
        corpus.encode("abz")


def test_load_bible_checks_the_hash_and_holds_out_the_last_books(tmp_path):
    verses = [
        {"book": "Genesis", "text": "In the beginning"},
        {"book": HELD_OUT_BOOKS[0], "text": "Simon Peter"},
        {"book": "Exodus", "text": "Now these"},
    ]
    path = tmp_path / "kjv.jsonl"
    path.write_text("\n".join(json.dumps(v) for v in verses) + "\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    corpus = load_bible(path, expected=digest)
    assert corpus.train == "In the beginning\nNow these\n"
    assert corpus.validation == "Simon Peter\n"
    assert set(corpus.alphabet) == set(corpus.train + corpus.validation)
    with pytest.raises(ValueError, match="SHA-256"):
        load_bible(path, expected="0" * 64)
    packed = tmp_path / "kjv.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert load_bible(packed, expected=digest) == corpus, "read through gzip"


def test_the_course_copy_of_the_text_is_the_one_the_results_were_made_on():
    text = gzip.decompress(text_path().read_bytes())
    assert hashlib.sha256(text).hexdigest() == TEXT_SHA256


def test_the_alphabet_may_hold_any_character():
    corpus = Corpus("ab’\n", "b’a\n", "\nab’")
    assert corpus.encode("’ab\n").tolist() == [3, 1, 2, 0]
    with pytest.raises(ValueError, match="alphabet"):
        corpus.encode("“")


def test_the_web_text_is_split_by_the_treebank_documents(tmp_path):
    sentences = [
        {"document": "email/a", "split": "train", "text": "Hi."},
        {"document": "email/a", "split": "train", "text": "Bye."},
        {"document": "reviews/b", "split": "dev", "text": "Good"},
        {"document": "weblog/c", "split": "test", "text": "Nöw"},
    ]
    path = tmp_path / "ewt.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in sentences) + "\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    documents = web_documents(path, expected=digest)
    assert documents["train"] == [("email/a", "Hi.\nBye.\n")]
    test = load_web_text("test", path, expected=digest)
    dev = load_web_text("dev", path, expected=digest)
    assert (test.train, test.validation) == ("Hi.\nBye.\n", "Nöw\n")
    assert dev.validation == "Good\n"
    assert test.alphabet == dev.alphabet, "one alphabet: ids agree"
    with pytest.raises(ValueError, match="held_out"):
        load_web_text("train", path, expected=digest)
    with pytest.raises(ValueError, match="SHA-256"):
        web_documents(path, expected="0" * 64)


def test_the_course_copy_of_the_web_text_is_the_one_the_results_used():
    text = gzip.decompress(text_path(WEB_TEXT_FILE).read_bytes())
    assert hashlib.sha256(text).hexdigest() == WEB_TEXT_SHA256
    parts = web_documents()
    assert [len(parts[s]) for s in ("train", "dev", "test")] == [540, 318, 316]


def test_the_bibles_chapters_join_into_its_books_and_its_held_out_text():
    chapters, books = bible_pieces("chapter"), bible_pieces("book")
    held_out = chapters["held out"]
    assert len(held_out) == 33 and held_out[0][0] == "2 Peter 1"
    assert held_out[-1][0] == "Revelation 22"
    for part in ("train", "held out"):
        joined = "".join(text for _, text in chapters[part])
        assert joined == "".join(text for _, text in books[part])
    assert "".join(t for _, t in held_out) == load_bible().validation
    with pytest.raises(ValueError, match="'book' or 'chapter'"):
        bible_pieces("verse")


def test_piece_ids_name_each_target_characters_piece():
    pieces = [("a", "x" * 7), ("b", "y" * 5), ("c", "z" * 9)]
    owners = piece_ids(pieces, 4)
    text = "".join(t for _, t in pieces)
    _, targets = windows(torch.tensor([ord(c) for c in text]), 4)
    names = {ord("x"): 0, ord("y"): 1, ord("z"): 2}
    assert owners.tolist() == [[names[int(t)] for t in row] for row in targets]
