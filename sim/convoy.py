"""Whether a schedule's CTAs keep their L2 sharing, and the HBM bytes when they do not.

`engines.memory_traffic` counts each panel once per wave: it assumes the CTAs that share a
panel read each K slice close together. In the column raster an A panel's sharers are a
column of tiles apart in launch order (64 CTAs at 8192 with 128-row tiles), so they stay
close only while something pulls them together. That something is the miss: the CTA that
reads a K slice first fetches it from HBM, and if its ring cannot hide the extra latency
it stalls while its sharers, hitting the line it fetched, catch up. V1 (no prefetch) and
the shallow rings are held in this convoy; a ring deep enough, at its step period, to hide
a miss's extra latency is not, its CTAs run freely, drift apart past what L2 holds, and
both sharers miss (the HBM bytes of the column- and row-raster GEMMs,
experiments/results/h200-sxm/dram_reuse.csv).

  hidden_latency_ns  the extra load latency a schedule's ring hides (one-SM simulation,
                     all hits): the latency slack of its prefetch.
  held_in_convoy     a miss's extra latency (hbm_latency_ns - tma_latency_ns) would slow
                     the schedule's K step (by more than SLOWED): the leader pays, the convoy holds.
  free_running_bytes the HBM read bytes of a grid of free-running CTAs: a few fast SMs and
                     each CTA's own spread (the profile's free_running_* fields, measured
                     on rings run freely, where no reuse is lost), placed by the block
                     scheduler (l2cache.scheduled_timeline) and replayed through the LRU L2.
  reuse              what predict() uses (its default): the per-wave estimate when held,
                     else the free-running replay; for GEMMs and load-only loops alike.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from gemm.schedule import Schedule

from .engines import grid, memory_traffic, waves
from .hardware import GpuProfile
from .l2cache import replay, scheduled_timeline
from .schedules import simulate_sm

SLOWED = 0.03          # a K step this much longer counts as paying for the miss
REPLAY_SLICES = 8      # block_k slices per cached L2 block in the replay (1 and 8 agree within 0.1%)
SEED = 0


def _period_clk(s: Schedule, prof: GpuProfile, ctas: int, extra_ns: float, mmas: bool = True) -> float:
    """Steady-state K step (SM clocks) of `ctas` CTAs on one SM, all loads L2 hits that
    arrive `extra_ns` later than a hit does (`mmas=False`: the load-only loop)."""
    p = dataclasses.replace(prof, tma_latency_ns=prof.tma_latency_ns + extra_ns)
    r = simulate_sm(s, p, ctas, 128, 0.0, active_sms=prof.sm_count, mmas=mmas)
    return r["per_iter_clk"] or r["clk"] / 128


def miss_extra_ns(prof: GpuProfile) -> float:
    """What a box missing L2 waits beyond a hit (the profile's latencies)."""
    return prof.hbm_latency_ns - prof.tma_latency_ns


def held_in_convoy(s: Schedule, prof: GpuProfile, ctas: int, mmas: bool = True) -> bool:
    """True when a miss's extra latency lengthens the schedule's K step by more than SLOWED."""
    return (_period_clk(s, prof, ctas, miss_extra_ns(prof), mmas)
            > (1 + SLOWED) * _period_clk(s, prof, ctas, 0.0, mmas))


def hidden_latency_ns(s: Schedule, prof: GpuProfile, ctas: int, top_ns: float = 4000.0) -> float:
    """The largest extra latency (ns, bisection to ~1 ns) that lengthens the K step by at most
    SLOWED: how much a miss the ring hides. `top_ns` when it hides even that."""
    base = _period_clk(s, prof, ctas, 0.0)
    if _period_clk(s, prof, ctas, top_ns) <= (1 + SLOWED) * base:
        return top_ns
    lo, hi = 0.0, top_ns
    while hi - lo > 1.0:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _period_clk(s, prof, ctas, mid) > (1 + SLOWED) * base else (mid, hi)
    return (lo + hi) / 2


def free_running_sm_factor(prof: GpuProfile) -> np.ndarray:
    """Per SM id, the factor on a free-running CTA's duration: free_running_fast_sm_factor on
    the profile's free_running_fast_sms SMs (spread evenly over the dispatch order: which ids
    they are does not move the replayed bytes), 1 on the others."""
    order = list(prof.sm_dispatch_order or range(prof.sm_count))
    factor = np.ones(prof.sm_count)
    fast = prof.free_running_fast_sms
    factor[[order[(i * prof.sm_count) // fast] for i in range(fast)]] = prof.free_running_fast_sm_factor
    return factor


def free_running_bytes(s: Schedule, m: int, n: int, k: int, prof: GpuProfile, ctas: int,
                       cv: float | None = None, seed: int = SEED, mmas: bool = True) -> int:
    """HBM read bytes (A and B) of the grid when each CTA runs for the one-SM simulation's CTA
    time times 1 + cv x a standard normal draw (independent per CTA), times its SM's
    free_running_sm_factor, the block scheduler placing them and the LRU L2 of l2_lru_bytes
    keeping what it can."""
    cv = prof.free_running_cta_cv if cv is None else cv
    # every time in the replay is a multiple of the CTA's mean duration, and the LRU sees only
    # their order: the bytes do not depend on it (nor on `mmas`), so the unit duration stands in
    key = (s.block_m, s.block_n, s.block_k, s.raster, s.raster_group, m, n, k, ctas, cv, seed,
           prof.sm_count, prof.sm_dispatch_order, prof.free_running_fast_sms, prof.free_running_fast_sm_factor,
           prof.l2_lru_bytes or prof.l2_bytes)
    if key not in _REPLAYS:
        tm, tn = grid(s, m, n)
        durations = 1.0 + cv * np.random.default_rng(seed).standard_normal(tm * tn)
        starts, durations, _ = scheduled_timeline(np.maximum(durations, 0.1), ctas, prof.sm_count,
                                                  prof.sm_dispatch_order, sm_factor=free_running_sm_factor(prof))
        slices = REPLAY_SLICES if math.ceil(k / s.block_k) >= 4 * REPLAY_SLICES else 1
        _REPLAYS[key] = replay(s, m, n, k, starts, durations, prof.l2_lru_bytes or prof.l2_bytes,
                               slices_per_step=slices)["hbm_read_bytes"]
    return _REPLAYS[key]


_REPLAYS: dict = {}


def reuse(s: Schedule, m: int, n: int, k: int, prof: GpuProfile, ctas: int, mmas: bool = True) -> dict:
    """{held, hbm_read_bytes, per_wave_bytes, miss_extra_ns, note}: the HBM read bytes predict()
    uses and why (`mmas=False`: the load-only loop). Cached on the schedule, the shape, the
    residency, `mmas` and every profile field."""
    key = (s, m, n, k, ctas, mmas, repr(prof))
    if key not in _CACHE:
        tm, tn = grid(s, m, n)
        per_wave = memory_traffic(s, m, n, k, waves(tm * tn, prof.sm_count, ctas)["per_wave"])["hbm_read_bytes"]
        extra = miss_extra_ns(prof)
        if held_in_convoy(s, prof, ctas, mmas):
            out = {"held": True, "hbm_read_bytes": per_wave,
                   "note": f"held in convoy (sim/convoy.py): a miss's extra {extra:.0f} ns lengthens the K "
                           f"step, so the CTA that reads a slice first waits and its sharers catch up; HBM "
                           f"bytes: each panel once per wave"}
        else:
            b = free_running_bytes(s, m, n, k, prof, ctas, mmas=mmas)
            out = {"held": False, "hbm_read_bytes": b,
                   "note": f"free-running CTAs (sim/convoy.py): the ring hides a miss's extra {extra:.0f} ns, "
                           f"nothing holds a panel's sharers together; HBM read bytes {b / 1e9:.2f} GB from CTA "
                           f"durations {prof.free_running_fast_sm_factor:.3f}x on {prof.free_running_fast_sms} "
                           f"fast SMs and spread by {100 * prof.free_running_cta_cv:.1f}% (CV), scheduled and "
                           f"replayed through L2 (per-wave sharing: {per_wave / 1e9:.2f} GB)"}
        _CACHE[key] = {**out, "per_wave_bytes": per_wave, "miss_extra_ns": extra}
    return dict(_CACHE[key])


_CACHE: dict = {}
