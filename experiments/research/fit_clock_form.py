"""The clock form (sim/clock.py) fitted on one activity run's calibration kernels and tested on
its held-out ones (docs/research/notes.md 58-59; no GPU):

  python -m experiments.research.fit_clock_form experiments/results/h200-sxm/logs/run48 [--csv FILE] [--write]

The run (experiments/research/activity.py under Nsight Compute, `experiments/research/device.sh activity run48`) holds each
kernel's counted clock, tensor use per clock, L2 -> SM and DRAM traffic. Each form (g from 2 to
3.5, the L2 term flat or on the SM's voltage) is fitted on the calibration kernels the limit
holds below the top clock (activity.CALIBRATION: WGMMA-only loops and GEMMs that are not the
seed's); the form with the lowest calibration rms is the one chosen, never by the held-out
kernels (activity.HELD_OUT: the seed's V1 / V2 / V3 and padded variants). `--write` puts the
chosen form into sim/profiles/h200-sxm.json (and h100-sxm.json, an assumed transfer).
"""
from __future__ import annotations

import argparse
import statistics as st
from pathlib import Path

import numpy as np

from experiments.paths import write_csv
from experiments.research.activity import (CALIBRATION, CAPPED_BELOW, HELD_OUT, TOP_CLOCK, kernel_activities,
                                           top_clock)
from sim import clock
from sim.hardware import load_profile, write_profile_parameters


def clock_fits(acts: dict) -> list[dict]:
    """Each form fitted on the capped CALIBRATION kernels; every kernel's clock solved from its
    own measured activity per clock; errors on the calibration set and on HELD_OUT."""
    prof = load_profile("h200-sxm")
    calib = [k for k in CALIBRATION if k in acts and acts[k]["f"] < CAPPED_BELOW]
    out = []
    for g in (2.0, 2.5, 3.0, 3.5):
        for volt in (False, True):
            c = clock.fit([(acts[k]["u"], acts[k]["L"], acts[k]["H"], acts[k]["f"]) for k in calib], g,
                          l2_on_voltage=volt)
            got = {k: clock.earned_clock(a["u"], a["L"], a["H"], a["f"], c, g, top_clock(a, prof), l2_on_voltage=volt)
                   for k, a in acts.items()}
            err = {k: got[k] / acts[k]["f"] - 1 for k in acts}
            held = [abs(err[k]) for k in HELD_OUT if k in err]
            out.append({"g": g, "l2_on_voltage": volt, "coef": c.tolist(), "calibration": calib,
                        "calibration_rms": float(np.sqrt(np.mean([err[k] ** 2 for k in calib]))),
                        "held_out_median": st.median(held) if held else None,
                        "held_out_max": max(held) if held else None, "clock": got, "err": err})
    return out


def best_fit(fits: list[dict]) -> dict:
    """The form chosen on the calibration set alone (its rms clock error), never on the held-out kernels."""
    return min(fits, key=lambda f: f["calibration_rms"])


def report(acts: dict, out_csv: Path | None, dirs=()) -> dict:
    """Print each form's errors and each kernel's clock; write them to `out_csv`; return the chosen form."""
    fits = clock_fits(acts)
    print(f"{len(acts)} kernels; the form fitted on {len(fits[0]['calibration'])} capped calibration kernels")
    for fit in fits:
        print(f"g={fit['g']} L2 {'on the voltage' if fit['l2_on_voltage'] else 'flat':14s} calibration rms "
              f"{100 * fit['calibration_rms']:4.1f}% | held out |err| median {100 * fit['held_out_median']:4.1f}% "
              f"max {100 * fit['held_out_max']:4.1f}%")
    best = best_fit(fits)
    print(f"best on the calibration set: g={best['g']}, L2 {'on the voltage' if best['l2_on_voltage'] else 'flat'}; "
          "each kernel's counted clock, measured -> from the form:")
    for k, a in acts.items():
        tag = "held out" if k in HELD_OUT else "calib" if k in best["calibration"] else "top" if k in TOP_CLOCK else "-"
        print(f"  {k:30s} {tag:8s} u {a['u']:.2f} L2 {a['L']:5.2f} DRAM {a['H']:4.2f} TB/s  {a['f']:.3f} -> "
              f"{best['clock'][k]:.3f} ({100 * best['err'][k]:+.1f}%)")
    if out_csv:
        rows = [{"kernel": k, "set": "held_out" if k in HELD_OUT else "calibration" if k in best["calibration"]
                 else "top_clock" if k in TOP_CLOCK else "other", **{q: round(v, 4) for q, v in a.items()},
                 **{f"clock g={f['g']} {'volt' if f['l2_on_voltage'] else 'flat'}": round(f["clock"][k], 4)
                    for f in fits}} for k, a in acts.items()]
        write_csv(out_csv, rows, "counted clock f (GHz), tensor use u, L2 -> SM and DRAM TB/s per kernel under "
                      "Nsight Compute, and the clock each form fitted on the calibration kernels gives; python -m "
                      "experiments.research.fit_clock_form " + " ".join(str(d) for d in dirs))
    return best


def write_profiles(best: dict, dirs) -> None:
    if best["l2_on_voltage"]:
        raise SystemExit("the chosen form has the L2 term on the SM's voltage, which sim/clock.py's profile form "
                         "does not carry: not written")
    runs = ", ".join(str(d) for d in dirs)
    source = (f"[measured] python -m experiments.research.fit_clock_form {runs} --write (Nsight Compute 2025.3.1, clock left "
              f"alone, NVIDIA H200, driver 580.159.04): c_t SMs u (f/1.8)^g + c_l L2->SM TB/s + c_d DRAM TB/s = 1 "
              f"fitted on {len(best['calibration'])} capped calibration kernels (WGMMA-only loops; V4, V5, 128x192, "
              f"64x256 and row-raster GEMMs), g and the L2 term chosen by the calibration rms "
              f"({100 * best['calibration_rms']:.1f}%); the seed's kernels held out: median "
              f"{100 * best['held_out_median']:.1f}%, max {100 * best['held_out_max']:.1f}%")
    params = {"clock_form_coef": [round(float(c), 6) for c in best["coef"]], "clock_form_g": best["g"]}
    for name in ("h200-sxm", "h100-sxm"):
        prov = source if name == "h200-sxm" else (
            "[assumed transfer] the H200's form (same GH100 die, same 700 W SXM limit; HBM3 there, HBM3e here). " + source)
        print("wrote", write_profile_parameters(name, params, {k: prov for k in params}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", metavar="DIR", help="activity runs (ncu.csv and labels.json)")
    ap.add_argument("--csv", type=Path, help="write each kernel's activity and the clock each form gives it")
    ap.add_argument("--write", action="store_true", help="write the chosen form into sim/profiles/*.json")
    args = ap.parse_args(argv)
    best = report(kernel_activities(args.runs), args.csv, args.runs)
    if args.write:
        write_profiles(best, args.runs)


if __name__ == "__main__":
    main()
