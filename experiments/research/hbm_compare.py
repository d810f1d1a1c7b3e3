"""HBM bytes per launch, measured (Nsight Compute) against the model, and what the model
predicts when it is given the measured bytes:  python -m experiments.research.hbm_compare

Reads the Nsight Compute CSVs of `experiments/hbm_bytes.py` runs (experiments/results/<gpu>/
logs/run17/ncu.csv, logs/run18/ncu.csv; logs/run19/ncu.csv: `--load-loop`, the WGMMA-free
loops whose rows calibrated the model's L2 path), writes experiments/results/<gpu>/hbm_bytes.csv
(one row per kernel and run: dram__bytes_read, the model's per-wave estimate, their ratio, and
predict's own bytes: sim/convoy.py, held in convoy or free-running)
and prints, for the seed's case on the H100 profile, V1 / V2 / V2-local / V3 predicted with
the model's own HBM bytes and with the measured ones (`sim.predict(hbm_read_bytes=...)`, a
what-if: those bytes are measurements of the very kernels being predicted). No GPU needed.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import sim
from experiments import catalog
from experiments.paths import RESULTS, results_dir
from experiments.research.hbm_bytes import K_SWEEP, K_SWEEP_KERNELS

# the kernels experiments/research/hbm_bytes.py ran, in order, per run (run 17 ran the first list)
RUN17 = ["v1", "v2", "v2-local", "v3 s2", "v3 s4", "v5 128x256 s4"]
RUNS = {"run17": RUN17, "run18": list(catalog.GEMMS), "run19": "load loops", "run20": "k sweep"}


def read_ncu(path: Path) -> list[dict]:
    """{metric: value} per profiled kernel, in launch order."""
    rows = list(csv.DictReader(ln for ln in path.read_text().splitlines() if ln.startswith('"')))
    out: dict[int, dict] = {}
    for r in rows:
        out.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return [out[i] for i in sorted(out)]


def model_bytes(s, gpu="h200-sxm", load_loop=False, k=8192, reuse="per-wave") -> float:
    """The model's HBM read bytes, per wave or predict's default (`reuse`); a WGMMA-free loop
    (~24 registers) is limited by shared memory alone."""
    if load_loop:
        return sim.predict(s, 8192, 8192, k, gpu=gpu, mmas=False, ctas_per_sm=s.ctas_per_sm(),
                           reuse=reuse).bytes["hbm_read_bytes"]
    return sim.predict(s, 8192, 8192, k, gpu=gpu, reuse=reuse).bytes["hbm_read_bytes"]


def _row(run, name, m, s, gpu, k=8192, load_loop=False) -> dict:
    model = model_bytes(s, gpu, load_loop, k)
    return {"run": run, "kernel": name, "dram_read_gb": round(m["dram__bytes_read.sum"] / 1e9, 3),
            "model_gb": round(model / 1e9, 3), "ratio": round(m["dram__bytes_read.sum"] / model, 3),
            "l2_hit_pct": m.get("lts__t_sector_hit_rate.pct", ""),
            "ms_ncu": round(m["gpu__time_duration.sum"] / 1e6, 4),
            "convoy_gb": round(model_bytes(s, gpu, load_loop, k, reuse="convoy") / 1e9, 3)}


def collect(gpu="h200-sxm", results=RESULTS) -> list[dict]:
    rows = []
    for run, names in RUNS.items():
        path = results_dir(gpu, results) / "logs" / run / "ncu.csv"
        if not path.exists():
            continue
        if names == "k sweep":
            cases = [(f"{n} k={k}", catalog.schedule(n), k) for k in K_SWEEP for n in K_SWEEP_KERNELS]
            rows += [_row(run, name, m, s, gpu, k) for (name, s, k), m in zip(cases, read_ncu(path))]
            continue
        table = catalog.schedules(catalog.LOAD_LOOPS if names == "load loops" else names)
        rows += [_row(run, name, m, s, gpu, load_loop=names == "load loops")
                 for (name, s), m in zip(table.items(), read_ncu(path))]
    return rows


def measured_gb(rows, kernel) -> list[float]:
    return [r["dram_read_gb"] for r in rows if r["kernel"] == kernel]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.research.hbm_compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h200-sxm")
    a = ap.parse_args(argv)
    rows = collect(a.gpu)
    out = results_dir(a.gpu) / "hbm_bytes.csv"
    with open(out, "w", newline="") as f:
        f.write("# Nsight Compute dram__bytes_read.sum of one 8192^3 fp16 launch (B stored [N, K]) of each kernel, "
                "by experiments/research/hbm_bytes.py on the H200 (runs 17-19, logs/run1[789]/ncu.csv; run 19: the WGMMA-free "
                "loops of experiments.calibrate_clock --load-loop); model_gb: "
                "sim.engines.memory_traffic's estimate (each panel once per wave); convoy_gb: sim.predict's default "
                "(sim/convoy.py: per wave when held in convoy, else a free-running grid replayed through L2); "
                "python -m experiments.research.hbm_compare\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{'kernel':24s} {'run':6s} measured  per-wave  ratio  convoy")
    for r in rows:
        print(f"{r['kernel']:24s} {r['run']:6s} {r['dram_read_gb']:7.2f}  {r['model_gb']:8.2f}  {r['ratio']:5.2f}  "
              f"{r['convoy_gb']:6.2f}")
    print("\nthe seed's case on h100-sxm: model's own HBM bytes -> with the measured ones (what-if)")
    for name in ("v1", "v2", "v2-local", "v3 s2"):
        s = catalog.schedule(name)
        own = sim.predict(s, gpu="h100-sxm")
        what_if = [sim.predict(s, gpu="h100-sxm", hbm_read_bytes=gb * 1e9) for gb in measured_gb(rows, name)]
        print(f"  {name:9s} {own.tflops:6.1f} TFLOPS (HBM {100 * own.utilization['hbm']:.0f}%) -> "
              + ", ".join(f"{p.tflops:.1f} (HBM {100 * p.utilization['hbm']:.0f}%)" for p in what_if))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
