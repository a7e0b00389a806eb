"""Write Chapter 7's second text, ``mha_lib/course/text/ewt.jsonl.gz``, from
the Universal Dependencies English Web Treebank's source files.

    python3 scripts/web_text.py \\
        ../shared/data/ud-english-ewt/ud-english-ewt-sources.tar.gz

The archive holds the treebank's per-document CoNLL-U files
(``not-to-release/sources/``), its own split by document
(``not-to-release/file-lists/files.{train,dev,test}``), its README and
licence. Each sentence's ``# text =`` line becomes one JSON line
(``document``, ``split``, ``text``), documents in the order of their split's
list, the splits in the order train, dev, test; nothing else of the
annotation is kept. The output is gzip-compressed without a time stamp, so
the same archive gives the same bytes; the SHA-256 of the decompressed text
is printed for ``mha_lib.course.corpus.WEB_TEXT_SHA256``.
"""

import argparse
import gzip
import hashlib
import json
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "mha_lib" / "course" / "text" / "ewt.jsonl.gz"
ARCHIVE_SHA256 = (
    "b3ee744273f832c4f7d2f69dc35e8a6baec18ff3f831cacd8d05d39e9b505e2d"
)
SPLITS = ("train", "dev", "test")


def sentences(archive):
    """``(document, split, text)`` of every sentence, in the order above."""
    with tarfile.open(archive) as tar:

        def read(name):
            return tar.extractfile(f"not-to-release/{name}").read().decode()

        for split in SPLITS:
            for document in read(f"file-lists/files.{split}").split():
                for line in read(f"sources/{document}").splitlines():
                    if line.startswith("# text = "):
                        text = line.removeprefix("# text = ")
                        yield document.removesuffix(".xml.conllu"), split, text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path)
    archive = parser.parse_args().archive
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != ARCHIVE_SHA256:
        raise SystemExit(
            f"{archive} has SHA-256 {digest}, not {ARCHIVE_SHA256}"
        )
    lines = [
        json.dumps({"document": d, "split": s, "text": t}, ensure_ascii=False)
        for d, s, t in sentences(archive)
    ]
    data = ("\n".join(lines) + "\n").encode()
    OUT.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{OUT}: {len(lines)} sentences, SHA-256 of the text")
    print(hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    main()
