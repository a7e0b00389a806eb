"""Paths and small helpers shared by the tests (imported as ``support``: pytest
puts tests/ on the path)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import mha_lib

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ATOL = 1e-5
# Every device test runs on the CPU, and on CUDA where a GPU is present.
NO_GPU = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here"
)
DEVICES = ["cpu", pytest.param("cuda", marks=NO_GPU)]


def first_code_cell(path):
    """The source of a notebook's first code cell (its set-up)."""
    cells = json.loads(Path(path).read_text())["cells"]
    return next(
        "".join(c["source"]) for c in cells if c["cell_type"] == "code"
    )


def extension(name):
    """``book/_ext/<name>.py``, imported by its path, its folder on the path
    as Sphinx puts it (``local_extensions``), so it imports its siblings."""
    if str(ROOT / "book" / "_ext") not in sys.path:
        sys.path.insert(0, str(ROOT / "book" / "_ext"))
    path = ROOT / "book" / "_ext" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"book_ext_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# what any named kind may add: tried on every row of NAMED_KINDS
KIND_OPTIONS = [
    {},
    dict(bias=False),
    dict(num_kv_heads=2),
    dict(scale=0.5, dropout=0.1),
]
# every layer of mha_lib.layers: those that say which fields they implement
LAYERS = [
    value
    for value in vars(mha_lib.layers).values()
    if isinstance(value, type) and hasattr(value, "implements")
]


def named_specs(kind, d_model=32):
    """Specs of ``kind``, a key of ``NAMED_KINDS``, at 1 and 4 heads: plain
    and with each of ``KIND_OPTIONS`` the kind allows."""
    specs = []
    for num_heads in (1, 4):
        for options in KIND_OPTIONS:
            try:
                specs.append(
                    mha_lib.AttentionSpec.named(
                        kind, d_model, num_heads, **options
                    )
                )
            except ValueError:  # e.g. 2 key/value heads for 1 query head
                continue
    assert len(specs) >= 2, f"no spec of kind {kind!r} to try"
    return specs


def reference_pair(d_model, num_heads, bias=True, seed=0):
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(
        d_model, num_heads, bias=bias, batch_first=True
    ).eval()
    with (
        torch.no_grad()
    ):  # non-zero biases, so that a bias copied to the wrong place shows
        for parameter in reference.parameters():
            if parameter.dim() == 1:
                parameter.normal_()
    return reference, mha_lib.from_torch(reference)


def inputs(batch, n_query, n_key, d_model, seed=1):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(batch, n_query, d_model, generator=generator)
    if n_key is None:
        return query, query, query
    key = torch.randn(batch, n_key, d_model, generator=generator)
    value = torch.randn(batch, n_key, d_model, generator=generator)
    return query, key, value


def random_masks(batch, num_heads, n_query, n_key, seed):
    """A bool attn_mask, 3-D per-head float mask and key padding that never
    hide a whole row."""
    generator = torch.Generator().manual_seed(seed)
    attn_mask = torch.rand(n_query, n_key, generator=generator) < 0.3
    attn_mask[:, 0] = False
    padding = torch.zeros(batch, n_key, dtype=torch.bool)
    padding[-1, n_key // 2 + 1 :] = True
    per_head = torch.randn(
        batch * num_heads, n_query, n_key, generator=generator
    )
    return attn_mask, padding, per_head
