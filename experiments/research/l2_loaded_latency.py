"""How long an L2 hit takes while the rest of the GPU loads the L2 at a set rate.
python -m experiments.research.l2_loaded_latency --dump FILE.npz        (on the GPU)
python -m experiments.research.l2_loaded_latency --summarize FILE.npz   (no GPU)

The model's ring hides one box latency per stage, and takes that latency from the profile as
a constant (a hit's 250 ns, a miss's 360 more). Measured, a 16 KB box that hits takes 360 ns
with one in flight on every SM and 1456 ns with eight (tma_latency.csv): the latency grows with
the load the L2 carries. One queue at the L2 would give

    L(r) = L0 / (1 - r / R)

with r the bytes a ns the L2 serves to the SMs, R what it can serve, L0 a hit's latency on an
idle GPU. With it, the seed's V1 (one box in flight a CTA, a serial chain) and the deep rings
(enough in flight to reach R) would both come out of one form where the model now needs a slow
port for one and a fast one for the other (notes items 177, 226). This measures L(r) directly,
so the form is judged, and its L0 and R taken, on loads that are not a GEMM.

One CTA an SM (the ring's 128 KB of shared memory keeps a second out), one thread a CTA:
- **probes** (the first PROBES CTAs) fetch BOX boxes (128 rows x 64 fp16, 128-B swizzle, the
  seed's A box, through a tensor map) one at a time from their own L2-resident panel, and stamp
  each box's latency (%clock64 from the issue to the mbarrier's completion);
- **streamers** (the other CTAs of the grid) keep up to `depth` boxes in flight, a box issued no
  sooner than `period` clocks after the one before (0: as fast as the ring allows), until every
  probe is done (a counter in global memory). They read either their own L2-resident panel
  (hits) or a 2.2 GB operand (misses from HBM, loaded with an evict-first L2 policy so they do
  not push the probes' panels out).
Each condition (streamers' count, kind, depth and period) runs once to warm, then REPEATS
times. The summary gives per condition the probes' median and 90th-percentile latency (ns, by
each probe's %clock64 over %globaltimer), the bytes a ns the grid moved (every CTA's boxes over
its own span), and the one-queue form fitted to the hit conditions (1 / L linear in r).
"""
from __future__ import annotations

import ctypes
import json
import statistics
from pathlib import Path

import numpy as np

from experiments.research import cli

SMS = 132
PROBES = 4
THREADS = 32
STAGES = 8                         # ring slots a CTA: depth <= STAGES
BOX_ROWS, BOX_COLS = 128, 64       # the seed's A box: 128 rows x 64 fp16 (128 B), 128-B swizzle
BOX = BOX_ROWS * BOX_COLS * 2      # 16 KB
SHARED = STAGES * BOX              # 128 KB: one CTA an SM
HIT_BOXES = 11                     # a CTA's L2-resident panel: 128 rows x 704 columns (132 panels: 23.8 MB)
MISS_BOXES = 1024                  # a CTA's panel of the 2.2 GB operand: 16 MB, read once a launch
PROBE_BOXES = 256                  # boxes a probe chases, one at a time
# a fitted capacity past this multiple of the fastest hit condition's rate is the form's
# extrapolation, not a ceiling the study reached
BEYOND_REACH = 1.5
POLL = 8                           # a streamer reads the probes' counter every POLL boxes
REPEATS = 3
PERIODS = (8000, 4000, 2000, 1200, 800, 600, 400)   # clocks between a streamer's issues: ~0.5-10 TB/s
# (name, streamers, kind, depth, period): every probe latency below is a hit
CONDITIONS = (
    (("alone", 0, "hit", 1, 0),)
    + tuple((f"hit-unpaced-d{d}", SMS - PROBES, "hit", d, 0) for d in (1, 2, 4, 8))
    + tuple((f"hit-period-{p}", SMS - PROBES, "hit", STAGES, p) for p in PERIODS)
    + tuple((f"hit-unpaced-{s}-sms", s, "hit", STAGES, 0) for s in (32, 64, 96))
    + tuple((f"miss-unpaced-d{d}", SMS - PROBES, "miss", d, 0) for d in (2, 8))
    + tuple((f"miss-period-{p}", SMS - PROBES, "miss", STAGES, p) for p in (2000, 1000))
)


def kernel_ptx() -> str:
    """`loaded_latency(hit_map, stream_map, lat, stamps, flag, probes, probe_boxes, depth, period,
    stream_boxes, evict_first)`: CTA c's panel is rows 128 c .. 128 c + 127 of both maps. Probes
    write each box's latency in clocks to lat[c * probe_boxes + j] (u32); every CTA writes
    stamps[8 c ..] = SM id, probe (1) or streamer (0), start ns, end ns, start clock, end clock,
    boxes (a streamer's end is when it saw the last probe finish)."""
    init = "\n".join(f"    mbarrier.init.shared::cta.b64 [bars+{8 * s}], 1;" for s in range(STAGES))

    def landed(label: str) -> str:
        """Wait until the streamer's box i has landed: its slot i % depth, its parity (i / depth) & 1."""
        return f"""
    rem.u32 s, i, depth;
    div.u32 u, i, depth;
    and.b32 parity, u, 1;
    mov.u32 bar, bars;
    mad.lo.u32 bar, s, 8, bar;
{label}:
    mbarrier.try_wait.parity.shared::cta.b64 done, [bar], parity;
    @!done bra {label};"""
    load = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    return f""".version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 ring[];

.visible .entry loaded_latency(.param .u64 hit_map_param, .param .u64 stream_map_param,
    .param .u64 lat_param, .param .u64 stamps_param, .param .u64 flag_param,
    .param .u32 probes_param, .param .u32 probe_boxes_param, .param .u32 depth_param,
    .param .u32 period_param, .param .u32 stream_boxes_param, .param .u32 evict_first_param)
.reqntid {THREADS}, 1, 1
{{
    .shared .align 8 .b64 bars[{STAGES}];
    .reg .pred p, leader, done, probe, first;
    .reg .b32 tid, smid, cta, probes, probe_boxes, depth, period, stream_boxes, evict_first;
    .reg .b32 j, i, s, u, parity, bar, buf, row, col, n, seen;
    .reg .b64 hit_map, stream_map, lat, stamps, flag, g0, g1, c0, c1, t, next, gap, tmp, address;
    .reg .b64 policy, keep, shed;

    mov.u32 tid, %tid.x;
    setp.eq.u32 leader, tid, 0;
    @!leader bra END;
    ld.param.u64 hit_map, [hit_map_param];
    ld.param.u64 stream_map, [stream_map_param];
    ld.param.u64 lat, [lat_param];
    ld.param.u64 stamps, [stamps_param];
    ld.param.u64 flag, [flag_param];
    ld.param.u32 probes, [probes_param];
    ld.param.u32 probe_boxes, [probe_boxes_param];
    ld.param.u32 depth, [depth_param];
    ld.param.u32 period, [period_param];
    ld.param.u32 stream_boxes, [stream_boxes_param];
    ld.param.u32 evict_first, [evict_first_param];
    createpolicy.fractional.L2::evict_normal.b64 keep, 1.0;
    createpolicy.fractional.L2::evict_first.b64 shed, 1.0;
    setp.ne.u32 first, evict_first, 0;
    selp.b64 policy, shed, keep, first;
    mov.u32 smid, %smid;
    mov.u32 cta, %ctaid.x;
    shl.b32 row, cta, 7;
{init}
    fence.mbarrier_init.release.cluster;
    fence.proxy.async.shared::cta;
    mov.u64 g0, %globaltimer;
    mov.u64 c0, %clock64;
    setp.lt.u32 probe, cta, probes;
    @!probe bra STREAM;

    // a probe: one box at a time through slot 0, each box's latency stamped
    mov.u32 bar, bars;
    mov.u32 buf, ring;
    mov.u32 j, 0;
PROBE_LOOP:
    setp.ge.u32 p, j, probe_boxes;
    @p bra PROBE_DONE;
    rem.u32 col, j, {HIT_BOXES};
    shl.b32 col, col, 6;
    and.b32 parity, j, 1;
    mov.u64 t, %clock64;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {BOX};
    {load} [buf], [hit_map, {{col, row}}], [bar];
PROBE_WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 done, [bar], parity;
    @!done bra PROBE_WAIT;
    mov.u64 c1, %clock64;
    sub.s64 t, c1, t;
    mul.wide.u32 tmp, cta, probe_boxes;
    cvt.u64.u32 address, j;
    add.s64 tmp, tmp, address;
    shl.b64 tmp, tmp, 2;
    add.s64 address, lat, tmp;
    cvt.u32.u64 n, t;
    st.global.u32 [address], n;
    add.u32 j, j, 1;
    bra PROBE_LOOP;
PROBE_DONE:
    mov.u64 g1, %globaltimer;
    mov.u64 c1, %clock64;
    red.release.gpu.global.add.u32 [flag], 1;
    mov.u32 n, j;
    bra FIN;

    // a streamer: up to `depth` boxes in flight, a box no sooner than `period` clocks after the
    // last, until every probe has finished
STREAM:
    mov.u32 j, 0;
    mov.u64 next, c0;
STREAM_LOOP:
    // the counter is read every POLL boxes: its round trip would otherwise pace the ring
    and.b32 u, j, {POLL - 1};
    setp.ne.u32 p, u, 0;
    @p bra SLOT;
    ld.relaxed.gpu.global.u32 seen, [flag];
    setp.ge.u32 p, seen, probes;
    @p bra STREAM_STOP;
SLOT:
    // box j takes the slot of box j - depth, once that one has landed
    setp.lt.u32 p, j, depth;
    @p bra PACE;
    sub.u32 i, j, depth;{landed("SLOT_WAIT")}
PACE:
    mov.u64 t, %clock64;
    setp.lt.s64 p, t, next;
    @p bra PACE;
    rem.u32 s, j, depth;
    cvt.u64.u32 gap, period;
    add.s64 next, t, gap;
    rem.u32 col, j, stream_boxes;
    shl.b32 col, col, 6;
    mov.u32 bar, bars;
    mad.lo.u32 bar, s, 8, bar;
    mov.u32 buf, ring;
    mad.lo.u32 buf, s, {BOX}, buf;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {BOX};
    {load}.L2::cache_hint [buf], [stream_map, {{col, row}}], [bar], policy;
    add.u32 j, j, 1;
    bra STREAM_LOOP;
STREAM_STOP:
    mov.u64 g1, %globaltimer;
    mov.u64 c1, %clock64;
    mov.u32 n, j;
    // the boxes still in flight land before the CTA leaves: max(0, j - depth) .. j - 1
    mov.u32 i, 0;
    setp.gt.u32 p, j, depth;
    @p sub.u32 i, j, depth;
DRAIN:
    setp.ge.u32 p, i, j;
    @p bra FIN;{landed("DRAIN_WAIT")}
    add.u32 i, i, 1;
    bra DRAIN;

FIN:
    mul.wide.u32 tmp, cta, 64;
    add.s64 address, stamps, tmp;
    cvt.u64.u32 t, smid;
    st.global.u64 [address], t;
    selp.u64 t, 1, 0, probe;
    st.global.u64 [address+8], t;
    st.global.u64 [address+16], g0;
    st.global.u64 [address+24], g1;
    st.global.u64 [address+32], c0;
    st.global.u64 [address+40], c1;
    cvt.u64.u32 t, n;
    st.global.u64 [address+48], t;
END:
    ret;
}}
"""


def fit_one_queue(rates: list[float], latencies: list[float]) -> tuple[float, float]:
    """(L0 ns, R bytes a ns) of L = L0 / (1 - r / R) by least squares on 1 / L = 1 / L0 - r / (R L0)."""
    slope, intercept = np.polyfit(np.asarray(rates, float), 1.0 / np.asarray(latencies, float), 1)
    return 1.0 / intercept, -intercept / slope


def one_queue_ns(l0: float, capacity: float, rate: float) -> float:
    return l0 / (1.0 - rate / capacity) if rate < capacity else float("inf")


def dump(path: Path) -> None:
    import torch

    from experiments.measure import provenance
    from gemm.compile import assemble
    from gemm.launch import Launch, LoadedFunction, _load
    from gemm.tensormap import encode_2d
    cubin, log = assemble(kernel_ptx())
    _, handle = _load(cubin, "loaded_latency", SHARED)
    loaded = LoadedFunction(handle, THREADS, SHARED)
    stream = torch.cuda.current_stream().cuda_stream
    rows = SMS * BOX_ROWS

    def operand(boxes):
        cols = boxes * BOX_COLS
        data = torch.randint(1, 2**15 - 1, (rows, cols), dtype=torch.int16, device="cuda")  # no zeros
        tmap = torch.frombuffer(bytearray(encode_2d(data.data_ptr(), "float16", cols, rows, cols * 2,
                                                    (BOX_COLS, BOX_ROWS), 128)), dtype=torch.uint8).cuda()
        return data, tmap

    hit, hit_map = operand(HIT_BOXES)
    miss, miss_map = operand(MISS_BOXES)
    conditions, launches = {}, {}
    for name, streamers, kind, depth, period in CONDITIONS:
        ctas = PROBES + streamers
        stream_map, boxes = (hit_map, HIT_BOXES) if kind == "hit" else (miss_map, MISS_BOXES)
        runs = []
        for r in range(REPEATS + 1):     # the first warms the probes' panels into L2
            lat = torch.full((PROBES * PROBE_BOXES,), -1, dtype=torch.int32, device="cuda")
            stamps = torch.full((ctas * 8,), -1, dtype=torch.int64, device="cuda")
            flag = torch.zeros(1, dtype=torch.int32, device="cuda")
            Launch(loaded, (ctas, 1, 1), stream,
                   (hit_map.data_ptr(), stream_map.data_ptr(), lat.data_ptr(), stamps.data_ptr(), flag.data_ptr(),
                    PROBES, PROBE_BOXES, depth, period, boxes, int(kind == "miss")),
                   arg_types=(ctypes.c_int64,) * 5 + (ctypes.c_uint32,) * 6)()
            torch.cuda.synchronize()
            if r:
                runs.append({"lat": lat.cpu().tolist(), "stamps": stamps.view(-1, 8)[:, :7].cpu().tolist()})
        conditions[name] = {"streamers": streamers, "kind": kind, "depth": depth, "period": period}
        launches[name] = runs
        s = summarize_condition(runs)
        print(f"{name:24s} probe {s['probe_ns']:7.1f} ns (p90 {s['probe_p90_ns']:7.1f})  "
              f"{s['tbs']:6.2f} TB/s  distinct SMs {s['distinct_sms']}", flush=True)
    np.savez_compressed(path, record=json.dumps({
        "provenance": provenance(), "ptxas": log, "probes": PROBES, "box": BOX, "probe_boxes": PROBE_BOXES,
        "conditions": conditions, "launches": launches}))


def summarize_condition(runs: list[dict]) -> dict:
    """A condition's launches: the probes' latencies in ns (each probe's clocks over its own ns),
    the bytes a ns every CTA moved over its own span, summed (TB/s), and whether every CTA had
    an SM of its own."""
    lat_ns, tbs, distinct = [], [], True
    for run in runs:
        stamps = run["stamps"]
        distinct &= len({s[0] for s in stamps}) == len(stamps)
        per = len(run["lat"]) // sum(1 for s in stamps if s[1])     # boxes a probe
        for c, (sm, probe, g0, g1, c0, c1, n) in enumerate(stamps):
            if probe:
                ghz = (c1 - c0) / max(1, g1 - g0)
                lat_ns.extend(x / ghz for x in run["lat"][c * per:(c + 1) * per])
        tbs.append(sum(s[6] * BOX / max(1, s[3] - s[2]) for s in stamps) / 1e3)
    lat_ns.sort()
    return {"probe_ns": statistics.median(lat_ns), "probe_p90_ns": lat_ns[int(0.9 * (len(lat_ns) - 1))],
            "probe_n": len(lat_ns), "tbs": statistics.median(tbs), "distinct_sms": distinct}


def summarize(path: Path) -> dict:
    rec = json.loads(str(np.load(path)["record"]))
    rows = []
    for name, c in rec["conditions"].items():
        rows.append({"condition": name, **c, **summarize_condition(rec["launches"][name])})
    hits = [r for r in rows if r["kind"] == "hit"]
    l0, capacity = fit_one_queue([r["tbs"] * 1e3 for r in hits], [r["probe_ns"] for r in hits])
    for r in rows:
        r["one_queue_ns"] = one_queue_ns(l0, capacity, r["tbs"] * 1e3)
    return {"provenance": rec["provenance"], "rows": rows, "l0_ns": l0, "capacity_tbs": capacity / 1e3,
            "reach_tbs": max(r["tbs"] for r in hits)}


def fit_line(s: dict) -> str:
    """The fit in words. A capacity well past the fastest hit condition is no measured ceiling: the
    latency stayed flat over the loads the streamers reached, and the form extrapolates."""
    line = f"one queue fitted to the hit conditions: L0 {s['l0_ns']:.0f} ns, R {s['capacity_tbs']:.2f} TB/s"
    if s["capacity_tbs"] > BEYOND_REACH * s["reach_tbs"]:
        line += f" (past the hits' reach, {s['reach_tbs']:.2f} TB/s: not a measured ceiling)"
    return line


def report(s: dict) -> None:
    print(fit_line(s))
    print(f"{'condition':24s} {'TB/s':>6s} {'probe ns':>9s} {'p90':>7s} {'one queue':>9s} distinct SMs")
    for r in s["rows"]:
        print(f"{r['condition']:24s} {r['tbs']:6.2f} {r['probe_ns']:9.1f} {r['probe_p90_ns']:7.1f} "
              f"{r['one_queue_ns']:9.1f} {r['distinct_sms']}")


def csv_rows(s: dict, record: Path) -> tuple[list[dict], str]:
    return cli.rounded(s["rows"], 2), (f"L2 hit latency under load, {fit_line(s)}; "
                                       f"python -m experiments.research.l2_loaded_latency --summarize {record}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, report, csv_rows, argv)


if __name__ == "__main__":
    main()
