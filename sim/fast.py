"""The fast path: the one-SM simulation replaced by its steady state in closed form.

`fast_predict(...)` is `predict(...)` with two changes: the SM's time comes from `steady_sm`
below instead of the SimPy processes, and the HBM bytes are the core's per-wave figure (no
grid replay). Everything else (occupancy, the grid, the bytes, the floors, the call) is the
same code. It is what `sim.rank` uses: about a millisecond a candidate.

`steady_sm` takes the same engine costs as the SimPy model (engines.box_clk, wgmma_clk, the
profile's latencies and barrier costs) and puts each warp role's K loop in steady state: one
K iteration of a CTA takes the longest of
  its own chain   the steps its loop runs one after another (for V1 the load's latency and
                  transfer too; for a ring or a specialized kernel the MMA, its wait, the
                  barriers and arrivals);
  the ring        a stage goes round once per `depth` iterations (stages - groups kept in
                  flight; V1: 1): release, the producer's wait and issue, the latency and the
                  transfer, the consumer's wait; a cluster adds the partners' remote arrival;
  the SM's share  c CTAs' WGMMA groups on one set of tensor cores, their boxes on one port
                  (and HBM share), the zeros of their rows outside the matrix on one TMA unit;
then the CTA's start, its first loads, its epilogue (a persistent CTA pays per tile only
what the consumers do while the producer already loads the next tile) are added once.
What it leaves out: queueing between the roles when two limits are close (the SimPy model
loses a few percent there), and the convoy replay's lost reuse.
"""
from __future__ import annotations

from gemm.schedule import WGMMA_K, Schedule

from .engines import (Trace, box_clk, multicast_port_share, split_lead_wait_ns, split_unit_ns, staged_epilogue_clk,
                      tma_store_bytes_per_clk, wgmma_clk, zero_fill_clk)
from .hardware import GpuProfile, load_profile
from .schedules import CtaWork, boxes, oob_rows


