"""Device choice and seeding."""

import contextlib
import os

import numpy
import pytest
import torch

import mha_lib

pytestmark = pytest.mark.core


def test_seed_everything_repeats_random_draws_and_checks_its_argument():
    mha_lib.seed_everything(3)
    first = torch.rand(3)
    mha_lib.seed_everything(3)
    assert torch.equal(torch.rand(3), first)
    for bad in ("1", 1.0, True):
        with pytest.raises(TypeError, match="seed must be an int"):
            mha_lib.seed_everything(bad)


def test_deterministic_mode_is_opt_in():
    with mha_lib.restored_settings():
        mha_lib.seed_everything(0)
        assert not torch.are_deterministic_algorithms_enabled()
        mha_lib.seed_everything(0, deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
    assert not torch.are_deterministic_algorithms_enabled()


def process_settings():
    """The process-wide settings the course's helpers may change."""
    cudnn = torch.backends.cudnn
    return dict(
        matmul_tf32=torch.backends.cuda.matmul.allow_tf32,
        cudnn=(cudnn.allow_tf32, cudnn.benchmark, cudnn.deterministic),
        deterministic=torch.are_deterministic_algorithms_enabled(),
        warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        workspace=os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )


@pytest.mark.parametrize("workspace", [None, ":16:8"])
def test_restored_settings_undo_what_the_helpers_change(
    monkeypatch, workspace
):
    """A user's own settings (TF32 on, cuDNN benchmarking, their own cuBLAS
    workspace or none) come back after pick_device on CUDA and
    seed_everything(deterministic=True), even when the code inside fails."""
    monkeypatch.delenv("MHA_DEVICE", raising=False)
    if workspace is None:
        monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    else:
        monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", workspace)
    with pretend_cuda(), mha_lib.restored_settings():
        torch.backends.cudnn.benchmark = True
        before = process_settings()
        assert before["matmul_tf32"] and before["cudnn"][:2] == (True, True)
        with pytest.raises(RuntimeError, match="inside"):
            with mha_lib.restored_settings():
                mha_lib.pick_device("cuda")
                mha_lib.seed_everything(0, deterministic=True)
                changed = process_settings()
                raise RuntimeError("a failure inside")
        assert changed != before, "the helpers changed nothing to restore"
        assert not changed["matmul_tf32"] and changed["deterministic"]
        assert changed["workspace"] == ":4096:8"
        assert process_settings() == before


def test_pick_device_honours_the_environment(monkeypatch):
    monkeypatch.setenv("MHA_DEVICE", "cpu")
    assert mha_lib.pick_device() == torch.device("cpu")
    monkeypatch.delenv("MHA_DEVICE")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert mha_lib.pick_device() == torch.device("cpu")
    with pytest.raises(ValueError, match="CUDA is not available"):
        mha_lib.pick_device("cuda")


@contextlib.contextmanager
def pretend_cuda():
    """CUDA reported present and TF32 switched on, all restored afterwards.

    Saved and restored by hand: the TF32 flags are properties of torch's
    backend modules, which ``monkeypatch`` cannot always undo, and a failed
    undo would leave CUDA "present" for every later test.
    """
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = (torch.cuda.is_available, matmul.allow_tf32, cudnn.allow_tf32)
    try:
        torch.cuda.is_available = lambda: True
        matmul.allow_tf32 = cudnn.allow_tf32 = True
        yield
    finally:
        torch.cuda.is_available = saved[0]
        matmul.allow_tf32, cudnn.allow_tf32 = saved[1:]


def test_pick_device_chooses_cuda_when_present_and_pins_tf32_off(
    monkeypatch,
):
    monkeypatch.delenv("MHA_DEVICE", raising=False)
    with pretend_cuda():
        assert mha_lib.pick_device() == torch.device("cuda")
        assert (
            not torch.backends.cuda.matmul.allow_tf32
            and not torch.backends.cudnn.allow_tf32
        )


def test_pretending_cuda_leaves_nothing_behind():
    real = torch.cuda.is_available
    flags = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )
    with pytest.raises(RuntimeError, match="inside"):
        with pretend_cuda():
            assert torch.cuda.is_available()
            raise RuntimeError("a failure inside the test")
    assert torch.cuda.is_available is real
    assert flags == (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )


@pytest.mark.parametrize(
    "prefer,error,words",
    [
        (0, TypeError, "prefer must be 'cpu', 'cuda', 'cuda:N' or a torch"),
        (True, TypeError, "prefer must be"),
        ("mps", ValueError, "prefer must be 'cpu', 'cuda' or 'cuda:N'"),
        ("meta", ValueError, "got 'meta'"),
        ("gpu", ValueError, "got 'gpu'"),
        (torch.device("meta"), ValueError, "prefer must be"),
    ],
)
def test_pick_device_refuses_devices_the_course_does_not_run_on(
    prefer, error, words
):
    with pytest.raises(error, match=words):
        mha_lib.pick_device(prefer)


def test_pick_device_checks_the_environment_variable(monkeypatch):
    monkeypatch.setenv("MHA_DEVICE", "mps")
    with pytest.raises(ValueError, match="MHA_DEVICE must be 'cpu'"):
        mha_lib.pick_device()
    assert mha_lib.pick_device(torch.device("cpu")) == torch.device("cpu")


def test_seed_everything_takes_numpy_integers():
    first = mha_lib.seed_everything(numpy.int64(3))
    draws = torch.rand(3)
    assert first == 3 and type(first) is int
    mha_lib.seed_everything(3)
    assert torch.equal(torch.rand(3), draws)
