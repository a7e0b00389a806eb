"""Stored results: provenance, resuming a stopped run, the shipped files."""

import json

import pytest

from mha_lib import results


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
    path = second.save({"x": 1}, device="cpu")
    assert path == tmp_path / "run.json"
    assert not second.path.exists()
    record = json.loads(path.read_text())
    assert record["data"] == {"x": 1}
    assert record["wall_seconds"] == round(second.seconds, 1)
    assert record["environment"]["device"] == "cpu"
    assert record["command"].startswith("python3 ")


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
    assert record["command"] == f"python3 scripts/{name}.py"
    assert record["wall_seconds"] > 0
    assert {"device", "torch", "mha_lib"} <= set(record["environment"])
