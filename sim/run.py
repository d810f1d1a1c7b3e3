"""python -m sim.run: predict one GEMM schedule on one GPU profile.

With no flags it models the seed's case: V2, H100 SXM, 8192^3 fp16, 128x128x64, 2 stages.
Flags left out take the chosen version's values; a flag given overrides it.
"""
from __future__ import annotations

import argparse
import json
import sys

from gemm.schedule import ACCUMULATE, EPILOGUES, K_ORDERS, PRESETS, RASTERS, ScheduleError, preset

from .hardware import PROFILES, load_profile
from .model import _CATEGORY_NAMES, predict
from .reuse import replayable
from .schedules import model_schedule
from .timeline import prefetch_depth, summary as timeline_summary

# flag -> Schedule field
_KNOBS = {"stages": "stages", "sync_per_iter": "syncs_per_iter", "consumer_warpgroups": "consumer_warpgroups",
          "producer_warps": "producer_warps", "wgmma_in_flight": "wgmma_in_flight", "raster": "raster",
          "raster_group": "raster_group", "k_order": "k_order", "epilogue": "epilogue", "family": "family",
          "runtime_stage_index": "runtime_stage_index", "phase_storage": "phase_storage",
          "persistent": "persistent", "cluster_m": "cluster_m", "cluster_n": "cluster_n",
          "producer_registers": "producer_registers", "consumer_registers": "consumer_registers",
          "accumulate": "accumulate", "split_k": "split_k", "swap_ab": "swap_ab",
          "stream_k": "stream_k", "stream_k_waves": "stream_k_waves"}
_BOOLEAN = ("runtime_stage_index", "persistent", "swap_ab", "stream_k")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sim.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", choices=sorted(PROFILES), default="h100-sxm")
    p.add_argument("--version", choices=sorted(PRESETS), default="v2", help="preset to start from (default v2)")
    p.add_argument("--m", type=int, default=8192)
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16")
    p.add_argument("--block", metavar="MxNxK", help="tile, e.g. 128x128x64")
    p.add_argument("--stages", type=int, help="shared-memory ring depth")
    p.add_argument("--sync-per-iter", type=int, help="block-wide barriers per K iteration")
    p.add_argument("--family", choices=("serial", "ring", "specialized"))
    p.add_argument("--consumer-warpgroups", type=int)
    p.add_argument("--producer-warps", type=int)
    p.add_argument("--wgmma-in-flight", type=int, help="N of wgmma.wait_group(N) in the main loop")
    p.add_argument("--raster", choices=RASTERS)
    p.add_argument("--raster-group", type=int)
    p.add_argument("--k-order", choices=K_ORDERS,
                   help="persistent: 'serpentine' walks K backward on a CTA's odd units (the L2 keeps what the "
                        "wave before shared)")
    p.add_argument("--epilogue", choices=EPILOGUES)
    p.add_argument("--runtime-stage-index", type=int, choices=(0, 1), help="1: stage index computed at run time (V2)")
    p.add_argument("--phase-storage", choices=("register", "local"),
                   help="V2's per-stage phases: bits of one register, or the tutorial's local-memory array")
    p.add_argument("--persistent", type=int, choices=(0, 1),
                   help="1: one CTA per SM slot walks the tiles; the producer loads the next tile during the epilogue")
    p.add_argument("--cluster-m", type=int, help="CTAs per cluster along M (they multicast each B tile)")
    p.add_argument("--cluster-n", type=int, help="CTAs per cluster along N (they multicast each A tile)")
    p.add_argument("--producer-registers", type=int, help="setmaxnreg: the producer warpgroup's registers")
    p.add_argument("--consumer-registers", type=int, help="setmaxnreg: each consumer warpgroup's registers")
    p.add_argument("--accumulate", choices=ACCUMULATE, help="WGMMA accumulator type")
    p.add_argument("--split-k", type=int, help="K slices: fp32 partials, summed in shares by each tile's CTAs")
    p.add_argument("--swap-ab", type=int, choices=(0, 1), help="1: compute C^T = B^T A^T (a small M becomes WGMMA's N)")
    p.add_argument("--stream-k", type=int, choices=(0, 1),
                   help="1: share the last partial wave's tiles (and --stream-k-waves before) out by K iteration")
    p.add_argument("--stream-k-waves", type=int, help="stream-K: full waves shared besides the partial one (default 1)")
    p.add_argument("--batch", type=int, default=1, help="independent products in one launch (grid = tiles x batch)")
    p.add_argument("--registers", type=int, help="the built kernel's registers per thread (ptxas), for residency, "
                   "instead of the model's estimate")
    p.add_argument("--clock-ghz", type=float, help="override the profile's sustained SM clock")
    p.add_argument("--earned-clock", action="store_true",
                   help="run at the clock this schedule's own activity earns (sim/clock.py: the limit that "
                        "sets a GEMM's clock from its first launches), not the profile's one clock")
    p.add_argument("--hbm-read-gb", type=float, metavar="GB",
                   help="what-if: the A/B bytes read from HBM (e.g. Nsight Compute's dram__bytes_read), "
                        "instead of the model's estimate")
    p.add_argument("--grid-timeline", action="store_true",
                   help="run the GPU-wide K-step timeline (sim/timeline.py, a few seconds): its HBM bytes "
                        "replace the model's estimate, and its span and spread are reported")
    p.add_argument("--per-wave", action="store_true",
                   help="count the HBM bytes as if every panel's sharers read it together (once per wave), "
                        "instead of sim/convoy.py's default: per wave while a miss's latency holds them "
                        "together, else those of free-running CTAs replayed through L2 (about 0.2 s)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--trace", metavar="FILE", help="write one CTA's timeline as a Chrome/Perfetto trace")
    p.add_argument("--stages-table", action="store_true",
                   help="also predict every stage count that fits: CTAs per SM and TFLOPS")
    return p


