"""Measured vs predicted: python -m experiments.compare [--gpu h200-sxm]

Reads experiments/results/<gpu>/measured.csv (experiments.measure) and, when present, the
other sweeps in its format (SWEEPS: the V1..V5 ladder of `measure --ladder`, the raster sweep), runs sim.predict
for every row (the row's schedule: version, tile, stages; its shape and dtype; the GPU
profile of the same name), and writes into experiments/results/<gpu>/
  compare.csv   every measured column, then predicted_tflops, predicted_ms,
                error_ratio (predicted / measured TFLOPS), error_pct, predicted_ctas_per_sm,
                predicted_bound and held_out (False for a row that informed a model
                parameter; see HELD_IN below and docs/model.md)
  compare.png   predicted vs measured TFLOPS, one point per row
and prints a summary: median and max absolute % error (all rows, and held-out rows),
the Spearman rank correlation, CTAs/SM agreement, and the rows the model gets worst.

When experiments/results/<gpu>/clock.csv (experiments.calibrate_clock: each kernel timed
alone, SM clock read inside it) exists, its rows, and those of the later clock sweeps
(CLOCK_SWEEPS), are predicted too and appended to
compare.csv with source=clock.csv: at the profile's clock (predicted_tflops) and at the
row's in-kernel clock (predicted_tflops_at_row_clock). Their summary is printed apart:
held_out is False for a row that informed any parameter (the profile clock included),
held_out_at_row_clock False for one that informed a parameter other than the clock.
No GPU needed.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import statistics
import sys
from pathlib import Path

from tqdm import tqdm

from .paths import RESULTS, read_comments, read_rows

# Rows (per GPU) whose measured figures informed a model parameter, by
# (version, block_m, block_n, block_k, stages). Every other row is held out.
# Keep this in step with the parameter notes in sim/hardware.py and docs/model.md.
HELD_IN: dict[str, set[tuple]] = {
    "h200-sxm": (
        # l2_request_clk (one L2 request per box row per 2 clk): every block_k=16 row
        {(v, bm, bn, 16, st) for bm, bn in ((64, 128), (128, 128), (128, 192), (64, 256))
         for v, st in (("v1", 1), ("v2", 2), ("v2", 3), ("v2", 4))}
        # tma_latency_ns 250: the latency-bound V1 128x192 rows (2 CTAs/SM)
        | {("v1", 128, 192, bk, 1) for bk in (16, 32, 64)}
        # l2_read_bytes_per_clk: the rows that refute the 5120 B/clk aggregate cap
        | {("v1", 64, 256, 64, 1), ("v2", 64, 256, 64, 2), ("v1", 64, 128, 64, 1)}
        # tma_writes_share_smem refuted and phase_local_clk derived from clock.csv's V2 s2/s3
        # (local and register): the same schedules here
        | {("v2", 128, 128, 64, 2), ("v2", 128, 128, 64, 3), ("v2-local", 128, 128, 64, 2)}
        # l2_request_additive: the sum of request and byte time, not the max, was
        # chosen after seeing the block_k=32 (64-B row) rows; the ns values themselves come from
        # load_loop.csv (no GEMM row)
        | {(v, bm, bn, 32, st) for bm, bn in ((64, 128), (128, 128), (128, 192), (64, 256))
           for v, st in (("v1", 1), ("v2", 2), ("v2", 3), ("v2", 4))}
    ),
}

# clock.csv rows (by schedule name) whose figures informed a parameter other than the clock.
# Same schedules as HELD_IN above count as held in too (the same kernel, another run).
CLOCK_HELD_IN: dict[str, dict[str, str]] = {
    "h200-sxm": {
        "v2 128x128x64 s2": "tma_writes_share_smem refuted (87% per clock > 80%); phase_local_clk pair",
        "v2 128x128x64 s2 local": "phase_local_clk (the local vs register pair)",
        "v2 128x128x64 s3": "tma_writes_share_smem refuted (89.5% per clock > 80%)",
        "v1 128x192x64": "tma_latency_ns (V1 128x192 rows of measured.csv)",
        "v1 64x256x64": "l2_read_bytes_per_clk (measured.csv)",
        "v2 64x256x64 s2": "l2_read_bytes_per_clk (measured.csv)",
        "v1 64x128x64": "l2_read_bytes_per_clk (measured.csv)",
        "v1 64x128x16": "l2_request_clk (block_k=16 rows of measured.csv)",
        "v2 128x128x32 s2": "l2_request_additive chosen after seeing it",
    },
}
# clock.csv rows whose in-kernel clock is aggregated into the profile's clock_ghz
# (experiments.calibrate_clock.PROFILE_KEYS; sim/profiles/<gpu>.json provenance)
CLOCK_ROWS_FOR_CLOCK: dict[str, set[str]] = {
    "h200-sxm": {"v1 128x192x64", "v2 128x192x64 s2", "v1 64x256x64", "v2 64x256x64 s2",
                 "v1 64x128x64", "v2 128x128x32 s2"},
}

# sweeps in measured.csv's format and clock sweeps in clock.csv's, read after the first
SWEEPS = ("measured_ladder.csv", "rasters.csv")
CLOCK_SWEEPS = ("clock_versions.csv", "clock_depth.csv")

EXTRA_COLUMNS = ["source", "predicted_tflops", "predicted_ms", "error_ratio", "error_pct",
                 "predicted_ctas_per_sm", "predicted_bound", "held_out",
                 "predicted_tflops_at_row_clock", "error_ratio_at_row_clock"]
CLOCK_COLUMNS = ["schedule", "phase_storage", "clock_ghz", "tensor_util_per_clock",
                 "predicted_util_per_clock_at_row_clock", "held_out_at_row_clock"]


def read_measured(path: Path) -> tuple[list[str], list[dict]]:
    """Header comment lines and the rows of a measured.csv."""
    return read_comments(path), read_rows(path)


def _float(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def row_key(r: dict) -> tuple:
    return (r["version"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["stages"]))


def row_schedule(r: dict):
    """The Schedule experiments.measure built for this row (gemm.schedule.preset). A row with
    no raster column was launched in column order (the only order the kernels had then)."""
    from gemm.schedule import preset
    version = r["version"]
    over = {"block_m": int(r["block_m"]), "block_n": int(r["block_n"]), "block_k": int(r["block_k"]),
            "raster": r.get("raster") or "column"}
    if version.endswith("-local"):   # the tutorial's V2: phases in a local-memory array
        version = version[: -len("-local")]
        over["phase_storage"] = "local"
    elif r.get("phase_storage"):
        over["phase_storage"] = r["phase_storage"]
    if version != "v1":
        over["stages"] = int(r["stages"])
    else:
        over.pop("phase_storage", None)
    return preset(version, **over)


def clock_schedule(r: dict):
    """The Schedule experiments.calibrate_clock built for a clock.csv row (version, raster:
    columns of the later sweeps; before them, V1/V2 in column order)."""
    from gemm.schedule import preset
    over = {"block_m": int(r["block_m"]), "block_n": int(r["block_n"]), "block_k": int(r["block_k"]),
            "raster": r.get("raster") or "column"}
    if r["family"] == "serial":
        return "v1", preset("v1", **over)
    if r["family"] == "specialized":
        return r["version"], preset(r["version"], stages=int(r["stages"]), **over)
    return "v2", preset("v2", stages=int(r["stages"]), phase_storage=r.get("phase_storage") or "register", **over)


def compare_clock_rows(gpu: str, folder: Path, profile=None) -> list[dict]:
    """Predict every clock.csv row at the profile clock and at the row's in-kernel clock."""
    import sim
    if not (folder / "clock.csv").exists():
        return []
    rows = []
    for name in ("clock.csv",) + CLOCK_SWEEPS:
        if (folder / name).exists():
            rows += [dict(r, clock_source=name) for r in read_measured(folder / name)[1]]
    base = sim.load_profile(gpu) if profile is None else profile
    held_other = CLOCK_HELD_IN.get(gpu, {})
    held_clock = CLOCK_ROWS_FOR_CLOCK.get(gpu, set())
    out_rows = []
    for r in tqdm(rows, desc=f"predict {gpu} clock rows", unit="row", leave=False):
        version, s = clock_schedule(r)
        key = (version, s.block_m, s.block_n, s.block_k, s.stages)
        meas, ghz = float(r["tflops"]), float(r["clock_ghz"])
        p = sim.predict(s, 8192, 8192, 8192, gpu=base)
        q = sim.predict(s, 8192, 8192, 8192, gpu=dataclasses.replace(base, clock_ghz=ghz))
        other = r["schedule"] in held_other or key in HELD_IN.get(gpu, set())
        out_rows.append({
            "source": r["clock_source"], "kernel": r["schedule"], "version": version, "m": 8192, "n": 8192,
            "k": 8192, "dtype": "float16", "block_m": s.block_m, "block_n": s.block_n, "block_k": s.block_k,
            "stages": s.stages, "ms": r["ms"], "tflops": r["tflops"], "schedule": r["schedule"],
            "phase_storage": s.phase_storage, "clock_ghz": r["clock_ghz"],
            "tensor_util_per_clock": r["tensor_util_per_clock"],
            "predicted_tflops": f"{p.tflops:.1f}", "predicted_ms": f"{p.ms:.4f}",
            "error_ratio": f"{p.tflops / meas:.4f}", "error_pct": f"{100 * (p.tflops / meas - 1):+.1f}",
            "predicted_ctas_per_sm": p.ctas_per_sm, "predicted_bound": p.bound,
            "held_out": not (other or r["schedule"] in held_clock),
            "predicted_tflops_at_row_clock": f"{q.tflops:.1f}",
            "error_ratio_at_row_clock": f"{q.tflops / meas:.4f}",
            "predicted_util_per_clock_at_row_clock": f"{q.pct_of_peak / 100:.4f}",
            "held_out_at_row_clock": not other,
        })
    return out_rows


