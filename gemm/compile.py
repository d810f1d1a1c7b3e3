"""Kernel source -> PTX (numba-cuda, for sm_90a) -> cubin (nvJitLink), with no GPU needed.

Kept apart from gemm/launch.py so that CI can compile and inspect every kernel on
a machine without a GPU. Assembled cubins are cached on disk by a key of the
configuration and the source of gemm/ (~/.cache/hopper-gemm, or $HOPPER_GEMM_CACHE).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .kernels import KernelConfig, build
from .schedule import ctas_by_registers

ARCH = (9, 0, "a")
SIGNATURE = "void(int64, int64, int64, int64, int32, int32, int32, uint32, int64)"


@dataclass(frozen=True)
class CompiledKernel:
    config: KernelConfig
    name: str          # the .entry symbol
    ptx: str
    cubin: bytes
    ptxas_log: str     # ptxas's report: registers, spills, stack, warnings

    @property
    def registers(self) -> int:
        m = re.search(r"Used (\d+) registers", self.ptxas_log)
        return int(m.group(1)) if m else -1

    @property
    def spill_bytes(self) -> int:
        return sum(int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", self.ptxas_log))

    @property
    def stack_bytes(self) -> int:
        m = re.search(r"(\d+) bytes stack frame", self.ptxas_log)
        return int(m.group(1)) if m else 0


@contextmanager
def _device_functions_without_gpu():
    """numba-cuda compiles a kernel's device functions (our register_jitable
    helpers) for the *current device's* compute capability, and so fails on a
    machine with no GPU even when compile_ptx was given cc. Where no GPU is
    present, answer that question with sm_90 for the duration of the compile;
    the kernel itself is still compiled for ARCH. With a GPU nothing changes."""
    from numba import cuda
    from numba.cuda import dispatcher
    if cuda.is_available():
        yield
        return

    class _Hopper:
        compute_capability = ARCH[:2]

    real = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Hopper
    try:
        yield
    finally:
        dispatcher.get_current_device = real


def kernel_ptx(config: KernelConfig) -> str:
    """The PTX numba-cuda emits for this kernel, for sm_90a."""
    from numba import cuda
    pyfunc = build(config)
    with _device_functions_without_gpu():
        ptx, _ = cuda.compile_ptx(pyfunc, SIGNATURE, cc=ARCH, launch_bounds=(config.threads, _min_ctas(config)))
    return ptx


def assemble(ptx: str) -> tuple[bytes, str]:
    """PTX -> sm_90a cubin through nvJitLink (the system ptxas may be older than
    the PTX ISA NVVM emits); returns the cubin and ptxas's verbose log."""
    from cuda.core import Linker, LinkerOptions, ObjectCode
    linker = Linker(ObjectCode.from_ptx(ptx.encode()),
                    options=LinkerOptions(arch="sm_90a", verbose=True))
    cubin = linker.link("cubin").code
    return bytes(cubin), linker.get_info_log() or ""


@lru_cache(maxsize=1)
def _source_digest() -> str:
    h = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.read_bytes())
    import numba_cuda
    h.update(getattr(numba_cuda, "__version__", "?").encode())
    return h.hexdigest()[:16]


def _cache_dir() -> Path:
    return Path(os.environ.get("HOPPER_GEMM_CACHE",
                               Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hopper-gemm"))


def _write_entry(path: Path, ptx: str, log: str, cubin: bytes) -> None:
    """Write a cache entry atomically (parallel test workers share the cache);
    the cubin goes last, so its presence marks a complete entry."""
    path.mkdir(parents=True, exist_ok=True)
    for name, data in (("kernel.ptx", ptx.encode()), ("ptxas.log", log.encode()), ("kernel.cubin", cubin)):
        tmp = path / f".{name}.{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, path / name)


def _min_ctas(config: KernelConfig) -> int:
    """The `launch_bounds` minimum of CTAs per SM. A clock-probe build asks for as many
    as the kernel it measures fits by registers: the probe's few extra registers could
    otherwise cost a CTA per SM (V4/V5's 96 -> 102 do) and the probe would time another
    residency. (ptxas ignores --maxrregcount for a kernel with launch bounds.)"""
    if not config.clock_probe:
        return 1
    plain = compile_kernel(dataclasses.replace(config, clock_probe=False))
    return max(1, ctas_by_registers(plain.registers, config.threads))


@lru_cache(maxsize=None)
def compile_kernel(config: KernelConfig, use_disk_cache: bool = True) -> CompiledKernel:
    """Compile (or fetch from the disk cache) one kernel."""
    key = hashlib.sha256(f"{_source_digest()}|{config!r}".encode()).hexdigest()[:24]
    path = _cache_dir() / key
    if use_disk_cache and (path / "kernel.cubin").exists():
        ptx = (path / "kernel.ptx").read_text()
        cubin = (path / "kernel.cubin").read_bytes()
        log = (path / "ptxas.log").read_text()
    else:
        ptx = kernel_ptx(config)
        cubin, log = assemble(ptx)
        if use_disk_cache:
            try:
                _write_entry(path, ptx, log, cubin)
            except OSError:
                pass  # a read-only home still compiles, just not cached
    name = re.search(r"\.entry\s+([\w$]+)\s*\(", ptx).group(1)
    return CompiledKernel(config, name, ptx, cubin, log)