def build_schedule(a: argparse.Namespace):
    over = {}
    for flag, fld in _KNOBS.items():
        v = getattr(a, flag)
        if v is not None:
            over[fld] = bool(v) if fld in _BOOLEAN else v
    if a.block:
        try:
            bm, bn, bk = (int(x) for x in a.block.lower().split("x"))
        except ValueError:
            raise ScheduleError(f"--block must look like 128x128x64, got {a.block!r}") from None
        over.update(block_m=bm, block_n=bn, block_k=bk)
    base = preset(a.version)
    changed = {f: v for f, v in over.items() if getattr(base, f) != v}  # a flag at the preset's value changes nothing
    return model_schedule(base, **over, name=f"{a.version}+custom" if changed else a.version)


def stages_table(s, a, gpu) -> list[dict]:
    rows = []
    for st in range(1, 9):
        try:
            fam = {"serial": "ring"}.get(s.family, s.family) if st > 1 else s.family
            sc, _ = model_schedule(s, stages=st, family=fam,
                                   wgmma_in_flight=min(s.wgmma_in_flight, st - 1))
        except ScheduleError:
            continue
        p = predict(sc, a.m, a.n, a.k, gpu=gpu, dtype=a.dtype, batch=a.batch)
        rows.append({"stages": st, "shared_kb": round(p.residency["smem_per_cta"] / 1024, 1),
                     "ctas_per_sm": p.ctas_per_sm, "limited_by": p.limited_by,
                     "limits": p.residency["limits"], "tflops": round(p.tflops, 1), "bound": p.bound})
    return rows


