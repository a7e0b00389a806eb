"""Results of the long runs, stored with the course and read by the chapters.

A chapter whose full experiment does not fit its time budget has one script in
``scripts/`` that runs it and writes ``mha_lib/course/results/<name>.json``
with :func:`save`. Besides the data, each file records the command that wrote
it, the device, the library versions and the wall time. The chapter reads the
file with :func:`load`, draws its tables and figures from it, asserts its
claims on it, and re-trains a subset to show that the file still holds. A run
that stops resumes where it stopped: :class:`Parts` keeps the finished parts on
disk.

Each file also carries the SHA-256 of its content (``sha256``), which
:func:`load` checks against a digest held outside the file: the one this code
keeps for a shipped file (:data:`SHIPPED`), or the one :func:`save` returned
to the run that just wrote it. A truncated, hand-edited or re-sealed file is
refused with the command that writes it again instead of being drawn as if it
were measured; no folder or setting makes a file vouch for itself.
"""

import collections
import contextlib
import hashlib
import json
import math
import platform
import re
import sys
import time
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import torch

try:  # POSIX; without it (Windows) run one writer at a time: none is locked
    import fcntl
except ImportError:
    fcntl = None

FOLDER = Path(__file__).resolve().parent / "results"


def environment(device):
    """Where a run ran: device, Python, PyTorch and mha_lib versions, CPU
    threads."""
    from .. import __version__

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
    """Write ``record`` with its SHA-256 to ``path``; returns the digest."""
    try:
        record = {**record, "sha256": digest(record)}
    except ValueError as error:  # json's "Out of range float values ..."
        raise ValueError(
            f"cannot store {path.name}: the results hold NaN or infinity, "
            "which a results file (strict JSON) cannot; a training diverged? "
            f"({error})"
        ) from None
    path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    return record["sha256"]


class Saved(NamedTuple):
    """Where :func:`save` wrote a results file, and the SHA-256 that
    :func:`load` checks it against (``load(name, folder, sha256=...)``)."""

    path: Path
    sha256: str


def _command_line():
    """This process's command line, its script named from the repository's
    root where it lies inside it (as the commands in the README are run)."""
    script = Path(sys.argv[0]).resolve()
    root = FOLDER.parents[2]
    if script.is_relative_to(root):
        script = script.relative_to(root)
    return " ".join(["python3", script.as_posix(), *sys.argv[1:]])


def save(
    name, data, *, device, seconds, folder=None, command=None, ran_in=None
):
    """Write ``data``, its provenance and their SHA-256 to
    ``<folder>/<name>.json``; returns :class:`Saved` (the path and the
    digest, which reading the file back must match).

    ``seconds`` is the run's wall time (summed over its parts, where it was
    resumed); ``command``, the command that writes the file again, is by
    default this process's command line. ``ran_in`` is the
    :func:`environment` the data was computed in, where it was not this
    process (workers elsewhere computed the parts that this one gathers).
    """
    folder = FOLDER if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "command": command or _command_line(),
        "environment": ran_in or environment(device),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_seconds": round(seconds, 1),
        "data": data,
    }
    path = folder / f"{name}.json"
    sha256 = _write(path, record)
    if folder == FOLDER:
        print(
            f"{name}.json written; its SHA-256 for SHIPPED in "
            f"mha_lib/course/results.py: {sha256}"
        )
    return Saved(path, sha256)


