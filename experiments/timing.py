"""The timing protocol of docs/design.md, in one place: CUDA events, warm-up, about 30
timed runs, the median; inputs rotated among buffer sets so that L2 does not hold
them between runs; rivals timed in the same process, interleaved in rounds so
that a clock that sags under sustained load weighs on each of them alike."""
from __future__ import annotations

import statistics

from gemm.dispatch.autotune import HOLD_MARGIN, HOLD_MAX_US
from gemm.hold import CYCLES_PER_US as HOLD_CYCLES_PER_US


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


def time_blocks(fns: dict, input_sets, blocks=10, per_block=3, warmup=5, host_us: dict | None = None,
                trace: dict | None = None) -> dict:
    """Median milliseconds of each fn(*inputs), timed alone: after `warmup` runs of each,
    `blocks` rounds in which each fn runs `per_block` times in a row (its own block, each
    run between two CUDA events), the fns' blocks alternating round by round, so that each
    runs as it would alone and a clock that drifts over the rounds weighs on all alike; the
    order turns each round (ABC, BCA, CAB, ...), so that no contender always runs first. Short
    blocks in many rounds: when the clock falls partway through the timing (the power limit,
    sim/load_clock.py), every contender's median run sits at about the same point of the load
    (with 3 rounds of 10 the medians sat 10-20 calls apart and the ratios moved by +-10%).
    Inputs cycle through input_sets run by run. A fn's time includes its own launch cost
    when the GPU outruns the host (small problems), as a user's timing would. `host_us`, when
    given, receives each fn's median host time from one run of a block to the next (the pace
    its runs reached the GPU at, which sim.call.event_ms weighs against the kernel's time).
    `trace`, when given, receives each fn's runs in the order they ran, each a dict of host and
    GPU times in microseconds since an anchor event recorded on the idle GPU before the first
    block: `host_start` (before the start event's record), `host_called` (the call returned),
    `host_end` (after the end event's record), `gpu_start` and `gpu_end` (the events). The
    anchor, the first record after a synchronisation, reaches the GPU later than the records
    after it, so compare a run's GPU times with each other and its host times with each other
    (experiments.research.event_protocol --trace)."""
    import time

    import torch
    for fn in fns.values():
        for i in range(warmup):
            fn(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    events = {name: [] for name in fns}
    paces = {name: [] for name in fns}
    marks = None
    if trace is not None:
        marks = {name: [] for name in fns}
        anchor = torch.cuda.Event(enable_timing=True)
        anchor_ns = time.perf_counter_ns()
        anchor.record()
    names = list(fns)
    for r in range(blocks):
        # the order turns round by round: a clock that falls at one point of the load would
        # otherwise favour whichever contender always runs first in its round
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = fns[name]
            last = None
            for i in range(per_block):
                now = time.perf_counter()
                if last is not None:
                    paces[name].append(now - last)
                last = now
                events[name].append(_event_timed_run(fn, input_sets[i % len(input_sets)],
                                                     None if marks is None else marks[name]))
    torch.cuda.synchronize()
    if trace is not None:
        trace.update({name: _traced_runs(anchor, anchor_ns, events[name], marks[name]) for name in fns})
    if host_us is not None:
        host_us.update({name: statistics.median(p) * 1e6 for name, p in paces.items() if p})
    return {name: statistics.median(s.elapsed_time(e) for s, e in ev) for name, ev in events.items()}


def _event_timed_run(fn, args, marks: list | None = None):
    """One timed run of time_blocks: two CUDA events made and recorded around the call, no
    synchronisation. Returns the events; `marks` (tracing) receives the host's clock (ns)
    before the start event's record, after the call and after the end event's record."""
    import time

    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if marks is None:
        start.record()
        fn(*args)
        end.record()
        return start, end
    t0 = time.perf_counter_ns()
    start.record()
    fn(*args)
    t1 = time.perf_counter_ns()
    end.record()
    marks.append((t0, t1, time.perf_counter_ns()))
    return start, end


def _traced_runs(anchor, anchor_ns: int, events: list, marks: list) -> list[dict]:
    """time_blocks' trace of one fn: its runs' host and GPU times in us since the anchor."""
    out = []
    for (start, end), (t0, t1, t2) in zip(events, marks):
        out.append({"host_start": (t0 - anchor_ns) / 1e3, "host_called": (t1 - anchor_ns) / 1e3,
                    "host_end": (t2 - anchor_ns) / 1e3, "gpu_start": anchor.elapsed_time(start) * 1e3,
                    "gpu_end": anchor.elapsed_time(end) * 1e3})
    return out


def host_probe(fn, args, calls=1000, rivals: dict | None = None) -> dict:
    """The host as the protocol's events see it, in microseconds, measured with `fn(*args)` a
    call whose kernel is far shorter than its host work (gemm.matmul at 64^3), timed as a
    suite row's runs are: time_blocks with `rivals` (torch.matmul and cupy.matmul on the same
    operands), so that the host runs the same loop, with its contenders' code in turn:
      floor_us  the median time between the two events of the probe's runs: the host's work
                from one record to the other, when the GPU waits on the host;
      pace_us   the host's time from one of the probe's runs to the next within a block: how
                often a call reaches a GPU that is faster than the host;
      call_us   one call, calls back to back on the host's wall clock with one synchronisation
                at the end: the host's work before the kernel starts, in a tight loop;
      called_us the host's time from the start event's record to the call's return in the
                probe's runs (time_blocks' trace): the call as the row's loop runs it, within
                which a kernel that finds the GPU idle starts (the profile's kernel_start_share).
    sim.call.event_ms turns them and a predicted device time into what the events measure.
    The probe runs in a row's loop rather than alone because a tight loop of one call runs
    faster on the host than a loop whose contenders take turns (a row's ours_run_us column)."""
    import time

    import torch
    paces: dict = {}
    trace: dict = {}
    floor_ms = time_blocks({"probe": fn, **(rivals or {})}, [args], warmup=20, host_us=paces, trace=trace)["probe"]
    called_us = statistics.median(r["host_called"] - r["host_start"] for r in trace["probe"])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    call_s = (time.perf_counter() - t0) / calls
    torch.cuda.synchronize()
    return {"call_us": round(call_s * 1e6, 2), "floor_us": round(floor_ms * 1e3, 2),
            "pace_us": round(paces["probe"], 2), "called_us": round(called_us, 2)}


# back_to_back_us holds the GPU while the host queues the calls: a one-thread spin kernel ahead of
# the start event, HOLD_MARGIN times as long as the warm-up says queueing them takes. Without it a
# call shorter than the host's time to make it (the small products) is timed at the host's pace,
# and every block counts the host's way to its first launch (~10 us) as the device's. The hold's
# figures are gemm.autotune's, which times its candidates the same way on the package's streams.


def back_to_back_us(fn, calls=30, warmup=10) -> float:
    """Microseconds per call of fn(i), i = 0 .. calls-1, run back to back between one pair of CUDA
    events after `warmup` calls: the device's time per call with the host ahead of it (the GPU
    held until the calls are queued, when a warm-up measured how long queueing takes)."""
    import time

    import torch
    host_s = []
    for i in range(warmup):
        t0 = time.perf_counter()
        fn(i)
        host_s.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if host_s:
        hold_us = min(HOLD_MARGIN * calls * statistics.median(host_s) * 1e6, HOLD_MAX_US)
        torch.cuda._sleep(int(hold_us * HOLD_CYCLES_PER_US))
    start.record()
    for i in range(calls):
        fn(i)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def back_to_back_rounds(fns: dict, input_sets, rounds=3, calls=20, warmup=3) -> dict:
    """Microseconds per call of each fn(*inputs) run back to back (back_to_back_us: `calls`
    calls between one event pair, after `warmup`), in `rounds` rounds whose order turns as
    time_blocks' does; the median over the rounds. Schedules timed one after another without
    rest would otherwise meet a clock that sags under the load: a 4096^3 kernel measured 7%
    slower back to back late in a sweep's shape than from a rested GPU."""
    names = list(fns)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = fns[name]
            times[name].append(back_to_back_us(lambda j: fn(*input_sets[j % len(input_sets)]), calls, warmup))
    return {name: statistics.median(v) for name, v in times.items()}