def summarize_clock(rows: list[dict]) -> dict:
    def stats(key, pick):
        e = [abs(float(r[key]) - 1) * 100 for r in rows if pick(r)]
        return (statistics.median(e) if e else float("nan"), max(e) if e else float("nan"), len(e))
    return {
        "n": len(rows),
        "profile_clock": stats("error_ratio", lambda r: True),
        "profile_clock_held_out": stats("error_ratio", lambda r: r["held_out"]),
        "row_clock": stats("error_ratio_at_row_clock", lambda r: True),
        "row_clock_held_out": stats("error_ratio_at_row_clock", lambda r: r["held_out_at_row_clock"]),
        "rows": [(r["schedule"], float(r["clock_ghz"]), float(r["tflops"]), float(r["predicted_tflops"]),
                  float(r["predicted_tflops_at_row_clock"]), r["held_out"], r["held_out_at_row_clock"])
                 for r in rows],
    }


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman rank correlation (average ranks for ties); no scipy."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for t in range(i, j + 1):
                r[order[t]] = (i + j) / 2 + 1
            i = j + 1
        return r
    if len(x) < 2:
        return float("nan")
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    syy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return sxy / (sxx * syy) if sxx and syy else float("nan")


def compare(gpu: str = "h200-sxm", results: Path = RESULTS, plot: bool = True,
            held_in: set | None = None, profile=None) -> dict:
    """Predict every measured row; write compare.csv (and compare.png); return a summary."""
    import sim
    from gemm.schedule import ScheduleError

    folder = Path(results) / gpu
    comments, rows = read_measured(folder / "measured.csv")
    rows = [dict(r, source="measured.csv") for r in rows]
    for name in SWEEPS:
        if (folder / name).exists():
            rows += [dict(r, source=name) for r in read_measured(folder / name)[1]]
    held_in = HELD_IN.get(gpu, set()) if held_in is None else held_in
    out_rows = []
    for r in tqdm(rows, desc=f"predict {gpu} rows", unit="row", leave=False):
        out = dict(r)
        try:
            s = row_schedule(r)
            p = sim.predict(s, int(r["m"]), int(r["n"]), int(r["k"]), gpu=profile or gpu, dtype=r["dtype"])
            meas = float(r["tflops"])
            out.update(predicted_tflops=f"{p.tflops:.1f}", predicted_ms=f"{p.ms:.4f}",
                       error_ratio=f"{p.tflops / meas:.4f}", error_pct=f"{100 * (p.tflops / meas - 1):+.1f}",
                       predicted_ctas_per_sm=p.ctas_per_sm, predicted_bound=p.bound,
                       predicted_tflops_at_row_clock="", error_ratio_at_row_clock="")
            # diagnostic: the same prediction at the SM clock nvidia-smi sampled after the run
            # (a lagging sample that also covers the interleaved cuBLAS runs; not the model clock)
            mhz = _float(r.get("sm_clock_mhz"))
            if mhz:
                base = sim.load_profile(gpu) if profile is None else profile
                q = sim.predict(s, int(r["m"]), int(r["n"]), int(r["k"]), dtype=r["dtype"],
                                gpu=dataclasses.replace(base, clock_ghz=mhz / 1000))
                out.update(predicted_tflops_at_row_clock=f"{q.tflops:.1f}",
                           error_ratio_at_row_clock=f"{q.tflops / meas:.4f}")
        except ScheduleError as e:
            out.update(predicted_tflops="", predicted_ms="", error_ratio="", error_pct="",
                       predicted_ctas_per_sm="", predicted_bound=f"refused: {e}",
                       predicted_tflops_at_row_clock="", error_ratio_at_row_clock="")
        out["held_out"] = row_key(r) not in held_in
        out_rows.append(out)

    clock_rows = compare_clock_rows(gpu, folder, profile)
    fields = list(dict.fromkeys(key for r in rows for key in r))
    fields += [c for c in EXTRA_COLUMNS if c not in fields]
    if clock_rows:
        fields += [c for c in CLOCK_COLUMNS if c not in fields]
    with open(folder / "compare.csv", "w", newline="") as f:
        for c in comments:
            f.write(c + "\n")
        f.write(f"# compared by python -m experiments.compare --gpu {gpu}: sim.predict on profile {gpu}; "
                "error_ratio = predicted / measured TFLOPS; held_out False = the row informed a model parameter\n")
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(out_rows)
        w.writerows(clock_rows)

    summary = summarize(out_rows)
    summary["csv"] = str(folder / "compare.csv")
    if clock_rows:
        summary["clock"] = summarize_clock(clock_rows)
    if plot and summary["n"]:
        summary["png"] = str(plot_rows(out_rows, folder / "compare.png", gpu, summary))
    return summary


