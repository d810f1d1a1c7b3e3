"""Load compiled kernels on the GPU and launch them cheaply.

numba's own launch path type-checks and boxes every argument (about 45 us a call
with three arrays, see shared/device/NOTES.md). The kernels take only scalars, so
the cubin is loaded with cuda.core and launched with the driver's cuLaunchKernel through
CuPy's Cython binding, its arguments packed once per prepared launch. A kernel built as a
programmatic dependent (Schedule.dependent_launch) goes through cuLaunchKernelEx with the
programmatic-stream-serialization attribute, its CUlaunchConfig laid out once by cuda.bindings.
Loading raises the kernel's dynamic shared-memory limit past 48 KB.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache

from .compile import compile_kernel
from .kernels import FLAG_A_STEPS, FLAG_B_STEPS, FLAG_EARLY_TRIGGER, KernelConfig
from .limits import fills_the_gpu, tma_addressable


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


@lru_cache(maxsize=1)
def sm_count() -> int:
    """The current device's SMs."""
    return device().properties.multiprocessor_count


@lru_cache(maxsize=1)
def gpu_identity() -> tuple[str, str, str]:
    """(profile name, device name, driver version) of the current GPU: the profile name picks
    the dispatch table and the model's profile (h200-sxm, h100-sxm)."""
    from cuda.bindings import driver
    dev = device()
    err, version = driver.cuDriverGetVersion()
    name = dev.name
    profile = "h100-sxm" if "H100" in name else "h200-sxm"
    return profile, name, str(version)


@dataclass
class LoadedKernel:
    config: KernelConfig
    function: object        # cuda.bindings CUfunction in the current context
    shared_bytes: int
    threads: int
    occupancy: object       # cuda.core KernelOccupancy, for reports
    resident_clusters: int  # clusters (CTAs, without clusters) the device holds at once


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


@dataclass
class LoadedFunction:
    """Any other kernel of the package, loaded: what a Launch needs."""
    function: object        # cuda.bindings CUfunction in the current context
    threads: int
    shared_bytes: int = 0


def _load(cubin: bytes, name: str, shared_bytes: int):
    """(cuda.core Kernel, CUfunction) of a cubin's kernel in the current context, allowed
    `shared_bytes` of dynamic shared memory when past the default 48 KB."""
    device()
    from cuda.bindings import driver
    from cuda.core import ObjectCode
    kernel = ObjectCode.from_cubin(cubin).get_kernel(name)
    if shared_bytes:
        _set_max_dynamic_shared(kernel, shared_bytes)
    handle = kernel.handle
    if isinstance(handle, driver.CUkernel):
        err, handle = driver.cuKernelGetFunction(handle)
        if int(err) != 0:
            raise DeviceError(f"cuKernelGetFunction failed: {err}")
    return kernel, handle


def load_function(cubin: bytes, name: str, threads: int) -> LoadedFunction:
    return LoadedFunction(_load(cubin, name, 0)[1], threads)


@lru_cache(maxsize=None)
def load_kernel(config: KernelConfig) -> LoadedKernel:
    compiled = compile_kernel(config)
    kernel, handle = _load(compiled.cubin, compiled.name, config.shared_bytes)
    return LoadedKernel(config, handle, config.shared_bytes, config.threads, kernel.occupancy,
                        _resident_clusters(kernel, config))


