"""predict(): one schedule, one GEMM shape, one GPU profile -> a Prediction.

What is symmetric is simulated once: one SM running one wave's CTAs (and, when the
grid does not fill its last wave, one SM of the tail wave), a window of steady-state
K iterations extrapolated to the full K; the grid is waves of those. Hard floors from
the tensor-core peak and the memory system are applied last, so no prediction can
exceed what the tensor cores or the memory can deliver.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from gemm.schedule import Schedule, ScheduleError

from . import convoy
from .engines import grid, memory_traffic, residency, waves
from .hardware import GpuProfile, load_profile
from .schedules import simulate_sm

DTYPES = ("float16", "bfloat16")


@dataclass
class Prediction:
    ms: float
    tflops: float
    pct_of_peak: float            # of the tensor peak at the model clock
    pct_of_datasheet_peak: float  # of the datasheet dense peak
    utilization: dict             # tensor, tma (L2->SM path), hbm: fractions of their peaks
    ctas_per_sm: int
    limited_by: str               # what caps CTAs per SM
    residency: dict
    waves: float                  # CTAs / (SMs x CTAs per SM)
    wave_info: dict
    bound: str
    reason: str
    breakdown: dict               # share of one CTA's time per activity (consumer / warpgroup 0)
    bytes: dict
    gpu: str
    clock_ghz: float
    schedule: dict
    shape: dict
    notes: list = field(default_factory=list)
    trace: object = field(default=None, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("trace")
        return d


_CATEGORY_NAMES = {
    "wgmma": "WGMMA on the tensor cores", "wgmma_wait": "waiting for WGMMA (wait_group)",
    "issue": "issuing WGMMA", "tma_wait": "waiting for TMA data", "sync": "block-wide syncs",
    "tma_issue": "issuing TMA", "index": "runtime stage indexing", "epilogue": "epilogue",
    "launch": "CTA launch", "empty_wait": "producer waiting for a free stage", "release": "releasing stages",
}


def predict(schedule: Schedule, m: int = 8192, n: int = 8192, k: int = 8192,
            gpu: str | GpuProfile = "h200-sxm", dtype: str = "float16",
            trace: bool = False, sim_iters: int = 48, notes: list | None = None,
            loads: bool = True, mmas: bool = True, ctas_per_sm: int | None = None,
            hbm_read_bytes: float | None = None,
            hbm_read_source: str = "model-only what-if", clock: str = "profile",
            reuse: str = "convoy") -> Prediction:
    """Predict one kernel launch. Raises ScheduleError for a schedule that cannot run.

    `loads=False` (model only): the load-free microbenchmark -- gemm/kernels/ring.py, mma_loop_only for
    serial/ring, the specialized kernel's mma_loop_only mode -- the ring filled once, then only
    the syncs, WGMMAs and wait_groups; no memory floors apply.
    `mmas=False` (model only): the WGMMA-free microbenchmark -- gemm/kernels/ring.py, load_loop_only, or
    the specialized kernel's load_loop_only mode (consumers hand each stage straight back);
    no tensor floor applies (flops are GEMM-equivalent).
    `ctas_per_sm` (model only): run this many CTAs per SM instead of the occupancy's figure (the
    microbenchmark kernels use ~24 registers, so only shared memory limits them); it may not
    exceed the shared-memory, thread or block limit.
    `hbm_read_bytes` (model only, a what-if): the A and B bytes read from HBM, e.g. Nsight
    Compute's dram__bytes_read of the real kernel, instead of the model's estimate (`reuse`);
    `hbm_read_source` names where they come from in the prediction's notes.
    `clock`: "profile" runs at the profile's one sustained clock; "earned" at the clock this
    schedule's own activity earns (sim/clock.py: its tensor use per clock and its L2 and DRAM
    traffic, the model's own, solved against the profile's clock form).
    `reuse`: how the HBM read bytes are counted when `hbm_read_bytes` is not given.
    "convoy" (the default; sim/convoy.py): per wave while a miss's extra latency holds the
    panel's sharers together (V1, shallow rings), else what a grid of free-running CTAs reads
    (their measured spread, scheduled and replayed through L2): right about which kernels lose
    their reuse for 43 of 55 GEMMs in the column and row rasters (held kernels leak at long K),
    within 0.27 in |ln| of how much where they lose it (experiments/NOTES.md 72-79).
    "per-wave": each panel once per wave, as if every kernel were held. The load-only loops
    count as the GEMMs do; the WGMMA-only loops (no loads after the first fill) per wave."""
    if reuse not in ("convoy", "per-wave"):
        raise ScheduleError(f"reuse must be 'convoy' or 'per-wave', got {reuse!r}")
    if clock == "earned":
        return _predict_at_earned_clock(schedule, m, n, k, gpu, dtype=dtype, trace=trace, sim_iters=sim_iters,
                                        notes=notes, loads=loads, mmas=mmas, ctas_per_sm=ctas_per_sm,
                                        hbm_read_bytes=hbm_read_bytes, hbm_read_source=hbm_read_source,
                                        reuse=reuse)
    if clock != "profile":
        raise ScheduleError(f"clock must be 'profile' or 'earned', got {clock!r}")
    if dtype not in DTYPES:
        raise ScheduleError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if min(m, n, k) < 1:
        raise ScheduleError(f"M, N, K must be >= 1, got {m}, {n}, {k}")
    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    s = schedule
    res = residency(s, prof)
    c = res["ctas_per_sm"]
    if ctas_per_sm is not None:
        cap = min(res["limits"][k] for k in ("smem", "threads", "blocks"))
        if not 1 <= ctas_per_sm <= cap:
            raise ScheduleError(f"ctas_per_sm={ctas_per_sm}: outside 1..{cap} (shared memory, threads, blocks)")
        c = ctas_per_sm
        res = {**res, "ctas_per_sm": c, "limited_by": "override (model only)"}
    if c < 1:
        raise ScheduleError(f"schedule {s.name!r}: no CTA fits on an SM (limits {res['limits']})")
    tm, tn = grid(s, m, n)
    wv = waves(tm * tn, prof.sm_count, c)
    traffic = memory_traffic(s, m, n, k, wv["per_wave"])
    notes = list(notes or [])
    if hbm_read_bytes is None and reuse == "convoy" and loads:
        held = convoy.reuse(s, m, n, k, prof, c, mmas=mmas)
        notes.append(held["note"])
        if not held["held"]:
            traffic = _with_hbm_read(traffic, held["hbm_read_bytes"])
    if hbm_read_bytes is not None:
        if not 0 <= hbm_read_bytes <= traffic["l2_to_sm_bytes"]:
            raise ScheduleError(f"hbm_read_bytes={hbm_read_bytes:.4g}: outside 0..{traffic['l2_to_sm_bytes']} "
                                "(the bytes every CTA reads)")
        notes.append(f"{hbm_read_source}: HBM read bytes set to {hbm_read_bytes / 1e9:.2f} GB "
                     f"(the model's per-wave sharing gives {traffic['hbm_read_bytes'] / 1e9:.2f} GB)")
        traffic = _with_hbm_read(traffic, hbm_read_bytes)
    k_iters = math.ceil(k / s.block_k)
    miss = 1.0 - traffic["l2_hit_rate"]

    if not loads and not mmas:
        raise ScheduleError("loads=False and mmas=False together leave no loop")
    if ctas_per_sm is not None:
        notes.append(f"model-only: {c} CTAs/SM set by the caller (occupancy gives {res['limits']})")
    if not mmas:
        notes.append("model-only: no WGMMAs (the load_loop microbenchmark); TFLOPS are GEMM-equivalent")
    if not loads:
        notes.append("model-only: no loads after the ring's first fill (the mma_loop microbenchmark)")
    full = simulate_sm(s, prof, c, k_iters, miss, trace=trace or True, sim_iters=sim_iters,
                       active_sms=min(prof.sm_count, wv["ctas"]), loads=loads, mmas=mmas)
    total_clk = wv["full"] * full["clk"]
    if wv["tail_ctas"]:
        total_clk += simulate_sm(s, prof, wv["tail_ctas_per_sm"], k_iters, miss, sim_iters=sim_iters,
                                 active_sms=min(prof.sm_count, wv["tail_ctas"]), loads=loads,
                                 mmas=mmas)["clk"]
    sim_s = total_clk / (prof.clock_ghz * 1e9)

    flops = 2.0 * m * n * k
    hz = prof.clock_ghz * 1e9
    # L2 requests: one per box row of <= 128 B; each SM's path takes one per l2_request_clk
    requests = tm * tn * k_iters * s.k_iteration_requests
    # (bytes that miss L2 cost more port time: the fill, as in the one-SM simulation)
    port_bytes = traffic["l2_to_sm_bytes"] + prof.l2_miss_charge(wv["ctas"]) * traffic["hbm_read_bytes"]
    l2_terms = (port_bytes / (prof.l2_feed_bytes_per_clk() * hz),
                requests * prof.l2_request_clk / prof.sm_count / hz)
    l2_time = sum(l2_terms) if prof.l2_request_additive else max(l2_terms)
    floors = {
        "tensor cores": flops / (prof.peak_tflops * 1e12),
        "L2->SM bandwidth": l2_time,
        "HBM bandwidth": traffic["hbm_bytes"] / (prof.hbm_tbs * 1e12 * prof.hbm_efficiency),
    }
    if not loads:  # only the first fill and C move: no memory floor binds
        l2_time = 0.0
        floors = {"tensor cores": floors["tensor cores"]}
    if not mmas:  # no math: only the memory floors
        floors.pop("tensor cores")
    t = max(sim_s, *floors.values()) + prof.launch_us * 1e-6
    util = {
        "tensor": flops / (prof.peak_tflops * 1e12) / t if mmas else 0.0,
        "tma": l2_time / t,
        "hbm": traffic["hbm_bytes"] / (prof.hbm_tbs * 1e12) / t if loads else 0.0,
    }

    tr = full["trace"]
    role = "consumer 0" if s.family == "specialized" else "warpgroup 0"
    tot = tr.totals(role)
    cta = full["cta0_clk"] or 1.0
    breakdown = {cat: round(v / cta, 4) for cat, v in sorted(tot.items(), key=lambda kv: -kv[1])}
    # the consumer's share of time in its own WGMMA groups (tensor spans of this CTA)
    breakdown = {"wgmma_on_tensor_cores": round(tr.totals("tensor").get("wgmma", 0.0) / cta, 4), **breakdown}
    bound, reason = _bound(util, floors, sim_s, breakdown, res, s)
    pk = prof.peak_tflops
    tfl = flops / t / 1e12
    return Prediction(
        ms=t * 1e3, tflops=tfl, pct_of_peak=100 * tfl / pk,
        pct_of_datasheet_peak=100 * tfl / prof.datasheet_peak_tflops,
        utilization={kk: round(v, 4) for kk, v in util.items()},
        ctas_per_sm=c, limited_by=res["limited_by"], residency=res,
        waves=round(wv["waves_exact"], 4), wave_info=wv, bound=bound, reason=reason,
        breakdown=breakdown,
        bytes={**traffic, "k_iters": k_iters,
               "tma_latency_ns": round(full["tma_latency_clk"] / prof.clock_ghz, 1)},
        gpu=prof.name, clock_ghz=prof.clock_ghz, schedule=asdict(s),
        shape={"m": m, "n": n, "k": k, "dtype": dtype}, notes=notes,
        trace=tr if trace else None,
    )


def _with_hbm_read(traffic: dict, hbm_read_bytes: float) -> dict:
    """memory_traffic's figures with the A and B bytes read from HBM replaced."""
    return {**traffic, "hbm_read_bytes": int(hbm_read_bytes),
            "hbm_bytes": int(hbm_read_bytes) + traffic["hbm_write_bytes"],
            "l2_hit_rate": 1.0 - hbm_read_bytes / traffic["l2_to_sm_bytes"]}


