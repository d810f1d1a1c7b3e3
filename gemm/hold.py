"""A one-thread kernel that spins for a number of SM clocks: queued ahead of the calls a timing
measures, it holds the stream while the host queues them, so the events around the calls see
the device's time per call, not the host's pace (gemm.dispatch.autotune)."""
from __future__ import annotations

import ctypes
from functools import lru_cache

# The spin counts clocks of the SM it runs on; these GPUs run at most ~2 GHz, so a hold of N us
# lasts at least that long.
CYCLES_PER_US = 2000

_PTX = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry hold_stream(.param .u64 cycles)
{
    .reg .u64 %start, %now, %spent, %cycles;
    .reg .pred %more;
    ld.param.u64 %cycles, [cycles];
    mov.u64 %start, %clock64;
SPIN:
    mov.u64 %now, %clock64;
    sub.u64 %spent, %now, %start;
    setp.lt.u64 %more, %spent, %cycles;
    @%more bra SPIN;
    ret;
}
"""


def hold_stream(stream_handle: int, microseconds: float) -> None:
    """Queue a spin of at least `microseconds` on the stream (one thread on one SM)."""
    from .launch import Launch
    Launch(_loaded(), (1, 1, 1), stream_handle, (int(microseconds * CYCLES_PER_US),), (ctypes.c_uint64,))()


@lru_cache(maxsize=1)
def _loaded():
    from .compile import assemble
    from .launch import load_function
    cubin, _ = assemble(_PTX)
    return load_function(cubin, "hold_stream", 1)
