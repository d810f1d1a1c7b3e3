"""What a user's timing of one call sees, beyond the GEMM kernel's own CTAs.

A call of gemm.matmul is host work (argument checks, the prepared launch) and one or more
kernels: the GEMM and, when an operand's rows are not 16-byte aligned (TMA needs it:
K x 2 bytes), a copy of each operand into a padded buffer first. Under split-K the GEMM
kernel sums the slices itself: the last CTA of each tile reads every slice's fp32 partial
back (from L2: they were just written) and stores C, after its own K loop (`reduce_ms`, a
tail on as many SMs as there are tiles). Three times describe it:

  device  every kernel back to back on the stream: each pays `launch_us` (its launch and
          drain) besides its own work;
  timed   one call between two CUDA events, on an idle GPU: the host's time to get the
          kernels going (`host_call_us`, plus `host_launch_us` for each further kernel)
          passes between the start event and the first kernel, so it is inside;
  queued  calls back to back, each between its events: the host runs ahead while the device
          is the slower of the two and the GPU waits on the host otherwise, so each call
          takes the longer of the host's and the device's time.
predict() reports `ms` = device (what the 8192^3 sweeps, timed back to back, compare with)
and `timed_ms`; the predictions file carries all three.
"""
from __future__ import annotations

from gemm.schedule import INPUT_BYTES, Schedule

from .engines import ACCUMULATOR_BYTES
from .hardware import GpuProfile

TMA_ALIGN = 16


def operand_copies(k: int) -> int:
    """Operands (A [M, K] and W [N, K], both K-contiguous) the call copies into a padded buffer
    because a row of K elements is not a multiple of 16 bytes."""
    return 0 if (k * INPUT_BYTES) % TMA_ALIGN == 0 else 2


def _stream_s(nbytes: float, prof: GpuProfile, fits_l2: bool) -> float:
    """Seconds to move `nbytes` (read + written) through L2 (when it fits) or HBM, whole GPU."""
    rate = (prof.l2_feed_bytes_per_clk() * prof.clock_ghz * 1e9 if fits_l2
            else prof.hbm_tbs * 1e12 * prof.hbm_efficiency)
    return nbytes / rate


def in_kernel_reduce_s(m: int, n: int, batch: int, slices: int, tiles: int, prof: GpuProfile) -> float:
    """Split-K's sum inside the kernel: the last CTA of each of `tiles` tiles reads `slices`
    fp32 partials per element of its tile (from L2 when the workspace fits in it) and writes
    C. Only those CTAs do it, one per tile, so it runs on min(tiles, SMs) SMs' share of the
    GPU's rates, after the K loops."""
    partials = slices * m * n * batch * ACCUMULATOR_BYTES
    out = m * n * batch * INPUT_BYTES
    fits = partials <= (prof.l2_lru_bytes or prof.l2_bytes)
    share = min(tiles, prof.sm_count) / prof.sm_count
    return (_stream_s(partials, prof, fits) + _stream_s(out, prof, False)) / share


def copy_kernels_s(m: int, n: int, k: int, batch: int, prof: GpuProfile) -> tuple[float, int]:
    """(seconds, kernels) of the padded copies of unaligned operands: read and write each."""
    copies = operand_copies(k)
    if not copies:
        return 0.0, 0
    nbytes = 2 * (m + n) * k * batch * INPUT_BYTES
    return copies * prof.launch_us * 1e-6 + _stream_s(nbytes, prof, False), copies


def timed(kernel_s: float, s: Schedule, m: int, n: int, k: int, batch: int, slices: int, prof: GpuProfile,
          host_us: float | None = None, tiles: int = 0) -> dict:
    """The call as a CUDA-event timing sees it; `kernel_s` is the GEMM kernel's time on the stream
    (its launch_us included), `tiles` its C tiles (split-K's reduce runs one CTA per tile).
    Times in ms."""
    reduce_s = in_kernel_reduce_s(m, n, batch, slices, max(tiles, 1), prof) if s.split_k > 1 else 0.0
    copy_s, copies = copy_kernels_s(m, n, k, batch, prof)
    kernels = 1 + copies
    device_s = kernel_s + reduce_s + copy_s
    host_s = ((prof.host_call_us if host_us is None else host_us) + (kernels - 1) * prof.host_launch_us) * 1e-6
    return {"kernel_ms": kernel_s * 1e3, "reduce_ms": reduce_s * 1e3, "copy_ms": copy_s * 1e3,
            "device_ms": device_s * 1e3, "host_ms": host_s * 1e3, "host_bound": device_s < host_s,
            "timed_ms": (device_s + host_s) * 1e3, "queued_ms": max(device_s, host_s) * 1e3, "kernels": kernels,
            "operand_copies": copies}
