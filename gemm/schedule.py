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
shared/seed/hopper-matmul-v2-tutorial.txt, and docs/kernels.md):

  v1  serial: load a K tile with TMA, wait, sync, WGMMA, wait, sync.
  v2  ring buffer of `stages` K tiles, runtime stage index, two block-wide
      syncs per iteration, wait_group(0) every iteration.
  v3  warp-specialized: a producer warp and one consumer warpgroup talk through
      full/empty mbarriers; no block-wide sync; one (stage, phase) per role.
      2 stages: the depth measured fastest at 128x128x64 on the H200.
  v4  v3 with two consumer warpgroups (a 128-row tile each warpgroup 64 rows); 2 stages.
  v5  v4 keeping one WGMMA group in flight across iterations, on the tile two warpgroups
      make room for: 128x256 (64x256 each), 4 stages, grouped raster. (On v4's 128x128 a
      K tile is two m64n128 groups, too short for the group in flight to pay.)
  v6  the tutorial series' V6: 256x256 over two consumer warpgroups with fp16
      accumulators, a producer warpgroup (setmaxnreg) and a TMA-store epilogue.
  v7  persistent: one CTA per SM walks the tiles, setmaxnreg, 128x256 over two
      warpgroups, TMA-store epilogue (cluster_m=2 adds TMA multicast of B to a pair);
      launched as a programmatic dependent of the kernel before it (dependent_launch).

`kernel_gaps(schedule)` names what a valid schedule asks for that no kernel builds;
the model covers every valid schedule.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .limits import (CONSUMER_OVERHEAD_REGISTERS, INPUT_BYTES, MAX_ACCUMULATOR_REGISTERS,
                     MAX_BLOCKS_PER_SM, MAX_CLUSTER_SIZE, MAX_REGISTERS_PER_THREAD,
                     MAX_SHARED_BYTES_PER_BLOCK, MAX_THREADS_PER_SM, REGISTER_ALLOCATION_UNIT,
                     REGISTERS_PER_SM, RESERVED_SHARED_BYTES_PER_BLOCK, SCHEDULERS_PER_SM,
                     SETMAXNREG_MAX, SETMAXNREG_MIN, SETMAXNREG_STEP, SHARED_BYTES_PER_SM,
                     WARPGROUP_THREADS, WGMMA_K, WGMMA_M, WGMMA_MAX_N, WGMMA_N_STEP, staging_swizzle)

FAMILIES = ("serial", "ring", "specialized")
KERNEL_FAMILIES = ("serial", "ring", "specialized")  # those with a Numba kernel
RASTERS = ("row", "column", "grouped")
EPILOGUES = ("direct", "tma")
PHASE_STORAGE = ("register", "local")
ACCUMULATE = ("float32", "float16")
K_ORDERS = ("forward", "serpentine")
PRELOADS = ("none", "a", "b")
MAX_STREAM_K_WAVES = 2      # full waves stream-K may share besides the partial one
MAX_BLOCK_N = 2 * WGMMA_MAX_N   # a tile is at most two WGMMA column blocks wide


class ScheduleError(ValueError):
    """A schedule that no Hopper kernel can run; the message names the limit."""


