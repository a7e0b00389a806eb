"""Train a chapter's models on all its seeds and store them.

    python3 scripts/store_models.py ch4_models   # about 3 minutes on 2 cores

runs the chapter's notebook with ``STORE_MODELS = True`` added after its
parameters cell, so that each ``StoredModels.train_seeds`` call in it trains
every seed and writes ``mha_lib/course/results/<name>.pt`` (the weights) and
``<name>.json`` (histories, settings, the weights' SHA-256, this command,
device, versions and the training's wall time). The chapter then reads them and
trains a few seeds of each again to check them (see
``mha_lib/course/stored_models.py``). Run it after changing a training of the
chapter; the chapter says so when the stored models no longer match.
"""

import argparse
import json
import sys

import checkout  # this checkout's mha_lib, first
from replicate import run_chapter

from mha_lib.course import results

NOTEBOOKS = {"ch4_models": "04_heads_differ.ipynb"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", choices=sorted(NOTEBOOKS))
    checkout.add_threads(parser)
    args = parser.parse_args()
    checkout.use_threads(args.threads)
    name = args.name
    for suffix in (".json", ".pt"):
        (results.FOLDER / f"{name}{suffix}").unlink(missing_ok=True)
    path = results.FOLDER.parent.parent / "notebooks" / NOTEBOOKS[name]
    claims = run_chapter(path, {"STORE_MODELS": True})
    failed = [claim["claim"] for claim in claims if not claim["held"]]
    # written by the chapter's kernel: its digest is not yet in SHIPPED
    record = json.loads((results.FOLDER / f"{name}.json").read_text())
    print(
        f"{name}.json's SHA-256 for SHIPPED in results.py: {record['sha256']}"
    )
    print(
        f"stored {len(record['data']['runs'])} trainings in "
        f"mha_lib/course/results/{name}.pt ({record['wall_seconds']:.0f} s of "
        f"training); {len(claims) - len(failed)} claims held, "
        f"{len(failed)} failed"
    )
    for claim in failed:
        print("FAILED:", claim)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