def _resident_clusters(kernel, config: KernelConfig) -> int:
    """How many clusters of the kernel (or CTAs, without clusters) the device runs at once:
    the size of a persistent grid. Clusters must fit within one GPC, so with clusters this
    can be less than SMs / cluster size; the driver's occupancy calculator knows."""
    from cuda.core import LaunchConfig
    dev = device()
    sms = sm_count()
    cluster = config.schedule.cluster_size
    occupancy = kernel.occupancy
    if cluster == 1:
        return occupancy.max_active_blocks_per_multiprocessor(config.threads, config.shared_bytes) * sms
    launch = LaunchConfig(grid=(cluster * (sms // cluster), 1, 1), cluster=(cluster, 1, 1),
                          block=(config.threads, 1, 1), shmem_size=config.shared_bytes)
    return occupancy.max_active_clusters(launch, stream=dev.default_stream)


_ARG_TYPES = ((ctypes.c_int64,) * 5 + (ctypes.c_int32,) * 3 + (ctypes.c_uint32, ctypes.c_int64, ctypes.c_int64)
              + (ctypes.c_int32, ctypes.c_uint32))


@lru_cache(maxsize=1)
def _cu_launch_kernel():
    """cuLaunchKernel through CuPy's Cython binding of the driver (cupy_backends): it takes the
    eleven arguments as plain integers and converts them in C, a fraction of a microsecond where
    a ctypes call with converted arguments costs ~1 us on the H200's host. The same libcuda the
    driver bindings use (one copy per process)."""
    from cupy_backends.cuda.api.driver import launchKernel
    return launchKernel


@lru_cache(maxsize=1)
def _cu_launch_kernel_ex():
    """cuLaunchKernelEx of the process's libcuda (the one cuda.bindings and CuPy use), called
    through ctypes with four ready pointers: the CUlaunchConfig that cuda.bindings laid out,
    the function, the argument array, no extras. cuda.bindings' own wrapper converts its
    arguments on every call, which the host path cannot afford on a warm call."""
    function = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    function.argtypes = (ctypes.c_void_p,) * 4
    function.restype = ctypes.c_int
    return function


def _dependent_launch_config(grid, threads: int, shared_bytes: int, stream_handle: int):
    """A CUlaunchConfig (cuda.bindings) for `grid` on the stream with programmatic stream
    serialization allowed: the launch may begin once every CTA of the kernel before it on the
    stream has issued griddepcontrol.launch_dependents (gemm/ptx/grid.py)."""
    from cuda.bindings import driver
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attribute.value.programmaticStreamSerializationAllowed = 1
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = shared_bytes
    config.hStream = driver.CUstream(stream_handle)
    config.attrs = [attribute]
    config.numAttrs = 1
    return config


class Launch:
    """One kernel launch with its arguments packed once: a ctypes value per argument and the
    array of pointers to them that cuLaunchKernel reads, and cuLaunchKernel's own arguments,
    converted once. Launching it again with another C (a freshly allocated output) changes two
    values; nothing else is rebuilt. A kernel built for clusters carries its cluster shape, so
    this plain launch forms them; one built as a programmatic dependent is launched with
    cuLaunchKernelEx and that attribute. `arg_types`: the kernel's parameters (the GEMM
    kernels' by default)."""

    C, C_MAP, PROBE = 3, 2, 9   # argument positions of C, its tensor map and the clock probe's array

    def __init__(self, loaded: LoadedKernel | LoadedFunction, grid, stream_handle: int, args: tuple,
                 arg_types: tuple = _ARG_TYPES):
        if len(args) != len(arg_types):
            raise ValueError(f"{len(args)} arguments for a kernel of {len(arg_types)} parameters")
        self.grid = grid
        self.values = [kind(value) for kind, value in zip(arg_types, args)]
        self.pointers = (ctypes.c_void_p * len(args))(*(ctypes.addressof(v) for v in self.values))
        config = getattr(loaded, "config", None)
        self.dependent = config is not None and config.schedule.dependent_launch
        if self.dependent:
            self.launch_config = _dependent_launch_config(grid, loaded.threads, loaded.shared_bytes, stream_handle)
            self.driver_args = (self.launch_config.getPtr(), int(loaded.function), ctypes.addressof(self.pointers),
                                None)
            self.launch_kernel = _cu_launch_kernel_ex()
        else:
            self.driver_args = (int(loaded.function), grid[0], grid[1], grid[2], loaded.threads, 1, 1,
                                loaded.shared_bytes, stream_handle, ctypes.addressof(self.pointers), 0)
            self.launch_kernel = _cu_launch_kernel()

    def __call__(self, c: int | None = None, c_map: int | None = None) -> None:
        if c is not None:
            self.values[self.C].value = c
        if c_map is not None:
            self.values[self.C_MAP].value = c_map
        try:
            error = self.launch_kernel(*self.driver_args)
        except Exception as exc:   # cupy_backends' CUDADriverError names the driver's error
            raise RuntimeError(f"kernel launch failed: {exc}") from exc
        if self.dependent and error:   # cuLaunchKernelEx through ctypes returns its CUresult
            from cuda.bindings import driver
            raise RuntimeError(f"kernel launch failed: {driver.CUresult(error).name}")


def launch(loaded: LoadedKernel, grid, stream_handle: int, tmap_a: int, tmap_b: int, tmap_c: int,
           c: int, ldc: int, m: int, n: int, k: int, pair_ok: bool, probe: int = 0, workspace: int = 0,
           batch: int = 1, flags: int = 0) -> Launch:
    """Pack the arguments and launch: a few microseconds, against tens for a numba or
    cuda.core launch. Returns the packed launch, to launch again."""
    prepared = Launch(loaded, grid, stream_handle, (tmap_a, tmap_b, tmap_c, c, ldc, m, n, k, int(pair_ok), probe,
                                                    workspace, batch, flags))
    prepared()
    return prepared


def map_dims(layout, mn: int, k: int, ld: int):
    """encode_2d's (inner, outer, row stride bytes, box, swizzle) for an operand
    with `mn` rows of the product (M for A, N for B), stored K-major ([MN, K]) or
    MN-major ([K, MN]) with leading stride `ld` elements."""
    inner, outer = (k, mn) if layout.major == "k" else (mn, k)
    return inner, outer, ld * 2, layout.tma_box, layout.swizzle


def launch_gemm(loaded: LoadedKernel, a: int, lda: int, b: int, ldb: int, c: int, ldc: int,
                m: int, n: int, k: int, stream_handle: int, probe: int = 0, batch: int = 1,
                a_step: int = 0, b_step: int = 0) -> Launch:
    """C[m, n] = A @ B on device memory, with A and B stored in the majorness the
    kernel was built for (leading strides in elements, rows 16-byte aligned). With
    batch > 1, `batch` products: A's matrices a_step elements apart (0: one A for all),
    B's b_step apart, C's m x ldc apart. A split-K kernel gets its workspace from
    gemm.workspace, one per stream. Returns the packed launch (`Launch`)."""
    from .tensormap import cache as tensormaps
    cfg = loaded.config
    a_count, b_count = (batch if a_step else 1), (batch if b_step else 1)
    # a packed operand (KernelConfig.packed) is read at its buffer's address, through no map
    a_map = a if cfg.packed == "a" else tensormaps.get(a, cfg.dtype, *map_dims(cfg.a_layout, m, k, lda),
                                                       a_count, a_step * 2)
    b_map = b if cfg.packed == "b" else tensormaps.get(b, cfg.dtype, *map_dims(cfg.b_layout, n, k, ldb),
                                                       b_count, b_step * 2)
    c_map = 0
    if cfg.c_layout is not None:   # the TMA-store epilogue: C is [m rows, n columns], ldc apart
        if not tma_storable(c, ldc):
            raise ValueError(f"a TMA-store kernel needs C 16-byte aligned with a row stride of a "
                             f"multiple of 8 elements (address {c:#x}, ldc {ldc})")
        c_map = c_tensor_map(cfg, c, ldc, m, n, batch)
    pair_ok = c % 4 == 0 and ldc % 2 == 0
    grid = cfg.grid(m, n, loaded.resident_clusters, batch)
    workspace = 0
    planes, counters = cfg.workspace_regions(m, n, batch, grid[0])
    if counters:
        from .workspace import workspace_for
        workspace = workspace_for(stream_handle, planes, counters)
    if cfg.schedule.stream_k:
        _check_stream_k_positions(cfg, m, n, k, batch, grid[0])
    flags = ((FLAG_A_STEPS if a_count > 1 else 0) | (FLAG_B_STEPS if b_count > 1 else 0)
             | (FLAG_EARLY_TRIGGER if fills_the_gpu(grid[0], sm_count()) else 0))
    return launch(loaded, grid, stream_handle, a_map, b_map, c_map,
                  c, ldc, m, n, k, pair_ok, probe, workspace, batch, flags)


def _check_stream_k_positions(cfg: KernelConfig, m: int, n: int, k: int, batch: int, ctas: int) -> None:
    """The stream-K kernel finds each CTA's share with 32-bit arithmetic: CTA index x (shared
    tiles x K iterations), shared tiles at most stream_k_waves + 1 waves of the grid, must stay
    below 2^32."""
    from .schedule import ScheduleError
    iterations = -(-k // cfg.block_k)
    shared = min(cfg.units(m, n, batch), (cfg.schedule.stream_k_waves + 1) * ctas)
    if ctas * shared * iterations >= 1 << 32:
        raise ScheduleError(f"stream_k: K={k} is too long for the kernel's 32-bit positions over {ctas} CTAs "
                            f"(at most {((1 << 32) - 1) // (ctas * shared) * cfg.block_k}); use split_k or none")


def c_tensor_map(cfg: KernelConfig, c: int, ldc: int, m: int, n: int, batch: int = 1) -> int:
    """The TMA-store epilogue's map of C: [m rows, n columns] ldc apart, `batch` of them m x ldc apart."""
    from .tensormap import cache as tensormaps
    return tensormaps.get(c, cfg.dtype, n, m, ldc * 2, cfg.c_layout.box, cfg.c_layout.swizzle, batch, m * ldc * 2)


def tma_storable(c: int, ldc: int) -> bool:
    """Whether TMA can address C: a 16-byte aligned base and rows a multiple of 16 bytes apart."""
    return tma_addressable(c, ldc)