def summarize(rows: list[dict]) -> dict:
    done = [r for r in rows if r["predicted_tflops"] != ""]
    err = [abs(float(r["error_ratio"]) - 1) * 100 for r in done]
    held = [abs(float(r["error_ratio"]) - 1) * 100 for r in done if r["held_out"]]
    meas = [float(r["tflops"]) for r in done]
    pred = [float(r["predicted_tflops"]) for r in done]
    ctas_ok = sum(1 for r in done if str(r.get("ctas_per_sm", "")) == str(r["predicted_ctas_per_sm"]))
    worst = sorted(done, key=lambda r: -abs(float(r["error_ratio"]) - 1))[:8]
    at_clk = [abs(float(r["error_ratio_at_row_clock"]) - 1) * 100 for r in done if r.get("error_ratio_at_row_clock")]
    return {
        "median_abs_pct_at_row_clock": statistics.median(at_clk) if at_clk else float("nan"),
        "max_abs_pct_at_row_clock": max(at_clk) if at_clk else float("nan"),
        "n": len(done), "refused": len(rows) - len(done), "held_out": len(held),
        "median_abs_pct": statistics.median(err) if err else float("nan"),
        "max_abs_pct": max(err) if err else float("nan"),
        "median_abs_pct_held_out": statistics.median(held) if held else float("nan"),
        "max_abs_pct_held_out": max(held) if held else float("nan"),
        "mean_signed_pct": statistics.fmean(float(r["error_ratio"]) * 100 - 100 for r in done) if done else float("nan"),
        "spearman": spearman(meas, pred), "ctas_per_sm_match": ctas_ok,
        "worst": [(r["version"], f"{r['block_m']}x{r['block_n']}x{r['block_k']}", int(r["stages"]),
                   float(r["tflops"]), float(r["predicted_tflops"]), r["error_pct"]) for r in worst],
    }


