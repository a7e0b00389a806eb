"""A chapter's trained models, stored with the course and re-trained in part.

A chapter that trains many small models on 20 seeds takes minutes on a CPU.
``StoredModels(name).train_seeds(key, task, seeds=..., **training)`` returns
what :func:`mha_lib.course.training.train_seeds` would, read from the weights
and histories that ``python3 scripts/store_models.py`` stored in
``mha_lib/course/results/<name>.json`` (provenance, histories, the weights'
SHA-256) and ``<name>.pt`` (the weights). The first ``check`` seeds are trained
again live and every recorded training loss must match the stored one within a
tolerance, so the stored models are the ones this code trains; a difference
raises with the command that stores them again. Where nothing is stored under
``key`` for these seeds and these settings (new seeds, say, or a downloaded
chapter, which carries no weights), every seed is trained live.

The store command runs the chapter with ``STORE_MODELS = True`` in its
parameters cell, which makes ``StoredModels(name, store=True)``: every call
then trains all seeds and writes them.
"""

import hashlib
import inspect
import math
import time
from pathlib import Path

import torch

from . import results
from .model import AttentionModel
from .report import markdown_table
from .training import check_seeds, train_seeds

STORE_COMMAND = "python3 scripts/store_models.py"
# the arguments of train_seeds that are not the model's sizes
TRAINING_ARGUMENTS = set(inspect.signature(train_seeds).parameters) - {"sizes"}


def settings_of(task, training):
    """The text that names a training's settings: the task and every argument
    (functions by their name)."""
    named = {
        key: getattr(value, "__qualname__", value)
        for key, value in sorted(training.items())
        if key != "device"
    }
    return f"{task!r} {named}"


def largest_gap(key, pairs):
    """The largest ``|live - stored|`` over ``pairs`` ``(seed, history,
    live, stored)``. A loss that is NaN or infinite is no number to compare
    (``max`` would skip a NaN, or keep it, depending on where it stands):
    refused, naming the seed and the history it is in."""
    for seed, name, *values in pairs:
        if not all(math.isfinite(value) for value in values):
            raise ValueError(
                f"{key!r}, seed {seed}: a value of its {name} history is "
                f"not a finite number (live, stored: {values}); a training "
                "diverged, so the stored models cannot be checked"
            )
    return max(abs(live - stored) for _, _, live, stored in pairs)


class StoredModels:
    """The stored trainings of one chapter (see the module's text).

    The record is checked against the SHA-256 the library holds for ``name``
    (:data:`mha_lib.course.results.SHIPPED`), or, for models stored in
    another ``folder``, against ``sha256``: the :attr:`sha256` of the
    ``StoredModels`` that stored them.
    """

    def __init__(
        self, name, *, check=2, folder=None, store=False, sha256=None
    ):
        if not isinstance(store, bool):
            raise TypeError(f"store must be True or False, got {store!r}")
        self.name = name
        self.check = check
        self.storing = store
        self.folder = results.FOLDER if folder is None else Path(folder)
        self.weights_path = self.folder / f"{name}.pt"
        self.runs, self.weights, self.seconds = {}, {}, 0.0
        self.rows = []  # (key, how the seeds were had, largest difference)
        self.record = None
        self.sha256 = None  # of the file this one stored, once it has
        if not self.storing and self.weights_path.is_file():
            self.record = results.load(name, folder, sha256=sha256)
            self._load_weights()

    def _load_weights(self):
        content = self.weights_path.read_bytes()
        if (
            hashlib.sha256(content).hexdigest()
            != self.record["data"]["weights_sha256"]
        ):
            raise results.DamagedResults(
                f"mha_lib/course/results/{self.name}.pt does not match the "
                "SHA-256 "
                f"in {self.name}.json: run `{STORE_COMMAND} {self.name}` "
                "to store the models again"
            )
        self.weights = torch.load(self.weights_path, weights_only=True)

    def train_seeds(self, key, task, *, seeds, device=None, **training):
        """``[(model, history), ...]`` per seed, as
        :func:`mha_lib.course.training.train_seeds` ``(task, seeds=seeds,
        device=device, **training)`` returns them."""
        seeds = check_seeds(seeds)
        settings = settings_of(task, training)
        if self.storing:
            return self._store(key, task, seeds, settings, device, training)
        stored = None if self.record is None else self.record["data"]
        entry = None if stored is None else stored["runs"].get(key)
        if (
            entry is None
            or entry["settings"] != settings
            or not set(seeds) <= set(entry["seeds"])
        ):
            self.rows.append((key, f"all {len(seeds)} trained here", None))
            return train_seeds(task, seeds=seeds, device=device, **training)
        live = train_seeds(
            task, seeds=seeds[: self.check], device=device, **training
        )
        device = next(live[0][0].parameters()).device
        gap = largest_gap(
            key,
            [
                (seed, name, a, b)
                for seed, (_, history) in zip(seeds, live)
                for name in ("loss", "eval")
                for a, b in zip(
                    history.get(name, []),
                    entry["histories"][str(seed)].get(name, []),
                )
            ],
        )
        tolerance = 1e-3 if device.type == "cpu" else 2e-2
        if not gap < tolerance:
            raise AssertionError(
                f"{key!r}: trained again, a training loss differs from the "
                f"stored one by {gap:.2e} (tolerance {tolerance:g}); run "
                f"`{STORE_COMMAND} {self.name}` to store the models again"
            )
        self.rows.append(
            (key, f"{len(live)} of {len(seeds)} trained again", gap)
        )
        sizes = {
            k: v for k, v in training.items() if k not in TRAINING_ARGUMENTS
        }
        runs = []
        for seed in seeds:
            model = AttentionModel.for_task(task, **sizes)
            model.load_state_dict(self.weights[key][str(seed)])
            runs.append((model.to(device), entry["histories"][str(seed)]))
        return runs

    def _store(self, key, task, seeds, settings, device, training):
        begun = time.time()
        runs = train_seeds(task, seeds=seeds, device=device, **training)
        self.seconds += time.time() - begun
        self.weights[key] = {
            str(seed): {
                name: tensor.detach().cpu().clone()
                for name, tensor in model.state_dict().items()
            }
            for seed, (model, _) in zip(seeds, runs)
        }
        self.runs[key] = {
            "settings": settings,
            "seeds": seeds,
            "histories": {
                str(seed): history for seed, (_, history) in zip(seeds, runs)
            },
        }
        torch.save(self.weights, self.weights_path)
        digest = hashlib.sha256(self.weights_path.read_bytes()).hexdigest()
        device = next(runs[0][0].parameters()).device
        self.sha256 = results.save(
            self.name,
            {"weights_sha256": digest, "runs": self.runs},
            device=device,
            seconds=self.seconds,
            folder=self.folder,
            command=f"{STORE_COMMAND} {self.name}",
        ).sha256
        self.rows.append((key, f"all {len(seeds)} trained and stored", None))
        return runs

    def table(self):
        """How each training's seeds were had: a Markdown table."""
        return markdown_table(
            ["models", "seeds", "largest difference to the stored loss"],
            [
                [key, how, "" if gap is None else f"{gap:.1e}"]
                for key, how, gap in self.rows
            ],
        )
