"""The whole grid's timeline, one event per CTA per K step, through an L2 of finite size.

The one-SM simulation (schedules.simulate_sm) gives how fast one SM's CTAs step through K;
`engines.memory_traffic` assumes the CTAs that share an A or B panel read each K slice close
together, so each panel comes from HBM once per wave. That holds only while the sharers keep
together. This module runs every CTA of the grid on the SM it would occupy and lets them
drift:

  * each SM steps at its own rate: the L2 -> SM feed differs by SM (a fixed map of the
    hardware, measured by the load-only loop: `GpuProfile.l2_feed_by_sm`); an SM's period
    per K step comes from the one-SM simulation with its port scaled by that factor, so a
    kernel inherits the map in proportion to how much of its step waits on the feed;
  * a step's loads are issued when the ring slot they go to frees (stage j + S at the end
    of step j's MMA; S = stages - wgmma_in_flight, 1 for V1) and look the L2 up then: a hit
    is ready after `tma_latency_ns`, a miss after `hbm_latency_ns` behind one GPU-wide HBM
    queue, a line still being filled when the fill lands; then the SM's port transfer;
  * a step starts when its data is there and the previous step is done; the prefetch depth
    decides how much of a miss's extra latency a CTA pays. Where it pays (V1, a shallow ring
    at high residency) the CTA that reads a slice first is slowed and its sharers catch up:
    the convoy holds. Where the ring hides it, nothing pulls a fast SM's CTAs back, they run
    ahead of their sharers until L2 no longer holds the lines between them, and both miss;
  * a finished CTA's slot takes the next CTA in launch order (the block scheduler);
    its C tile is written into L2 (write-back: it holds capacity).

The L2 is l2cache.LruL2 of the measured `l2_lru_bytes`, with fill times. A missed byte
costs `timeline_miss_port_factor` x its port time on the SM that missed it. What it leaves
out: the L2's two partitions and hashing, co-resident CTAs affecting one another beyond the
one-SM period and the shared port, any source of spread other than the feed map. Pure
Python, one heap: about 2 s for an 8192^3 grid.
"""
from __future__ import annotations

import dataclasses
import heapq
import math
import numpy as np

from gemm.schedule import INPUT_BYTES, Schedule

from .engines import grid, memory_traffic, residency, tile_order
from .hardware import GpuProfile, load_profile
from .l2cache import LruL2, PartitionedL2, wave_start_spreads
from .schedules import simulate_sm


def prefetch_depth(s: Schedule) -> int:
    """K steps a CTA's loads run ahead of its MMAs: the slot of step j is refilled (for step
    j + depth) when step j's WGMMA group is retired."""
    if s.family == "serial":
        return 1
    depth = s.stages - s.wgmma_in_flight
    return max(1, depth)


def _port_ns(s: Schedule, prof: GpuProfile, feed: float) -> float:
    """One K step's A and B boxes through an SM port `feed` times slower than the mean."""
    return feed * (s.k_iteration_bytes / prof.l2_sm_bytes_per_ns + s.k_iteration_requests * prof.l2_request_ns)


def step_periods(s: Schedule, prof: GpuProfile, ctas: int, feeds, k_iters: int = 128,
                 mmas: bool = True) -> np.ndarray:
    """Period per K step of one CTA (ns) on SMs whose port is `feed` x slower than the mean,
    from the one-SM simulation (all L2 hits; misses are the timeline's business). The
    simulation runs at a few feeds spanning the map and is interpolated between them."""
    feeds = np.asarray(feeds, float)
    lo, hi = float(feeds.min()), float(feeds.max())
    grid_f = np.unique(np.round(np.linspace(lo, hi, 4 if hi > lo else 1), 4))
    per = []
    for f in grid_f:
        p = dataclasses.replace(prof, l2_sm_bytes_per_ns=prof.l2_sm_bytes_per_ns / f,
                                l2_request_ns=prof.l2_request_ns * f)
        r = simulate_sm(s, p, ctas, k_iters, 0.0, active_sms=prof.sm_count, mmas=mmas)
        per.append((r["per_iter_clk"] or r["clk"] / k_iters) / prof.clock_ghz)
    return np.interp(feeds, grid_f, per)


class _AllHits:
    """The cache of the one-SM calibration: everything hits."""

    def __init__(self, hit_ns):
        self.hit_ns = hit_ns

    def read(self, tag, nbytes, t, side=0):
        return t + self.hit_ns, 0

    def insert(self, tag, nbytes, fill):
        pass


_START, _ARRIVE, _STEP = 0, 1, 2


