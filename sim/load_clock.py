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
The fall's time varies from one pass of the microbenchmark to the next (`down_ms_passes`, e.g.
46 and 73 ms): where the median run starts inside that spread, the prediction is at the
clock expected over it, the early clock weighted by the share of the spread that falls after
the median run's start (taken as even between the passes), so that a row near the
fall is predicted between its two outcomes rather than at one of them.

A kernel too light for the limit to bind at the early clock (a grid of a few SMs, a port-bound
tile: its own activity under the profile's clock form there, sim/clock.py) is not pulled down to
it: it runs at the clock its activity earns, up to the top WGMMA clock.

The profile's `load_clock` holds {dtype: {early_ghz, settled_ghz, down_ms[, down_ms_passes]}}; other kernels
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
    if not _limit_binds(early, prof):
        # a kernel too light for the limit to hold at the early clock (a grid of a few SMs, a
        # port-bound tile) is not pulled down to it: it runs at the clock its activity earns
        p = _earned_above(predict_at_profile, schedule, m, n, k, prof, options, early)
        p.notes.append(f"clock {p.clock_ghz:.3f} GHz: the power limit does not bind at the early clock "
                       f"({entry['early_ghz']:.3f} GHz), so the clock this schedule's activity earns under "
                       "it (sim/load_clock.py, sim/clock.py's form)")
        return p
    before = sum(1 for c in runs if c * early.timed_ms < entry["down_ms"])
    share = early_share(sorted(runs)[len(runs) // 2] * early.timed_ms, entry)
    if share == 1.0 or (share is None and 2 * before > len(runs)):
        p = early
    else:
        ghz = entry["settled_ghz"] if share is None else share * entry["early_ghz"] + (1 - share) * entry["settled_ghz"]
        p = predict_at_profile(schedule, m, n, k, dataclasses.replace(prof, clock_ghz=ghz), **options)
    p.notes.append(f"clock {p.clock_ghz:.3f} GHz: {before} of the timing's {len(runs)} runs start before the "
                   f"power limit's fall at {entry['down_ms']:.0f} ms of load ({early.timed_ms:.3f} ms a call at "
                   f"{entry['early_ghz']:.3f} GHz; sim/load_clock.py)")
    return p


def _limit_binds(p, prof) -> bool:
    """Whether prediction `p`'s own activity is over the profile's clock form at its clock
    (sim/clock.py); True where the profile has no form."""
    from .clock import prediction_over_limit
    return prof.clock_form_coef is None or prediction_over_limit(p, prof)


def _earned_above(predict_at_profile, schedule, m, n, k, prof, options: dict, low, steps: int = 6):
    """The prediction at the highest clock, from `low`'s (a prediction under the limit) up to the
    profile's top WGMMA clock, at which the schedule's own activity stays under the limit
    (bisection, `steps` halvings: ~4 MHz on the H200)."""
    from .clock import highest_clock_under_limit
    hi = prof.wgmma_clock_top_ghz if options.get("mmas", True) else prof.clock_max_ghz

    def at(f):
        return predict_at_profile(schedule, m, n, k, dataclasses.replace(prof, clock_ghz=f), **options)
    return highest_clock_under_limit(at, prof, low.clock_ghz, hi, steps, below=low)


def early_share(median_start_ms: float, entry: dict) -> float | None:
    """The share of the fall's measured spread (entry's `down_ms_passes`) that comes after the
    median run's start: 1 before the earliest pass's fall, 0 after the latest, even between;
    None where the entry has one figure (the majority rule of predict_under_load decides)."""
    passes = entry.get("down_ms_passes")
    if not passes or min(passes) == max(passes):
        return None
    lo, hi = min(passes), max(passes)
    return min(1.0, max(0.0, (hi - median_start_ms) / (hi - lo)))