class KernelGapError(ScheduleError, NotImplementedError):
    """A valid schedule (the model predicts it) that no Numba kernel builds; the message
    names what is missing (`kernel_gaps`)."""


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
    # Order of the C tiles over launch order (or over a persistent CTA's walk): "row" walks
    # along N first, "column" down M first (the CTAs running side by side share a B panel),
    # "grouped" walks raster_group tile rows column by column. Column order was measured never
    # worse than row order and up to 1.75x better on wide tiles (docs/research).
    raster: str = "column"
    raster_group: int = 8           # tiles per group when raster == "grouped"
    epilogue: str = "direct"        # "direct": registers -> global; "tma": via shared + TMA store
    # The order a persistent CTA loads a unit's K tiles in: "forward" always; "serpentine"
    # forward on its even units, backward on its odd ones. The CTAs walk their units in waves,
    # so each wave then starts at the K end the wave before finished at, where the L2 still
    # holds the panels the two waves share (raster order makes them share one operand's).
    k_order: str = "forward"
    accumulate: str = "float32"     # WGMMA accumulator type; "float16" halves the registers
    # --- the persistent, clustered kernel (specialized family) ---
    persistent: bool = False        # a grid of one CTA per SM slot walks the C tiles; the producer
                                    # loads the next tile while the consumers store this one
    cluster_m: int = 1              # CTAs per cluster along M: they share each B tile, which TMA
                                    # multicasts (each CTA loads 1/cluster_m of it)
    cluster_n: int = 1              # along N: they share each A tile
    producer_registers: int = 0     # setmaxnreg: the producer warpgroup shrinks to this many
    consumer_registers: int = 0     # registers and the consumers grow to this (0: no setmaxnreg)
    # --- parallelism for small grids ---
    split_k: int = 1                # K cut into this many slices: fp32 partials, then a reduce
    split_cluster: bool = False     # a tile's split_k slices run as one cluster and add their
                                    # partials through distributed shared memory (no workspace,
                                    # no global handshake); False: partials through global memory
    split_lead: int = 0             # split_cluster: K tiles the cluster's first CTA takes more than
                                    # each other slice; > 0: the others send it their whole partials
                                    # while it still loads, and it alone adds them up and stores C
    defer_cluster_wait: bool = False  # split_cluster: a CTA arrives on the cluster barrier once set
                                    # up and waits on it only before its first remote store, so its
                                    # loads start without waiting for the partners
    swap_ab: bool = False           # compute C^T = B^T A^T: a small M becomes WGMMA's N
    stream_k: bool = False          # the last partial wave's tiles (and stream_k_waves full waves
                                    # before it) shared out evenly by K iteration over the
                                    # persistent grid
    stream_k_waves: int = 1         # full waves shared besides the partial one (CUTLASS: 1-2)
    # --- the launch ---
    dependent_launch: bool = False  # launched as a programmatic dependent of the kernel ahead of
                                    # it on the stream: scheduled as that kernel's CTAs finish, it
                                    # sets up and loads only once that kernel has completed
                                    # (gemm/ptx/grid.py)
    # A dependent launch's operand that the kernel ahead does not write (a layer's weights):
    # "a" or "b" (the product's, whatever swap_ab does), whose first ring of K tiles the
    # producer loads before griddepcontrol.wait, so the HBM streams it while the kernel ahead
    # ends; the other operand, C and the workspace wait as before. "none": nothing before the
    # wait. Only the caller knows that the operand is not being written: gemm.matmul(weights=)
    preload: str = "none"
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
        # one 8-byte mbarrier per stage; the specialized pipeline adds an "empty" one; split-K
        # inside a cluster two more ("ready" and "free")
        per_stage = 2 if self.family == "specialized" else 1
        return 8 * per_stage * self.stages + (16 if self.split_cluster else 0)

    @property
    def stores_via_tma(self) -> bool:
        """C leaves through a staging tile in shared memory and a TMA store: the "tma"
        epilogue, except under split-K, whose reduce writes C from the fp32 workspace (so its
        ring may take the staging tile's room)."""
        return self.epilogue == "tma" and self.split_k == 1

    @property
    def c_staging_passes(self) -> int:
        """Column passes each consumer warpgroup stages its share of C in (persistent kernels):
        one, unless the whole C tile beside the ring would overflow shared memory (a 128x320
        tile's 80 KB beside three 56 KB stages); then two, each half the columns in the same
        staging tile, the second waiting until the first's TMA store has read it."""
        if not (self.stores_via_tma and self.persistent):
            return 1
        c_tile = self.block_m * self.block_n * INPUT_BYTES
        rest = self.ring_bytes + self.barrier_bytes + self.split_exchange_bytes + 1024
        half = self.block_n // 2
        if rest + c_tile > MAX_SHARED_BYTES_PER_BLOCK and half % 16 == 0:
            return 2
        return 1

    @property
    def c_staging_cols(self) -> int:
        """Columns of C one staging pass holds."""
        return self.block_n // self.c_staging_passes

    @property
    def epilogue_bytes(self) -> int:
        """Shared memory the TMA-store epilogue stages C in (16-bit). A persistent kernel keeps
        its own C tile (or one pass's columns of it), since the producer refills the ring
        meanwhile; otherwise the epilogue reuses the drained ring and needs only what the ring
        lacks."""
        if not self.stores_via_tma:
            return 0
        c_tile = self.block_m * self.block_n * INPUT_BYTES
        return c_tile // self.c_staging_passes if self.persistent else max(0, c_tile - self.ring_bytes)

    @property
    def c_store_boxes(self) -> int:
        """TMA store boxes of each consumer warpgroup's share of a staged C tile, over all its
        passes (one swizzle row of columns each: gemm.smem_layout.StagingLayout)."""
        return self.block_n * INPUT_BYTES // staging_swizzle(self.c_staging_cols)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory the kernel asks for (1 KB slack to align the ring)."""
        return self.ring_bytes + self.barrier_bytes + self.epilogue_bytes + self.split_exchange_bytes + 1024

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
        """Accumulator registers per consumer thread (fp16 accumulators pack two to a register)."""
        per_thread = self.rows_per_warpgroup * self.block_n // WARPGROUP_THREADS
        return per_thread // 2 if self.accumulate == "float16" else per_thread

    @property
    def accumulator_limit(self) -> int:
        """Accumulator registers a consumer thread can hold: setmaxnreg raises the default."""
        return max(MAX_ACCUMULATOR_REGISTERS, self.consumer_registers - CONSUMER_OVERHEAD_REGISTERS)

    @property
    def n_tiles_per_warpgroup(self) -> int:
        """WGMMA column blocks each consumer warpgroup issues per k16 step and m64 row block: one
        covers a tile up to WGMMA's widest N (256); a wider tile (128x320, say) is cut into equal
        blocks, whose accumulators, one block's after the other's, lie in registers as one
        instruction of the whole width would hold them."""
        return -(-self.block_n // WGMMA_MAX_N)

    @property
    def wgmma_n(self) -> int:
        """N of each WGMMA: the tile's width over its column blocks."""
        return self.block_n // self.n_tiles_per_warpgroup

    @property
    def wgmmas_per_k_step(self) -> int:
        """WGMMAs each consumer warpgroup issues per k16 step (m64 row blocks x column blocks)."""
        return self.m_tiles_per_warpgroup * self.n_tiles_per_warpgroup

    @property
    def multicast_size(self) -> int:
        """CTAs that share an operand by TMA multicast (cluster_m x cluster_n)."""
        return self.cluster_m * self.cluster_n

    @property
    def cluster_size(self) -> int:
        """CTAs per launched cluster: the multicast group, times split_k when a tile's slices
        form the cluster (split_cluster)."""
        return self.multicast_size * (self.split_k if self.split_cluster else 1)

    @property
    def split_exchange_bytes(self) -> int:
        """Shared memory a split_cluster kernel receives its partners' partials in: split_k slots,
        each one slice's share of every consumer thread's fp32 accumulator pairs; with a lead
        (split_lead), split_k - 1 slots of the whole partial, which the first CTA alone adds."""
        if not self.split_cluster or self.split_k < 2:
            return 0
        threads = self.consumer_warpgroups * WARPGROUP_THREADS
        pairs = self.block_m * self.block_n // (2 * threads)
        if self.split_lead:
            return (self.split_k - 1) * pairs * threads * 8
        return self.split_k * (-(-pairs // self.split_k)) * threads * 8

    @property
    def preloaded_operand(self) -> str | None:
        """The kernel's operand ("a" or "b") loaded before the wait for the kernel ahead
        (`preload` names the product's: with swap_ab the kernel's A is the product's B), or None."""
        if self.preload == "none":
            return None
        return {"a": "b", "b": "a"}[self.preload] if self.swap_ab else self.preload

    def k_slice(self, slice_: int, k_tiles: int) -> tuple[int, int]:
        """(first K tile, K tiles) of split-K slice `slice_` of a unit of `k_tiles` K tiles: even
        shares, except that with split_lead the first slice takes that many K tiles (as many as
        there are) besides its even share of the rest. The kernels cut K so."""
        lead = min(self.split_lead, k_tiles)
        rest = k_tiles - lead

        def start(q):
            return 0 if q == 0 else lead + q * rest // self.split_k
        return start(slice_), start(slice_ + 1) - start(slice_)

    @property
    def uses_setmaxnreg(self) -> bool:
        return self.consumer_registers > 0

    @property
    def launch_registers(self) -> int:
        """Registers per thread when every thread of one CTA per SM starts with the same
        count (the cap ptxas is given; setmaxnreg moves registers from there)."""
        per_thread = min(SETMAXNREG_MAX, REGISTERS_PER_SM // self.threads)
        return per_thread // SETMAXNREG_STEP * SETMAXNREG_STEP

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
        n_step = 16 if self.stores_via_tma else WGMMA_N_STEP
        need(self.block_n > 0 and self.block_n <= MAX_BLOCK_N
             and self.block_n % (n_step * self.n_tiles_per_warpgroup) == 0,
             f"block_n={self.block_n} must be at most {MAX_BLOCK_N} and, cut into "
             f"{self.n_tiles_per_warpgroup} equal WGMMA column block(s) of at most {WGMMA_MAX_N}, "
             f"a multiple of {n_step} each (WGMMA's N is a multiple of {WGMMA_N_STEP}"
             + ("; the TMA-store epilogue writes C in 16-column stmatrix blocks)" if n_step == 16 else ")"))
        need(self.block_k > 0 and self.block_k % WGMMA_K == 0 and self.block_k <= 128,
             f"block_k={self.block_k} must be a multiple of {WGMMA_K} (the WGMMA K) and at most 128")
        need(self.accumulator_registers <= self.accumulator_limit,
             f"a {self.block_m}x{self.block_n} {self.accumulate} tile over {self.consumer_warpgroups} "
             f"warpgroup(s) needs {self.accumulator_registers} accumulator registers per thread; at "
             f"most {self.accumulator_limit} fit beside the kernel's other registers (limit "
             f"{MAX_REGISTERS_PER_THREAD}"
             + (f", setmaxnreg {self.consumer_registers}" if self.uses_setmaxnreg else "")
             + "); use more consumer warpgroups, setmaxnreg, fp16 accumulation or a smaller tile")
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
        need(self.k_order in K_ORDERS, f"k_order must be one of {K_ORDERS}, got {self.k_order!r}")
        need(self.k_order == "forward" or self.persistent,
             "k_order='serpentine' turns a persistent CTA's K order from one unit to its next: "
             "it needs persistent=True")
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
        need(self.split_k >= 1, f"split_k must be >= 1, got {self.split_k}")
        need(not self.stream_k or self.persistent,
             "stream_k shares tiles out over a persistent grid: it needs persistent=True")
        need(not (self.stream_k and self.split_k > 1), "stream_k and split_k > 1 both cut K: choose one")
        need(not self.split_cluster or self.split_k > 1,
             "split_cluster runs a tile's split_k slices as one cluster: it needs split_k > 1")
        need(self.split_lead >= 0, f"split_lead={self.split_lead}: K tiles, 0 or more")
        need(not self.split_lead or self.split_cluster,
             "split_lead gives one CTA of a split_cluster's cluster more K tiles: it needs split_cluster")
        need(not self.defer_cluster_wait or self.split_cluster,
             "defer_cluster_wait holds the cluster barrier's wait until a split_cluster's first remote "
             "store: it needs split_cluster (a multicast's first load is remote)")
        need(self.preload in PRELOADS, f"preload must be one of {PRELOADS}, got {self.preload!r}")
        need(self.preload == "none" or self.dependent_launch,
             f"preload={self.preload!r} loads an operand before waiting for the kernel ahead: only a "
             "programmatic dependent launch waits (dependent_launch=True)")
        need(not self.split_cluster or self.multicast_size == 1,
             "split_cluster with cluster_m/cluster_n > 1: a cluster either shares an operand or "
             "holds one tile's K slices, not both")
        need(0 <= self.stream_k_waves <= MAX_STREAM_K_WAVES,
             f"stream_k_waves={self.stream_k_waves}: stream-K shares 0 to {MAX_STREAM_K_WAVES} full waves "
             "besides the partial one")
        for axis, size in (("cluster_m", self.cluster_m), ("cluster_n", self.cluster_n)):
            need(size >= 1 and size & (size - 1) == 0, f"{axis}={size} must be a power of two")
        need(self.cluster_size <= MAX_CLUSTER_SIZE,
             f"a cluster of {self.cluster_size} CTAs ({self.cluster_m}x{self.cluster_n}"
             + (f", x split_k={self.split_k} with split_cluster" if self.split_cluster else "")
             + f") is above the portable maximum of {MAX_CLUSTER_SIZE}")
        need(self.cluster_size == 1 or self.family == "specialized",
             "clusters (TMA multicast) are a feature of the specialized (warp-specialized) kernels")
        need(not self.persistent or self.family == "specialized",
             "persistent=True is a specialized-family (warp-specialized) kernel")
        need((self.producer_registers > 0) == (self.consumer_registers > 0),
             "setmaxnreg needs both producer_registers and consumer_registers (or neither)")
        if self.uses_setmaxnreg:
            for role, regs in (("producer", self.producer_registers), ("consumer", self.consumer_registers)):
                need(SETMAXNREG_MIN <= regs <= SETMAXNREG_MAX and regs % SETMAXNREG_STEP == 0,
                     f"{role}_registers={regs}: setmaxnreg takes a multiple of {SETMAXNREG_STEP} "
                     f"in {SETMAXNREG_MIN}..{SETMAXNREG_MAX}")
            need(self.family == "specialized" and self.producer_warps == 4,
                 "setmaxnreg acts on whole warpgroups: the producer must be a warpgroup "
                 "(producer_warps=4) of a specialized kernel")
            # setmaxnreg.inc takes only what setmaxnreg.dec gave back within the CTA and waits
            # for the rest forever: 48/232 (65,536 of the SM's registers, 1,024 past the 168 x 384
            # the CTA starts with) hung on the H200 where 40/232 (exactly 168 x 384) runs
            total = (self.producer_registers * 32 * self.producer_warps
                     + self.consumer_registers * WARPGROUP_THREADS * self.consumer_warpgroups)
            start = self.launch_registers * self.threads
            need(total <= start,
                 f"registers per role: {self.producer_registers} x {32 * self.producer_warps} producer "
                 f"+ {self.consumer_registers} x {WARPGROUP_THREADS * self.consumer_warpgroups} consumer "
                 f"threads = {total} > the {self.launch_registers} x {self.threads} = {start} the CTA "
                 f"starts with (setmaxnreg.inc would wait forever for the difference)")
            need(self.consumer_registers >= self.launch_registers >= self.producer_registers,
                 f"setmaxnreg moves registers from the producer ({self.producer_registers}) to the "
                 f"consumers ({self.consumer_registers}); the kernel starts with "
                 f"{self.launch_registers} per thread, which must lie between them")
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


# Registers a thread needs beyond its accumulators (addresses, descriptors, loop state)
# before a register cap makes ptxas spill.
REGISTER_HEADROOM = 32


def register_cap(s: Schedule) -> int | None:
    """The registers per thread to compile a kernel for, so that registers do not cost it a
    CTA per SM that shared memory and threads would allow: the cap of the highest residency
    that still leaves REGISTER_HEADROOM registers beside the accumulators. None when no cap
    is needed: one CTA per SM (ptxas's own limit fits it), a residency that fits uncapped,
    or a setmaxnreg kernel (its count fixed by the launch bounds)."""
    if s.uses_setmaxnreg:
        return None
    for ctas in range(s.ctas_per_sm(), 1, -1):
        cap = MAX_REGISTERS_PER_THREAD
        while cap >= REGISTER_ALLOCATION_UNIT // 32 and ctas_by_registers(cap, s.threads) < ctas:
            cap -= 8 if cap % 8 == 0 else cap % 8
        if cap >= s.accumulator_registers + REGISTER_HEADROOM:
            return None if cap >= MAX_REGISTERS_PER_THREAD else cap
    return None


def kernel_gaps(s: Schedule) -> list[str]:
    """What this (valid) schedule asks for that the Numba kernels do not build. The
    specialized family has two kernels: one producer warp (V3-V5, gemm/kernels/specialized.py)
    and a producer warpgroup (V6 on: persistent, clusters, setmaxnreg, TMA-store epilogue,
    gemm/kernels/persistent.py)."""
    gaps = []
    if s.family not in KERNEL_FAMILIES:
        gaps.append(f"the {s.family!r} family has no kernel (kernels: {', '.join(KERNEL_FAMILIES)})")
    warpgroup_producer = s.family == "specialized" and s.producer_warps == 4
    if s.family == "specialized" and s.producer_warps not in (1, 4):
        gaps.append(f"producer_warps={s.producer_warps}: the specialized kernels have one producer "
                    "warp or one producer warpgroup (4)")
    if not warpgroup_producer:
        for field, value, default in (("epilogue", s.epilogue, "direct"), ("persistent", s.persistent, False),
                                      ("accumulate", s.accumulate, "float32")):
            if value != default:
                gaps.append(f"{field}={value!r} is built only in the producer-warpgroup kernel "
                            "(family='specialized', producer_warps=4)")
    if s.cluster_size > 1 and not warpgroup_producer:
        gaps.append("clusters are built only in the producer-warpgroup kernel (producer_warps=4)")
    if s.multicast_size > 2:
        gaps.append(f"a cluster of {s.multicast_size} CTAs sharing an operand: the kernel multicasts "
                    "to pairs (cluster of 2)")
    if s.cluster_m > 1 and s.cluster_n > 1:
        gaps.append("a cluster along both M and N: the kernel multicasts one operand")
    if s.accumulate == "float16" and s.split_k > 1:
        gaps.append("split_k with fp16 accumulation: the partials are fp32")
    if s.split_k > 1 and not warpgroup_producer:
        gaps.append("split_k > 1 is built only in the producer-warpgroup kernel")
    if s.split_cluster and not s.persistent:
        gaps.append("split_cluster is built in the persistent kernel (persistent=True)")
    if s.stream_k and s.cluster_size > 1:
        gaps.append("stream_k with clusters: the kernel shares single tiles, not a cluster's pair")
    if s.stream_k and s.accumulate == "float16":
        gaps.append("stream_k with fp16 accumulation: the partials are added as fp32")
    if s.swap_ab and not warpgroup_producer:
        gaps.append("swap_ab is built only in the producer-warpgroup kernel")
    if s.swap_ab and s.epilogue == "tma":
        gaps.append("swap_ab writes C transposed from registers: epilogue='direct'")
    if s.dependent_launch and not warpgroup_producer:
        gaps.append("dependent_launch is built only in the producer-warpgroup kernel")
    if s.k_order == "serpentine" and s.stream_k:
        gaps.append("k_order='serpentine' with stream_k: the producer's share bookkeeping fills its "
                    "registers (it spills with an MN-major operand)")
    if s.swap_ab and s.accumulate == "float16":
        gaps.append("swap_ab stores fp32 accumulators transposed: accumulate='float32'")
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
    "v5": _preset(name="v5", family="specialized", block_n=256, stages=4, syncs_per_iter=0,
                  runtime_stage_index=False, producer_warps=1, consumer_warpgroups=2,
                  wgmma_in_flight=1, raster="grouped"),
    # the tutorial series' V6: a 256x256 tile over two consumer warpgroups, which fits only
    # with fp16 accumulators; C leaves through shared memory and a TMA store
    "v6": _preset(name="v6", family="specialized", block_m=256, block_n=256, stages=3,
                  syncs_per_iter=0, runtime_stage_index=False, producer_warps=4,
                  consumer_warpgroups=2, wgmma_in_flight=0, raster="grouped", epilogue="tma",
                  accumulate="float16", producer_registers=40, consumer_registers=232),
    # the fastest fp32-accumulating kernel measured: persistent, setmaxnreg, 128x256 over two
    # warpgroups, TMA-store epilogue. (Its cluster of two sharing B by multicast, cluster_m=2,
    # measures within 2% of it on the large shapes and wins at 2048^3: the dispatcher's table
    # chooses per shape.)
    "v7": _preset(name="v7", family="specialized", block_m=128, block_n=256, stages=3,
                  syncs_per_iter=0, runtime_stage_index=False, producer_warps=4,
                  consumer_warpgroups=2, wgmma_in_flight=0, raster="grouped", epilogue="tma",
                  persistent=True, producer_registers=40, consumer_registers=232, dependent_launch=True),
}


def preset(version: str, **overrides) -> Schedule:
    """A named preset, optionally with fields changed (validated)."""
    try:
        base = PRESETS[version]
    except KeyError:
        raise ScheduleError(f"unknown version {version!r}; known: {', '.join(PRESETS)}") from None
    return base.replace(**overrides) if overrides else base


def from_spec(spec: str) -> Schedule:
    """A schedule from its short name: a preset ('v7') or a preset with fields changed
    ('v7:block_n=192,stages=4,persistent=false'), validated. The name is the spec itself,
    so tables, caches and result files can store a schedule as this string."""
    version, _, changes = spec.partition(":")
    if version not in PRESETS:
        raise ScheduleError(f"unknown version {version!r} in {spec!r}; known: {', '.join(PRESETS)}")
    fields = {}
    for item in filter(None, changes.split(",")):
        key, _, value = item.partition("=")
        if not hasattr(PRESETS[version], key) or key == "name":
            raise ScheduleError(f"{spec!r}: {key!r} is not a Schedule field")
        current = getattr(PRESETS[version], key)
        if isinstance(current, bool):
            if value.lower() not in ("true", "false", "1", "0"):
                raise ScheduleError(f"{spec!r}: {key} takes true or false, got {value!r}")
            fields[key] = value.lower() in ("true", "1")
        else:
            try:
                fields[key] = type(current)(value)
            except ValueError:
                raise ScheduleError(f"{spec!r}: {key} takes a {type(current).__name__}, got {value!r}") from None
    return preset(version, **fields, name=spec) if fields else PRESETS[version]
