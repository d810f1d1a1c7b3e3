"""What a kernel is compiled for: a Schedule plus the operands' dtype and majorness.

Everything here is a compile-time constant of the kernel; the shared-memory map
(where each stage's A and B tile and each mbarrier live) is derived once, here.
Pure Python.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..schedule import KernelGapError, Schedule, kernel_gaps
from ..smem_layout import OperandLayout, default_swizzle

DTYPES = ("float16", "bfloat16")


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

    def __post_init__(self):
        self.schedule.validated()
        gaps = kernel_gaps(self.schedule)
        if gaps:
            raise KernelGapError(f"no kernel for schedule {self.schedule.name!r}: {'; '.join(gaps)}")
        self.a_layout, self.b_layout  # raises if a tile does not fit its swizzle
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.prefetch_limit is not None and not (
                self.family == "specialized" and 1 <= self.prefetch_limit <= self.stages):
            raise ValueError(f"prefetch_limit={self.prefetch_limit}: a specialized kernel's, 1..stages")

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

    @cached_property
    def a_layout(self) -> OperandLayout:
        swizzle = default_swizzle(self.a_major, self.block_k) if self.a_swizzle is None else self.a_swizzle
        return OperandLayout(self.a_major, self.block_m, self.block_k, swizzle)

    @cached_property
    def b_layout(self) -> OperandLayout:
        swizzle = default_swizzle(self.b_major, self.block_k) if self.b_swizzle is None else self.b_swizzle
        return OperandLayout(self.b_major, self.block_n, self.block_k, swizzle)

    @property
    def consumer_warps(self): return 4 * self.schedule.consumer_warpgroups

    # -- the shared-memory map: [A stages][B stages][full barriers][empty barriers] --
    @property
    def a_offset(self) -> int:
        return 0

    @property
    def b_offset(self) -> int:
        return self.stages * self.a_layout.tile_bytes

    @property
    def barrier_offset(self) -> int:
        return self.b_offset + self.stages * self.b_layout.tile_bytes

    @property
    def empty_barrier_offset(self) -> int:
        """Where the per-stage "empty" mbarriers of a warp-specialized kernel live; -1 if none."""
        return self.barrier_offset + 8 * self.stages if self.family == "specialized" else -1

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
                + (f"{s.raster}{s.raster_group if s.raster == 'grouped' else ''}_" if s.raster != "row" else "")
                + f"{self.dtype}_{self.a_major}{self.a_layout.swizzle}_{self.b_major}{self.b_layout.swizzle}"
                + ("_clockprobe" if self.clock_probe else "")
                + ("_mmaloop" if self.mma_loop_only else "")
                + ("_loadloop" if self.load_loop_only else "")
                + (f"_prefetch{self.prefetch_limit}" if self.prefetch_limit else ""))

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        """1-D: the kernel maps launch order onto C tiles by the schedule's raster."""
        return ((-(-m // self.block_m)) * (-(-n // self.block_n)), 1, 1)

    def mma_offsets(self):
        """Byte offsets of each WGMMA's A (per k16 step, per m64 block) and B (per k16 step)."""
        a, b = self.a_layout, self.b_layout
        steps = range(self.block_k // 16)
        return (tuple(tuple(a.offset(k, m) for m in range(self.m_blocks)) for k in steps),
                tuple(b.offset(k) for k in steps))
