"""gemm.matmul's input checks, which need no GPU: each bad input gets a clear
error naming what was wrong, raised before anything is launched or written."""
import numpy as np
import pytest

import gemm
from gemm.schedule import ScheduleError


def _pair(m=4, k=8, n=5, dtype=np.float16):
    rng = np.random.default_rng(0)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def test_mismatched_inner_dimensions():
    a, _ = _pair()
    b = np.ones((9, 5), np.float16)
    with pytest.raises(ValueError, match=r"inner dimensions differ: a is \(4, 8\) and b is \(9, 5\)"):
        gemm.matmul(a, b)


@pytest.mark.parametrize("shape", [(8,), (2, 2, 4, 8)])
def test_not_2d_or_3d(shape):
    a = np.ones(shape, np.float16)
    with pytest.raises(ValueError, match="must be a 2-D matrix or a 3-D batch"):
        gemm.matmul(a, np.ones((8, 3), np.float16))


def test_batches_must_broadcast():
    a = np.ones((2, 4, 8), np.float16)
    with pytest.raises(ValueError, match="batch dimensions do not broadcast"):
        gemm.matmul(a, np.ones((3, 8, 5), np.float16))
    with pytest.raises(ValueError, match=r"out has shape \(4, 5\); the product needs \(2, 4, 5\)"):
        gemm.matmul(a, np.ones((8, 5), np.float16), out=np.zeros((4, 5), np.float16))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        gemm.matmul(a, np.ones((2, 7, 5), np.float16))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_unsupported_dtype(dtype):
    a, b = _pair(dtype=dtype)
    with pytest.raises(TypeError, match=r"not supported: the kernels take float16 or bfloat16"):
        gemm.matmul(a, b)


def test_mixed_dtypes():
    a, b = _pair()
    with pytest.raises(TypeError, match="same dtype"):
        gemm.matmul(a, b.astype(np.float32))


def test_not_an_array():
    with pytest.raises(TypeError, match="NumPy array, a CuPy array or a PyTorch CUDA tensor"):
        gemm.matmul([[1.0]], [[1.0]])


def test_bad_out():
    a, b = _pair()
    with pytest.raises(ValueError, match=r"out has shape \(3, 3\); the product needs \(4, 5\)"):
        gemm.matmul(a, b, out=np.zeros((3, 3), np.float16))
    with pytest.raises(TypeError, match="out is float32"):
        gemm.matmul(a, b, out=np.zeros((4, 5), np.float32))


def test_bad_schedule_choice():
    a, b = _pair()
    with pytest.raises(ScheduleError, match="stages must be >= 1"):
        gemm.matmul(a, b, stages=0)
    with pytest.raises(ScheduleError, match="unknown version"):
        gemm.matmul(a, b, version="v0")
    with pytest.raises(ScheduleError, match="no kernel yet: a cluster of 4 CTAs"):
        gemm.matmul(a, b, schedule=gemm.preset("v7", cluster_m=4))
    with pytest.raises(NotImplementedError, match="one producer warpgroup"):
        gemm.matmul(a, b, schedule=gemm.preset("v3", producer_warps=2))
    with pytest.raises(ValueError, match="either schedule= or version="):
        gemm.matmul(a, b, version="v2", schedule=gemm.preset("v2"))


def test_bad_weights():
    a, b = _pair()
    with pytest.raises(ValueError, match="weights must be None, 'a' or 'b'"):
        gemm.matmul(a, b, weights="w")


def test_weights_preload_only_dependent_launches():
    """weights= turns on the preload where the schedule waits for the kernel ahead, and leaves
    any other schedule as it is; a schedule asking for a preload without that wait is refused."""
    from gemm.api import with_weights
    v7 = gemm.preset("v7")
    assert with_weights(v7, "b").preload == "b" and with_weights(v7, None) is v7
    assert with_weights(gemm.preset("v2"), "b") == gemm.preset("v2")
    with pytest.raises(ScheduleError, match="only a programmatic dependent launch waits"):
        gemm.preset("v7", dependent_launch=False, preload="b")
    with pytest.raises(ScheduleError, match="preload must be one of"):
        gemm.preset("v7", preload="c")
    swapped = gemm.preset("v7", block_n=16, stages=10, swap_ab=True, epilogue="direct", producer_registers=0,
                          consumer_registers=0, preload="b")
    assert swapped.preloaded_operand == "a" and v7.replace(preload="b").preloaded_operand == "b"


def test_no_partial_write_on_bad_input():
    a, _ = _pair()
    out = np.full((4, 5), 7.0, np.float16)
    with pytest.raises(ValueError):
        gemm.matmul(a, np.ones((9, 5), np.float16), out=out)
    assert (out == 7.0).all()


def test_torch_cpu_tensor_refused():
    torch = pytest.importorskip("torch")
    a = torch.ones((4, 8), dtype=torch.float16)
    with pytest.raises(ValueError, match="pass CUDA tensors"):
        gemm.matmul(a, a.T)


@pytest.mark.skipif(__import__("conftest").HOPPER, reason="this machine has a Hopper GPU")
def test_valid_input_without_gpu_says_so():
    from gemm.launch import DeviceError
    a, b = _pair()
    with pytest.raises(DeviceError, match=r"(no CUDA GPU|compute capability)"):
        gemm.matmul(a, b)


def test_gpu_that_is_not_hopper_is_refused(monkeypatch):
    cuda_core = pytest.importorskip("cuda.core")
    from types import SimpleNamespace

    from gemm import launch

    class Ampere:
        name = "NVIDIA A100-SXM4-80GB"
        compute_capability = SimpleNamespace(major=8, minor=0)

        def set_current(self):
            pass

    monkeypatch.setattr(cuda_core, "Device", Ampere)
    launch.device.cache_clear()
    try:
        with pytest.raises(launch.DeviceError, match=r"compute capability 8\.0.*only on compute capability 9\.0"):
            gemm.matmul(*_pair())
    finally:
        launch.device.cache_clear()


def test_replays_keep_at_most_the_staging_cap(monkeypatch):
    """Replays that hold padded buffers are remembered while their bytes fit under the cap; one
    that would pass it forgets the others first, and one larger than the cap is not kept."""
    from gemm import api
    monkeypatch.setattr(api, "_STAGING_MAX", 100)
    api._forget_repeats()

    class Held:
        def __init__(self, nbytes):
            self.staging_bytes = nbytes
    api._remember("a", Held(60))
    api._remember("plain", object())
    assert set(api._REPEATS) == {"a", "plain"} and api._staging_held[0] == 60
    api._remember("b", Held(50))           # 110 > 100: the others go first
    assert set(api._REPEATS) == {"b"} and api._staging_held[0] == 50
    api._remember("huge", Held(101))
    assert "huge" not in api._REPEATS
    api._forget_repeats()
    assert api._staging_held[0] == 0 and not api._REPEATS


def test_a_dependent_launch_lets_the_next_kernel_in_early_only_from_a_grid_that_fills_the_gpu():
    """Back to back, the next kernel's CTAs take whatever SMs a grid leaves idle: an early trigger
    pays only where at most a few are (gemm.limits.EARLY_TRIGGER_IDLE_SMS)."""
    from gemm.limits import EARLY_TRIGGER_IDLE_SMS, fills_the_gpu
    assert fills_the_gpu(132, 132) and fills_the_gpu(264, 132)
    assert fills_the_gpu(132 - EARLY_TRIGGER_IDLE_SMS, 132)
    assert not fills_the_gpu(131 - EARLY_TRIGGER_IDLE_SMS, 132)
    assert not fills_the_gpu(86, 132) and not fills_the_gpu(115, 132)
