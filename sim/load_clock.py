"""The clock a timing sees as its load goes on: `predict(.., clock="load")`.

From a rested GPU the V6-V7 kernel (a producer warpgroup: gemm/kernels/persistent.py)
counts an early clock launch after launch for some tens of milliseconds, then the 700 W
limit pulls it down within a few launches to a settled clock, where it stays (the
clock-transient microbenchmark; the figures are the profile's). A timing that runs calls back to back, as the protocol does
(experiments.timing.time_blocks: each contender's warm-up, then rounds of blocks), sees the
early clock in the runs that start before that point and the settled clock after it. Each
timed run starts some number of calls into the load (`calls_before_runs`), each call about the
time the events measure for it; the protocol reports the median run, so the prediction is the
early clock's when more than half the runs start before `down_ms`, else the settled clock's.

The profile's `load_clock` holds {dtype: {early_ghz, settled_ghz, down_ms}}; other kernels
(the one-producer-warp and ring families) and dtypes it has no entry for keep the profile's
one clock. Each row is taken to start its load from a rested GPU (what the bench's
correctness check before it gives, in part: a long row before a short one is not modelled).
"""
from __future__ import annotations

import dataclasses


def calls_before_runs(contenders: int, blocks: int = 10, per_block: int = 3, warmup: int = 5) -> tuple:
    """For each timed run of the first contender in experiments.timing.time_blocks, the calls
    the GPU ran before it: every contender's `warmup` runs, then rounds in which each
    contender runs a block of `per_block`, the order turning each round (the first
    contender's block first in round 0, last in round 1, ...)."""
    start = contenders * warmup
    return tuple(start + r * contenders * per_block + ((-r) % contenders) * per_block + i
                 for r in range(blocks) for i in range(per_block))


def warpgroup_producer(schedule) -> bool:
    """Whether the schedule runs on the V6-V7 kernel (a producer warpgroup), whose clock the
    profile's load_clock holds."""
    return schedule.family == "specialized" and schedule.producer_warps == 4


def predict_under_load(predict_at_profile, schedule, m, n, k, prof, options: dict, load_calls=None):
    """sim.predict(clock="load"): the prediction at the clock of the protocol's median run
    (module docstring). `predict_at_profile(schedule, m, n, k, profile, **options)`;
    `load_calls`: calls before each timed run (default: calls_before_runs(3), ours, torch and
    cupy)."""
    entry = (prof.load_clock or {}).get(options.get("dtype", "float16"))
    if entry is None or not warpgroup_producer(schedule):
        return predict_at_profile(schedule, m, n, k, prof, **options)
    runs = calls_before_runs(3) if load_calls is None else tuple(load_calls)
    early = predict_at_profile(schedule, m, n, k, dataclasses.replace(prof, clock_ghz=entry["early_ghz"]),
                               **options)
    before = sum(1 for c in runs if c * early.timed_ms < entry["down_ms"])
    if 2 * before > len(runs):
        p = early
    else:
        p = predict_at_profile(schedule, m, n, k, dataclasses.replace(prof, clock_ghz=entry["settled_ghz"]),
                               **options)
    p.notes.append(f"clock {p.clock_ghz:.3f} GHz: {before} of the timing's {len(runs)} runs start before the "
                   f"power limit's fall at {entry['down_ms']:.0f} ms of load ({early.timed_ms:.3f} ms a call at "
                   f"{entry['early_ghz']:.3f} GHz; sim/load_clock.py)")
    return p
