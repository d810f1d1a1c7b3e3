"""Does an LRU L2 explain the DRAM bytes, given when the CTAs really ran?
python -m experiments.research.l2_replay

Replays two kinds of timeline through sim.l2cache (an LRU of the L2's capacity over the
K slices every CTA reads, and the C tiles it writes) and sets the HBM read bytes it
counts beside Nsight Compute's dram__bytes_read (experiments/results/<gpu>/hbm_bytes.csv):

  same launch  every CTA's start and end as the clock probe recorded them on the H200 in
            the very launch Nsight Compute measured (run 29, logs/run29: probes.npz and ncu.csv
            from `bash experiments/research/device.sh same-launch`, one replay pass); progress taken as
            uniform over each CTA's K loop. Runs 22 and 28 did the same with a metric set
            that took 3 replay passes: their stamps are the last pass's, their bytes perhaps
            another's (docs/research/notes.md item 31), listed as "3-pass launch".
  other launch  the same for run 18's stamps (`calibrate_clock --dump`), set beside that
            run's Nsight Compute bytes of another launch of the kernel (ncu at base clocks).
  lockstep  full waves that start together (sim.l2cache.lockstep_timeline): what the
            model's per-wave figure assumes, at K = 1024 ... 8192 (run 20).

It also prints how the CTAs spread in time, wave by wave: the 5-95% spread of the start
times of each wave's CTAs, and the slope of duration on start offset within a wave (> 0: a
CTA that starts late also runs longer, so the spread grows; < 0: it catches up).
Writes experiments/results/<gpu>/l2_replay.csv. No GPU needed.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from experiments import catalog
from experiments.paths import RESULTS, read_rows
from experiments.research.hbm_compare import read_ncu
from experiments.research.l2_same_launch import KERNELS as SAME_LAUNCH
from sim.engines import grid, memory_traffic, residency
from sim.hardware import load_profile
from sim.l2cache import lockstep_timeline, probe_timeline, replay, wave_start_spreads

# the clock probe's kernel names (calibrate_clock) -> the Nsight Compute rows (hbm_bytes)
PROBED = {"v1 128x128x64": "v1", "v2 128x128x64 s2": "v2", "v2 128x128x64 s2 local": "v2-local",
          "v2 128x128x64 s3": "v2 s3", "v3 128x128x64 s2": "v3 s2", "v3 128x128x64 s3": "v3 s3"}
MB = 1 << 20
# MiB: 25, the L2 sweep's capacity for lines two SMs read (l2_lru_bytes, run 24: 34.6), 50
CAPACITIES_MB = (25, round(load_profile("h200-sxm").l2_lru_bytes / MB, 1), 50)


def spread_by_wave(starts_us, dur_us, per_wave):
    """(5-95% start spread, slope of duration on start offset) for each wave after the first."""
    spreads = wave_start_spreads(starts_us, per_wave)
    out = []
    for w in range(1, len(spreads)):
        blk = slice(w * per_wave, (w + 1) * per_wave)
        off = starts_us[blk] - np.median(starts_us[blk])
        dd = dur_us[blk] - np.median(dur_us[blk])
        slope = float(np.polyfit(off, dd, 1)[0]) if off.std() > 0 else 0.0
        out.append((spreads[w], slope))
    return out


def stamped_row(timeline, kernel, s, k, rec, ncu_gb, gpu) -> dict:
    """Replay one launch's per-CTA stamps (clock0, ns0, clock1, ns1, smid per CTA)."""
    prof = load_profile(gpu)
    starts, durations = probe_timeline(rec)
    per_wave = prof.sm_count * residency(s, prof)["ctas_per_sm"]
    sp = spread_by_wave(starts, durations, per_wave)
    row = {"timeline": timeline, "kernel": kernel, "k": k, "ncu_gb": ncu_gb,
           "per_wave_gb": round(memory_traffic(s, 8192, 8192, k, per_wave)["hbm_read_bytes"] / 1e9, 3)}
    for cap in CAPACITIES_MB:
        got = replay(s, 8192, 8192, k, starts, durations, cap * MB)["hbm_read_bytes"]
        row[f"replay_{cap}mb_gb"] = round(got / 1e9, 3)
    row["late_start_slope_median"] = round(float(np.median([x[1] for x in sp])), 2)
    row["spread_by_wave_us"] = " ".join(f"{x[0]:.0f}" for x in sp)
    return row


