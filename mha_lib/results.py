"""Results of the long runs, stored with the course and read by the chapters.

A chapter whose full experiment does not fit its time budget has one script in
``scripts/`` that runs it and writes ``mha_lib/results/<name>.json`` with
:func:`save`. Besides the data, each file records the command that wrote it,
the device, the library versions and the wall time. The chapter reads the file
with :func:`load`, draws its tables and figures from it, asserts its claims on
it, and re-trains a subset to show that the file still holds. A run that stops
resumes where it stopped: :class:`Parts` keeps the finished parts on disk.

Each file also carries the SHA-256 of its content (``sha256``), which
:func:`load` checks, so a truncated or hand-edited file is refused with the
command that writes it again instead of being drawn as if it were measured.
"""

import fcntl
import hashlib
import json
import os
import platform
import re
import sys
import time
from importlib import resources
from pathlib import Path

import torch

FOLDER = Path(__file__).resolve().parent / "results"


def environment(device):
    """Where a run ran: device, Python, PyTorch and mha_lib versions, CPU
    threads."""
    from . import __version__

    device = torch.device(device)
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor()
    )
    return {
        "device": str(device),
        "device_name": name or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "mha_lib": __version__,
        "threads": torch.get_num_threads(),
    }


def digest(record):
    """SHA-256 of a record's canonical JSON (sorted keys, no spaces), its own
    ``sha256`` entry left out."""
    content = {key: value for key, value in record.items() if key != "sha256"}
    text = json.dumps(
        content, sort_keys=True, separators=(",", ":"), allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write(path, record):
    record = {**record, "sha256": digest(record)}
    path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")


def save(
    name, data, *, device, seconds, folder=None, command=None, ran_in=None
):
    """Write ``data``, its provenance and their SHA-256 to
    ``<folder>/<name>.json``; returns the path.

    ``seconds`` is the run's wall time (summed over its parts, where it was
    resumed); ``command``, the command that writes the file again, is by
    default this process's command line. ``ran_in`` is the
    :func:`environment` the data was computed in, where it was not this
    process (workers elsewhere computed the parts that this one gathers).
    """
    folder = FOLDER if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "command": command or "python3 " + " ".join(sys.argv),
        "environment": ran_in or environment(device),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_seconds": round(seconds, 1),
        "data": data,
    }
    path = folder / f"{name}.json"
    _write(path, record)
    return path


class DamagedResults(ValueError):
    """A results file that is not what its command wrote."""


def load(name, folder=None):
    """The stored record ``name`` (``command``, ``environment``,
    ``wall_seconds``, ``data``), after checking its SHA-256.

    Raises :class:`DamagedResults`, naming the file and the command that
    writes it again, when the file is not valid JSON, carries no hash, or its
    content does not match the hash. Where the variable ``MHA_RESULTS`` names
    a folder holding ``<name>.json``, that file is read instead
    (``scripts/replicate.py`` hands a chapter its runs on new seeds so).
    """
    other = os.environ.get("MHA_RESULTS")
    if folder is None and other and (Path(other) / f"{name}.json").is_file():
        folder = other
    if folder is None:
        path = resources.files("mha_lib").joinpath(f"results/{name}.json")
    else:
        path = Path(folder) / f"{name}.json"
    shown = f"mha_lib/results/{name}.json" if folder is None else str(path)
    text = path.read_text()
    command = re.search(r'"command": "([^"]*)"', text)
    command = command[1] if command else f"python3 scripts/{name}.py"

    def damaged(problem):
        return DamagedResults(
            f"{shown} {problem}: it is not what its run wrote. Run "
            f"`{command}` to write it again (or restore it from the "
            "repository)."
        )

    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise damaged(f"is not valid JSON ({error})") from None
    if not isinstance(record, dict) or "sha256" not in record:
        raise damaged("carries no SHA-256 of its content")
    if digest(record) != record["sha256"]:
        raise damaged("does not match the SHA-256 it carries (it was edited)")
    return record


def seal(name, folder=None):
    """Add the SHA-256 to a results file written before files carried one;
    returns the digest.

    A one-off for files whose data is known good (the shipped ones were
    checked by their chapters): the data is not changed, only ``sha256`` is
    added. A file that already carries one is checked instead.
    """
    path = (FOLDER if folder is None else Path(folder)) / f"{name}.json"
    record = json.loads(path.read_text())
    if "sha256" in record:
        return load(name, folder)["sha256"]
    _write(path, record)
    return digest(record)


class Parts:
    """The finished parts of a long run, kept on disk so that a run that stops
    resumes where it stopped (``<folder>/<name>.partial.json``).

    ``parts.get(key, run)`` returns the stored result of part ``key``, or calls
    ``run()``, stores its (JSON) result with its wall time, and returns it.
    ``parts.seconds`` is the wall time of all the parts, over every resumption
    (summed, where two processes shared the parts).
    :meth:`save` writes the run's result and removes the partial file.
    """

    def __init__(self, name, folder=None):
        self.name = name
        self.folder = FOLDER if folder is None else Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / f"{name}.partial.json"
        self.done = (
            json.loads(self.path.read_text()) if self.path.is_file() else {}
        )

    def __contains__(self, key):
        self._refresh()
        return key in self.done

    def _refresh(self):
        """Take in the parts that another process running the same command
        finished meanwhile (on a 2-core machine two processes of one thread
        each can share a run's parts)."""
        if self.path.is_file():
            self.done = {**json.loads(self.path.read_text()), **self.done}

    def get(self, key, run):
        if key not in self:
            begun = time.time()
            result = run()
            seconds = round(time.time() - begun, 1)
            lock = self.path.with_suffix(".lock")
            with lock.open("w") as held:  # one writer at a time
                fcntl.flock(held, fcntl.LOCK_EX)
                self._refresh()
                self.done[key] = {"result": result, "seconds": seconds}
                written = self.path.with_suffix(".tmp")  # renamed: atomic
                written.write_text(json.dumps(self.done))
                written.replace(self.path)
            print(f"{key}: {seconds:.0f} s", flush=True)
        return self.done[key]["result"]

    def seconds_of(self, key):
        return self.done[key]["seconds"]

    @property
    def seconds(self):
        return sum(part["seconds"] for part in self.done.values())

    def save(self, data, *, device, ran_in=None):
        """:func:`save` ``data`` as ``<name>.json`` with the parts' wall time,
        then remove the partial file; returns the path."""
        path = save(
            self.name,
            data,
            device=device,
            seconds=self.seconds,
            folder=self.folder,
            ran_in=ran_in,
        )
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".lock").unlink(missing_ok=True)
        print(f"wrote {path}: {self.seconds:.0f} s of training")
        return path