def _simulate(placement, n_ctas, steps, depth, rows, cols, port_ns, busy_ns, tail_ns, cache,
              block_bytes, miss_port_factor, side_of_sm=None):
    """The event loop. `placement`: the SM of each of the first CTAs, in launch order (the
    first wave); later CTAs take the slot that frees first. Each SM's L2 -> SM port is one
    FIFO server (`port_ns[sm]` per K step, missed bytes x (1 + miss_port_factor)); the rest
    of a step (`busy_ns[sm]`: WGMMA, syncs, waits) runs on the CTA's own timeline.
    `block_bytes`: (A slice, B slice, C tile) bytes. Returns starts, ends and SMs of every
    CTA (numpy arrays; plain lists inside the loop, which runs once per event)."""
    a_bytes, b_bytes, c_bytes = block_bytes
    step_bytes = a_bytes + b_bytes
    side_of_sm = list(side_of_sm) if side_of_sm is not None else [0] * (max(placement) + 1)
    rows, cols = [int(r) for r in rows], [int(c) for c in cols]
    port_ns, busy_ns = [float(x) for x in port_ns], [float(x) for x in busy_ns]
    sm_of = [-1] * n_ctas
    start = [0.0] * n_ctas
    end = [0.0] * n_ctas
    ready = [[-1.0] * depth for _ in range(n_ctas)]  # data in shared memory, per ring slot
    last_end = [0.0] * n_ctas                        # when the CTA's previous step ended
    waiting = [False] * n_ctas                       # its next step waits on its data
    next_step = [0] * n_ctas
    port_free = [0.0] * (max(placement) + 1)
    heap: list = []
    push, pop, read = heapq.heappush, heapq.heappop, cache.read
    seq = 0

    def issue(cta, j, t):
        # the step's A and B blocks are looked up now; its data reaches the SM's port when
        # the later of the two is in L2 (event payload: step, fraction of its bytes missed)
        nonlocal seq
        side = side_of_sm[sm_of[cta]]
        ra, ma = read((0, rows[cta], j), a_bytes, t, side)
        rb, mb = read((1, cols[cta], j), b_bytes, t, side)
        ready[cta][j % depth] = -1.0
        push(heap, (ra if ra > rb else rb, seq, _ARRIVE, cta, j, (ma + mb) / step_bytes))
        seq += 1

    launched = min(n_ctas, len(placement))
    for cta in range(launched):
        push(heap, (0.0, seq, _START, cta, placement[cta], 0.0))
        seq += 1
    while heap:
        t, _, kind, cta, x, missed = pop(heap)
        if kind == _ARRIVE:  # the step's boxes are in L2: through the SM's port, FIFO
            sm = sm_of[cta]
            pf = (t if t > port_free[sm] else port_free[sm]) + port_ns[sm] * (1.0 + miss_port_factor * missed)
            port_free[sm] = pf
            ready[cta][x % depth] = pf
            if waiting[cta] and next_step[cta] == x:
                waiting[cta] = False
                le = last_end[cta]
                push(heap, ((pf if pf > le else le) + busy_ns[sm], seq, _STEP, cta, x, 0.0))
                seq += 1
            continue
        if kind == _START:
            sm_of[cta], start[cta], last_end[cta] = x, t, t
            for jj in range(min(depth, steps)):
                issue(cta, jj, t)
            waiting[cta] = True
            continue
        # _STEP: step x of `cta` ended at t
        sm = sm_of[cta]
        last_end[cta] = t
        if x + depth < steps:
            issue(cta, x + depth, t)
        if x + 1 < steps:
            nxt = x + 1
            next_step[cta] = nxt
            r = ready[cta][nxt % depth]
            if r >= 0:
                push(heap, ((r if r > t else t) + busy_ns[sm], seq, _STEP, cta, nxt, 0.0))
                seq += 1
            else:
                waiting[cta] = True
            continue
        end[cta] = t + tail_ns
        cache.insert((2, cta, 0), c_bytes, end[cta])  # the C tile takes L2 capacity (write-back)
        if launched < n_ctas:
            push(heap, (end[cta], seq, _START, launched, sm, 0.0))
            seq += 1
            launched += 1
    return np.array(start), np.array(end), np.array(sm_of)


def _busy_for_period(period, ctas, depth, port, lat, steps=64):
    """The per-step time off the port that makes `ctas` CTAs sharing one port (all L2 hits)
    step at `period` ns, as the one-SM simulation says they do (bisection; 0 when the port
    alone is slower than that)."""
    def sim_period(busy):
        zeros = np.zeros(ctas, np.int64)
        st, en, _ = _simulate([0] * ctas, ctas, steps, depth, zeros, zeros, [port], [busy], 0.0,
                              _AllHits(lat), (1, 1, 1), 0.0)
        return float(np.mean(en - st)) / steps
    lo, hi = 0.0, float(period)
    if sim_period(lo) >= period:
        return 0.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sim_period(mid) < period else (lo, mid)
    return 0.5 * (lo + hi)


