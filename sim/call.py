"""What a user's timing of one call sees, beyond the GEMM kernel's own CTAs.

A call of gemm.matmul is host work (argument checks, the prepared launch) and one or more
kernels: the GEMM and, when an operand's rows are not 16-byte aligned (TMA needs it:
K x 2 bytes), a copy of each operand into a padded buffer first; when C's rows are not
(N x 2 bytes) and the GEMM stores through TMA, it stores into a padded stand-in that a copy
then packs into C (gemm/padding.py, at the copy kernel's measured rate). Under split-K the GEMM
kernel sums the slices itself: once all of a tile's slices have written their fp32 partials,
each slice's CTA reads its share of the tile from every partial (from L2: they were just
written) and stores that share of C (`reduce_ms`, a tail on as many SMs as there are work
units). Three times describe it:

  device  every kernel back to back on the stream: each pays `launch_us` (its launch and
          drain) besides its own work, less `dependent_launch_saving_us` for a kernel launched
          as a programmatic dependent (its launch under the end of the call before), or
          `dependent_launch_full_grid_saving_us` where its grid fills the GPU (its CTAs let the
          next kernel in once their loads are issued), and less what a preload (Schedule.preload:
          an operand loaded before the wait for the kernel ahead) streams while that kernel
          ends (`preload_saving_s`);
  timed   one call between two CUDA events, as the protocol's loop times it (event_ms): the
          start event is recorded, the host gets the kernels going (`host_call_us`, plus
          `host_launch_us` for each further kernel) and records the end event; no
          synchronisation between runs. A kernel shorter than the host's work is timed at the
          host's floor (`host_floor_us`) or, a little longer, at its pace (`host_pace_us`); a
          longer one at its own time and the events' tail (`event_tail_us`);
  queued  calls back to back, each between its events: the host runs ahead while the device
          is the slower of the two and the GPU waits on the host otherwise, so each call
          takes the longer of the host's and the device's time.
predict() reports `ms` = device (what the 8192^3 sweeps, timed back to back, compare with)
and `timed_ms`; the predictions file carries all three.
"""
from __future__ import annotations

import math

from gemm.limits import fills_the_gpu, tma_row_aligned
from gemm.schedule import INPUT_BYTES, Schedule

from .engines import ACCUMULATOR_BYTES, partial_tile_ns, split_unit_ns
from .hardware import GpuProfile


def operand_copies(k: int) -> int:
    """Operands (A [M, K] and W [N, K], both K-contiguous) the call copies into a padded buffer
    because a row of K elements is not a multiple of 16 bytes."""
    return 0 if tma_row_aligned(k) else 2


def result_copies(s: Schedule, n: int) -> int:
    """1 when the GEMM stores C through TMA but C's rows of N elements are not a multiple of 16
    bytes: TMA stores into a padded stand-in that a copy packs into C (swap-AB stores C from
    registers)."""
    return int(s.stores_via_tma and not s.swap_ab and not tma_row_aligned(n))


def _stream_s(nbytes: float, prof: GpuProfile, fits_l2: bool) -> float:
    """Seconds to move `nbytes` (read + written) through L2 (when it fits) or HBM, whole GPU."""
    rate = (prof.l2_feed_bytes_per_clk() * prof.clock_ghz * 1e9 if fits_l2
            else prof.hbm_tbs * 1e12 * prof.hbm_efficiency)
    return nbytes / rate


def in_kernel_reduce_s(m: int, n: int, batch: int, slices: int, tiles: int, prof: GpuProfile) -> float:
    """Split-K's sum inside the kernel: every element of C is read from `slices` fp32 partials
    (from L2 when the workspace fits in it) and written. Each of a tile's `slices` CTAs sums
    1/slices of it, so it runs on min(tiles x slices, SMs) SMs' share of the GPU's rates,
    after the K loops."""
    partials = slices * m * n * batch * ACCUMULATOR_BYTES
    out = m * n * batch * INPUT_BYTES
    fits = partials <= (prof.l2_lru_bytes or prof.l2_bytes)
    share = min(tiles * slices, prof.sm_count) / prof.sm_count
    return (_stream_s(partials, prof, fits) + _stream_s(out, prof, False)) / share