def plot_rows(rows, path: Path, gpu: str, summary: dict) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if r["predicted_tflops"] != ""]
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    colors = {16: "tab:red", 32: "tab:orange", 64: "tab:blue"}
    markers = {"v1": "o", "v2": "^", "v3": "s", "v4": "D", "v5": "*"}
    for r in done:
        bk = int(r["block_k"])
        ax.scatter(float(r["tflops"]), float(r["predicted_tflops"]), c=colors.get(bk, "gray"),
                   marker=markers.get(r["version"], "s"), s=36,
                   edgecolors="black" if not r["held_out"] else "none", linewidths=1.2)
    hi = max(max(float(r["tflops"]), float(r["predicted_tflops"])) for r in done) * 1.08
    ax.plot([0, hi], [0, hi], "k-", lw=0.8)
    for f in (0.9, 1.1):
        ax.plot([0, hi], [0, hi * f], "k:", lw=0.6)
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("measured TFLOPS")
    ax.set_ylabel("predicted TFLOPS (sim.predict)")
    ax.set_title(f"{gpu}: {summary['n']} runs; median |err| {summary['median_abs_pct']:.1f}%, "
                 f"max {summary['max_abs_pct']:.1f}%, Spearman {summary['spearman']:.2f}", fontsize=9)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls="", marker="o", c=c, label=f"block_k {bk}") for bk, c in colors.items()]
    handles += [Line2D([], [], ls="", marker=m, c="gray", label=v) for v, m in markers.items()]
    handles += [Line2D([], [], ls="", marker="o", mfc="white", mec="black", label="informed a parameter")]
    ax.legend(handles=handles, loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def format_summary(gpu: str, s: dict) -> str:
    lines = [
        f"{gpu}: {s['n']} rows predicted ({s['refused']} refused), {s['held_out']} held out of any parameter choice",
        f"  |error| median {s['median_abs_pct']:.1f}%, max {s['max_abs_pct']:.1f}%   "
        f"(held-out rows: median {s['median_abs_pct_held_out']:.1f}%, max {s['max_abs_pct_held_out']:.1f}%)",
        f"  mean signed error {s['mean_signed_pct']:+.1f}%   Spearman rank correlation {s['spearman']:.3f}   "
        f"CTAs/SM match the occupancy API on {s['ctas_per_sm_match']}/{s['n']} rows",
        f"  at each row's sampled SM clock instead of the profile's (diagnostic): |error| median "
        f"{s['median_abs_pct_at_row_clock']:.1f}%, max {s['max_abs_pct_at_row_clock']:.1f}%",
        "  worst rows (version tile stages: measured -> predicted TFLOPS, error):",
    ]
    lines += [f"    {v} {t} s{st}: {m:.0f} -> {p:.0f} ({e}%)" for v, t, st, m, p, e in s["worst"]]
    c = s.get("clock")
    if c:
        def fmt(t):
            return f"median {t[0]:.1f}%, max {t[1]:.1f}% ({t[2]} rows)"
        lines += [
            f"  clock.csv ({c['n']} rows, each kernel alone, SM clock read inside it):",
            f"    at the profile clock: |error| {fmt(c['profile_clock'])}; held out {fmt(c['profile_clock_held_out'])}",
            f"    at each row's in-kernel clock: |error| {fmt(c['row_clock'])}; held out {fmt(c['row_clock_held_out'])}",
            "    schedule: GHz, measured -> predicted at profile clock / at row clock (held out: profile, row clock)",
        ]
        lines += [f"      {n:24s} {g:.3f}  {m:6.1f} -> {p:6.1f} / {q:6.1f}  ({h}, {hr})"
                  for n, g, m, p, q, h, hr in c["rows"]]
    lines.append(f"  wrote {s['csv']}" + (f" and {s['png']}" if s.get("png") else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default=None, help="results folder / profile name (default: every folder "
                    "under experiments/results with a measured.csv)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    gpus = [a.gpu] if a.gpu else sorted(p.parent.name for p in Path(a.results).glob("*/measured.csv"))
    if not gpus:
        ap.exit(2, f"no measured.csv under {a.results}\n")
    for gpu in gpus:
        print(format_summary(gpu, compare(gpu, a.results, plot=not a.no_plot)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