def run(s: Schedule, m: int, n: int, k: int, gpu: str | GpuProfile = "h200-sxm",
        ctas_per_sm: int | None = None, feed_by_sm=None, dispatch_order=None,
        l2_bytes: int | None = None, miss_port_factor: float | None = None,
        mmas: bool = True, partitions: bool = False) -> dict:
    """Simulate the grid; returns the HBM read bytes of A and B, the kernel's span (ns,
    first start to last end) and every CTA's start, end (ns) and SM, in launch order.

    Defaults come from the profile: `feed_by_sm` (l2_feed_by_sm; None = every SM alike),
    `dispatch_order` (sm_dispatch_order: the SMs the first CTAs go to, in launch order),
    `l2_bytes` (l2_lru_bytes, else l2_bytes), `miss_port_factor` (timeline_miss_port_factor).
    `ctas_per_sm` overrides the occupancy (the microbenchmark kernels); `mmas=False` is the
    load-only loop; `partitions=True` models the physical L2 as its two partitions
    (l2cache.PartitionedL2, the profile's l2_side_by_sm) instead of one LRU of l2_lru_bytes."""
    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    c = ctas_per_sm or residency(s, prof)["ctas_per_sm"]
    n_sm = prof.sm_count
    feed = np.asarray(feed_by_sm if feed_by_sm is not None else (prof.l2_feed_by_sm or [1.0] * n_sm), float)
    order = list(dispatch_order if dispatch_order is not None else (prof.sm_dispatch_order or range(n_sm)))
    if feed.shape != (n_sm,) or sorted(order) != list(range(n_sm)):
        raise ValueError(f"feed_by_sm needs {n_sm} factors and dispatch_order a permutation of 0..{n_sm - 1}")
    mpf = prof.timeline_miss_port_factor if miss_port_factor is None else miss_port_factor

    tm, tn = grid(s, m, n)
    rows, cols = tile_order(s, tm, tn)
    steps = math.ceil(k / s.block_k)
    a_bytes = min(s.block_m, m) * s.block_k * INPUT_BYTES
    b_bytes = min(s.block_n, n) * s.block_k * INPUT_BYTES
    c_bytes = min(s.block_m, m) * min(s.block_n, n) * INPUT_BYTES
    depth = prefetch_depth(s)

    # each SM's port time per step, and the off-port time that gives the one-SM period
    levels = np.unique(np.round(feed, 3))
    period = step_periods(s, prof, c, levels, min(steps, 128), mmas)
    busy_at = {f: _busy_for_period(p, c, depth, _port_ns(s, prof, f), prof.tma_latency_ns)
               for f, p in zip(levels, period)}
    f_of_sm = np.round(feed, 3)
    port = np.array([_port_ns(s, prof, f) for f in f_of_sm])
    busy = np.array([busy_at[f] for f in f_of_sm])
    # CTA start-up and the direct epilogue (the C tile stored at the SM's store rate)
    tail_ns = (prof.cta_launch_clk + c_bytes / prof.store_bytes_per_clk) / prof.clock_ghz
    hbm_bpns = prof.hbm_tbs * 1e3 * prof.hbm_efficiency
    if partitions:  # two partitions of the physical L2, the measured side of every SM
        if prof.l2_side_by_sm is None:
            raise ValueError(f"partitions=True needs the profile's l2_side_by_sm ({prof.name} has none; "
                             "python -m experiments.research.l2_sides measures it)")
        cache = PartitionedL2(l2_bytes or prof.l2_bytes, prof.tma_latency_ns,
                              prof.tma_latency_ns + prof.l2_far_hit_extra_ns, prof.hbm_latency_ns, hbm_bpns)
        side_of_sm = prof.l2_side_by_sm
    else:
        cache = LruL2(l2_bytes or prof.l2_lru_bytes or prof.l2_bytes, prof.tma_latency_ns, prof.hbm_latency_ns,
                      hbm_bpns)
        side_of_sm = None
    placement = [sm for _ in range(c) for sm in order]
    start, end, sm_of = _simulate(placement, tm * tn, steps, depth, rows, cols, port, busy, tail_ns,
                                  cache, (a_bytes, b_bytes, c_bytes), mpf, side_of_sm)
    return {"hbm_read_bytes": int(cache.miss_bytes), "span_ns": float(end.max()), "starts_ns": start,
            "ends_ns": end, "sm": sm_of, "ctas_per_sm": c, "prefetch_depth": depth,
            "period_ns": period, "busy_ns": busy, "port_ns": port}


def summary(s: Schedule, m: int, n: int, k: int, gpu: str | GpuProfile = "h200-sxm") -> dict:
    """`run` reduced to what a report shows: the HBM read bytes against the per-wave
    estimate, the span as a throughput, how far the last full wave's starts spread."""
    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    r = run(s, m, n, k, prof)
    per_wave = prof.sm_count * r["ctas_per_sm"]
    spreads = wave_start_spreads(r["starts_ns"], min(per_wave, len(r["starts_ns"])))
    span_s = r["span_ns"] * 1e-9
    return {"hbm_read_bytes": r["hbm_read_bytes"],
            "per_wave_hbm_read_bytes": memory_traffic(s, m, n, k, per_wave)["hbm_read_bytes"],
            "span_ms": round(span_s * 1e3, 4), "tflops": round(2.0 * m * n * k / span_s / 1e12, 1),
            "last_wave_start_spread_us": round(float(spreads[-1]) / 1e3, 1),
            "prefetch_depth": r["prefetch_depth"], "ctas_per_sm": r["ctas_per_sm"],
            "feed_map": "measured per SM (profile)" if prof.l2_feed_by_sm else "every SM alike",
            "miss_port_factor": prof.timeline_miss_port_factor}
