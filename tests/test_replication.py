"""Claims in a form that replicates, and the replication command."""

import json
import subprocess
import sys

import pytest
from support import ROOT

from mha_lib import replication
from mha_lib.replication import Share, parse_seeds
from mha_lib.report import Claims


def test_parse_seeds_reads_ranges_and_lists():
    assert parse_seeds("100-103") == [100, 101, 102, 103]
    assert parse_seeds("0-2,9") == [0, 1, 2, 9]
    assert parse_seeds("7") == [7]
    for bad in ("", "a-b", "5-3", "1,1", "-3", None):
        with pytest.raises(ValueError, match="seed"):
            parse_seeds(bad)


def test_chapter_seeds_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("MHA_SEEDS", raising=False)
    assert replication.chapter_seeds(range(3)) == [0, 1, 2]
    monkeypatch.setenv("MHA_SEEDS", "100-101")
    assert replication.chapter_seeds(range(3)) == [100, 101]


def test_a_share_is_judged_by_its_count_and_with_few_seeds_by_its_interval():
    share = Share.of([True] * 17 + [False] * 3)
    assert (share.count, share.total) == (17, 20)
    assert share.at_least(0.85) and not share.at_least(0.9)
    low, high = share.interval
    assert 0.6 < low < 0.85 < high < 1
    assert "17 of 20 seeds" in str(share)
    # three seeds can refute "at least 80 %", not establish it
    assert Share.of([True, True, False]).at_least(0.8)
    assert not Share.of([False, False, False]).at_least(0.8)
    assert Share(2, 20).at_most(0.1) and not Share(3, 20).at_most(0.1)
    assert Share(1, 3).at_most(0.1) and not Share(3, 3).at_most(0.1)
    with pytest.raises(ValueError, match="no seeds"):
        Share.of([])


def test_claims_record_instead_of_stopping_in_a_replication(
    monkeypatch, tmp_path
):
    record = tmp_path / "claims.jsonl"
    monkeypatch.setenv("MHA_CLAIMS", str(record))
    claims = Claims()
    claims.check(True, "holds", detail=Share(3, 4))
    claims.check(False, "fails", detail="2 of 4")  # does not raise here
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(c["claim"], c["held"]) for c in lines] == [
        ("holds", True),
        ("fails", False),
    ]
    assert lines[0]["detail"].startswith("3 of 4 seeds")
    assert claims.held == ["holds"]
    monkeypatch.delenv("MHA_CLAIMS")
    with pytest.raises(AssertionError, match="fails"):
        Claims().check(False, "fails")


def test_the_stored_replication_refuses_stale_claims(monkeypatch):
    monkeypatch.delenv("MHA_CLAIMS", raising=False)
    rows = _stored_rows(4)
    assert rows and all(row["held"] for row in rows)
    table = replication.replication_table(4, [row["claim"] for row in rows])
    assert rows[0]["claim"] in table.data
    with pytest.raises(ValueError, match="replicate.py"):
        replication.replication_table(4, ["a claim the chapter never checked"])


def _stored_rows(chapter):
    from mha_lib import results

    claims = results.load("replication")["data"]["claims"]
    return [row for row in claims if row["chapter"] == chapter]


def test_chapter_4_holds_on_three_new_seeds():
    """A few-seed run of the replication command: a threshold fitted to the
    chapter's own seeds fails here."""
    result = subprocess.run(
        [sys.executable, "scripts/replicate.py", "--seeds", "100-102"]
        + ["--chapters", "4", "--only-new"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        result.stdout[-3000:] + result.stderr[-2000:]
    )
    assert " 0 failed" in result.stdout
