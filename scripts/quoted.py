"""Pin the numbers the answers page quotes: write ``book/quoted.json`` from
the values the chapters glued in the test command's last run.

    python3 -m pytest --nbval -n 2  # every chapter; a moved number fails
    python3 scripts/quoted.py       # pins what that run measured

Each number keeps the source it had (``stored``: read from a results file;
``live``: computed in the chapter; ``machine``: a time on this machine); a
number the page quotes for the first time needs ``--source NAME=SOURCE``.
The tolerances are in ``book/_ext/quoted_numbers.py``.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import quoted_numbers  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME=SOURCE",
        help=f"a number's source, one of {', '.join(quoted_numbers.SOURCES)}",
    )
    args = parser.parse_args()
    sources = {}
    if quoted_numbers.QUOTED.is_file():
        old = json.loads(quoted_numbers.QUOTED.read_text())["numbers"]
        sources = {name: entry["source"] for name, entry in old.items()}
    for item in args.source:
        name, _, source = item.partition("=")
        if source not in quoted_numbers.SOURCES:
            parser.error(
                f"{item}: the source must be one of {quoted_numbers.SOURCES}"
            )
        sources[name] = source
    measured = quoted_numbers.glued()
    numbers = quoted_numbers.write(measured, sources)
    print(f"pinned {len(numbers)} numbers in {quoted_numbers.QUOTED}")


if __name__ == "__main__":
    main()
