"""The scripts of scripts/ run on their own checkout, on one thread unless
asked otherwise (scripts/checkout.py)."""

import os
import subprocess
import sys

from support import ROOT

SCRIPTS = ROOT / "scripts"


def imports_mha_lib(path):
    text = path.read_text()
    return "import mha_lib" in text or "from mha_lib" in text


def test_every_script_that_imports_mha_lib_imports_its_checkout_first():
    for path in sorted(SCRIPTS.glob("*.py")):
        if path.name == "checkout.py" or not imports_mha_lib(path):
            continue
        lines = path.read_text().splitlines()
        first = next(
            i
            for i, line in enumerate(lines)
            if "mha_lib" in line.split("#")[0]
            and line.startswith(("import", "from"))
        )
        local = [  # the scripts it imports, which import checkout first
            i
            for i, line in enumerate(lines)
            if line.startswith(
                ("import checkout", "from ch", "from replicate")
            )
        ]
        assert "import checkout" in path.read_text(), path.name
        assert local and local[0] < first, path.name


def fake_checkout(folder):
    """Another checkout's mha_lib, first on PYTHONPATH: what a script must
    not use."""
    package = folder / "mha_lib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("OTHER = True\n")
    return folder


def run(code, cwd, **environment):
    import os

    env = {**os.environ, **environment}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_from_another_folder_a_script_uses_its_own_checkout(tmp_path):
    """From another folder, with another mha_lib first on PYTHONPATH, a
    script imports its own checkout's mha_lib and reads and writes that
    checkout's results folder; its kernels inherit the same path."""
    other = fake_checkout(tmp_path / "other")
    code = (
        f"import sys; sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "import checkout, os\n"
        "from mha_lib.course import results\n"
        "print(results.FOLDER)\n"
        "print(os.environ['PYTHONPATH'].split(os.pathsep)[0])\n"
    )
    result = run(code, tmp_path, PYTHONPATH=str(other))
    assert result.returncode == 0, result.stderr
    folder, path = result.stdout.split()
    assert folder == str(ROOT / "mha_lib" / "course" / "results")
    assert path == str(ROOT)


def test_a_script_refuses_another_checkouts_mha_lib(tmp_path):
    other = fake_checkout(tmp_path / "other")
    code = (
        f"import sys; sys.path.insert(0, {str(other)!r})\n"
        "import mha_lib\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "import checkout\n"
        "print('ran')\n"
    )
    result = run(code, tmp_path)
    assert result.returncode != 0 and "ran" not in result.stdout
    assert "imported mha_lib from" in result.stderr
    assert str(other) in result.stderr


def test_scripts_take_one_thread_unless_told(monkeypatch):
    """In this process (a script's own start costs seconds of imports): the
    threads, and what the kernels a script starts inherit, set back after."""
    import torch

    for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import checkout

    before = torch.get_num_threads()
    try:
        for arguments, threads in (([], 1), (["--threads", "2"], 2)):
            monkeypatch.setattr(sys, "argv", ["a-script", *arguments])
            checkout.threads_only("A script.")
            assert torch.get_num_threads() == threads
            assert os.environ["OMP_NUM_THREADS"] == str(threads)
    finally:
        torch.set_num_threads(before)
