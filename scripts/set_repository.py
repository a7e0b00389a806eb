"""Point the book at another repository (a fork): python3
scripts/set_repository.py URL

Rewrites ``repository.url`` in ``_config.yml`` (launch and source buttons) and
the address the first cell of every notebook installs ``mha_lib`` from.
``tests/test_book.py`` checks that the two agree.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def set_repository(new_url, root=ROOT):
    if not re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+", new_url):
        raise ValueError(
            "expected a URL like https://github.com/OWNER/REPO, got "
            f"{new_url!r}"
        )
    config = root / "_config.yml"
    old_url = re.search(
        r"^repository:\n  url: (\S+)$", config.read_text(), flags=re.M
    ).group(1)
    changed = []
    for path in [config, *sorted((root / "notebooks").glob("*.ipynb"))]:
        text = path.read_text()
        if old_url in text:
            path.write_text(text.replace(old_url, new_url))
            changed.append(path.relative_to(root))
    return old_url, changed


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.splitlines()[0])
    old, changed = set_repository(sys.argv[1])
    print(f"{old} -> {sys.argv[1]} in {len(changed)} files")
