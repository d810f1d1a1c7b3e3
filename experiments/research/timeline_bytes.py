"""Which kernels lose L2 reuse, predicted by the GPU-wide timeline, against Nsight Compute.
python -m experiments.research.timeline_bytes [--only NAME ...]

sim/timeline.py runs every CTA of an 8192^3 launch, one event per K step, on SMs whose L2
feed differs as the load-only loops measured it (l2_feed_by_sm), through one LRU L2 of the
capacity the L2 sweep measured (l2_lru_bytes, run 24). No GPU, and nothing here is fitted to
the bytes it is set beside: the feed map and dispatch order come from the load-only loops'
stamps (run 23), timeline_miss_port_factor from the four 128x128x64 load-only loops' times
(the rows marked "held in"; `--calibrate` repeats that scan), the rest from the profile.

Rows (8192 x 8192 x K fp16, experiments/results/h200-sxm):
  load loop   the WGMMA-free loops: DRAM bytes (hbm_bytes.csv, run 19) and time
              (load_loop*.csv: 20 warm-up runs, median of 30, at 1.97-1.98 GHz);
  same launch the GEMMs whose DRAM bytes and per-CTA stamps come from one launch (run 29):
              the span from first start to last end, and the spread of the last wave's
              start times (5-95%), measured and simulated;
  ncu only    the other kernels Nsight Compute measured (runs 17, 18, 20), bytes only;
  back to back the seed's own protocol, no profiler (run 31, launch_spread.csv): each kernel
              alone after 20 warm-ups, ten launches; the bytes are the LRU replay of each
              launch's stamps (the replay is within 3% of Nsight Compute for 10 of 11 kernels
              in run 29), the median of the ten (measured_gb; min-max in measured_gb_range),
              the time the median event time.
The GEMMs ran at 1.1-1.55 GHz under the profiler and 1.18-1.48 back to back, the model at the
profile's 1.30 GHz, so spans are a side view; bytes are the test.
Writes experiments/results/h200-sxm/timeline_bytes.csv.
"""
from __future__ import annotations

import argparse
import csv
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from tqdm import tqdm

from experiments import catalog
from experiments.paths import read_rows, results_dir
from experiments.research.hbm_compare import read_ncu
from experiments.research.l2_same_launch import KERNELS as SAME_LAUNCH
from sim import timeline
from sim.engines import memory_traffic, residency
from sim.hardware import load_profile
from sim.l2cache import probe_timeline, wave_start_spreads

RESULTS = results_dir()
GPU = "h200-sxm"
HELD_IN = {"load loop 128x128x64 s1", "load loop 128x128x64 s2", "load loop 128x128x64 s3",
           "load loop 128x128x64 s4"}


def _ncu_gb() -> dict:
    return {(r["run"], r["kernel"]): float(r["dram_read_gb"]) for r in read_rows(RESULTS / "hbm_bytes.csv")}


def load_loop_jobs(ncu) -> list[dict]:
    """The load-only loops with both a time and Nsight Compute's DRAM bytes (column order
    unless named "row"; the v3 loops were timed in row order, the same for a square tile)."""
    timed = {}
    for name in ("load_loop.csv", "load_loop_raster.csv", "load_loop_versions.csv"):
        for r in read_rows(RESULTS / name):
            key = r["schedule"]
            raster = r.get("raster", "column")
            if name == "load_loop_raster.csv":
                key = key.replace(" column", "") if raster == "column" else f"{key} row"
            timed.setdefault(key, r)
    jobs = []
    for name, s in catalog.schedules(catalog.LOAD_LOOPS).items():
        if name in timed and ("run19", name) in ncu:
            r = timed[name]
            jobs.append({"group": "load loop", "kernel": name, "schedule": s, "k": 8192,
                         "ctas_per_sm": int(r["ctas_per_sm"]), "mmas": False,
                         "measured_gb": ncu[("run19", name)], "measured_us": 1e3 * float(r["ms"]),
                         "role": "held in" if name in HELD_IN else "held out"})
    return jobs


def gemm_jobs(ncu) -> list[dict]:
    jobs = []
    logs = RESULTS / "logs" / "run29"  # one profiler pass: stamps and bytes of the same run
    probes = np.load(logs / "probes.npz")
    for (name, key, k), m in zip(SAME_LAUNCH, read_ncu(logs / "ncu.csv")):
        starts, durations = probe_timeline(probes[name])
        jobs.append({"group": "same launch (run 29)", "kernel": name, "schedule": catalog.schedule(key), "k": k,
                     "measured_gb": m["dram__bytes_read.sum"] / 1e9,
                     "measured_us": float((starts + durations).max()),
                     "measured_last_wave_spread_us": _last_wave_spread(starts, catalog.schedule(key)),
                     "role": "held out"})
    seen = {(j["kernel"]) for j in jobs}
    for (run, kernel), gb in sorted(ncu.items()):
        if run == "run19" or kernel in seen:
            continue
        name, _, kk = kernel.partition(" k=")
        if name not in catalog.GEMMS:
            continue
        jobs.append({"group": f"ncu only ({run})", "kernel": kernel, "schedule": catalog.schedule(name),
                     "k": int(kk or 8192), "measured_gb": gb, "role": "held out"})
    return jobs + back_to_back_jobs()


