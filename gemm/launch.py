"""Load compiled kernels on the GPU and launch them cheaply.

numba's own launch path type-checks and boxes every argument (about 45 us a call
with three arrays, see shared/device/NOTES.md). The kernels take only scalars, so
the cubin is loaded with cuda.core and launched with cuda.bindings' cuLaunchKernel.
Loading raises the kernel's dynamic shared-memory limit past 48 KB.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache

from .compile import compile_kernel
from .kernels import KernelConfig


class DeviceError(RuntimeError):
    """No usable GPU: none at all, or one that is not a Hopper (sm_90)."""


@lru_cache(maxsize=1)
def device():
    """The current CUDA device, checked to be compute capability 9.0."""
    try:
        from cuda.core import Device
        dev = Device()
        dev.set_current()
    except Exception as exc:  # no driver, no device
        raise DeviceError(f"no CUDA GPU is available ({exc.__class__.__name__}: {exc}); "
                          "gemm.matmul needs an NVIDIA H100/H200 (compute capability 9.0) "
                          "with a CUDA 13 driver. The simulator (python -m sim.run) needs no GPU.") from None
    cc = dev.compute_capability
    if (cc.major, cc.minor) != (9, 0):
        raise DeviceError(f"GPU {dev.name!r} has compute capability {cc.major}.{cc.minor}; these kernels "
                          "use sm_90a instructions (WGMMA, TMA) and run only on compute capability 9.0 "
                          "(H100, H200)")
    return dev


@dataclass
class LoadedKernel:
    config: KernelConfig
    function: object        # cuda.bindings CUfunction in the current context
    shared_bytes: int
    threads: int
    occupancy: object       # cuda.core KernelOccupancy, for reports


def _set_max_dynamic_shared(kernel, nbytes: int) -> None:
    from cuda.bindings import driver
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    handle = kernel.handle
    if isinstance(handle, driver.CUkernel):
        err, = driver.cuKernelSetAttribute(attr, nbytes, handle, device().device_id)
    else:
        err, = driver.cuFuncSetAttribute(handle, attr, nbytes)
    if int(err) != 0:
        raise DeviceError(f"could not allow {nbytes} bytes of dynamic shared memory: {err}")


@lru_cache(maxsize=None)
def load_kernel(config: KernelConfig) -> LoadedKernel:
    device()
    from cuda.bindings import driver
    from cuda.core import ObjectCode
    compiled = compile_kernel(config)
    kernel = ObjectCode.from_cubin(compiled.cubin).get_kernel(compiled.name)
    _set_max_dynamic_shared(kernel, config.shared_bytes)
    handle = kernel.handle
    if isinstance(handle, driver.CUkernel):
        err, handle = driver.cuKernelGetFunction(handle)
        if int(err) != 0:
            raise DeviceError(f"cuKernelGetFunction failed: {err}")
    return LoadedKernel(config, handle, config.shared_bytes, config.threads, kernel.occupancy)


_ARG_TYPES = (ctypes.c_int64,) * 4 + (ctypes.c_int32,) * 3 + (ctypes.c_uint32, ctypes.c_int64)


@lru_cache(maxsize=64)
def _stream(handle: int):
    from cuda.bindings import driver
    return driver.CUstream(handle)


def launch(loaded: LoadedKernel, grid, stream_handle: int, tmap_a: int, tmap_b: int, c: int,
           ldc: int, m: int, n: int, k: int, pair_ok: bool, probe: int = 0) -> None:
    """cuLaunchKernel with the arguments packed by cuda.bindings: a few
    microseconds, against tens for a numba or cuda.core launch."""
    from cuda.bindings import driver
    err, = driver.cuLaunchKernel(loaded.function, grid[0], grid[1], grid[2], loaded.threads, 1, 1,
                                 loaded.shared_bytes, _stream(stream_handle),
                                 ((tmap_a, tmap_b, c, ldc, m, n, k, int(pair_ok), probe), _ARG_TYPES), 0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"kernel launch failed: {driver.cuGetErrorName(err)[1]}")


def map_dims(layout, mn: int, k: int, ld: int):
    """encode_2d's (inner, outer, row stride bytes, box, swizzle) for an operand
    with `mn` rows of the product (M for A, N for B), stored K-major ([MN, K]) or
    MN-major ([K, MN]) with leading stride `ld` elements."""
    inner, outer = (k, mn) if layout.major == "k" else (mn, k)
    return inner, outer, ld * 2, layout.box, layout.swizzle


def launch_gemm(loaded: LoadedKernel, a: int, lda: int, b: int, ldb: int, c: int, ldc: int,
                m: int, n: int, k: int, stream_handle: int, probe: int = 0) -> None:
    """C[m, n] = A @ B on device memory, with A and B stored in the majorness the
    kernel was built for (leading strides in elements, rows 16-byte aligned)."""
    from .tensormap import cache as tensormaps
    cfg = loaded.config
    a_map = tensormaps.get(a, cfg.dtype, *map_dims(cfg.a_layout, m, k, lda))
    b_map = tensormaps.get(b, cfg.dtype, *map_dims(cfg.b_layout, n, k, ldb))
    pair_ok = c % 4 == 0 and ldc % 2 == 0
    launch(loaded, cfg.grid(m, n), stream_handle, a_map, b_map, c, ldc, m, n, k, pair_ok, probe)