# The SHA-256 of each results file shipped in mha_lib/course/results, kept in
# the code rather than only in the file, so that a file cannot vouch for
# itself. A long run that writes one again prints its new digest for this
# table.
SHIPPED = {
    "ch4_models": (
        "bf0dbeff9946b6aa091fbf129a3bef074aad2d41c8f7d99587f2ea06ee11f323"
    ),
    "ch5_budgets": (
        "282cb4e93f7032d2c378647b53fcdaac88535e18003ec2bcbdd545f3b4c29397"
    ),
    "ch5_experiment": (
        "b4c36cdaa56720e59d954c87b51a54ee85872965fcf24b08ef37188e2dc6d514"
    ),
    "ch6_experiment": (
        "782e2a08b94d420262d48279671f1b034a94353482dfef8d7c29c371ba5551d7"
    ),
    "ch7_apart": (
        "625e3d587f33488e65c23ce67d2f6a37fe5ae74fc23924da9ad2860ef4249ffd"
    ),
    "ch7_experiment": (
        "acc46ed20f776448e56351c0a0eda2e019e86d2f0ec9e1c0f2a42d1f5d04d0c4"
    ),
    "ch7_long": (
        "b57cff2eec775aee9049fa7452d2bd545769d7795c97cbc123f0fdadb307d144"
    ),
    "ch7_powered": (
        "80f5a8829898ec0bcd57e05e1af527e229d485ab7e65aed053cccbae3d892b34"
    ),
    "ch7_replication-200-209": (
        "4f61defa56b36a4b0fa2c175ae6087b628619cdabd427ac198e89d5a0c3b0f6c"
    ),
    "ch7_replication-300-309": (
        "9d2f8caf1556c2906d4e02b5228db13d7a7a50979b8b49845b1aaf11aa7f790a"
    ),
    "ch7_sized": (
        "2c7249d256346a8de12a1ed2df97e4bfb3a7a81264cec15badbf71ff643d5aed"
    ),
    "ch7_step_times": (
        "07826d95a1485092dcf6188072eabfaf5d4e004aff3daeac004465dbfeb63a1d"
    ),
    "replication": (
        "3a5d750ff5cad354e2d8b010d0e361ff8db6085b327a1479fe7c6fede1312f39"
    ),
}
# the command that writes each shipped file again; the others are named
# after their script
COMMANDS = {
    "ch4_models": "python3 scripts/store_models.py ch4_models",
    "replication": "python3 scripts/replicate.py --seeds 100-119 --store",
    "ch7_sized": "python3 scripts/ch7_apart.py --sized",
    "ch7_bible": "python3 scripts/ch7_web.py --second",
}


def command_of(name):
    """The command that writes results file ``name`` again (from this code,
    never from the file); Chapter 7's replication on seeds A to B,
    ``ch7_replication-A-B``, is named by its seeds."""
    seeds = re.fullmatch(r"ch7_replication-(\d+-\d+)", name)
    if seeds:
        return (
            "python3 scripts/replicate.py --chapters 7 --seeds "
            f"{seeds[1]} --store"
        )
    return COMMANDS.get(name, f"python3 scripts/{name}.py")


# the versions requirements.lock installs (tests/test_results.py checks them)
LOCKED = {"python": "3.11", "torch": "2.13.0"}


def _versions(where):
    """Python and PyTorch of an environment, and whether they are the
    lock's: ``[]`` where they are, else each as ``name version (the lock:
    version)``."""
    return [
        f"{name} {where[name]} (the lock: {LOCKED[name]})"
        for name in ("python", "torch")
        if not where[name].split("+")[0].startswith(LOCKED[name])
    ]


def _machine(where):
    return f"{where.get('device_name') or where['device']} ({where['device']})"


def provenance(record):
    """Where a stored run ran, in lines that fit the code column: its
    command, wall time and device, then its Python and PyTorch and whether
    those are the lock's versions (a run made with others says so). A run
    whose parts ran on several machines (``data["parts"]``, each with its
    ``environment``) counts the parts of each."""
    data = record.get("data")
    parts = data.get("parts", {}) if isinstance(data, dict) else {}
    machines = collections.Counter(  # (machine, python, torch): its parts
        (_machine(where), where["python"], where["torch"])
        for where in (part.get("environment") for part in parts.values())
        if where
    )
    minutes = f"{record['command']}: {record['wall_seconds'] / 60:.0f} minutes"
    if len(machines) > 1:
        lines = [
            f"{minutes} in {len(parts)} parts, on {len(machines)} machines:"
        ]
        for (machine, python, torch_version), count in machines.items():
            others = _versions({"python": python, "torch": torch_version})
            if others:
                lines.append(
                    f"  {count} parts on {machine}, other versions than the "
                    "lock's:"
                )
                lines += [f"    {line}" for line in others]
            else:
                lines.append(
                    f"  {count} parts on {machine}: Python {python}, torch "
                    f"{torch_version}, as locked"
                )
        return "\n".join(lines)
    where = record["environment"]
    others = _versions(where)
    versions = (
        "made with other versions than the lock's:\n  " + "\n  ".join(others)
        if others
        else f"Python {where['python']}, torch {where['torch']}, as locked"
    )
    return f"{minutes} on {_machine(where)}\n{versions}"


