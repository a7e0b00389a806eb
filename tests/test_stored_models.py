"""Stored trainings: read back as trained, checked by training again."""

import json
import math

import pytest
import torch

from mha_lib.course import results
from mha_lib.course.stored_models import StoredModels, largest_gap
from mha_lib.course.tasks import OffsetCopy

TASK = OffsetCopy(offsets=(1, 3), seq_len=8, d_in=4)
TRAINING = dict(steps=20, lr=1e-2, batch_size=8, d_model=16, num_heads=2)


def store(folder):
    """Train and store four seeds in ``folder``: ``(runs, SHA-256 of the
    results file)``."""
    storing = StoredModels("runs", folder=str(folder), store=True)
    runs = storing.train_seeds("two heads", TASK, seeds=range(4), **TRAINING)
    return runs, storing.sha256


def test_stored_models_come_back_as_trained_and_are_checked(tmp_path):
    trained, sha256 = store(tmp_path)
    record = results.load("runs", tmp_path, sha256=sha256)
    assert record["command"] == "python3 scripts/store_models.py runs"
    stored = StoredModels("runs", folder=tmp_path, sha256=sha256)
    read = stored.train_seeds("two heads", TASK, seeds=range(4), **TRAINING)
    for (model, history), (again, stored_history) in zip(trained, read):
        assert history == stored_history
        for name, tensor in model.state_dict().items():
            assert torch.equal(tensor, again.state_dict()[name])
    ((key, how, gap),) = stored.rows
    assert how == "2 of 4 trained again" and gap < 1e-6
    # other seeds or other settings are not stored: trained here
    stored.train_seeds("two heads", TASK, seeds=[7], **TRAINING)
    stored.train_seeds(
        "two heads", TASK, seeds=[0], **{**TRAINING, "lr": 3e-2}
    )
    assert [how for _, how, _ in stored.rows[1:]] == ["all 1 trained here"] * 2
    assert "2 of 4 trained again" in stored.table().data


def test_a_stored_run_that_no_longer_reproduces_stops_the_page(tmp_path):
    store(tmp_path)
    path = tmp_path / "runs.json"
    record = json.loads(path.read_text())
    losses = record["data"]["runs"]["two heads"]["histories"]["1"]["loss"]
    losses[-1] += 0.01  # as if the training had changed since
    _, sha256 = results.save(
        "runs",
        record["data"],
        device="cpu",
        seconds=1,
        folder=tmp_path,
        command=record["command"],
    )
    with pytest.raises(AssertionError, match="store_models.py runs"):
        StoredModels("runs", folder=tmp_path, sha256=sha256).train_seeds(
            "two heads", TASK, seeds=range(4), **TRAINING
        )


def test_changed_weights_are_refused(tmp_path):
    _, sha256 = store(tmp_path)
    weights = torch.load(tmp_path / "runs.pt", weights_only=True)
    weights["two heads"]["2"]["readout.weight"] += 1
    torch.save(weights, tmp_path / "runs.pt")
    with pytest.raises(results.DamagedResults, match="runs.pt"):
        StoredModels("runs", folder=tmp_path, sha256=sha256)


def test_a_stored_record_is_not_checked_against_its_own_hash(tmp_path):
    store(tmp_path)  # its digest is neither passed nor held in the code
    with pytest.raises(ValueError, match="own hash does not vouch"):
        StoredModels("runs", folder=tmp_path)


@pytest.mark.parametrize(
    "live, stored", [(float("nan"), 0.5), (0.5, float("inf")), (-math.inf, 1)]
)
def test_a_loss_that_is_not_a_number_is_refused_not_skipped(live, stored):
    # max() skips a NaN that does not come first: it must stand anywhere
    pairs = [(0, "loss", 0.5, 0.5), (1, "eval", live, stored)]
    with pytest.raises(
        ValueError, match="seed 1: a value of its eval .* not a finite"
    ):
        largest_gap("two heads", pairs)
    assert largest_gap("two heads", pairs[:1] * 2) == 0