def back_to_back_jobs() -> list[dict]:
    """Run 31 (experiments.research.launch_spread): per kernel the median over ten launches."""
    by: dict[str, list[dict]] = {}
    for r in read_rows(RESULTS / "launch_spread.csv"):
        by.setdefault(r["kernel"], []).append(r)
    jobs = []
    for name, rows in by.items():
        gb = [float(r["replayed_dram_gb"]) for r in rows]
        jobs.append({"group": "back to back (run 31)", "kernel": name, "schedule": catalog.schedule(name), "k": 8192,
                     "measured_gb": float(np.median(gb)), "measured_gb_range": f"{min(gb):.2f}-{max(gb):.2f}",
                     "measured_us": 1e3 * float(np.median([float(r["event_ms"]) for r in rows])),
                     "role": "held out"})
    return jobs


def _last_wave_spread(starts_us, s) -> float:
    prof = load_profile(GPU)
    return float(wave_start_spreads(starts_us, prof.sm_count * residency(s, prof)["ctas_per_sm"])[-1])


def simulate(job: dict) -> dict:
    s, k = job["schedule"], job["k"]
    prof = load_profile(GPU)
    r = timeline.run(s, 8192, 8192, k, prof, ctas_per_sm=job.get("ctas_per_sm"), mmas=job.get("mmas", True))
    per_wave = prof.sm_count * r["ctas_per_sm"]
    row = {"group": job["group"], "kernel": job["kernel"], "k": k, "role": job["role"],
           "ctas_per_sm": r["ctas_per_sm"], "prefetch_depth": r["prefetch_depth"],
           "measured_gb": round(job["measured_gb"], 3), "measured_gb_range": job.get("measured_gb_range", ""),
           "per_wave_gb": round(memory_traffic(s, 8192, 8192, k, per_wave)["hbm_read_bytes"] / 1e9, 3),
           "timeline_gb": round(r["hbm_read_bytes"] / 1e9, 3)}
    row["timeline_over_measured"] = round(row["timeline_gb"] / row["measured_gb"], 3)
    if "measured_us" in job:
        row["measured_us"] = round(job["measured_us"], 1)
        row["timeline_us"] = round(r["span_ns"] / 1e3, 1)
        row["span_error_pct"] = round(100 * (row["timeline_us"] / row["measured_us"] - 1), 1)
    if "measured_last_wave_spread_us" in job:
        starts = r["starts_ns"] / 1e3
        row["measured_last_wave_spread_us"] = round(job["measured_last_wave_spread_us"], 1)
        row["timeline_last_wave_spread_us"] = round(_last_wave_spread(starts, s), 1)
    return row


FACTORS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def _span_error(job_and_factor) -> float:
    job, factor = job_and_factor
    r = timeline.run(job["schedule"], 8192, 8192, job["k"], GPU, ctas_per_sm=job["ctas_per_sm"], mmas=False,
                     miss_port_factor=factor)
    return 100 * (r["span_ns"] / 1e3 / job["measured_us"] - 1)


def calibrate(jobs: int) -> float:
    """timeline_miss_port_factor: the value in FACTORS whose largest span error on the held-in
    load-only loops is smallest (their times only; no GEMM, no DRAM bytes)."""
    held = [j for j in load_loop_jobs(_ncu_gb()) if j["role"] == "held in"]
    grid = [(j, f) for f in FACTORS for j in held]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        errs = list(pool.map(_span_error, grid))
    worst = {}
    for (j, f), e in zip(grid, errs):
        worst[f] = max(worst.get(f, 0.0), abs(e))
        print(f"factor {f:.1f}  {j['kernel']:28s} span error {e:+6.1f}%")
    best = min(worst, key=worst.get)
    print("largest error by factor:", {f: round(e, 1) for f, e in worst.items()}, f"-> {best}")
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="kernel names to run (default: all)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--calibrate", action="store_true",
                    help="only scan timeline_miss_port_factor on the held-in load-only loops' times")
    args = ap.parse_args(argv)
    if args.calibrate:
        calibrate(args.jobs)
        return
    ncu = _ncu_gb()
    jobs = load_loop_jobs(ncu) + gemm_jobs(ncu)
    if args.only:
        jobs = [j for j in jobs if j["kernel"] in args.only]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(tqdm(pool.map(simulate, jobs), total=len(jobs), desc="GPU-wide timelines", unit="launch"))
    fields = list(dict.fromkeys(k for r in rows for k in r))
    if not args.only:
        out = RESULTS / "timeline_bytes.csv"
        with out.open("w", newline="") as f:
            f.write("# DRAM read GB of 8192x8192xK fp16 launches: measured (Nsight Compute; run 31: LRU replay of "
                    "the stamps of ten back-to-back launches, median) against sim.timeline "
                    "(GPU-wide K-step timeline, per-SM L2 feed map, LRU L2) and the per-wave estimate; "
                    "python -m experiments.research.timeline_bytes\n")
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {out}")
    print(f"{'group':22s} {'kernel':30s} {'K':>5s} {'meas GB':>7s} {'per-wave':>8s} {'timeline':>8s} "
          f"{'t/meas':>6s}  span us meas/model (err)   last-wave spread us meas/model")
    for r in rows:
        span = (f"  {r['measured_us']:7.0f}/{r['timeline_us']:7.0f} ({r['span_error_pct']:+5.1f}%)"
                if "measured_us" in r else "")
        spread = (f"   {r['measured_last_wave_spread_us']:5.0f}/{r['timeline_last_wave_spread_us']:5.0f}"
                  if "measured_last_wave_spread_us" in r else "")
        print(f"{r['group']:22s} {r['kernel']:30s} {r['k']:5d} {r['measured_gb']:7.3f} {r['per_wave_gb']:8.3f} "
              f"{r['timeline_gb']:8.3f} {r['timeline_over_measured']:6.2f}{span}{spread}"
              + ("  [held in]" if r["role"] == "held in" else ""))


if __name__ == "__main__":
    main()
