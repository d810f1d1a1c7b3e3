"""What a kernel is compiled for: a Schedule plus the operands' dtype and majorness.

Everything here is a compile-time constant of the kernel; the shared-memory map
(where each stage's A and B tile and each mbarrier live) is derived once, here.
Pure Python.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..schedule import KernelGapError, Schedule, ScheduleError, kernel_gaps
from ..smem_layout import OperandLayout, StagingLayout, default_swizzle, packed_gaps

DTYPES = ("float16", "bfloat16")

# Bits of the kernels' last parameter, `flags`, set per launch (gemm.launch.launch_gemm); only the
# producer-warpgroup kernel (persistent.py) reads them.
FLAG_A_STEPS = 1         # a batch's A has one tensor map per product (else one map for all)
FLAG_B_STEPS = 2         # the same for B
FLAG_EARLY_TRIGGER = 4   # a dependent launch whose grid fills the GPU (gemm.limits.fills_the_gpu):
                         # each CTA lets the next kernel be scheduled once its producer has issued
                         # its last load


@dataclass(frozen=True)
class KernelConfig:
    schedule: Schedule
    dtype: str = "float16"    # A and B (and C) element type
    a_major: str = "k"        # "k": A is row-major [M, K]; "mn": A is a transposed view (M contiguous)
    b_major: str = "k"        # "k": B stored [N, K] (b = w.T); "mn": B row-major [K, N]
    a_swizzle: int | None = None  # bytes; None: the widest the tile allows
    b_swizzle: int | None = None
    clock_probe: bool = False     # record each CTA's start/end %clock64 and %globaltimer
    mma_loop_only: bool = False   # microbenchmark: the ring's loop with no TMA after the prefill
    load_loop_only: bool = False  # microbenchmark: the ring's loop with no WGMMA
    # experiment (specialized only): the producer runs at most this many K tiles ahead of
    # the consumers' releases, however deep the ring (None: the ring's depth)
    prefetch_limit: int | None = None
    # "a" or "b": that operand comes packed for bulk copies (gemm.smem_layout's packed weights,
    # made by gemm.pack_weights), its argument the buffer's address; K-major in shared memory
    packed: str | None = None

    def __post_init__(self):
        self.schedule.validated()
        gaps = kernel_gaps(self.schedule)
        if gaps:
            raise KernelGapError(f"no kernel for schedule {self.schedule.name!r}: {'; '.join(gaps)}")
        self.a_layout, self.b_layout  # raises if a tile does not fit its swizzle
        map_end = self.barrier_offset + self.schedule.barrier_bytes + self.schedule.split_exchange_bytes
        assert map_end + 1024 <= self.shared_bytes, (map_end, self.shared_bytes)  # 1 KB aligns the base
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.schedule.accumulate == "float16" and self.dtype != "float16":
            raise KernelGapError(f"accumulate='float16' takes fp16 inputs (WGMMA accumulates bf16 "
                                 f"in fp32 only), got {self.dtype}")
        if self.packed is not None:
            self._check_packed()
        if self.prefetch_limit is not None and not (
                self.family == "specialized" and 1 <= self.prefetch_limit <= self.stages):
            raise ValueError(f"prefetch_limit={self.prefetch_limit}: a specialized kernel's, 1..stages")

    def _check_packed(self) -> None:
        if self.packed not in ("a", "b"):
            raise ValueError(f"packed must be None, 'a' or 'b', got {self.packed!r}")
        if not self.warpgroup_producer:
            raise KernelGapError(f"schedule {self.schedule.name!r}: packed weights are read by the "
                                 "producer-warpgroup kernels (v6, v7 and their variations)")
        if self.load_loop_only or self.mma_loop_only:
            raise ValueError("packed weights are not read by the loop-only microbenchmarks")
        layout = self.a_layout if self.packed == "a" else self.b_layout
        gaps = packed_gaps(layout)
        if gaps:
            raise ScheduleError(f"schedule {self.schedule.name!r} cannot read packed weights as its "
                                f"{self.packed.upper()}: {'; '.join(gaps)}")

    # -- the schedule's numbers, as the kernels name them --
    @property
    def family(self): return self.schedule.family
    @property
    def block_m(self): return self.schedule.block_m
    @property
    def block_n(self): return self.schedule.block_n
    @property
    def block_k(self): return self.schedule.block_k
    @property
    def stages(self): return self.schedule.stages
    @property
    def threads(self): return self.schedule.threads
    @property
    def m_blocks(self): return self.schedule.m_tiles_per_warpgroup

    @property
    def warpgroup_producer(self) -> bool:
        """The producer is a whole warpgroup (gemm/kernels/persistent.py), not one warp."""
        return self.family == "specialized" and self.schedule.producer_warps == 4

    @cached_property
    def a_layout(self) -> OperandLayout:
        swizzle = (default_swizzle(self.a_major, self.block_k, self.block_m, self.schedule.cluster_n)
                   if self.a_swizzle is None else self.a_swizzle)
        # with a cluster along N the CTAs share A: each loads 1/cluster_n and multicasts it
        return OperandLayout(self.a_major, self.block_m, self.block_k, swizzle, self.schedule.cluster_n)

    @cached_property
    def b_layout(self) -> OperandLayout:
        swizzle = (default_swizzle(self.b_major, self.block_k, self.block_n, self.schedule.cluster_m,
                                   self.schedule.wgmma_n)
                   if self.b_swizzle is None else self.b_swizzle)
        return OperandLayout(self.b_major, self.block_n, self.block_k, swizzle, self.schedule.cluster_m)

    @cached_property
    def c_layout(self) -> StagingLayout | None:
        """Each consumer warpgroup's share of the C tile (one pass's columns of it), staged for
        the TMA store."""
        s = self.schedule
        return StagingLayout(s.rows_per_warpgroup, s.c_staging_cols) if s.stores_via_tma else None

    @property
    def consumer_warps(self): return 4 * self.schedule.consumer_warpgroups

    @property
    def empty_arrivals(self) -> int:
        """Arrivals that free a stage: every consumer warp of every CTA whose producer writes
        into it (the whole cluster, when an operand is multicast)."""
        return self.consumer_warps * self.schedule.multicast_size

    # -- the shared-memory map: [A stages][B stages][C staging][full barriers][empty barriers]
    #    [split_cluster: ready, free barriers][split_cluster: exchange slots] --
    @property
    def a_offset(self) -> int:
        return 0

    @property
    def b_offset(self) -> int:
        return self.stages * self.a_layout.tile_bytes

    @property
    def c_offset(self) -> int:
        """Where the C staging tile starts: past the ring in a persistent kernel (the producer
        refills the ring while the consumers store), else over the drained ring."""
        return self.b_offset + self.stages * self.b_layout.tile_bytes if self.schedule.persistent else 0

    @property
    def barrier_offset(self) -> int:
        ring_end = self.b_offset + self.stages * self.b_layout.tile_bytes
        c_end = self.c_offset + (self.c_layout.tile_bytes * self.schedule.consumer_warpgroups
                                 if self.c_layout else 0)
        return max(ring_end, c_end)

    @property
    def empty_barrier_offset(self) -> int:
        """Where the per-stage "empty" mbarriers of a warp-specialized kernel live; -1 if none."""
        return self.barrier_offset + 8 * self.stages if self.family == "specialized" else -1

    @property
    def split_barrier_offset(self) -> int:
        """split_cluster: the "ready" mbarrier (every slice's partial has arrived in this CTA's
        slots) and, 8 bytes on, the "free" one (every slice has summed its share, so the slots
        may be written again), past the stages' barriers; -1 without split_cluster. With a lead
        (split_lead) only the first CTA's "ready" and the others' "free" are used."""
        return self.empty_barrier_offset + 8 * self.stages if self.schedule.split_cluster else -1

    @property
    def exchange_offset(self) -> int:
        """split_cluster: where the slots the cluster's slices send their partials to start (past
        every barrier); -1 without split_cluster."""
        return self.barrier_offset + self.schedule.barrier_bytes if self.schedule.split_cluster else -1

    @property
    def warpgroup_a_offset(self) -> int:
        """Bytes from consumer warpgroup w's rows of an A tile to warpgroup w+1's."""
        a, mb = self.a_layout, self.m_blocks
        step = a.offset(0, mb) - a.offset(0, 0)
        assert all(a.offset(k, w * mb + m) == a.offset(k, m) + w * step
                   for k in range(self.block_k // 16) for m in range(mb)
                   for w in range(self.schedule.consumer_warpgroups)), "A rows not evenly spaced"
        return step

    @property
    def shared_bytes(self) -> int:
        return self.schedule.shared_bytes

    @property
    def tx_bytes(self) -> int:
        """Bytes one K tile's TMA loads complete on its mbarrier."""
        return self.a_layout.tile_bytes + self.b_layout.tile_bytes

    @property
    def name(self) -> str:
        s = self.schedule
        return (f"gemm_{s.family}_{s.block_m}x{s.block_n}x{s.block_k}_s{s.stages}_"
                + (f"wg{s.consumer_warpgroups}_inflight{s.wgmma_in_flight}_" if s.family == "specialized" else "")
                + ("pwg_" if self.warpgroup_producer else "")
                + ("persistent_" if s.persistent else "")
                + (f"cluster{s.cluster_m}x{s.cluster_n}_" if s.multicast_size > 1 else "")
                + (f"regs{s.producer_registers}-{s.consumer_registers}_" if s.uses_setmaxnreg else "")
                + ("tmastore_" if s.stores_via_tma else "")
                + ("acc16_" if s.accumulate == "float16" else "")
                + (f"splitk{s.split_k}_" if s.split_k > 1 else "")
                + ("dsmem_" if s.split_cluster else "")
                + (f"lead{s.split_lead}_" if s.split_lead else "")
                + ("latewait_" if s.defer_cluster_wait else "")
                + (f"pre{s.preload}_" if s.preload != "none" else "")
                + ("serpentine_" if s.k_order == "serpentine" else "")
                + (f"{s.raster}{s.raster_group if s.raster == 'grouped' else ''}_" if s.raster != "row" else "")
                + f"{self.dtype}_{self.a_major}{self.a_layout.swizzle}_{self.b_major}{self.b_layout.swizzle}"
                + (f"_packed{self.packed}" if self.packed else "")
                + ("_clockprobe" if self.clock_probe else "")
                + ("_mmaloop" if self.mma_loop_only else "")
                + ("_loadloop" if self.load_loop_only else "")
                + (f"_prefetch{self.prefetch_limit}" if self.prefetch_limit else ""))

    def tiles(self, m: int, n: int) -> int:
        return (-(-m // self.block_m)) * (-(-n // self.block_n))

    def tile_units(self, m: int, n: int) -> int:
        """C tiles, a multicast cluster's tiles (cluster_m x cluster_n adjacent ones) counted once."""
        s = self.schedule
        return (-(-(-(-m // self.block_m)) // s.cluster_m)) * (-(-(-(-n // self.block_n)) // s.cluster_n))

    def units(self, m: int, n: int, batch: int = 1) -> int:
        """Work units, each a cluster's (or a CTA's) task: each product's tile units, each in split_k
        slices of K (a split_cluster unit is a whole tile, its slices the cluster's CTAs)."""
        s = self.schedule
        return self.tile_units(m, n) * (1 if s.split_cluster else s.split_k) * batch

    def workspace_regions(self, m: int, n: int, batch: int = 1, ctas: int = 0) -> tuple[int, int]:
        """(partials, counters) bytes of the global workspace a launch of `ctas` CTAs needs: the
        partials (a multiple of 256 bytes), then 4-byte counters that read zero between launches.
        Split-K: split_k fp32 planes of each product's C (rows `partial_row(n)` floats apart), a
        counter per C tile (the last of its CTAs past the wait resets it). Stream-K: a slot of
        `stream_k_slot_bytes` per CTA and a flag per CTA (the CTA that reads the slot resets it)."""
        s = self.schedule
        if s.split_k > 1 and not s.split_cluster:
            planes = s.split_k * batch * m * self.partial_row(n) * 4
            return -(-planes // 256) * 256, 4 * self.tile_units(m, n) * s.multicast_size * batch
        if s.stream_k:
            return -(-ctas * self.stream_k_slot_bytes // 256) * 256, 4 * ctas
        return 0, 0

    @property
    def stream_k_slot_bytes(self) -> int:
        """A CTA's stream-K partial: every consumer thread's fp32 accumulators."""
        return self.block_m * self.block_n * 4

    @staticmethod
    def partial_row(n: int) -> int:
        """Floats per row of a split-K partial plane: N rounded up to 4, so that every 4-column
        chunk is one aligned 16-byte load."""
        return (n + 3) // 4 * 4

    def grid(self, m: int, n: int, resident_clusters: int = 0, batch: int = 1) -> tuple[int, int, int]:
        """1-D: the kernel maps launch order onto C tiles by the schedule's raster. A persistent
        kernel launches as many clusters as can be resident at once (`resident_clusters`, read
        off the device), at most one per work unit, and each walks the units."""
        s = self.schedule
        units = self.units(m, n, batch)
        if not s.persistent:
            return (units * s.cluster_size, 1, 1)
        if resident_clusters < 1:
            raise ValueError("a persistent kernel's grid needs the number of resident clusters")
        if resident_clusters < s.split_k and not s.split_cluster:
            # a tile's slices wait for one another: all of them must be resident at once
            raise ScheduleError(f"split_k={s.split_k} needs that many CTAs (clusters) resident at once; "
                                f"this GPU holds {resident_clusters} of schedule {s.name!r}")
        if s.stream_k:   # the tiles are shared out over every resident CTA, however few
            return (resident_clusters, 1, 1)
        return (min(units, resident_clusters) * s.cluster_size, 1, 1)

    def mma_offsets(self):
        """Byte offsets of each WGMMA's A (per k16 step, per m64 block) and B (per k16 step, per
        column block)."""
        a, b = self.a_layout, self.b_layout
        steps = range(self.block_k // 16)
        n, n_blocks = self.schedule.wgmma_n, self.schedule.n_tiles_per_warpgroup
        return (tuple(tuple(a.offset(k, m) for m in range(self.m_blocks)) for k in steps),
                tuple(tuple(b.offset(k, j, n) for j in range(n_blocks)) for k in steps))
