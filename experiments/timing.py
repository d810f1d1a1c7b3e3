"""The timing protocol of docs/design.md, in one place: CUDA events, warm-up, about 30
timed runs, the median; inputs rotated among buffer sets so that L2 does not hold
them between runs; rivals timed in the same process, interleaved in rounds so
that a clock that sags under sustained load weighs on each of them alike."""
from __future__ import annotations

import statistics


def time_interleaved(fns: dict, input_sets, warmup=5, iters=30) -> dict:
    """Median milliseconds of each fn(*inputs) over `iters` runs. The fns take
    turns run by run (A B A B ...), so a clock that sags under sustained load
    weighs on each alike; inputs cycle through input_sets."""
    import torch
    for fn in fns.values():
        for i in range(warmup):
            fn(*input_sets[i % len(input_sets)])
    events = {name: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(iters)] for name in fns}
    for i in range(iters):
        args = input_sets[i % len(input_sets)]
        for name, fn in fns.items():
            start, end = events[name][i]
            start.record()
            fn(*args)
            end.record()
    torch.cuda.synchronize()
    return {name: statistics.median(s.elapsed_time(e) for s, e in ev) for name, ev in events.items()}


def tflops(m, n, k, ms) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def time_blocks(fns: dict, input_sets, blocks=3, per_block=10, warmup=5) -> dict:
    """Median milliseconds of each fn(*inputs), timed alone: after `warmup` runs of each,
    `blocks` rounds in which each fn runs `per_block` times in a row (its own block, each
    run between two CUDA events), the fns' blocks alternating round by round, so that each
    runs as it would alone and a clock that drifts over the rounds weighs on all alike.
    Inputs cycle through input_sets run by run. A fn's time includes its own launch cost
    when the GPU outruns the host (small problems), as a user's timing would."""
    import torch
    for fn in fns.values():
        for i in range(warmup):
            fn(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    events = {name: [] for name in fns}
    for _ in range(blocks):
        for name, fn in fns.items():
            for i in range(per_block):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                args = input_sets[i % len(input_sets)]
                start.record()
                fn(*args)
                end.record()
                events[name].append((start, end))
    torch.cuda.synchronize()
    return {name: statistics.median(s.elapsed_time(e) for s, e in ev) for name, ev in events.items()}


def back_to_back_us(fn, calls=30, warmup=10) -> float:
    """Microseconds per call of fn(i), i = 0 .. calls-1, run back to back between one pair of CUDA
    events after `warmup` calls: the device's time per call when the host keeps ahead of it."""
    import torch
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(calls):
        fn(i)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls
