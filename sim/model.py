"""predict(): one schedule, one GEMM shape, one GPU profile -> a Prediction.

The core, in order:
  1. occupancy (engines.residency): CTAs per SM from shared memory, registers (setmaxnreg:
     the launch count), threads;
  2. the grid (engines.launch_grid): tiles, split-K slices, batches, swap-AB, persistent
     CTAs and clusters; waves of it (engines.waves);
  3. the bytes (engines.memory_traffic): L2 -> SM (multicast shares the shared operand) and
     HBM (each panel once per wave), with the HBM read bytes replaced by a reuse strategy
     (sim/reuse.py: "convoy" by default, "per-wave", "timeline");
  4. one SM simulated (schedules.simulate_sm): its CTAs of a full wave and, when the last
     wave is partial, one SM of it; the engines at the per-SM rates of the SMs busy in it;
     a persistent CTA walks its tiles; steady-state K iterations and tiles extrapolated;
  5. floors (the tensor cores, the L2 -> SM ports and HBM of the SMs the grid keeps busy),
     so no prediction exceeds what the hardware can deliver;
  6. the call (sim/call.py): launch, split-K's in-kernel sum, operand copies, host time as a
     CUDA-event timing sees it.
The clock is the profile's sustained clock, or with clock="earned" the one the schedule's
own activity earns (sim/clock.py).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from gemm.limits import line_start
from gemm.schedule import INPUT_BYTES, Schedule, ScheduleError

from . import call, reuse as reuse_layer
from .engines import (last_round_ctas, last_round_share, launch_grid, memory_traffic, multicast_port_share,
                      residency, split_unit_ns, waves)
from .hardware import GpuProfile, load_profile
from .schedules import CtaWork, simulate_sm

DTYPES = ("float16", "bfloat16")
CLOCKS = ("profile", "earned", "load")


@dataclass
class Prediction:
    ms: float                     # device time of the call: its kernels on the stream (launch included)
    tflops: float                 # 2 M N K batch / ms
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
    timed_ms: float = 0.0         # one call between two CUDA events: host time + device time
    timed_tflops: float = 0.0
    call: dict = field(default_factory=dict)     # sim/call.py: kernel, reduce, copies, host
    launch: dict = field(default_factory=dict)   # the grid: tiles, CTAs, units per CTA, clusters
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
    "launch": "CTA start (launch, tensor map)", "empty_wait": "producer waiting for a free stage",
    "release": "releasing stages",
}


def predict(schedule: Schedule, m: int = 8192, n: int = 8192, k: int = 8192,
            gpu: str | GpuProfile = "h200-sxm", dtype: str = "float16",
            trace: bool = False, sim_iters: int = 48, notes: list | None = None,
            loads: bool = True, mmas: bool = True, ctas_per_sm: int | None = None,
            hbm_read_bytes: float | None = None,
            hbm_read_source: str = "model-only what-if", clock: str = "profile",
            reuse: str = "convoy", batch: int = 1, host_us: float | None = None,
            registers: int | None = None, load_calls: tuple | None = None,
            line_pitch: tuple[int, int] | None = None) -> Prediction:
    """Predict one call. Raises ScheduleError for a schedule that cannot run.

    `batch`: independent products in one launch (grid = tiles x batch).
    `reuse`: how the HBM read bytes are counted (sim/reuse.py): "convoy" (default), "per-wave"
    or "timeline". `hbm_read_bytes` (a what-if) sets them instead, e.g. Nsight Compute's
    dram__bytes_read of the real kernel; `hbm_read_source` names where they come from.
    `clock`: "profile" runs at the profile's one sustained clock; "earned" at the clock this
    schedule's own activity earns (sim/clock.py); "load" at the clock of a timing's median run
    as the power limit falls under its load (sim/load_clock.py; `load_calls`: the calls before
    each timed run, default the bench's protocol with three contenders).
    `host_us`: the host time of one call (default: the profile's host_call_us).
    `line_pitch`: (A's, B's) distance between lines in elements, as the kernel reads them
    (default: contiguous operands, K each; gemm.matmul copies lines that are not 16-byte
    multiples into 128-byte ones): a pitch off 128 bytes costs each box row the L2's
    `l2_line_straddle_row_clk` or `l2_misaligned_row_clk` (line_starts, hardware_floors).
    `registers`: the built kernel's registers per thread (ptxas, or the CUDA occupancy API's
    view of it) instead of the model's estimate (accumulators + reg_overhead, or setmaxnreg's
    launch count): residency follows the real kernel.
    Model-only microbenchmark modes: `loads=False` the load-free loop (gemm/kernels/ring.py,
    mma_loop_only; the ring filled once, then only syncs, WGMMAs, wait_groups; no memory
    floors); `mmas=False` the WGMMA-free loop (load_loop_only; no tensor floor, flops are
    GEMM-equivalent); `ctas_per_sm` overrides the occupancy (those kernels use ~24 registers)
    within the shared-memory, thread and block limits."""
    if clock not in CLOCKS:
        raise ScheduleError(f"clock must be one of {CLOCKS}, got {clock!r}")
    if reuse not in reuse_layer.STRATEGIES:
        raise ScheduleError(f"reuse must be one of {reuse_layer.STRATEGIES}, got {reuse!r}")
    options = dict(dtype=dtype, trace=trace, sim_iters=sim_iters, notes=notes, loads=loads, mmas=mmas,
                   ctas_per_sm=ctas_per_sm, hbm_read_bytes=hbm_read_bytes, hbm_read_source=hbm_read_source,
                   reuse=reuse, batch=batch, host_us=host_us, registers=registers, line_pitch=line_pitch)
    if clock == "earned":
        from .clock import predict_at_earned_clock
        return predict_at_earned_clock(_predict, schedule, m, n, k, gpu, options)
    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    if clock == "load":
        from .load_clock import predict_under_load
        return predict_under_load(_predict, schedule, m, n, k, prof, options, load_calls)
    return _predict(schedule, m, n, k, prof, **options)


def _predict(s: Schedule, m: int, n: int, k: int, prof: GpuProfile, dtype: str = "float16",
             trace: bool = False, sim_iters: int = 48, notes: list | None = None, loads: bool = True,
             mmas: bool = True, ctas_per_sm: int | None = None, hbm_read_bytes: float | None = None,
             hbm_read_source: str = "model-only what-if", reuse: str = "convoy", batch: int = 1,
             host_us: float | None = None, registers: int | None = None, line_pitch: tuple[int, int] | None = None,
             sm_model=simulate_sm) -> Prediction:
    """predict() at the profile's clock. `sm_model`: how one SM's CTAs are timed (the SimPy
    simulation, or sim.fast.steady_sm)."""
    if dtype not in DTYPES:
        raise ScheduleError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if min(m, n, k) < 1 or batch < 1:
        raise ScheduleError(f"M, N, K and batch must be >= 1, got {m}, {n}, {k}, batch {batch}")
    if not loads and not mmas:
        raise ScheduleError("loads=False and mmas=False together leave no loop")
    notes = list(notes or [])

    # 1. occupancy
    res = residency(s, prof, registers)
    c = res["ctas_per_sm"]
    if ctas_per_sm is not None:
        cap = min(res["limits"][key] for key in ("smem", "threads", "blocks"))
        if not 1 <= ctas_per_sm <= cap:
            raise ScheduleError(f"ctas_per_sm={ctas_per_sm}: outside 1..{cap} (shared memory, threads, blocks)")
        c = ctas_per_sm
        res = {**res, "ctas_per_sm": c, "limited_by": "override (model only)"}
        notes.append(f"model-only: {c} CTAs/SM set by the caller (occupancy gives {res['limits']})")
    if c < 1:
        raise ScheduleError(f"schedule {s.name!r}: no CTA fits on an SM (limits {res['limits']})")

    # 2. the grid and its waves
    slots = prof.sm_count * c
    if c == 1 and s.cluster_size in prof.cluster_slots:   # clusters confined to a GPC leave SMs idle
        slots = prof.cluster_slots[s.cluster_size]
    elif c == 1 and s.cluster_size > 1:
        notes.append(f"clusters of {s.cluster_size}: the profile has no count of how many the GPU holds at once "
                     f"(cluster_slots has {sorted(prof.cluster_slots) or 'none'}), so every SM is assumed to take "
                     "one; a cluster must sit in one GPC, and the driver may hold fewer")
    lg = launch_grid(s, m, n, k, batch, slots=slots)
    wv = waves(lg.ctas, prof.sm_count, c)
    concurrent = min(lg.ctas, wv["per_wave"])          # units in flight together
    busy_sms = min(prof.sm_count, lg.ctas)

    # 3. the bytes
    traffic = memory_traffic(s, m, n, k, concurrent, batch, prof.l2_lru_bytes or prof.l2_bytes)
    if hbm_read_bytes is None and loads:
        b, note = reuse_layer.hbm_read_bytes(reuse, s, m, n, k, prof, c, mmas=mmas, batch=batch)
        if note:
            notes.append(note)
        if b is not None:
            traffic = _with_hbm_read(traffic, b)
    if hbm_read_bytes is not None:
        if not 0 <= hbm_read_bytes <= traffic["l2_to_sm_bytes"]:
            raise ScheduleError(f"hbm_read_bytes={hbm_read_bytes:.4g}: outside 0..{traffic['l2_to_sm_bytes']} "
                                "(the bytes every CTA reads)")
        notes.append(f"{hbm_read_source}: HBM read bytes set to {hbm_read_bytes / 1e9:.2f} GB "
                     f"(the model's per-wave sharing gives {traffic['hbm_read_bytes'] / 1e9:.2f} GB)")
        traffic = _with_hbm_read(traffic, hbm_read_bytes)
    miss = 1.0 - traffic["l2_hit_rate"]
    if not mmas:
        notes.append("model-only: no WGMMAs (the load_loop microbenchmark); TFLOPS are GEMM-equivalent")
    if not loads:
        notes.append("model-only: no loads after the ring's first fill (the mma_loop microbenchmark)")

    # 4. one SM of each kind of wave
    work = CtaWork.of(s, lg)
    if s.persistent:   # one wave of CTAs, each walking its tiles
        per_sm = math.ceil(lg.ctas / prof.sm_count)
        full = sm_model(s, prof, per_sm, work.k_iters, miss, trace=True, sim_iters=sim_iters,
                           active_sms=busy_sms, loads=loads, mmas=mmas, work=work)
        total_clk = full["clk"]
        last = last_round_ctas(lg)
        if last:   # a last round in which only `last` CTAs have a tile runs its tiles faster
            shorter = sm_model(s, prof, per_sm, work.k_iters, miss, sim_iters=sim_iters, active_sms=busy_sms,
                               loads=loads, mmas=mmas, work=replace(work, tiles=work.tiles - 1))
            share = last_round_share(prof, last, lg.ctas)
            total_clk -= (1.0 - share) * (full["clk"] - shorter["clk"])
            notes.append(f"persistent: {last} of {lg.ctas} CTAs walk a last tile; that round's tiles take "
                         f"{share:.2f} of a whole round's time (the SMs' idle share, engines.last_round_share)")
    else:
        full = sm_model(s, prof, c if wv["full"] else wv["tail_ctas_per_sm"], lg.k_iters, miss, trace=True,
                           sim_iters=sim_iters, active_sms=busy_sms if wv["full"] else min(prof.sm_count, lg.ctas),
                           loads=loads, mmas=mmas, work=work)
        total_clk = wv["full"] * full["clk"]
        if wv["tail_ctas"] and wv["full"]:
            total_clk += sm_model(s, prof, wv["tail_ctas_per_sm"], lg.k_iters, miss, sim_iters=sim_iters,
                                     active_sms=min(prof.sm_count, wv["tail_ctas"]), loads=loads, mmas=mmas,
                                     work=work)["clk"]
        elif wv["tail_ctas"]:
            total_clk = full["clk"]
    hz = prof.clock_ghz * 1e9
    sim_s = total_clk / hz

    # 5. floors over the SMs the grid keeps busy
    flops = 2.0 * m * n * k * batch
    flops_done, l2_time, floors = hardware_floors(s, lg, traffic, prof, busy_sms, loads, mmas,
                                                  line_starts(line_pitch or (k, k)))
    per_sm_peak = prof.tensor_flops_per_clk * hz
    busy_s = max(sim_s, *floors.values())
    paced = hbm_paced_share(floors, busy_s)
    kernel_s = (busy_s + paced * prof.hbm_stream_fixed_us * 1e-6
                + (prof.launch_us + prof.kernel_fixed_us) * 1e-6
                + (prof.cluster_launch_us * 1e-6 if s.multicast_size > 1 else 0.0))

    # 6. the call
    preload_s = call.preload_saving_s(s, lg.ctas, lg.k_iters, prof, paced,
                                      kernel_s - busy_s - call.dependent_saving_s(s, lg.ctas, prof))
    timing = call.timed(kernel_s, s, m, n, k, batch, lg.slices, prof, host_us, tiles=lg.tm * lg.tn * lg.batch,
                        stream_k=(lg.k_iters, lg.stream_k_run), ctas=lg.ctas, preload_s=preload_s)
    if preload_s:
        notes.append(f"preload: back to back, the first ring of the operand the kernel ahead does not write "
                     f"streams while that kernel ends ({preload_s * 1e6:.1f} us off the call)")
    t = timing["device_ms"] * 1e-3
    partial = split_unit_ns(s, prof)
    if partial is not None and s.split_lead:
        notes.append(f"split-K with a lead: the cluster's first CTA runs {s.split_lead} K tiles more than each "
                     f"other slice, while they send it their fp32 partials; it then sums them "
                     f"({partial[1] / 1e3:.1f} us) and stores the tile")
    elif partial is not None:
        out = "sends its fp32 partial's shares to its cluster's CTAs" if s.split_cluster else \
            "stores its fp32 partial tile"
        notes.append(f"split-K: each of a CTA's {lg.units_per_cta} unit(s) {out} ({partial[0] / 1e3:.1f} us), "
                     f"waits for the tile's other slices and sums its share ({partial[1] / 1e3:.1f} us) "
                     "before its next unit")
    elif timing["reduce_ms"] and s.split_k > 1:
        notes.append(f"split-K: {lg.slices} slices write fp32 partials; each tile's CTAs sum a share "
                     f"of them in {timing['reduce_ms'] * 1e3:.1f} us")
    if lg.stream_k_iters:
        notes.append(f"stream-K: each of {lg.ctas} CTAs runs {lg.stream_k_iters} K iterations (whole units: "
                     f"{lg.units_per_cta * lg.k_iters}); partial tiles written and read back in "
                     f"{timing['reduce_ms'] * 1e3:.1f} us")
    if timing["operand_copies"] or timing["result_copies"]:
        what = ([f"K x 2 bytes = {k * 2} is not a multiple of 16: the call copies both operands into "
                 "padded buffers first"] if timing["operand_copies"] else [])
        what += ([f"N x 2 bytes = {n * 2} is not a multiple of 16: TMA stores a padded C that a copy packs "
                  "into C"] if timing["result_copies"] else [])
        notes.append(f"{'; '.join(what)} ({timing['copy_ms'] * 1e3:.1f} us of copies)")
    if timing["host_bound"]:
        notes.append(f"host-bound: the device work ({timing['device_ms'] * 1e3:.1f} us) is shorter than the "
                     f"host's {timing['host_ms'] * 1e3:.1f} us per call")
    util = {
        "tensor": flops_done / (per_sm_peak * prof.sm_count) / (kernel_s) if mmas else 0.0,
        "tma": l2_time * busy_sms / prof.sm_count / kernel_s,
        "hbm": traffic["hbm_bytes"] / (prof.hbm_tbs * 1e12) / kernel_s if loads else 0.0,
    }

    tr = full["trace"]
    role = "consumer 0" if s.family == "specialized" else "warpgroup 0"
    tot = tr.totals(role)
    cta = full["cta0_clk"] or 1.0
    breakdown = {cat: round(v / cta, 4) for cat, v in sorted(tot.items(), key=lambda kv: -kv[1])}
    # the consumer's share of time in its own WGMMA groups (tensor spans of this CTA)
    breakdown = {"wgmma_on_tensor_cores": round(tr.totals("tensor").get("wgmma", 0.0) / cta, 4), **breakdown}
    bound, reason = _bound(util, floors, sim_s, breakdown, res, s, timing)
    pk = prof.peak_tflops
    tfl = flops / t / 1e12
    launch = {"tiles": lg.tm * lg.tn, "tile_grid": [lg.tm, lg.tn], "k_slices": lg.slices, "batch": batch,
              "units": lg.units, "ctas": lg.ctas, "units_per_cta": lg.units_per_cta, "busy_sms": busy_sms,
              "k_iters_per_unit": lg.k_iters, "cluster_idle_ctas": lg.cluster_idle,
              "gemm_mn": [lg.gm, lg.gn], "edge_rows": [round(lg.a_rows, 2), round(lg.b_rows, 2)]}
    return Prediction(
        ms=t * 1e3, tflops=tfl, pct_of_peak=100 * tfl / pk,
        pct_of_datasheet_peak=100 * tfl / prof.datasheet_peak_tflops,
        utilization={kk: round(min(v, 1.0), 4) for kk, v in util.items()},
        ctas_per_sm=c, limited_by=res["limited_by"], residency=res,
        waves=round(wv["waves_exact"], 4), wave_info=wv, bound=bound, reason=reason,
        breakdown=breakdown,
        bytes={**traffic, "k_iters": lg.k_iters,
               "tma_latency_ns": round(full["tma_latency_clk"] / prof.clock_ghz, 1)},
        gpu=prof.name, clock_ghz=prof.clock_ghz, schedule=asdict(s),
        shape={"m": m, "n": n, "k": k, "dtype": dtype, **({"batch": batch} if batch != 1 else {})},
        timed_ms=timing["timed_ms"], timed_tflops=flops / (timing["timed_ms"] * 1e-3) / 1e12,
        call=timing, launch=launch, notes=notes, trace=tr if trace else None,
    )


HBM_PACED_FROM = 0.8   # [assumed] the HBM floor's share of a launch's time from which its queues pace it


def hbm_paced_share(floors: dict, busy_s: float) -> float:
    """How far the HBM paces a launch: 0 while its floor is under HBM_PACED_FROM of the launch's
    time, rising to 1 where the floor is the time. A launch the HBM paces pays its stream's own
    start and end beside its bytes (`hbm_stream_fixed_us`: the rings' fill behind the first
    misses, the last CTAs' uneven end, measured on kernels the HBM binds); one the SMs pace, whose
    HBM queues stay short, does not (its CTAs' own prologue and epilogue are simulated)."""
    u = floors.get("HBM bandwidth", 0.0) / busy_s if busy_s else 0.0
    return min(1.0, max(0.0, (u - HBM_PACED_FROM) / (1.0 - HBM_PACED_FROM)))


def line_starts(line_pitch: tuple[int, int]) -> tuple[str, str]:
    """Where A's and B's lines, `line_pitch` elements apart, as the kernel reads them, start
    (gemm.limits.LINE_STARTS; a line whose pitch is not a 16-byte multiple is copied into one
    that is a 128-byte multiple first: gemm.padding.pitch_for)."""
    def start(pitch):
        nbytes = pitch * INPUT_BYTES
        return "line" if nbytes % 16 else line_start(nbytes)
    return start(line_pitch[0]), start(line_pitch[1])


def hardware_floors(s: Schedule, lg, traffic: dict, prof: GpuProfile, busy_sms: int, loads: bool = True,
                    mmas: bool = True, starts: tuple[str, str] = ("line", "line")) -> tuple[float, float, dict]:
    """(FLOPs the tensor cores execute, L2 -> SM port seconds, {floor: seconds}): the least time
    the busy SMs' tensor cores (edge tiles compute in full), their L2 -> SM ports (bytes and
    requests) and HBM need. A load-free loop has no memory floor, a WGMMA-free one no tensor floor.
    `starts` (A, B): where the operands' lines start (line_starts); each box row an SM requests of
    one whose lines start off a 128-byte line (its own part of a multicast box) takes the L2
    `l2_line_straddle_row_clk` (on a sector) or `l2_misaligned_row_clk` (inside one)."""
    hz = prof.clock_ghz * 1e9
    flops_done = 2.0 * lg.units * s.block_m * s.block_n * lg.k_iters * s.block_k
    share_a, share_b = multicast_port_share(prof, s.cluster_n), multicast_port_share(prof, s.cluster_m)
    requests = lg.units * lg.k_iters * (lg.a_rows * share_a + lg.b_rows * share_b) \
        * math.ceil(s.block_k * INPUT_BYTES / 128)
    # the ports carry each CTA's own part of a multicast box and the receive cost of the partners'
    partners = traffic["smem_fill_bytes"] - traffic["l2_to_sm_bytes"]
    port_bytes = (traffic["l2_to_sm_bytes"] + prof.multicast_receive_cost * partners
                  + prof.l2_miss_charge(busy_sms) * traffic["hbm_read_bytes"])
    l2_time = prof.port_clk(port_bytes, requests, busy_sms) / busy_sms / hz
    # the boxes' rows outside the matrix: zeros each SM's TMA unit writes (engines.zero_fill_clk)
    oob_rows = lg.units * lg.k_iters * ((s.block_m - lg.a_rows) + (s.block_n - lg.b_rows))
    floors = {
        "tensor cores": flops_done / (prof.tensor_flops_per_clk * hz * busy_sms),
        "L2->SM bandwidth": l2_time,
        # reads and writes share the HBM at its read rate; writes alone go no faster than a fill
        "HBM bandwidth": max(traffic["hbm_bytes"] / prof.hbm_read_bytes_per_s(),
                             traffic["hbm_write_bytes"] / prof.hbm_write_bytes_per_s()),
        "TMA zero fill": oob_rows * prof.tma_oob_row_ns * 1e-9 / busy_sms,
    }
    row_clk = {"line": 0.0, "sector": prof.l2_line_straddle_row_clk, "inside a sector": prof.l2_misaligned_row_clk}
    a_clk, b_clk = row_clk[starts[0]], row_clk[starts[1]]
    if a_clk or b_clk:
        # the L2's clocks for the rows of the K tiles' boxes that straddle two lines (A along M,
        # B along N), per SM
        clocks = lg.units * lg.k_iters * (a_clk * lg.a_rows / s.cluster_n + b_clk * lg.b_rows / s.cluster_m)
        floors["L2 misaligned lines"] = clocks / busy_sms / hz
    if not loads:  # only the first fill and C move: no memory floor binds
        l2_time = 0.0
        floors = {"tensor cores": floors["tensor cores"]}
    if not mmas:  # no math: only the memory floors
        floors.pop("tensor cores")
    return flops_done, l2_time, floors


def _with_hbm_read(traffic: dict, hbm_read_bytes: float) -> dict:
    """memory_traffic's figures with the A and B bytes read from HBM replaced."""
    return {**traffic, "hbm_read_bytes": int(hbm_read_bytes),
            "hbm_bytes": int(hbm_read_bytes) + traffic["hbm_write_bytes"],
            "l2_hit_rate": 1.0 - hbm_read_bytes / traffic["l2_to_sm_bytes"]}


def _bound(util, floors, sim_s, breakdown, res, s, timing) -> tuple[str, str]:
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
    if timing["host_bound"]:
        return "host", (f"the call's host time ({timing['host_ms'] * 1e3:.0f} us) exceeds its device work "
                        f"({timing['device_ms'] * 1e3:.0f} us); on the device, {tensor_idle}")
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
