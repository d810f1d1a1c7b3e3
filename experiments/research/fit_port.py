"""The L2 -> SM port from the load-only loops with their measured misses, and the model given
each GEMM's DRAM bytes (docs/research/notes.md 61-62; no GPU):

  python -m experiments.research.fit_port
  python -m experiments.research.fit_port --model-misses   (the profile's l2_miss_port_factor: NOTES 77)

The hit rate (B/ns, the 0.9 ns request kept) from the loops whose operands fit in L2 (run 51),
then a miss's cost at that rate from the DRAM-heavy 8192^3 loops (run 48), each by minimax;
run 48's GEMMs held out, each at its counted clock with its measured DRAM bytes; then the whole
chain for the seed's kernels: `sim.predict(.., clock="earned")` with the fitted port, given only
each kernel's DRAM bytes. What it prints is a what-if: the profile keeps its port (NOTES 62).
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics as st
from pathlib import Path

import sim
from tqdm import tqdm

from experiments import catalog
from experiments.calibrate_clock import LOAD_LOOP_CALIBRATION
from experiments.paths import read_rows, results_dir
from experiments.research.activity import CALIBRATION, HELD_OUT, L2_RESIDENT, LOGS, M_FULL, launches_by_label
from gemm.schedule import preset
from sim.hardware import load_profile

LOAD_LOOPS_8192 = {f"load loop 128x128x64 s{i}": (f"load loop 128x128x64 s{i}", M_FULL, M_FULL, M_FULL)
                   for i in (1, 2, 3, 4)}
LOOP_CTAS = {"s1": 6, "s2": 3, "s3": 2, "s4": 1}  # the load-only loops' CTAs per SM (~24 registers, smem alone)
MISS_FACTORS = tuple(round(0.1 * i, 1) for i in range(13))


def load_loop_errors(gpu: str = "h200-sxm", **port) -> dict:
    """{row: model / measured - 1} for every row of load_loop.csv (the WGMMA-free V2 loops timed
    alone at 1.97-1.98 GHz), predicted at the row's clock and CTAs per SM with predict()'s own
    HBM bytes, the port set by `port`."""
    g = load_profile(gpu)
    out = {}
    for r in read_rows(results_dir(gpu) / "load_loop.csv"):
        s = preset("v2", block_m=int(r["block_m"]), block_n=int(r["block_n"]), block_k=int(r["block_k"]),
                   stages=int(r["stages"]))
        p = sim.predict(s, M_FULL, M_FULL, M_FULL, gpu=dataclasses.replace(g, clock_ghz=float(r["clock_ghz"]), **port),
                        mmas=False, ctas_per_sm=int(r["ctas_per_sm"]))
        out[r["schedule"]] = p.ms / float(r["ms"]) - 1
    return out


def miss_factor_with_model_misses(gpu: str = "h200-sxm") -> dict:
    """l2_miss_port_factor with the misses predict() itself gives the load-only loops: the value in
    MISS_FACTORS whose largest error on LOAD_LOOP_CALIBRATION is smallest, ties (within 0.05
    points) broken by their rms; the byte rate and request cost kept."""
    errors = {x: load_loop_errors(gpu, l2_miss_port_factor=x) for x in tqdm(MISS_FACTORS, desc="miss factors")}
    worst = {x: max(abs(e[n]) for n in LOAD_LOOP_CALIBRATION) for x, e in errors.items()}
    best = min(worst.values())
    tied = [x for x in MISS_FACTORS if worst[x] <= best + 5e-4]
    rms = {x: sum(errors[x][n] ** 2 for n in LOAD_LOOP_CALIBRATION) for x in tied}
    return {"l2_miss_port_factor": min(tied, key=rms.get), "tied": tied, "worst": worst, "errors": errors}


def model_over_measured(row, prof, **port) -> float:
    """The model's time for one profiled kernel (at its counted clock, with its measured DRAM
    bytes, the port set by `port`) over the measured, less the launch cost ncu does not time."""
    (entry, m, n, k), dram, f, ms = row
    s, kind = catalog.schedule(entry), catalog.entry(entry).kind
    g = dataclasses.replace(prof, clock_ghz=f, **port)
    extra = {"mmas": False, "ctas_per_sm": LOOP_CTAS[entry.split()[-1]]} if kind == "load" else {}
    p = sim.predict(s, m, n, k, gpu=g, hbm_read_bytes=dram, hbm_read_source="Nsight Compute", **extra)
    return (p.ms - (g.launch_us + g.kernel_fixed_us) * 1e-3) / ms


def port_fits(logs: Path = LOGS, gpu: str = "h200-sxm") -> dict:
    """The L2 -> SM port from the load-only loops alone, with their measured misses: the hit
    rate (B/ns, the 0.9 ns request kept) from the L2-resident loops at 3, 2 and 1 CTAs per SM
    (run 51; minimax), then a miss's cost at that rate from the DRAM-heavy 8192^3 loops (run 48;
    minimax); each GEMM of run 48 held out, at its counted clock with its DRAM bytes."""
    prof = load_profile(gpu)
    hits = {n: r for n, r in launches_by_label(logs / "run51", L2_RESIDENT).items() if "s1" not in n}
    heavy = launches_by_label(logs / "run48", LOAD_LOOPS_8192)
    gemms = launches_by_label(logs / "run48", {n: (n, M_FULL, M_FULL, M_FULL) for n in CALIBRATION + HELD_OUT
                                              if catalog.entry(n).kind == "gemm" and not catalog.entry(n).pad_bytes})
    worst = lambda rows, **port: max(abs(model_over_measured(r, prof, **port) - 1) for r in rows.values())  # noqa: E731
    rate = min(range(150, 321, 5), key=lambda b: worst(hits, l2_sm_bytes_per_ns=float(b)))
    miss = min((round(0.1 * i, 1) for i in range(0, 21)),
               key=lambda x: worst(heavy, l2_sm_bytes_per_ns=float(rate), l2_miss_port_factor=x))
    fitted = {"l2_sm_bytes_per_ns": float(rate), "l2_miss_port_factor": miss}
    table = {}
    for label, rows in (("L2-resident loops", hits), ("DRAM-heavy loops", heavy), ("GEMMs (held out)", gemms)):
        for n, r in rows.items():
            table[n] = {"set": label, "profile": model_over_measured(r, prof) - 1,
                        "fitted": model_over_measured(r, prof, **fitted) - 1}
    return {"fitted": fitted, "profile": {"l2_sm_bytes_per_ns": prof.l2_sm_bytes_per_ns,
                                          "l2_miss_port_factor": prof.l2_miss_port_factor}, "rows": table,
            "chain": {n: earned_against_measured(r, prof, **fitted) for n, r in gemms.items() if n in HELD_OUT}}


def earned_against_measured(row, prof, **port) -> dict:
    """predict(clock="earned") for one profiled GEMM given only its measured DRAM bytes (the clock
    and the time both the model's), beside the clock it counted and its TFLOPS."""
    (entry, m, n, k), dram, f, ms = row
    g = dataclasses.replace(prof, **port)
    p = sim.predict(catalog.schedule(entry), m, n, k, gpu=g, clock="earned", hbm_read_bytes=dram,
                    hbm_read_source="Nsight Compute")
    kernel_ms = p.ms - (g.launch_us + g.kernel_fixed_us) * 1e-3
    return {"clock": p.clock_ghz, "measured_clock": f, "tflops": 2 * m * n * k / (kernel_ms * 1e9),
            "measured_tflops": 2 * m * n * k / (ms * 1e9)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-misses", action="store_true", help="only l2_miss_port_factor with predict()'s own "
                    "HBM bytes for the load-only loops (the profile's value)")
    if ap.parse_args(argv).model_misses:
        r = miss_factor_with_model_misses()
        for x, e in r["errors"].items():
            print(f"factor {x:.1f}: largest on the calibration rows {100 * r['worst'][x]:4.1f}%  "
                  + "  ".join(f"{n.removeprefix('load loop ')} {100 * v:+5.1f}%" for n, v in e.items()))
        print(f"l2_miss_port_factor = {r['l2_miss_port_factor']} (minimax tie {r['tied']}, broken by the rms)")
        return
    res = port_fits()
    print(f"port fitted on the load-only loops: {res['fitted']} (the profile: {res['profile']})")
    print("model / measured - 1 at each kernel's counted clock with its measured DRAM bytes: profile's port -> fitted")
    for n, r in res["rows"].items():
        print(f"  {r['set']:18s} {n:28s} {100 * r['profile']:+6.1f}% -> {100 * r['fitted']:+6.1f}%")
    for key in ("profile", "fitted"):
        e = [abs(r[key]) for r in res["rows"].values() if r["set"] == "GEMMs (held out)"]
        print(f"GEMMs (held out), {key} port: median |err| {100 * st.median(e):.1f}%, max {100 * max(e):.1f}%")
    print("the seed's kernels, clock and time both the model's (earned clock, fitted port), given their DRAM bytes:")
    for n, r in res["chain"].items():
        print(f"  {n:10s} {r['clock']:.3f} GHz (counted {r['measured_clock']:.3f})  {r['tflops']:6.1f} TFLOPS "
              f"(measured {r['measured_tflops']:6.1f}, {100 * (r['tflops'] / r['measured_tflops'] - 1):+.1f}%)")


if __name__ == "__main__":
    main()