def _predict_at_earned_clock(schedule, m, n, k, gpu, **options) -> Prediction:
    """predict() at the clock where the schedule's own activity meets the profile's clock form:
    bisection on the clock, each step a prediction at that clock (the activity per clock moves
    with it: the L2 -> SM port is in ns)."""
    import dataclasses

    from .clock import over_limit
    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    if prof.clock_form_coef is None:
        raise ScheduleError(f"profile {prof.name!r} has no clock form (clock_form_coef): "
                            "use clock='profile' or calibrate it (python -m experiments.fit_clock_form .. --write)")
    top = prof.wgmma_clock_top_ghz if options.get("mmas", True) else prof.clock_max_ghz
    if options["reuse"] == "convoy" and options["hbm_read_bytes"] is None and options["loads"]:
        # whether the convoy holds is decided once, at the profile's clock (a bisection whose
        # bytes jumped between its steps would not converge)
        c = options["ctas_per_sm"] or residency(schedule, prof)["ctas_per_sm"]
        held = convoy.reuse(schedule, m, n, k, prof, c, mmas=options.get("mmas", True))
        options = {**options, "reuse": "per-wave", "notes": [*(options["notes"] or []), held["note"]]}
        if not held["held"]:
            options.update(hbm_read_bytes=held["hbm_read_bytes"], hbm_read_source="free-running CTAs (sim/convoy.py)")

    def at(f):  # the prediction at clock f, and whether its own activity is over the limit there
        p = predict(schedule, m, n, k, gpu=dataclasses.replace(prof, clock_ghz=f), **options)
        s = p.ms * 1e-3
        return p, over_limit(p.utilization["tensor"], p.bytes["l2_to_sm_bytes"] / s / 1e12,
                             p.bytes["hbm_bytes"] / s / 1e12, f, prof.clock_form_coef, prof.clock_form_g,
                             prof.sm_count)
    p, over = at(top)
    if over:  # the limit binds below the top clock: bisect for the clock whose activity meets it
        lo, hi, p_lo = 0.5, top, None
        for _ in range(14):
            mid = (lo + hi) / 2
            p_mid, over = at(mid)
            if over:
                hi = mid
            else:
                lo, p_lo = mid, p_mid
        p = p_lo or at(lo)[0]
    p.notes.append(f"clock {p.clock_ghz:.3f} GHz earned from this schedule's activity (sim/clock.py: tensor "
                   f"{p.utilization['tensor']:.2f} per clock, L2->SM {p.bytes['l2_to_sm_bytes'] / p.ms / 1e9:.2f} "
                   f"and DRAM {p.bytes['hbm_bytes'] / p.ms / 1e9:.2f} TB/s) instead of the profile's {prof.clock_ghz:.3f}")
    return p