class DamagedResults(ValueError):
    """A results file that is not what its command wrote."""


def load(name, folder=None, *, sha256=None):
    """The stored record ``name`` (``command``, ``environment``,
    ``wall_seconds``, ``data``), after checking its SHA-256.

    ``folder``: where the file lies (by default the library's own results);
    the digest it is checked against never comes from the file: ``sha256``,
    the one :func:`save` returned to the run that wrote it (as
    ``scripts/replicate.py`` passes its fresh runs on new seeds to a
    chapter), or else the one :data:`SHIPPED` holds for ``name``. Raises
    :class:`DamagedResults`, naming the file and how to get a clean one, when
    the file is not valid JSON, holds NaN or infinity, carries no hash, or
    its content does not match; ``ValueError`` where no digest is known;
    ``FileNotFoundError`` where there is no such file, whatever its digest
    (a run on seeds nobody stored asks for one). The message is this code's
    own text: nothing read from the file is repeated.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(
            f"name must be a results file's name such as 'ch5_experiment', "
            f"got {name!r}"
        )
    if folder is None:
        path = resources.files(__package__) / "results" / f"{name}.json"
        shown = f"mha_lib/course/results/{name}.json"
    else:
        path = Path(folder) / f"{name}.json"
        shown = str(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{shown}: no such results file (`{command_of(name)}` writes it)"
        )
    expected = SHIPPED.get(name) if sha256 is None else sha256
    if not (
        isinstance(expected, str) and re.fullmatch("[0-9a-f]{64}", expected)
    ):
        raise ValueError(
            f"no SHA-256 to check results file {name!r} against: pass "
            "sha256=, the digest that save() returned to the run that wrote "
            "it, or add it to SHIPPED in mha_lib/course/results.py; a file's "
            f"own hash does not vouch for it (got sha256={sha256!r})"
        )

    def damaged(problem):
        return DamagedResults(
            f"{shown} {problem}: it is not what its run wrote. In the "
            f"course's repository, run `{command_of(name)}` to write it "
            f"again, or `git checkout -- {shown}` to restore it;"
            " in a downloaded chapter, download the chapter "
            "again from the book (its first cell carries the stored files)."
        )

    try:
        record = _parse(path.read_text())
    except json.JSONDecodeError:
        raise damaged("is not valid JSON") from None
    except _NotANumber:
        raise damaged("holds NaN or infinity, which no run writes") from None
    if not isinstance(record, dict) or "sha256" not in record:
        raise damaged("carries no SHA-256 of its content")
    if digest(record) != record["sha256"]:
        raise damaged("does not match the SHA-256 it carries (it was edited)")
    if record["sha256"] != expected:
        raise damaged(
            "does not match the SHA-256 that "
            + (
                "mha_lib/course/results.py holds for it"
                if sha256 is None
                else "the run that wrote it returned"
            )
        )
    return record


def runs_by_key(*files):
    """``{(variant, seed, lr): run}`` of stored results ``files`` (each as
    :func:`load` returned it), whose ``data["variants"]`` each list their
    ``runs``; where two files hold a run, the later file's."""
    runs = {}
    for file in files:
        for variant in file["data"]["variants"]:
            for run in variant["runs"]:
                runs[variant["variant"], run["seed"], run["lr"]] = run
    return runs


class _NotANumber(ValueError):
    """A results file holds NaN or infinity (which :func:`save` refuses)."""


