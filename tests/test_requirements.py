"""The lock the README installs agrees with the declared ranges.

``requirements.txt`` and ``pyproject.toml`` declare ranges;
``requirements.lock`` (written by ``python3 scripts/lock.py``) pins what they
resolved to, so the set-up gives the same packages next year. A range changed
without locking again, or a lock edited by hand, fails here.
"""

import re

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from support import ROOT

LOCK = ROOT / "requirements.lock"


def requirement_lines(path):
    """The lines of a requirements file that name a package: no comments,
    no options (``-e .``, ``--index-url``)."""
    lines = (
        line.split("#")[0].strip() for line in path.read_text().split("\n")
    )
    return [line for line in lines if line and not line.startswith("-")]


def locked_versions():
    """``{canonical name: Version}`` of the lock; every line is an ``==``."""
    pins = {}
    for line in requirement_lines(LOCK):
        match = re.fullmatch(r"([\w.-]+)==([\w.!+-]+)", line)
        assert match, f"requirements.lock: {line!r} is not name==version"
        name = canonicalize_name(match[1])
        assert name not in pins, f"requirements.lock pins {name} twice"
        pins[name] = Version(match[2])
    return pins


def declared():
    """Every range the project declares: requirements.txt, then
    pyproject.toml's dependencies and extras."""
    found = [
        ("requirements.txt", Requirement(line))
        for line in requirement_lines(ROOT / "requirements.txt")
    ]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    for text in [*project["dependencies"], *(t for e in extras for t in e)]:
        found.append(("pyproject.toml", Requirement(text)))
    return found


def test_the_lock_installs_the_course_itself():
    lines = [line.strip() for line in LOCK.read_text().split("\n")]
    assert "-e ." in lines, "requirements.lock must install mha_lib (-e .)"


@pytest.mark.parametrize(
    "where, requirement", declared(), ids=lambda x: str(x)
)
def test_each_declared_package_is_pinned_inside_its_range(where, requirement):
    pins = locked_versions()
    name = canonicalize_name(requirement.name)
    assert name in pins, f"{where} asks for {name}; requirements.lock lacks it"
    assert requirement.specifier.contains(pins[name], prereleases=True), (
        f"requirements.lock pins {name}=={pins[name]}, outside {where}'s "
        f"range {requirement.specifier}: run python3 scripts/lock.py"
    )


def test_the_lock_pins_the_torch_that_ci_installs_first():
    ci = (ROOT / ".ci" / "run").read_text()
    (torch,) = re.findall(r"pip install -q torch==(\S+)", ci)
    assert locked_versions()["torch"] == Version(torch), (
        f".ci/run installs torch {torch}; the lock pins another"
    )


def test_the_readme_commands_install_the_lock():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    installs = [c for c in commands if "pip install" in c]
    assert installs and all(
        c.startswith("python3 -m pip install -r requirements.lock && ")
        for c in installs
    ), f"the README's set-up should install requirements.lock: {installs}"


def test_the_package_carries_its_licences():
    """The metadata names every licence of what the wheel carries (the
    code, the README's prose, the treebank), and every licence file is
    shipped."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT AND CC-BY-4.0 AND CC-BY-SA-3.0"
    assert project["authors"] == [{"name": "The course authors"}]
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    for pattern in project["license-files"]:
        assert list(ROOT.glob(pattern)), pattern
    assert "CC BY 4.0" in (ROOT / "LICENSES.md").read_text()
