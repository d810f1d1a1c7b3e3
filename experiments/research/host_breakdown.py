"""Where a warm gemm.matmul call's host time goes (needs the H200):

  python -m experiments.research.host_breakdown

For 256^3 and 1024^3 fp16 torch operands (B = W.T), each piece of a repeated call timed on its
own over 3,000 calls (the GPU synchronised once at the end, so a piece that launches a kernel
is paced by the GPU when the GPU is the slower): the whole call, the call with `out=`,
torch.matmul, the call's key, the repeat lookup, allocating C (as the call does, and with
torch.empty for comparison), the launch alone, the stream getter, the TMA-store map of a new
C. Then the host alone: 400 calls enqueued with no synchronisation, fewer than the launch
queue holds, for ours and torch.matmul. Last, a cProfile of 3,000 calls. The findings are in
docs/research/notes.md (items 81-82).
"""
from __future__ import annotations

import cProfile
import io
import pstats
import time

from .. import host


def per_call_us(fn, calls: int = 3000) -> float:
    """experiments.host's per-call wall time, after 200 warm-up calls."""
    import torch
    for _ in range(200):
        fn()
    return host.per_call_us(fn, calls, torch.cuda.synchronize)


def enqueue_us(fn, calls: int = 400) -> float:
    """The host's time per call while the launch queue has room: the GPU does not pace it."""
    import torch
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t) / calls * 1e6
    torch.cuda.synchronize()
    return host


def main() -> int:
    import torch

    import gemm
    from gemm import api
    for size in (256, 1024):
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16).t()
        gemm.matmul(a, b)
        key = api._signature(a, b, None, None, None, None)
        repeat = api._REPEATS[key]
        out = torch.empty(size, size, device="cuda", dtype=torch.float16)
        print(f"--- {size}^3, schedule {repeat.schedule.name}, TMA-store map per C: {repeat.c_map is not None}")
        pieces = {
            "matmul": lambda: gemm.matmul(a, b),
            "matmul(out=)": lambda: gemm.matmul(a, b, out=out),
            "torch.matmul": lambda: torch.matmul(a, b),
            "call key": lambda: api._signature(a, b, None, None, None, None),
            "repeat lookup": lambda: api._REPEATS.get(key),
            "allocate C": repeat.allocate,
            "torch.empty": lambda: torch.empty((size, size), dtype=torch.float16, device=a.device),
            "launch": lambda: repeat.launch(),
            "stream getter": lambda: api._torch_stream(0),
        }
        if repeat.c_map is not None:
            address = out.data_ptr()
            pieces["C map (new)"] = lambda: repeat.c_map(address)
        for name, fn in pieces.items():
            print(f"{name:16s} {per_call_us(fn):7.2f} us")
        for name in ("matmul", "torch.matmul"):
            print(f"{name + ' enqueue':20s} {enqueue_us(pieces[name]):7.2f} us (host only)")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(3000):
            gemm.matmul(a, b)
        profile.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(14)
        print(text.getvalue()[:3500])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
