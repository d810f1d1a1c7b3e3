"""The scoreboard for a model of the L2 reuse rings lose (docs/research/notes.md 63-66, 72; no GPU):

  python -m experiments.research.dram_reuse [--csv experiments/results/h200-sxm/dram_reuse.csv]

Each GEMM profiled in runs 48, 52-54, 58, 61 and 62 (8192^3: run 52's rings padded down to fewer
CTAs per SM, activity.RESIDENCY; run 54's in a grouped raster, activity.GROUPED; run 53's plain
launches join run 48's, its padded rows are left out; held out of the convoy model, predicted
before the run: run 58's eight, activity.CONVOY, run 61's eight off 8192^3, activity.SHAPES, and
run 62's ten held kernels at K = 4096-24576, activity.LEAK): its DRAM read bytes over the
profiled launches beside the
model's per-wave estimate (sim.engines.memory_traffic), the GPU-wide timeline's
(sim/timeline.py) and the convoy model's (sim/convoy.py: held in convoy, so per-wave, or
free-running, so replayed), how many of each land in the measured range, and for how many
the convoy model's held / free-running matches kept / lost.
"""
from __future__ import annotations

import argparse
import math
import statistics as st
from pathlib import Path

from tqdm import tqdm

from experiments import catalog
from experiments.paths import write_csv
from experiments.research.activity import (CALIBRATION, CONVOY, GROUPED, HELD_OUT, LEAK, LOGS, M_FULL, RESIDENCY,
                                           SHAPES, labelled_launches)
from experiments.research.drift import LOST  # a GEMM whose every launch reads at most LOST x its per-wave bytes kept its reuse
from sim import convoy, timeline
from sim.engines import memory_traffic
from sim.hardware import load_profile

RUNS = ("run48", "run52", "run53", "run54", "run58", "run61", "run62")


def cases() -> dict[str, tuple]:
    """{label: (catalog name, M, N, K, CTAs per SM or None)}: the GEMMs of the scoreboard; run 52's
    rings at the residency their label names (padded down with unused shared memory)."""
    out = {n: (n, M_FULL, M_FULL, M_FULL, None) for n in CALIBRATION + HELD_OUT
           if catalog.entry(n).kind == "gemm" and not catalog.entry(n).pad_bytes}
    out.update({n: (name, m, n_, k, int(n[-1])) for n, (name, m, n_, k) in RESIDENCY.items()})
    out.update({n: (name, m, n_, k, None) for n, (name, m, n_, k) in {**GROUPED, **CONVOY, **SHAPES, **LEAK}.items()})
    return out


def dram_against_models(logs: Path = LOGS, gpu: str = "h200-sxm") -> list[dict]:
    """The scoreboard for a model of the reuse rings lose: each GEMM of runs 48, 52-54, 58, 61 and
    62 (at its residency; run 52's padded down), its DRAM read bytes over the profiled launches (min,
    median, max) beside the per-wave estimate, the GPU-wide timeline's and the convoy model's,
    whether every launch kept its reuse, and whether the convoy model holds it in convoy."""
    prof = load_profile(gpu)
    todo = cases()
    held_out = {**CONVOY, **SHAPES, **LEAK}
    seen: dict[str, list[float]] = {}
    for run in RUNS:
        for name, launch_ in labelled_launches(logs / run):
            if name in todo:
                seen.setdefault(name, []).append(launch_["dram__bytes_read.sum"] / 1e9)
    rows = []
    for label, (name, m, n, k, ctas) in tqdm(todo.items(), desc="GPU-wide timelines", unit="GEMM"):
        s = catalog.schedule(name)
        t = timeline.run(s, m, n, k, prof, ctas_per_sm=ctas)
        per_wave = memory_traffic(s, m, n, k, prof.sm_count * t["ctas_per_sm"])["hbm_read_bytes"] / 1e9
        v = seen[label]
        c = t["ctas_per_sm"]
        held = convoy.reuse(s, m, n, k, prof, c)
        rows.append({"kernel": label, "schedule": name, "m": m, "n": n, "k": k,
                     "ctas_per_sm": c, "stages": s.stages, "launches": len(v),
                     "measured_min_gb": round(min(v), 3), "measured_median_gb": round(st.median(v), 3),
                     "measured_max_gb": round(max(v), 3), "per_wave_gb": round(per_wave, 3),
                     "timeline_gb": round(t["hbm_read_bytes"] / 1e9, 3),
                     "measured_kept": max(v) <= LOST * per_wave,
                     "hidden_latency_ns": round(convoy.hidden_latency_ns(s, prof, c)),
                     "held_in_convoy": held["held"], "convoy_gb": round(held["hbm_read_bytes"] / 1e9, 3),
                     "convoy_held_out": label in held_out})
    return rows


