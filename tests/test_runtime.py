"""Device choice and seeding."""

import pytest
import torch

import mha_lib


def test_seed_everything_repeats_random_draws_and_checks_its_argument():
    mha_lib.seed_everything(3)
    first = torch.rand(3)
    mha_lib.seed_everything(3)
    assert torch.equal(torch.rand(3), first)
    for bad in ("1", 1.0, True):
        with pytest.raises(TypeError, match="seed must be an int"):
            mha_lib.seed_everything(bad)


def test_deterministic_mode_is_opt_in():
    try:
        mha_lib.seed_everything(0)
        assert not torch.are_deterministic_algorithms_enabled()
        mha_lib.seed_everything(0, deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


def test_pick_device_honours_the_environment(monkeypatch):
    monkeypatch.setenv("MHA_DEVICE", "cpu")
    assert mha_lib.pick_device() == torch.device("cpu")
    monkeypatch.delenv("MHA_DEVICE")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert mha_lib.pick_device() == torch.device("cpu")
    with pytest.raises(ValueError, match="CUDA is not available"):
        mha_lib.pick_device("cuda")


def test_pick_device_chooses_cuda_when_present_and_pins_tf32_off(monkeypatch):
    monkeypatch.delenv("MHA_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", True)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert mha_lib.pick_device() == torch.device("cuda")
    assert (
        not torch.backends.cuda.matmul.allow_tf32
        and not torch.backends.cudnn.allow_tf32
    )
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    with pytest.warns(UserWarning, match="NVIDIA_TF32_OVERRIDE"):
        mha_lib.pick_device("cuda")
