"""Fixtures shared by the checks of the built book."""

import subprocess

import pytest
from support import ROOT


@pytest.fixture(scope="session")
def built_book():
    """Build the HTML book once per test session, as the README's build command does; returns _build/html."""
    result = subprocess.run(
        ["jupyter-book", "build", "--warningiserror", "--keep-going", str(ROOT)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, f"the book build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return ROOT / "_build" / "html"
