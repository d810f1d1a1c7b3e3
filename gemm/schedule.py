"""A Hopper GEMM kernel's schedule, written down as data.

One `Schedule` says how a kernel moves tiles and spends its warps: the tile shape,
how deep the shared-memory ring is, who loads (every thread, or a producer warp),
who computes (one or several consumer warpgroups), how often the whole block meets
at a barrier, how many WGMMA groups stay in flight, the order tiles are visited and
how the result leaves. The Numba kernels (gemm/kernels/) and the SimPy model
(sim/) read the same object, so a prediction and a measurement always describe
the same kernel.

Pure Python: importing this module must not import numba or cupy.

The presets follow the tutorial series (see the seed chapter,
shared/seed/hopper-matmul-v2-tutorial.txt):

  v1  serial: load a K tile with TMA, wait, sync, WGMMA, wait, sync.
  v2  ring buffer of `stages` K tiles, runtime stage index, two block-wide
      syncs per iteration, wait_group(0) every iteration.
  v3  warp-specialized: a producer warp and one consumer warpgroup talk through
      full/empty mbarriers; no block-wide sync; one (stage, phase) per role.
      2 stages: the depth measured fastest at 128x128x64 on the H200 (4 stages, one CTA
      per SM, is 28% slower; experiments/NOTES.md item 14). The seed does not give V3's.
  v4  v3 with two consumer warpgroups (a 128-row tile each warpgroup 64 rows); 2 stages,
      likewise.
  v5  v4 keeping one WGMMA group in flight across iterations.
  v6  v5 with a larger 128x256 tile, grouped raster order and a TMA-store epilogue.

The Numba kernels cover the serial, ring and specialized families (V1-V5);
`kernel_gaps(schedule)` names what a schedule asks for that no kernel does yet
(the TMA-store epilogue, more than one producer warp). The model covers them all.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

# --- Hardware limits the schedule must respect (Hopper, compute capability 9.0) ---
# Largest dynamic shared memory one block may opt into: 227 KB (CUDA programming
# guide, "Compute capability 9.0": 228 KB per SM, of which 1 KB is reserved per block).
MAX_SHARED_BYTES_PER_BLOCK = 227 * 1024
SHARED_BYTES_PER_SM = 228 * 1024
RESERVED_SHARED_BYTES_PER_BLOCK = 1024
# 64K 32-bit registers per SM, at most 255 per thread.
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255
MAX_THREADS_PER_SM = 2048
# The register file is split among the SM's four warp schedulers (16K registers each); a
# warp's registers are allocated in units of 256 and a CTA's warps are dealt round robin.
SCHEDULERS_PER_SM = 4
REGISTER_ALLOCATION_UNIT = 256
MAX_BLOCKS_PER_SM = 32
# fp32 accumulator registers one thread may hold. The rest of the 255 carry
# addresses, descriptors, loop state and the epilogue; above this ptxas spills
# (a 128x256 fp32 tile in one warpgroup needs 256 per thread and does not fit).
MAX_ACCUMULATOR_REGISTERS = 192

# WGMMA shape: a warpgroup computes m64 x nN x k16 per instruction (fp16/bf16 in).
WGMMA_M = 64
WGMMA_K = 16
WGMMA_MAX_N = 256
WARPGROUP_THREADS = 128

FAMILIES = ("serial", "ring", "specialized")
KERNEL_FAMILIES = ("serial", "ring", "specialized")  # those with a Numba kernel
RASTERS = ("row", "column", "grouped")
EPILOGUES = ("direct", "tma")
PHASE_STORAGE = ("register", "local")
ACCUMULATE = ("float32",)
INPUT_BYTES = 2  # fp16 / bf16


class ScheduleError(ValueError):
    """A schedule that no Hopper kernel can run; the message names the limit."""


@dataclass(frozen=True)
class Schedule:
    """How one GEMM kernel is organised. Defaults are the seed's V2 case."""

    family: str = "ring"            # "serial" (V1), "ring" (V2), "specialized" (V3+)
    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    stages: int = 2                 # shared-memory ring depth (serial: 1)
    syncs_per_iter: int = 2         # block-wide barriers per K iteration
    runtime_stage_index: bool = True  # stage = iter % stages computed at run time (V2)
    phase_storage: str = "register" # V2's per-stage phases: "register" (bits of one word) or
                                    # "local" (a runtime-indexed array in local memory, as the
                                    # tutorial's phase register tensor ends up)
    consumer_warpgroups: int = 1    # warpgroups issuing WGMMA
    producer_warps: int = 0         # warps issuing only TMA (specialized: 1)
    wgmma_in_flight: int = 0        # N of wgmma.wait_group(N) in the main loop
    # CTA launch order over the C tiles: "column" walks down M first, so the CTAs running side
    # by side share a B panel. Measured on the H200 (experiments/NOTES.md item 16), at the
    # same ratio to cuBLAS it is never worse than "row" and up to 1.75x better on wide tiles
    # (64x256 V2); "grouped" lies between. Why, the model does not say.
    raster: str = "column"
    raster_group: int = 8           # tiles per group when raster == "grouped"
    epilogue: str = "direct"        # "direct": registers -> global; "tma": via shared + TMA store
    accumulate: str = "float32"
    name: str = "custom"

    # ---- derived quantities (one place for both the kernels and the model) ----
    @property
    def k_iteration_bytes(self) -> int:
        """Bytes of A and B one K iteration brings into shared memory."""
        return (self.block_m + self.block_n) * self.block_k * INPUT_BYTES

    @property
    def k_iteration_requests(self) -> int:
        """L2 requests of one K iteration's A and B boxes: one per box row of <= 128 bytes."""
        return (self.block_m + self.block_n) * math.ceil(self.block_k * INPUT_BYTES / 128)

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.k_iteration_bytes

    @property
    def barrier_bytes(self) -> int:
        # one 8-byte mbarrier per stage; the specialized pipeline adds an "empty" one
        per_stage = 2 if self.family == "specialized" else 1
        return 8 * per_stage * self.stages

    @property
    def epilogue_bytes(self) -> int:
        # the TMA-store epilogue stages the C tile (16-bit) in shared memory
        return self.block_m * self.block_n * INPUT_BYTES if self.epilogue == "tma" else 0

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory the kernel asks for (1 KB slack to align the ring)."""
        return self.ring_bytes + self.barrier_bytes + self.epilogue_bytes + 1024

    @property
    def threads(self) -> int:
        # consumer warpgroups first (warpgroups must start at a warp index divisible by 4),
        # then the producer warps; a kernel using setmaxnreg gives the producer a whole
        # warpgroup (producer_warps=4)
        return self.consumer_warpgroups * WARPGROUP_THREADS + 32 * self.producer_warps

    @property
    def rows_per_warpgroup(self) -> int:
        return self.block_m // self.consumer_warpgroups

    @property
    def m_tiles_per_warpgroup(self) -> int:
        """m64 WGMMA row blocks each consumer warpgroup issues per k16 step."""
        return self.rows_per_warpgroup // WGMMA_M

    @property
    def accumulator_registers(self) -> int:
        """fp32 accumulator registers per consumer thread."""
        return self.rows_per_warpgroup * self.block_n // WARPGROUP_THREADS

    @property
    def wgmma_n(self) -> int:
        return self.block_n

    def ctas_per_sm(self) -> int:
        """Residency by shared memory and threads (registers are the model's job)."""
        by_smem = SHARED_BYTES_PER_SM // (self.shared_bytes + RESERVED_SHARED_BYTES_PER_BLOCK)
        by_threads = MAX_THREADS_PER_SM // self.threads
        return max(0, min(by_smem, by_threads, MAX_BLOCKS_PER_SM))

    def replace(self, **changes) -> "Schedule":
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes).validated()

    def validated(self) -> "Schedule":
        """Return self, or raise ScheduleError naming the limit that is broken."""
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ScheduleError(f"schedule {self.name!r}: {msg}")

        need(self.family in FAMILIES, f"family must be one of {FAMILIES}, got {self.family!r}")
        need(self.stages >= 1, f"stages must be >= 1, got {self.stages}")
        need(self.consumer_warpgroups >= 1, "consumer_warpgroups must be >= 1")
        need(self.block_m > 0 and self.block_m % (WGMMA_M * self.consumer_warpgroups) == 0,
             f"block_m={self.block_m} must be a multiple of {WGMMA_M} x consumer_warpgroups "
             f"({WGMMA_M * self.consumer_warpgroups}): each warpgroup issues m64 WGMMAs")
        need(self.block_n > 0 and self.block_n % 64 == 0 and self.block_n <= WGMMA_MAX_N,
             f"block_n={self.block_n} must be a multiple of 64 and at most {WGMMA_MAX_N} "
             "(one WGMMA covers the whole tile width; a 128-byte swizzle atom is 64 elements)")
        need(self.block_k > 0 and self.block_k % WGMMA_K == 0 and self.block_k <= 128,
             f"block_k={self.block_k} must be a multiple of {WGMMA_K} (the WGMMA K) and at most 128")
        need(self.accumulator_registers <= MAX_ACCUMULATOR_REGISTERS,
             f"a {self.block_m}x{self.block_n} fp32 tile over {self.consumer_warpgroups} warpgroup(s) "
             f"needs {self.accumulator_registers} accumulator registers per thread; at most "
             f"{MAX_ACCUMULATOR_REGISTERS} fit beside the kernel's other registers (limit "
             f"{MAX_REGISTERS_PER_THREAD}); use more consumer warpgroups or a smaller tile")
        need(self.shared_bytes <= MAX_SHARED_BYTES_PER_BLOCK,
             f"needs {self.shared_bytes} bytes of shared memory ({self.stages} stages x "
             f"{self.k_iteration_bytes} B + barriers/epilogue/alignment); a block may use at most "
             f"{MAX_SHARED_BYTES_PER_BLOCK} (227 KB)")
        need(self.syncs_per_iter >= 0, "syncs_per_iter must be >= 0")
        need(self.wgmma_in_flight >= 0, "wgmma_in_flight must be >= 0")
        need(self.wgmma_in_flight < self.stages or self.wgmma_in_flight == 0,
             f"wgmma_in_flight={self.wgmma_in_flight} must be below stages={self.stages}: "
             "a stage cannot be refilled while a WGMMA still reads it")
        need(self.raster in RASTERS, f"raster must be one of {RASTERS}")
        need(self.raster_group >= 1, "raster_group must be >= 1")
        need(self.epilogue in EPILOGUES, f"epilogue must be one of {EPILOGUES}")
        need(self.accumulate in ACCUMULATE, f"accumulate must be one of {ACCUMULATE}")
        need(self.phase_storage in PHASE_STORAGE, f"phase_storage must be one of {PHASE_STORAGE}")
        need(self.phase_storage == "register" or (self.family == "ring" and self.runtime_stage_index),
             "phase_storage='local' is the ring family's runtime-indexed phase array")
        if self.family == "serial":
            need(self.stages == 1, "the serial (V1) family has exactly one stage")
        if self.family in ("serial", "ring"):
            need(self.producer_warps == 0 and self.consumer_warpgroups == 1,
                 "the serial and ring families run one warpgroup (4 warps) doing every job")
            need(self.wgmma_in_flight == 0,
                 "the serial and ring families wait for every WGMMA group (wait_group(0)): "
                 "their block-wide sync is what protects a stage from being refilled")
            need(self.syncs_per_iter >= 1,
                 "the serial and ring families need a block-wide sync: one thread waits on "
                 "the mbarrier and the sync publishes the arrival")
        if self.family == "specialized":
            need(self.producer_warps >= 1, "the specialized family needs a producer warp")
        return self