def within(row: dict, key: str) -> bool:
    """The model's bytes (`key`) inside the measured range, +-3%."""
    return row["measured_min_gb"] * 0.97 <= row[key] <= row["measured_max_gb"] * 1.03


def median_log_error(rows, key: str) -> float:
    """The median over `rows` of |ln(the model's bytes / the measured median)|."""
    return st.median(abs(math.log(r[key] / r["measured_median_gb"])) for r in rows)


def classified(rows) -> int:
    """How many rows the convoy model calls right: held where every launch kept its reuse."""
    return sum(r["held_in_convoy"] == r["measured_kept"] for r in rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    rows = dram_against_models()
    for r in rows:
        print(f"{r['kernel']:24s} {r['ctas_per_sm']} CTA/SM  measured {r['measured_min_gb']:5.2f}-"
              f"{r['measured_max_gb']:5.2f} GB  per-wave {r['per_wave_gb']:5.2f}{' ok' if within(r, 'per_wave_gb') else '   '}"
              f"  timeline {r['timeline_gb']:5.2f}{' ok' if within(r, 'timeline_gb') else '   '}"
              f"  {'held' if r['held_in_convoy'] else 'free'} (hides {r['hidden_latency_ns']:4d} ns)"
              f" {r['convoy_gb']:5.2f}{' ok' if within(r, 'convoy_gb') else ''}")
    for key in ("per_wave_gb", "timeline_gb", "convoy_gb"):
        print(f"{key}: within the measured range (+-3%) for {sum(within(r, key) for r in rows)} of {len(rows)}")
    lost = [r for r in rows if not r["measured_kept"]]
    print(f"median |ln(model / measured median)| over the {len(lost)} GEMMs that lost reuse: "
          + ", ".join(f"{key} {median_log_error(lost, key):.2f}" for key in ("per_wave_gb", "timeline_gb", "convoy_gb")))
    spread = [r for r in rows if "grouped" not in r["kernel"] and not r["convoy_held_out"]]
    held_out = [r for r in rows if r["convoy_held_out"]]
    grouped = [r for r in rows if "grouped" in r["kernel"]]
    print(f"held in convoy (sim/convoy.py) where every launch kept its reuse, free-running where some lost it: "
          f"column and row raster {classified(spread)} of {len(spread)}, held out (runs 58, 61, 62) {classified(held_out)} of "
          f"{len(held_out)}, grouped raster (sharers launch together: even free-running CTAs keep most of it) "
          f"{classified(grouped)} of {len(grouped)}; wrong: "
          + ", ".join(f"{r['kernel']} ({'held' if r['held_in_convoy'] else 'free'}, hides {r['hidden_latency_ns']} ns)"
                      for r in rows if r["held_in_convoy"] != r["measured_kept"]))
    if args.csv:
        write_csv(args.csv, rows, "DRAM read bytes per launch under Nsight Compute (runs 48, 52-54, 58, 61 and 62; "
                      "8192^3 but runs 61 and 62; run 52's rings padded down to fewer CTAs per SM, run 54's in a grouped raster) against the model's per-wave estimate, "
                      "the GPU-wide timeline (sim/timeline.py) and the convoy model (sim/convoy.py: held in convoy or free-running, "
                      "the latency the ring hides at the profile clock; convoy_held_out: runs 58, 61 and 62, chosen and predicted after the criterion; runs 61-62 off 8192^3); measured_kept: every launch within 1.1x per-wave; "
                      "python -m experiments.research.dram_reuse")


if __name__ == "__main__":
    main()