def copy_kernels_s(s: Schedule, m: int, n: int, k: int, batch: int, prof: GpuProfile) -> tuple[float, int]:
    """(seconds, kernels) of the copies of unaligned operands into padded buffers and of a
    padded C into C: each read and written, at the copy kernel's rate (the HBM stream rate
    where the profile has none)."""
    operands, results = operand_copies(k), result_copies(s, n)
    if not operands + results:
        return 0.0, 0
    nbytes = 2 * INPUT_BYTES * batch * ((m + n) * k * (operands > 0) + m * n * results)
    rate = (prof.line_copy_gb_per_s * 1e9 if prof.line_copy_gb_per_s
            else prof.hbm_tbs * 1e12 * prof.hbm_efficiency)
    kernels = operands + results
    return kernels * prof.launch_us * 1e-6 + nbytes / rate, kernels


def stream_k_fixup_s(s: Schedule, k_iters: int, run: int, prof: GpuProfile) -> float:
    """Stream-K's partial tiles on a CTA's path, as the kernel's tail: where the profile has
    split-K's partial tile measured (sim.engines.partial_tile_ns), a share's accumulators stored
    and published, the handshake, and then every other share of the tile the CTA finishes added
    one after the other (gemm/kernels/persistent.py make_stream_k's `take` reads each peer's whole
    fp32 tile in turn, where a split-K slice sums only its own part of each): ceil(k_iters / run)
    CTAs share a tile; otherwise the bytes alone (shares_read_s)."""
    partial = partial_tile_ns(s, prof)
    if partial is not None:
        others = max(1, math.ceil(k_iters / max(run, 1)) - 1)
        tile_sum_ns = s.block_m * s.block_n * ACCUMULATOR_BYTES / prof.split_sum_bytes_per_ns
        return (sum(partial) + (others - 1) * tile_sum_ns) * 1e-9
    return shares_read_s(s, k_iters, run, prof)


def shares_read_s(s: Schedule, k_iters: int, run: int, prof: GpuProfile) -> float:
    """Stream-K's partial tiles: a CTA writes at most one fp32 tile of accumulators (the later
    share of a tile another CTA finishes), and the CTA that finishes a tile reads back the
    shares of the others it spans (a tile of `k_iters` iterations over runs of `run`), one SM
    alone at its L2 rate, as the kernel's tail."""
    slot = s.block_m * s.block_n * ACCUMULATOR_BYTES
    others = math.ceil(k_iters / max(run, 1))
    return (1 + others) * slot / (prof.l2_sm_bytes_per_clk * prof.clock_ghz * 1e9)


def event_ms(device_ms: float, call_us: float, floor_us: float, pace_us: float, tail_us: float,
             extra_kernels: int = 0, launch_us: float = 0.0, start_us: float | None = None) -> float:
    """What two CUDA events around one call measure (ms) in the protocol's loop of runs
    (experiments.timing.time_blocks) for a call whose kernels take `device_ms` back to back.

    The kernel starts `call_us` after the start event (the GPU is idle: it waits on the host),
    and the end event cannot come before the host records it (`floor_us` after the start).
    When that would end the kernel after the host's next run has begun (`pace_us`, one run of
    the loop), each run starts where the last one's kernel ended and the GPU catches up once
    per run: the runs are timed at the pace. A kernel longer than the pace keeps the GPU busy:
    its own time and the end event's `tail_us`. So
        max(d + tail, min(pace, max(floor, call + d))).
    Each further kernel of the call (`extra_kernels`, e.g. operand copies) adds `launch_us` of
    host work to the call, the floor and the pace.
    `start_us`, where the host was measured so (the host probe's called_us x the profile's
    kernel_start_share): when the kernel starts after the start event, its end event included,
    in place of `call_us` (the tight loop's call, which understates a loop whose contenders take
    turns)."""
    extra = extra_kernels * launch_us
    call, floor, pace = (call_us if start_us is None else start_us) + extra, floor_us + extra, pace_us + extra
    d = device_ms * 1e3
    return max(d + tail_us, min(pace, max(floor, call + d))) * 1e-3