def ctas_by_registers(registers: int, threads: int, registers_per_sm: int = REGISTERS_PER_SM,
                      unit: int = REGISTER_ALLOCATION_UNIT, schedulers: int = SCHEDULERS_PER_SM) -> int:
    """CTAs of `threads` threads at `registers` each that one SM's register file holds."""
    per_warp = -(-registers * 32 // unit) * unit
    warps = -(-threads // 32)
    per_scheduler = registers_per_sm // schedulers
    ctas = 0
    while -(-(ctas + 1) * warps // schedulers) * per_warp <= per_scheduler:
        ctas += 1
    return ctas


def kernel_gaps(s: Schedule) -> list[str]:
    """What this (valid) schedule asks for that the Numba kernels do not build yet."""
    gaps = []
    if s.family not in KERNEL_FAMILIES:
        gaps.append(f"the {s.family!r} family has no kernel (kernels: {', '.join(KERNEL_FAMILIES)})")
    if s.epilogue != "direct":
        gaps.append(f"epilogue={s.epilogue!r}: the kernels store C directly from registers "
                    "(epilogue='direct')")
    if s.family == "specialized" and s.producer_warps != 1:
        gaps.append(f"producer_warps={s.producer_warps}: the specialized kernel has one producer warp")
    return gaps


def _preset(**kw) -> Schedule:
    return Schedule(**kw).validated()


PRESETS: dict[str, Schedule] = {
    "v1": _preset(name="v1", family="serial", stages=1, syncs_per_iter=2, runtime_stage_index=False),
    "v2": _preset(name="v2", family="ring", stages=2, syncs_per_iter=2),
    "v3": _preset(name="v3", family="specialized", stages=2, syncs_per_iter=0,
                  runtime_stage_index=False, producer_warps=1),
    "v4": _preset(name="v4", family="specialized", stages=2, syncs_per_iter=0,
                  runtime_stage_index=False, producer_warps=1, consumer_warpgroups=2),
    "v5": _preset(name="v5", family="specialized", stages=4, syncs_per_iter=0,
                  runtime_stage_index=False, producer_warps=1, consumer_warpgroups=2,
                  wgmma_in_flight=1),
    "v6": _preset(name="v6", family="specialized", block_n=256, stages=3, syncs_per_iter=0,
                  runtime_stage_index=False, producer_warps=1, consumer_warpgroups=2,
                  wgmma_in_flight=1, raster="grouped", epilogue="tma"),
}


def preset(version: str, **overrides) -> Schedule:
    """A named preset, optionally with fields changed (validated)."""
    try:
        base = PRESETS[version]
    except KeyError:
        raise ScheduleError(f"unknown version {version!r}; known: {', '.join(PRESETS)}") from None
    return base.replace(**overrides) if overrides else base