def report(p, table=None, grid=None) -> str:
    s, u, sh = p.schedule, p.utilization, p.shape
    extra = [f for f, on in (
        ("persistent", s["persistent"]), (f"cluster {s['cluster_m']}x{s['cluster_n']}", s["cluster_m"] * s["cluster_n"] > 1),
        (f"setmaxnreg {s['producer_registers']}/{s['consumer_registers']}", s["consumer_registers"]),
        (f"{s['accumulate']} accumulate", s["accumulate"] != "float32"), (f"split-K {s['split_k']}", s["split_k"] > 1),
        ("swap-AB", s["swap_ab"]), ("stream-K", s.get("stream_k")), (f"batch {sh.get('batch', 1)}", sh.get("batch", 1) > 1)) if on]
    c, lg = p.call, p.launch
    lines = [
        f"{s['name']} ({s['family']}) on {p.gpu} at {p.clock_ghz:.3f} GHz: "
        f"{sh['m']}x{sh['n']}x{sh['k']} {sh['dtype']}, tile {s['block_m']}x{s['block_n']}x{s['block_k']}, "
        f"{s['stages']} stage(s), {s['syncs_per_iter']} sync(s)/iter, {s['consumer_warpgroups']} consumer WG(s), "
        f"wgmma in flight {s['wgmma_in_flight']}, raster {s['raster']}, epilogue {s['epilogue']}"
        + "".join(f", {f}" for f in extra),
        f"  predicted      {p.ms:.3f} ms  {p.tflops:.0f} TFLOPS  ({p.pct_of_peak:.0f}% of the tensor peak at this clock, "
        f"{p.pct_of_datasheet_peak:.0f}% of the datasheet peak)",
        f"  one call       {p.timed_ms:.3f} ms  {p.timed_tflops:.0f} TFLOPS between CUDA events: host {c['host_ms'] * 1e3:.1f} us "
        f"+ device {c['device_ms'] * 1e3:.1f} us (GEMM kernel {c['kernel_ms'] * 1e3:.1f}"
        + (f", reduce {c['reduce_ms'] * 1e3:.1f}" if c["reduce_ms"] else "")
        + (f", operand copies {c['copy_ms'] * 1e3:.1f}" if c["copy_ms"] else "") + " us)",
        f"  grid           {lg['tiles']} tiles x {lg['k_slices']} K slice(s) x {lg['batch']} = {lg['units']} units "
        f"on {lg['ctas']} CTAs ({lg['units_per_cta']} unit(s) per CTA at most), {lg['busy_sms']} SMs busy",
        f"  residency      {p.ctas_per_sm} CTA(s)/SM, limited by {p.limited_by} "
        f"(smem {p.residency['limits']['smem']}, registers {p.residency['limits']['registers']} at "
        f"{p.residency['registers_per_thread']}/thread, threads {p.residency['limits']['threads']}); "
        f"{p.wave_info['ctas']} CTAs = {p.waves:.2f} waves",
        f"  utilization    tensor cores {100 * u['tensor']:.0f}%   TMA/L2->SM {100 * u['tma']:.0f}%   HBM {100 * u['hbm']:.0f}%",
        f"  bytes          L2->SM {p.bytes['l2_to_sm_bytes'] / 1e9:.2f} GB, HBM {p.bytes['hbm_bytes'] / 1e9:.2f} GB "
        f"(L2 hit rate {100 * p.bytes['l2_hit_rate']:.0f}%), TMA latency {p.bytes['tma_latency_ns']:.0f} ns",
        f"  bound          {p.bound}: {p.reason}",
        "  one CTA's time " + ", ".join(f"{_CATEGORY_NAMES.get(k, k) if k != 'wgmma_on_tensor_cores' else 'its WGMMAs on the tensor cores'} "
                                        f"{100 * v:.0f}%" for k, v in p.breakdown.items() if v >= 0.005),
    ]
    lines += [f"  note           {n}" for n in p.notes]
    if grid:
        lines.append(
            f"  GPU-wide       every CTA, one event per K step ({grid['feed_map']}): HBM read "
            f"{grid['hbm_read_bytes'] / 1e9:.2f} GB (per-wave estimate {grid['per_wave_hbm_read_bytes'] / 1e9:.2f}), "
            f"span {grid['span_ms']:.3f} ms ({grid['tflops']:.0f} TFLOPS), last wave's starts spread over "
            f"{grid['last_wave_start_spread_us']:.0f} us (prefetch depth {grid['prefetch_depth']})")
    if table:
        lines.append("  stages  smem/CTA  CTAs/SM (limited by)   TFLOPS  bound")
        for r in table:
            lines.append(f"  {r['stages']:>6}  {r['shared_kb']:>6.1f}K  {r['ctas_per_sm']:>3} ({r['limited_by']:<9})"
                         f"       {r['tflops']:>6.0f}  {r['bound']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    try:
        gpu = load_profile(a.gpu)
        if a.clock_ghz and a.earned_clock:
            raise ScheduleError("--clock-ghz and --earned-clock both set the clock: give one")
        if a.clock_ghz:
            import dataclasses
            gpu = dataclasses.replace(gpu, clock_ghz=a.clock_ghz)
        s, notes = build_schedule(a)
        hbm = None if a.hbm_read_gb is None else a.hbm_read_gb * 1e9
        grid = None
        if sum((a.grid_timeline, a.per_wave, hbm is not None)) > 1:
            raise ScheduleError("--grid-timeline, --per-wave and --hbm-read-gb each set the HBM bytes: give one")
        if a.grid_timeline:
            predict(s, a.m, a.n, a.k, gpu=gpu, dtype=a.dtype, reuse="per-wave", batch=a.batch)  # refuses what cannot run
            if not replayable(s, a.batch):
                raise ScheduleError("--grid-timeline runs one CTA per tile of one product: not a persistent, "
                                    "split-K, batched or swap-AB launch")
            grid = timeline_summary(s, a.m, a.n, a.k, gpu)
            hbm = grid["hbm_read_bytes"]
        if a.per_wave and prefetch_depth(s) >= 2:
            notes.append("HBM bytes per wave (--per-wave): the CTAs that share a panel are assumed to read it "
                         "together; with loads 2+ K steps ahead they can drift apart (the H200's V2 read 1.2-1.9x "
                         "these bytes in ten of ten launches, hbm_bytes.csv)")
        p = predict(s, a.m, a.n, a.k, gpu=gpu, dtype=a.dtype, batch=a.batch, registers=a.registers,
                    trace=bool(a.trace), notes=notes,
                    hbm_read_bytes=hbm, hbm_read_source="the GPU-wide timeline (--grid-timeline)"
                    if grid else "model-only what-if", clock="earned" if a.earned_clock else "profile",
                    reuse="per-wave" if a.per_wave else "convoy")
        table = stages_table(s, a, gpu) if a.stages_table else None
    except ScheduleError as e:
        ap.exit(2, f"{ap.prog}: error: {e}\n")
    if a.trace:
        with open(a.trace, "w") as f:
            json.dump(p.trace.chrome(p.clock_ghz, {"schedule": p.schedule, "gpu": p.gpu, "shape": p.shape}), f)
    if a.json:
        d = p.to_dict()
        if table is not None:
            d["stages_table"] = table
        if grid is not None:
            d["grid_timeline"] = grid
        print(json.dumps(d))
    else:
        print(report(p, table, grid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
