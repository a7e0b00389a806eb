"""What a release of ``mha_lib`` is: one version in the library, the
changelog and the citation, which between releases says it is not one; a
wheel that is the same bytes each time it is built; a page for the library's
users as its long description."""

import os
import re
import shutil
import time
import zipfile

import pytest
from packaging.version import Version
from support import ROOT, extension

PAGE = ROOT / "mha_lib" / "README.md"  # pyproject.toml's readme


def test_the_version_agrees_with_the_changelog_and_the_citation():
    """One version for the course, mha_lib.__version__: between releases
    (CHANGELOG.md opens with what is unreleased) the next release's with
    ``.dev0``, after CHANGELOG.md's newest release; at a release, that
    release. CITATION.cff cites the newest release."""
    import yaml

    import mha_lib

    version = Version(mha_lib.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    sections = changelog.split("\n## ")[1:]
    unreleased = sections[0].startswith("Unreleased")
    newest = sections[unreleased]
    released = Version(newest.split()[0])
    if unreleased:
        assert version.is_devrelease and version > released, (
            f"work after {released} should be a later .dev0, not {version}"
        )
    else:
        assert version == released, f"CHANGELOG.md's newest is {released}"
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert Version(citation["version"]) == released
    assert citation["date-released"] in newest.split("\n")[0]


def copy_of_the_sources(folder, age):
    """What the wheel is built from, copied into ``folder``, every file's
    time ``age`` seconds ago."""
    sources = extension("executed_downloads").WHEEL_SOURCES
    skipped = shutil.ignore_patterns("__pycache__", "*.pyc", "*.partial.*")
    shutil.copytree(ROOT / "mha_lib", folder / "mha_lib", ignore=skipped)
    for name in sources:
        shutil.copy(ROOT / name, folder / name)
    then = time.time() - age
    for path in folder.rglob("*"):
        os.utime(path, (then, then))
    return folder


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """The wheel built twice with pip, as the downloads build it, from
    copies whose files have other times (a checkout, an edit, a copy), with
    no ``SOURCE_DATE_EPOCH`` set: the two wheels' paths."""
    pytest.importorskip("setuptools")
    downloads = extension("executed_downloads")
    built = []
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("SOURCE_DATE_EPOCH", raising=False)
        for build, age in enumerate((0, 400 * 86400)):
            folder = tmp_path_factory.mktemp(f"build-{build}")
            root = copy_of_the_sources(folder / "checkout", age)
            built.append(downloads.build_wheel(folder, root))
    return built


def test_pip_wheel_gives_the_same_bytes_twice(wheels):
    first, second = wheels
    assert first.name == second.name
    assert first.read_bytes() == second.read_bytes()


def test_the_wheels_long_description_is_the_librarys_page(wheels):
    """The page an index such as PyPI shows for the library is
    ``mha_lib/README.md``, not the course's README (how to build the book and
    run its tests)."""
    with zipfile.ZipFile(wheels[0]) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("/METADATA")]
        metadata = archive.read(name).decode("utf-8")
    headers, _, description = metadata.partition("\n\n")
    assert description.strip() == PAGE.read_text().strip()
    assert "Description-Content-Type: text/markdown" in headers
    assert "requirements.lock" not in description


def test_the_librarys_page_runs_as_written():
    """The page's code runs and does what its comments say."""
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    namespace = {}
    exec(code, namespace)
    assert tuple(namespace["output"].shape) == (2, 10, 64)
    assert namespace["layer"].spec.head_dim == 64
