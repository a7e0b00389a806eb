"""What every script of the course shares: it runs on its own checkout's
``mha_lib``, on one CPU thread unless ``--threads`` says otherwise.

Imported before ``mha_lib`` (``import checkout``), this module puts the
checkout it lies in first on ``sys.path`` and on the ``PYTHONPATH`` of the
processes the script starts (the kernels of ``replicate.py``), then imports
``mha_lib`` and stops the script, with a message, where that is another
checkout's (imported before, say): a script reads and writes the results
folder of the ``mha_lib`` it imports, so it must be this one.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
)

import mha_lib  # noqa: E402

IMPORTED = Path(mha_lib.__file__).resolve().parent
if IMPORTED != ROOT / "mha_lib":
    sys.exit(
        f"{Path(sys.argv[0]).name} belongs to the checkout {ROOT}, but "
        f"Python imported mha_lib from {IMPORTED}; it would read and write "
        "that checkout's results. Run the script of the checkout you mean, "
        "in a fresh process."
    )


def add_threads(parser):
    """Give ``parser`` (``argparse``) the option ``--threads N``."""
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads for PyTorch (default 1, which leaves the other "
        "core of a 2-core machine free and times steps alike)",
    )
    return parser


def use_threads(count):
    """Run PyTorch on ``count`` CPU threads (a whole number from 1), here and
    in the kernels the script starts (which read ``OMP_NUM_THREADS``)."""
    import torch

    if not isinstance(count, int) or count < 1:
        sys.exit(f"--threads must be a whole number from 1, got {count!r}")
    torch.set_num_threads(count)
    os.environ["OMP_NUM_THREADS"] = str(count)


def threads_only(doc):
    """The command line of a script whose one option is ``--threads``:
    read and applied; returns the parsed arguments."""
    import argparse

    parser = add_threads(
        argparse.ArgumentParser(description=doc.split("\n\n")[0])
    )
    args = parser.parse_args()
    use_threads(args.threads)
    return args