def _parse(text):
    """JSON ``text`` read strictly: ``NaN``, ``Infinity`` and numbers too
    large for a float raise :class:`_NotANumber`."""

    def number(token):
        value = float(token)
        if not math.isfinite(value):
            raise _NotANumber(token)
        return value

    def constant(token):
        raise _NotANumber(token)

    return json.loads(text, parse_float=number, parse_constant=constant)


def seal(name, folder=None):
    """Add the SHA-256 to a results file written before files carried one;
    returns the digest, for :data:`SHIPPED`.

    A one-off for files whose data is known good (the shipped ones were
    checked by their chapters): the data is not changed, only ``sha256`` is
    added. A file that already carries one is checked instead: against
    :data:`SHIPPED` where it holds the file, else against its content.
    """
    path = (FOLDER if folder is None else Path(folder)) / f"{name}.json"
    record = _parse(path.read_text())
    if "sha256" in record:
        if name in SHIPPED:
            return load(name, folder)["sha256"]
        if digest(record) != record["sha256"]:
            raise DamagedResults(
                f"{path} does not match the SHA-256 it carries (it was edited)"
            )
        return record["sha256"]
    return _write(path, record)


class Parts:
    """The finished parts of a long run, kept on disk so that a run that stops
    resumes where it stopped (``<folder>/<name>.partial.json``).

    ``parts.get(key, run)`` returns the stored result of part ``key``, or calls
    ``run()``, stores its (JSON) result with its wall time, and returns it.
    ``parts.seconds`` is the wall time of all the parts, over every resumption
    (summed, where two processes shared the parts).
    :meth:`save` writes the run's result and removes the partial file.
    Two processes sharing the parts take whole groups of them in turn
    (:meth:`in_turn`).
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
                if fcntl is not None:
                    fcntl.flock(held, fcntl.LOCK_EX)
                self._refresh()
                self.done[key] = {"result": result, "seconds": seconds}
                written = self.path.with_suffix(".tmp")  # renamed: atomic
                written.write_text(json.dumps(self.done))
                written.replace(self.path)
            print(f"{key}: {seconds:.0f} s", flush=True)
        return self.done[key]["result"]

    @contextlib.contextmanager
    def held(self, name):
        """Whether this process holds ``name`` (a group of parts, say one
        variant's) for the ``with`` block (``True``), or another process does
        (``False``): an advisory lock, let go when its process ends, however
        it ends."""
        tag = hashlib.sha256(name.encode()).hexdigest()[:12]
        with self.path.with_name(f"{self.name}.{tag}.partial.lock").open(
            "w"
        ) as lock:
            try:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
            else:
                yield True

    def in_turn(self, names, work, *, wait=30):
        """``[work(name) for name in names]``, each name worked on by one
        process at a time (:meth:`held`): a name another process holds is
        left for later and taken once let go (its parts then done, and read).
        Checks every ``wait`` seconds while only held names are left."""
        done, left = {}, list(names)
        while left:
            for name in list(left):
                with self.held(name) as mine:
                    if mine:
                        done[name] = work(name)
                        left.remove(name)
            if left:
                time.sleep(wait)
        return [done[name] for name in names]

    def seconds_of(self, key):
        return self.done[key]["seconds"]

    @property
    def seconds(self):
        return sum(part["seconds"] for part in self.done.values())

    def save(self, data, *, device, ran_in=None, keep=False):
        """:func:`save` ``data`` as ``<name>.json`` with the parts' wall time,
        then remove the partial file, or ``keep`` it (another process that
        shares the parts may still read them); returns :class:`Saved`."""
        saved = save(
            self.name,
            data,
            device=device,
            seconds=self.seconds,
            folder=self.folder,
            ran_in=ran_in,
        )
        if not keep:
            self.discard()
        print(f"wrote {saved.path}: {self.seconds:.0f} s of training")
        return saved

    def discard(self):
        """Remove the partial file, once its runs are kept elsewhere."""
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".lock").unlink(missing_ok=True)