def dependent_saving_s(s: Schedule, ctas: int, prof: GpuProfile) -> float:
    """Back to back, what a programmatic dependent launch of `ctas` CTAs saves of launch_us."""
    if not s.dependent_launch:
        return 0.0
    return (prof.dependent_launch_full_grid_saving_us if fills_the_gpu(ctas, prof.sm_count)
            else prof.dependent_launch_saving_us) * 1e-6


def preload_saving_s(s: Schedule, ctas: int, k_iters: int, prof: GpuProfile, paced: float, beyond_s: float) -> float:
    """Back to back, what a dependent launch's preload takes off a call: its CTAs' first ring
    of the preloaded operand (min(stages, a unit's K tiles) of its tiles, a multicast operand
    once a cluster) streams at the HBM's read rate while the kernel ahead ends, inside the time
    the launch pays beyond its loops' (`beyond_s`: its launch and fixed costs, its stream's
    start and end, less the dependent launch's saving), as far as the HBM paces it (`paced`,
    sim.model.hbm_paced_share: where the SMs pace a launch, its HBM queues are not what waits).
    The next kernel's CTAs can only preload on SMs the kernel ahead has left: this takes them
    as landing in time for all of it."""
    operand = s.preloaded_operand
    if operand is None or paced <= 0.0 or beyond_s <= 0.0:
        return 0.0
    rows = s.block_m if operand == "a" else s.block_n
    shared_by = s.cluster_n if operand == "a" else s.cluster_m     # the CTAs one multicast feeds
    ring = ctas * min(s.stages, k_iters) * rows * s.block_k * INPUT_BYTES / max(1, shared_by)
    return paced * min(ring / prof.hbm_read_bytes_per_s(), beyond_s)


def timed(kernel_s: float, s: Schedule, m: int, n: int, k: int, batch: int, slices: int, prof: GpuProfile,
          host_us: float | None = None, tiles: int = 0, stream_k: tuple[int, int] = (0, 0), ctas: int = 0,
          preload_s: float = 0.0) -> dict:
    """The call as a CUDA-event timing sees it; `kernel_s` is the GEMM kernel's time on the stream
    (its launch_us included), `ctas` its grid, `tiles` its C tiles (split-K's reduce runs on every slice's CTA),
    `stream_k` (K iterations of a tile, a CTA's run of the shared ones) when tiles are shared by
    K iteration, `preload_s` what its preload saves back to back (preload_saving_s). Times in ms."""
    # split-K's sum: inside the K loops' time where the profile has it measured (each unit's own,
    # sim.engines.partial_tile_ns), else after them at the GPU's rates
    reduce_s = (in_kernel_reduce_s(m, n, batch, slices, max(tiles, 1), prof)
                if s.split_k > 1 and split_unit_ns(s, prof) is None else 0.0)
    reduce_s += stream_k_fixup_s(s, *stream_k, prof) if stream_k[1] else 0.0
    copy_s, copies = copy_kernels_s(s, m, n, k, batch, prof)
    kernels = 1 + copies
    alone_s = kernel_s + reduce_s + copy_s
    # back to back, a programmatic dependent's launch hides partly under the kernel before it
    # (device_ms, and queued_ms where the device is the slower); one call between events, on a
    # GPU idle before it, has none to hide under (alone_ms, timed_ms)
    device_s = alone_s - dependent_saving_s(s, ctas, prof) - preload_s
    call_us = prof.host_call_us if host_us is None else host_us
    host_s = (call_us + (kernels - 1) * prof.host_launch_us) * 1e-6
    timed_ms = event_ms(alone_s * 1e3, call_us, prof.host_floor_us, prof.host_pace_us, prof.event_tail_us,
                        kernels - 1, prof.host_launch_us)
    return {"kernel_ms": kernel_s * 1e3, "reduce_ms": reduce_s * 1e3, "copy_ms": copy_s * 1e3,
            "device_ms": device_s * 1e3, "host_ms": host_s * 1e3, "host_bound": alone_s < host_s,
            "timed_ms": timed_ms, "serial_ms": (alone_s + host_s) * 1e3, "alone_ms": alone_s * 1e3,
            "queued_ms": max(device_s, host_s) * 1e3, "kernels": kernels, "operand_copies": operand_copies(k),
            "result_copies": result_copies(s, n)}
