"""Kernel source -> PTX (numba-cuda, for sm_90a) -> cubin (nvJitLink), with no GPU needed.

Kept apart from gemm/launch.py so that CI can compile and inspect every kernel on
a machine without a GPU. Assembled cubins are cached on disk by a key of the
configuration (its fields, not the schedule's spelling) and the source of gemm/
(~/.cache/hopper-gemm, or $HOPPER_GEMM_CACHE).
"""
from __future__ import annotations

import hashlib
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from .kernels import KernelConfig, build
from .schedule import register_cap

ARCH = (9, 0, "a")
# (tmap_a, tmap_b, tmap_c, c, ldc, m, n, k, pair_ok, probe, workspace, batch, flags): the same
# for every kernel; batch and `flags` (gemm.kernels.config's FLAG_* bits) only the
# producer-warpgroup kernel reads
SIGNATURE = "void(int64, int64, int64, int64, int64, int32, int32, int32, uint32, int64, int64, int32, uint32)"


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
    """The PTX numba-cuda emits for this kernel, for sm_90a. A kernel for clusters declares
    its cluster shape (`.reqnctapercluster`), so that a plain launch forms the clusters; a
    kernel whose registers would cost it a CTA per SM gets a register cap (`.maxnreg`,
    gemm.schedule.register_cap), the same with or without a clock probe."""
    from numba import cuda
    pyfunc = build(config)
    with _device_functions_without_gpu():
        ptx, _ = cuda.compile_ptx(pyfunc, SIGNATURE, cc=ARCH, launch_bounds=(config.threads, 1))
    s = config.schedule
    cap = register_cap(s)
    if cap is not None:   # registers must not cost a CTA per SM: cap them (ptxas spills past it)
        ptx, count = re.subn(r"^\.minnctapersm \d+$", f".maxnreg {cap}", ptx, count=1, flags=re.M)
        if count != 1:
            raise RuntimeError("no .minnctapersm directive to replace with the register cap")
    if s.cluster_size > 1:
        ptx, count = re.subn(r"^(\.maxntid [^\n]*\n)", rf"\1.reqnctapercluster {s.cluster_size}, 1, 1\n",
                             ptx, count=1, flags=re.M)
        if count != 1:
            raise RuntimeError("no .maxntid directive to place the cluster shape after")
    return ptx


def assemble(ptx: str) -> tuple[bytes, str]:
    """PTX -> sm_90a cubin; returns the cubin and ptxas's verbose log (registers, spills,
    warnings). A standalone ptxas compiles the kernel as a whole program: only then does it
    honour setmaxnreg (nvJitLink compiles PTX as a relocatable unit and ignores it, warning
    C7504). ptxas comes from the nvidia-cuda-nvcc wheel or the CUDA toolkit; without one,
    nvJitLink assembles it."""
    ptxas = _ptxas()
    if ptxas is not None:
        return _assemble_whole_program(ptx, ptxas)
    from cuda.core import Linker, LinkerOptions, ObjectCode
    linker = Linker(ObjectCode.from_ptx(ptx.encode()),
                    options=LinkerOptions(arch="sm_90a", verbose=True))
    cubin = linker.link("cubin").code
    return bytes(cubin), linker.get_info_log() or ""


@lru_cache(maxsize=1)
def _ptxas() -> str | None:
    explicit = os.environ.get("HOPPER_GEMM_PTXAS")
    if explicit:
        return explicit
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        return find_nvidia_binary_utility("ptxas")
    except Exception:
        import shutil
        return shutil.which("ptxas")


def _assemble_whole_program(ptx: str, ptxas: str) -> tuple[bytes, str]:
    """Run ptxas on the PTX. NVVM may emit a newer PTX ISA version than an older ptxas
    accepts, though the kernels use nothing past sm_90a's ISA: then the version line is
    lowered to the one that ptxas names, once."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="hopper-gemm-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        for attempt in range(2):
            src.write_text(ptx)
            run = subprocess.run([ptxas, "-arch=sm_90a", "-v", "-o", str(out), str(src)],
                                 capture_output=True, text=True)
            log = run.stdout + run.stderr
            if run.returncode == 0:
                return out.read_bytes(), log
            older = re.search(r"Unsupported \.version \d+\.\d+; current version is '(\d+\.\d+)'", log)
            if attempt or not older:
                raise RuntimeError(f"ptxas ({ptxas}) failed:\n{log}")
            ptx = re.sub(r"^\.version \d+\.\d+", f".version {older.group(1)}", ptx, count=1, flags=re.M)
    raise AssertionError("unreachable")


# What a cubin is built from: a change anywhere else in gemm/ (the API, the dispatcher, the
# launch path) keeps the compiled kernels.
KERNEL_SOURCES = ("kernels", "ptx", "smem_layout.py", "schedule.py", "limits.py", "compile.py")


@lru_cache(maxsize=1)
def _source_digest() -> str:
    h = hashlib.sha256()
    root = Path(__file__).parent
    for source in KERNEL_SOURCES:
        for path in sorted((root / source).rglob("*.py")) if (root / source).is_dir() else [root / source]:
            h.update(path.read_bytes())
    import numba_cuda
    h.update(getattr(numba_cuda, "__version__", "?").encode())
    return h.hexdigest()[:16]


def _cache_dir() -> Path:
    return Path(os.environ.get("HOPPER_GEMM_CACHE",
                               Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hopper-gemm"))


def _write_entry(path: Path, ptx: str, entry: str, log: str, cubin: bytes) -> None:
    """Write a cache entry atomically (parallel test workers share the cache);
    the cubin goes last, so its presence marks a complete entry."""
    path.mkdir(parents=True, exist_ok=True)
    for name, data in (("kernel.ptx", ptx.encode()), ("kernel.entry", entry.encode()),
                       ("ptxas.log", log.encode()), ("kernel.cubin", cubin)):
        tmp = path / f".{name}.{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, path / name)


def cache_key(config: KernelConfig) -> str:
    """What a cached kernel is looked up by: every field of the configuration, the schedule's
    name left out. The name is the spec as its caller spelled it ('v7:stages=4,block_n=192'),
    and the same fields spelled in another order build the same kernel."""
    return repr(replace(config, schedule=replace(config.schedule, name="")))


@lru_cache(maxsize=None)
def compile_kernel(config: KernelConfig, use_disk_cache: bool = True) -> CompiledKernel:
    """Compile (or fetch from the disk cache) one kernel."""
    key = hashlib.sha256(f"{_source_digest()}|{cache_key(config)}".encode()).hexdigest()[:24]
    path = _cache_dir() / key
    if use_disk_cache and (path / "kernel.cubin").exists():
        # the PTX is kept for reading, not needed to launch: an entry may come without it
        ptx = (path / "kernel.ptx").read_text() if (path / "kernel.ptx").exists() else ""
        name = (path / "kernel.entry").read_text()
        cubin = (path / "kernel.cubin").read_bytes()
        log = (path / "ptxas.log").read_text()
    else:
        ptx = kernel_ptx(config)
        name = re.search(r"\.entry\s+([\w$]+)\s*\(", ptx).group(1)
        cubin, log = assemble(ptx)
        if use_disk_cache:
            try:
                _write_entry(path, ptx, name, log, cubin)
            except OSError:
                pass  # a read-only home still compiles, just not cached
    return CompiledKernel(config, name, ptx, cubin, log)
