"""Hopper (sm_90a) GEMM kernels written in Numba with the project's own PTX.

`gemm.matmul(a, b, stages=2)` is the entry point. Importing `gemm` (or
`gemm.schedule`) does not import numba or cupy: the kernels load on first use.
"""
from .packed import PackedWeights, pack_weights
from .schedule import PRESETS, Schedule, ScheduleError, preset

__all__ = ["matmul", "plan", "autotune", "pack_weights", "PackedWeights", "Schedule", "ScheduleError", "PRESETS",
           "preset"]


def __getattr__(name):
    # Lazy: the GPU stack (numba, cupy, cuda.core) loads only when matmul is used.
    if name in ("matmul", "plan", "autotune"):
        from . import api
        value = globals()[name] = getattr(api, name)   # found directly from now on: no hook per call
        return value
    raise AttributeError(f"module 'gemm' has no attribute {name!r}")