def _bound(util, floors, sim_s, breakdown, res, s) -> tuple[str, str]:
    """What limits the prediction, and why in words. The labels only describe the
    simulated timeline; they change no figure."""
    idle = {k: v for k, v in breakdown.items()
            if k in ("sync", "tma_wait", "wgmma_wait", "index", "issue", "tma_issue", "epilogue", "launch")}
    worst = max(idle, key=idle.get) if idle else "latency"
    at_sync = idle.get("tma_wait", 0) + idle.get("sync", 0)
    if s.syncs_per_iter and s.family != "specialized" and worst in ("tma_wait", "sync"):
        tensor_idle = (f"the tensor cores ({100 * util['tensor']:.0f}% busy) idle while the warpgroup sits in "
                       f"its block-wide syncs waiting for TMA ({100 * at_sync:.0f}% of a CTA's time)")
    else:
        tensor_idle = (f"the tensor cores ({100 * util['tensor']:.0f}% busy) idle while the warps that issue "
                       f"WGMMA are {_CATEGORY_NAMES.get(worst, worst)} ({100 * idle.get(worst, 0):.0f}% of a CTA's time)")
    top = max(floors, key=floors.get)
    if floors[top] >= sim_s:
        return top, f"{top} at its ceiling; {tensor_idle}"
    if util["tensor"] >= 0.85:
        return "tensor cores", "the tensor cores are busy most of the time"
    flop_per_byte = 2 * s.block_m * s.block_n * s.block_k / s.k_iteration_bytes
    if util["tma"] >= 0.90:
        return "L2->SM bandwidth", (
            f"the SMs pull {100 * util['tma']:.0f}% of the L2 read bandwidth ({flop_per_byte:.0f} FLOP per byte "
            f"with a {s.block_m}x{s.block_n} tile): {tensor_idle}, and a deeper ring cannot shorten a wait "
            f"for bandwidth")
    return "latency", (f"{tensor_idle}; {res['ctas_per_sm']} CTA(s) per SM ({res['limited_by']}) overlap "
                       f"too little to hide it (L2 read bandwidth {100 * util['tma']:.0f}% used)")