def same_launch_rows(gpu, results):
    rows = []
    # runs 22 and 28 measured with 3 replay passes (the stamps are the last pass's, the bytes
    # maybe another's); run 29 with one pass: stamps and bytes of one and the same run
    for run, label in (("run29", "same launch (run 29)"), ("run22", "3-pass launch (run 22)"),
                       ("run28", "3-pass launch (run 28)")):
        logs = results / gpu / "logs" / run
        probes = np.load(logs / "probes.npz")
        rows += [stamped_row(label, name, catalog.schedule(key), k, probes[name],
                             round(m["dram__bytes_read.sum"] / 1e9, 3), gpu)
                 for (name, key, k), m in zip(SAME_LAUNCH, read_ncu(logs / "ncu.csv"))]
    return rows


def other_launch_rows(gpu, results):
    ncu = _ncu_gb(results / gpu / "hbm_bytes.csv")
    probes = np.load(results / gpu / "logs" / "run18" / "probes.npz")
    return [stamped_row("other launch (run 18)", kernel, catalog.schedule(kernel), 8192, probes[name],
                        ncu.get(("run18", kernel)), gpu)
            for name, kernel in PROBED.items()]


def lockstep_rows(gpu, results):
    ncu = _ncu_gb(results / gpu / "hbm_bytes.csv")
    prof = load_profile(gpu)
    rows = []
    for (run, kernel), gb in ncu.items():
        if run != "run20":
            continue
        name, k = kernel.split(" k=")
        k = int(k)
        s = catalog.schedule(name)
        tm, tn = grid(s, 8192, 8192)
        per_wave = prof.sm_count * residency(s, prof)["ctas_per_sm"]
        starts, durations = lockstep_timeline(tm * tn, per_wave, 100.0)
        row = {"timeline": "lockstep waves", "kernel": name, "k": k, "ncu_gb": gb,
               "per_wave_gb": round(memory_traffic(s, 8192, 8192, k, per_wave)["hbm_read_bytes"] / 1e9, 3)}
        for cap in CAPACITIES_MB:
            got = replay(s, 8192, 8192, k, starts, durations, cap * MB, slices_per_step=4)["hbm_read_bytes"]
            row[f"replay_{cap}mb_gb"] = round(got / 1e9, 3)
        rows.append(row)
    return rows


def _ncu_gb(path: Path) -> dict:
    return {(r["run"], r["kernel"]): float(r["dram_read_gb"]) for r in read_rows(path)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h200-sxm")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    rows = (same_launch_rows(args.gpu, args.results) + other_launch_rows(args.gpu, args.results)
            + lockstep_rows(args.gpu, args.results))
    out = args.results / args.gpu / "l2_replay.csv"
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with out.open("w", newline="") as f:
        f.write("# HBM read GB: Nsight Compute (hbm_bytes.csv) against an LRU replay of the CTAs' timeline "
                "(sim/l2cache.py) at 25/35/50 MB; python -m experiments.research.l2_replay\n")
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    caps = [f"LRU {c}MB" for c in CAPACITIES_MB]
    print(f"{'timeline':24s} {'kernel':16s} {'K':>5s} {'ncu GB':>7s} {'per-wave':>8s} " +
          " ".join(f"{c:>9s}" for c in caps) + "  start spread by wave (us) | late-start slope")
    for r in rows:
        tail = (f"  {r['spread_by_wave_us']} | {r['late_start_slope_median']:+.2f}"
                if "spread_by_wave_us" in r else "")
        print(f"{r['timeline']:24s} {r['kernel']:16s} {r['k']:5d} {r['ncu_gb']:7.3f} {r['per_wave_gb']:8.3f} " +
              " ".join(f"{r[f'replay_{c}mb_gb']:9.3f}" for c in CAPACITIES_MB) + tail)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
