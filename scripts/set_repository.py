"""Point the book at its published repository (or a fork): python3
scripts/set_repository.py URL

Writes ``repository.url`` in ``_config.yml``, the address the first cell of
every notebook installs ``mha_lib`` from (``REPOSITORY``, None while no
repository is published, so that no notebook names an address the course does
not control) and the wheel's links to the repository and its issues
(``[project.urls]`` in ``pyproject.toml``), and shows the buttons that open
the repository: Colab, Binder, the repository and its issues. While no
repository is published the address is empty, the wheel names no link and
the buttons are hidden; ``python3 scripts/set_repository.py --none`` goes
back to that. The command checks that the address answers
(``git ls-remote``) first; add ``--unchecked`` to skip that.
``tests/test_book.py`` checks that the address, the notebooks, the wheel's
links and the buttons agree.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# _config.yml's settings of the buttons: hidden, shown
BUTTONS = {
    "colab_url": ('""', "https://colab.research.google.com"),
    "binderhub_url": ('""', "https://mybinder.org"),
    "use_repository_button": ("false", "true"),
    "use_issues_button": ("false", "true"),
}


def set_repository(new_url, root=ROOT):
    """Write ``new_url`` into ``_config.yml`` and the notebooks and show the
    buttons; ``None`` empties the address and hides them. Returns the old
    address (``None`` where it was empty) and the files changed."""
    shown = new_url is not None
    if shown and not re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+", new_url):
        raise ValueError(
            "expected a URL like https://github.com/OWNER/REPO, got "
            f"{new_url!r}"
        )
    config = root / "_config.yml"
    setting = r"^(repository:\n  url: )(\S*)$"
    found = re.search(setting, config.read_text(), flags=re.M)
    if found is None:
        raise ValueError(f"{config} should set repository.url")
    old_url = found[2].strip("\"'") or None
    text = re.sub(
        setting,
        lambda m: m[1] + (new_url if shown else '""'),
        config.read_text(),
        flags=re.M,
    )
    for key, values in BUTTONS.items():
        text, found = re.subn(
            rf"^(  {key}: ).*$", rf"\g<1>{values[shown]}", text, flags=re.M
        )
        if found != 1:
            raise ValueError(f"{config} should set {key} once, not {found}")
    changed = []
    if text != config.read_text():
        config.write_text(text)
        changed.append(config.relative_to(root))
    project = root / "pyproject.toml"
    table = "[project.urls]\n"
    if shown:
        table += f'Repository = "{new_url}"\nIssues = "{new_url}/issues"\n'
    written, found = re.subn(
        r"^\[project\.urls\]\n(?:\w+ = .*\n)*",
        lambda _: table,
        project.read_text(),
        flags=re.M,
    )
    if found != 1:
        raise ValueError(f"{project} should have a [project.urls] table")
    if written != project.read_text():
        project.write_text(written)
        changed.append(project.relative_to(root))
    # the notebooks install from the address only where one is published
    line = "REPOSITORY = {}  # the course's published repository"
    assigned = (
        line.format(f'\\"{new_url}\\"') if shown else line.format("None")
    )
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        text = path.read_text()
        written = re.sub(
            r"REPOSITORY = [^\n]*?  # the course's published repository"
            r"(: none yet)?",
            lambda _: assigned + ("" if shown else ": none yet"),
            text,
        )
        if written != text:
            path.write_text(written)
            changed.append(path.relative_to(root))
    return old_url, changed


def answers(url):
    """Whether a git repository answers at ``url``."""
    try:
        result = subprocess.run(
            ["git", "ls-remote", "--exit-code", url, "HEAD"],
            capture_output=True,
            timeout=60,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--unchecked"]
    if len(arguments) != 1:
        sys.exit(__doc__.split("\n\n")[0])
    url = None if arguments == ["--none"] else arguments[0]
    if url and "--unchecked" not in sys.argv and not answers(url):
        sys.exit(f"no git repository answers at {url} (or add --unchecked)")
    old, changed = set_repository(url)
    buttons = "shown" if url else "hidden"
    print(f"{old} -> {url} in {len(changed)} files; buttons {buttons}")