def steady_sm(s: Schedule, gpu: GpuProfile, ctas: int, k_iters: int, miss_rate: float,
              trace: bool = False, sim_iters: int = 48, active_sms: int | None = None,
              loads: bool = True, mmas: bool = True, work: CtaWork | None = None) -> dict:
    """simulate_sm's result (clocks for `ctas` CTAs side by side on one SM doing `work`) from the
    steady state of the K loop; same signature, `trace` and `sim_iters` unused."""
    work = work or CtaWork(k_iters)
    g, c, cw = gpu, ctas, s.consumer_warpgroups
    a_bytes, b_bytes, a_req, b_req = boxes(s, work)
    a_oob, b_oob = oob_rows(s, work)
    charge = g.l2_miss_charge(active_sms)
    hbm_rate = g.hbm_bytes_per_clk_per_sm(active_sms)
    lat = g.ns_to_clk(g.tma_latency_ns + miss_rate * (g.hbm_latency_ns - g.tma_latency_ns))
    pa, ha = box_clk(g, a_bytes, a_req, multicast_port_share(g, s.cluster_n), miss_rate, active_sms, charge, hbm_rate,
                     hbm_share=1.0 / s.cluster_n)
    pb, hb = box_clk(g, b_bytes, b_req, multicast_port_share(g, s.cluster_m), miss_rate, active_sms, charge, hbm_rate,
                     hbm_share=1.0 / s.cluster_m)
    mem = (max(pa, ha) + max(pb, hb)) if loads else 0.0       # a K tile's boxes, one after the other
    fill = zero_fill_clk(g, a_oob + b_oob) if loads else 0.0  # their zeros, beside the transfers
    group = g.wgmma_fill_clk + (s.block_k // WGMMA_K) * s.wgmmas_per_k_step * wgmma_clk(g, s.wgmma_n)
    group = group if mmas else 0.0
    tail = g.wgmma_tail(s.wgmma_n) if mmas else 0.0
    issue_load = g.mbarrier_arrive_clk + 2 * g.tma_issue_clk
    issue_mma = g.wgmma_fence_commit_clk + g.wgmma_issue_clk if mmas else 0.0
    wait_mma = g.wgmma_wait_clk if mmas else 0.0
    index = (g.runtime_index_clk + (g.phase_local_clk if s.phase_storage == "local" else 0)
             if s.runtime_stage_index and s.stages > 1 else 0.0)
    try_wait, arrive, bar = g.mbarrier_wait_clk, g.mbarrier_arrive_clk, g.bar_sync_clk
    load_trip = issue_load + max(lat + mem, fill)            # from the issue to the data in shared memory

    if s.family == "serial":
        chain = index + load_trip + try_wait + bar * s.syncs_per_iter + issue_mma + group + tail + wait_mma
        depth_bound = 0.0
    elif s.family == "ring":
        head = index + try_wait + bar + issue_mma + group + tail + wait_mma   # to the refill's issue
        chain = head + issue_load + bar * (s.syncs_per_iter - 1)
        depth_bound = (head + load_trip + try_wait) / s.stages
    else:
        keep = s.wgmma_in_flight   # the load-free loop keeps its groups in flight too
        own = index + try_wait + bar * s.syncs_per_iter + issue_mma + wait_mma + arrive
        # a K tile's own consumer time with the loads on: in the chain with W = 0; with W >= 1 it
        # runs while the group kept in flight keeps the tensor cores busy
        loop = g.consumer_k_tile_clk if loads and mmas else 0.0
        # one warpgroup's iteration: its overheads, its group and (W = 0) the group's tail, while
        # the other warpgroups' groups keep the tensor cores busy; with W >= 1 the tail overlaps
        chain = max(own + group + (tail + loop if keep == 0 else 0.0), own + loop, cw * group)
        remote = g.cluster_arrive_clk if s.multicast_size > 1 else 0.0
        refill = arrive + remote + try_wait + index + load_trip + try_wait     # a release to the data's use
        # a stage comes back once every warpgroup's group on it is done (all the consumers'
        # groups run one after another on the tensor cores) ...
        depth_bound = (refill + issue_mma + cw * group + tail + wait_mma) / s.stages
        if keep:   # ... or, starved of data, once the group `keep` iterations later is issued
            depth_bound = max(depth_bound, (refill + issue_mma + wait_mma) / (s.stages - keep))
    period = max(chain, depth_bound, c * cw * group, c * mem, c * fill)

    part = s.rows_per_warpgroup * s.block_n * work.out_bytes
    partial = split_unit_ns(s, g)
    if partial is not None:   # split-K: the fp32 partial out, every slice in, this CTA's share summed
        epilogue = g.ns_to_clk(sum(partial)) + bar
        if s.split_lead:   # the others' partials arrive during the lead's K tiles, or after
            epilogue += g.ns_to_clk(split_lead_wait_ns(s, g, s.split_lead * period / g.clock_ghz))
        if work.tiles > 1:
            # the next unit's first loads, issued as this unit's last K tiles freed their stages,
            # land meanwhile: up to one load's trip of it is hidden
            epilogue -= min(epilogue, load_trip)
        drain = 0.0
    elif s.stores_via_tma:
        store_rate = tma_store_bytes_per_clk(g)
        epilogue = staged_epilogue_clk(s, g, part)
        drain = c * cw * part / store_rate                    # the last store leaves the SM
    else:
        epilogue = part / g.store_bytes_per_clk              # each warpgroup's stores at the store rate
        drain = 0.0
    start = g.cta_launch_clk + (c - 1) * bar + load_trip
    clk = start + work.tiles * (k_iters * period + tail + wait_mma + epilogue) + drain
    return {"clk": clk, "sim_clk": clk, "per_iter_clk": period, "simulated_iters": 0, "tile_period_clk": 0.0,
            "busy": {}, "trace": Trace(), "cta0_clk": clk, "tma_latency_clk": lat}


def fast_predict(schedule: Schedule, m: int = 8192, n: int = 8192, k: int = 8192,
                 gpu: str | GpuProfile = "h200-sxm", dtype: str = "float16", batch: int = 1,
                 host_us: float | None = None, registers: int | None = None, clock: str = "profile",
                 load_calls: tuple | None = None, line_pitch: tuple[int, int] | None = None):
    """predict() with the steady-state SM (steady_sm) and the per-wave HBM bytes; `clock`,
    `load_calls` and `line_pitch` as predict's ("earned": bisection on the clock, each step this fast path)."""
    from .model import _predict
    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    options = dict(dtype=dtype, trace=False, sim_iters=48, notes=None, loads=True, mmas=True, ctas_per_sm=None,
                   hbm_read_bytes=None, hbm_read_source="", reuse="per-wave", batch=batch, host_us=host_us,
                   registers=registers, line_pitch=line_pitch)
    if clock == "earned":
        from .clock import predict_at_earned_clock
        return predict_at_earned_clock(lambda *a, **o: _predict(*a, **o, sm_model=steady_sm), schedule, m, n, k,
                                       prof, options)
    if clock == "load":
        from .load_clock import predict_under_load
        return predict_under_load(lambda *a, **o: _predict(*a, **o, sm_model=steady_sm), schedule, m, n, k, prof,
                                  options, load_calls)
    return _predict(schedule, m, n, k, prof, **options, sm_model=steady_sm)
