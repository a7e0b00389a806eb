"""Device choice and seeding."""

import pytest
import torch

import mha_lib
import mha_lib.runtime


def test_seed_everything_repeats_random_draws_and_checks_its_argument():
    mha_lib.seed_everything(3)
    first = torch.rand(3)
    mha_lib.seed_everything(3)
    assert torch.equal(torch.rand(3), first)
    for bad in ("1", 1.0, True):
        with pytest.raises(TypeError, match="seed must be an int"):
            mha_lib.seed_everything(bad)


def test_pick_device_honours_the_environment(monkeypatch):
    monkeypatch.setenv("MHA_DEVICE", "cpu")
    assert mha_lib.pick_device() == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            mha_lib.pick_device("cuda")


def test_glue_returns_its_value_with_or_without_myst_nb(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "myst_nb", None)  # as on Colab: the import fails
    assert mha_lib.runtime.glue("x", 1.5) == 1.5
