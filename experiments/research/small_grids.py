"""A call's fixed device cost apart from its K tiles', on small grids (run 177):
python -m experiments.research.small_grids [--calibrate] [--full-grids]      (no GPU)

The rows are small_grids.csv's (a sweep's CSV, kept out of the sweep*.csv that make_table
pools): three schedules (sq512's and sq1024's picks, one consumer warpgroup on 64x64 and 64x128
tiles with K tiles of 128, and v7) on 512^2 and 1024^2 over
K = 128 ... 8192 (experiments/research/shapes-kgrid.json), each call's time back to back with the
GPU held until the host has queued the calls (`bench --suite --suite-file ... --sweep`). A
series (one schedule on one M x N) is a straight line in its K tiles: the intercept is what a
call costs whatever its K (the launch under the call before, the CTAs' prologue, the first
loads, the epilogue and the drain), the slope what a K tile adds. The model's device time
(sim.predict under the bench's load, as experiments.predict writes it) gives its own line.

`--full-grids` prints the same lines for run 181's record (full_grids.csv: 64x128x128 and
128x128x64 tiles on 1024^2 and 2048^2 over K = 1024 ... 65536, the operands L2-resident up to
K = 8192 and streaming from HBM beyond; the two halves of K fitted apart), which calibrates
nothing yet: the data for the full grid's port share (docs/research/notes.md items 177, 185).

`--calibrate` prints what run 177 measures of the two profile terms these lines pin:
`consumer_k_tile_clk` (a consumer warpgroup's own clocks a K tile with the loads on: the value
that brings the model's slope to the measured one on the one-warpgroup tiles of grids of at
most half the SMs, where neither the port nor another warpgroup hides it) and `kernel_fixed_us`
(the model's intercept short of the measured one, the median over the series, added to the
profile's: a cost of the launch, not of each CTA, since the multi-wave loop microbenchmarks
that fix the profile's port and WGMMA terms leave no room for it in every CTA).
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics as st

from experiments.paths import read_rows, results_dir

CSV = "small_grids.csv"
FULL_GRIDS_CSV = "full_grids.csv"


def line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through (x, y) points."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def series(gpu: str = "h200-sxm", csv: str = CSV) -> dict:
    """{(schedule name, m, n): [(K tiles, measured us back to back, row)]}, K ascending."""
    from experiments.predict import parse_schedule_name
    out: dict = {}
    for r in read_rows(results_dir(gpu) / csv):
        if r.get("correct") != "True" or not r.get("ours_b2b_us"):
            continue
        s = parse_schedule_name(r["schedule"])
        out.setdefault((r["schedule"], int(r["m"]), int(r["n"])), []).append(
            (int(r["k"]) // s.block_k, float(r["ours_b2b_us"]), r))
    return {key: sorted(v, key=lambda t: t[0]) for key, v in out.items()}


def model_us(name: str, m: int, n: int, k: int, prof) -> tuple[float, float, int]:
    """(the model's device time back to back in us, its clock in GHz, the grid's CTAs)."""
    import sim
    from experiments.predict import parse_schedule_name
    from sim.load_clock import calls_before_runs
    p = sim.predict(parse_schedule_name(name), m, n, k, gpu=prof, clock="load", load_calls=calls_before_runs(3))
    return p.ms * 1e3, p.clock_ghz, p.launch["ctas"]


def compare(gpu: str = "h200-sxm", profile=None, csv: str = CSV, k_range: tuple = (0, 1 << 30)) -> list[dict]:
    """Per series: the measured and the model's intercept (us) and slope (us a K tile), over the
    points with K in `k_range` (inclusive)."""
    from experiments.predict import parse_schedule_name
    from sim.hardware import load_profile
    prof = profile or load_profile(gpu)
    out = []
    for (name, m, n), pts in series(gpu, csv).items():
        pts = [p for p in pts if k_range[0] <= int(p[2]["k"]) <= k_range[1]]
        model = [(t, *model_us(name, m, n, int(r["k"]), prof)) for t, _, r in pts]
        mi, ms = line([(t, us) for t, us, _ in pts])
        pi, ps = line([(t, us) for t, us, _, _ in model])
        s = parse_schedule_name(name)
        out.append({"schedule": name, "m": m, "n": n, "k_range": k_range, "ctas": model[0][3], "warpgroups": s.consumer_warpgroups,
                    "clock_ghz": st.median(c for *_, c, _ in model), "measured_intercept_us": mi,
                    "measured_slope_us": ms, "model_intercept_us": pi, "model_slope_us": ps})
    return out


def _slope_series(rows: list[dict], sm_count: int) -> list[dict]:
    """The series whose slope is the consumer warpgroup's own: one warpgroup, on at most half the
    SMs (the full grid's L2 -> SM share, fitted with misses, binds the others in the model)."""
    return [r for r in rows if r["warpgroups"] == 1 and r["ctas"] <= sm_count // 2]


def calibrate(gpu: str = "h200-sxm") -> dict:
    """consumer_k_tile_clk and kernel_fixed_us as run 177 measures them (module docstring)."""
    from sim.hardware import load_profile
    prof = load_profile(gpu)

    def slope_gap(clk: float) -> float:
        rows = _slope_series(compare(gpu, dataclasses.replace(prof, consumer_k_tile_clk=clk)), prof.sm_count)
        return st.mean(r["model_slope_us"] / r["measured_slope_us"] - 1 for r in rows)

    lo, hi = 0.0, 1000.0
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope_gap(mid) < 0 else (lo, mid)
    consumer = round((lo + hi) / 2)
    rows = compare(gpu, dataclasses.replace(prof, consumer_k_tile_clk=consumer))
    gaps = [r["measured_intercept_us"] - r["model_intercept_us"] for r in rows]
    return {"consumer_k_tile_clk": consumer, "kernel_fixed_us": round(prof.kernel_fixed_us + st.median(gaps), 2),
            "intercept_gaps_us": gaps}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h200-sxm")
    ap.add_argument("--calibrate", action="store_true", help="print the two profile terms run 177 measures")
    ap.add_argument("--full-grids", action="store_true", help="run 181's full grids, K <= 8192 and >= 8192 apart")
    args = ap.parse_args(argv)
    print(f"{'schedule':34s} {'M x N':>9s} CTAs  GHz   intercept us (meas/model)   slope us a K tile (meas/model)")
    rows = compare(args.gpu)
    if args.full_grids:
        rows = [r for k_range in ((0, 8192), (8192, 1 << 30))
                for r in compare(args.gpu, csv=FULL_GRIDS_CSV, k_range=k_range)]
    for r in rows:
        ks = "" if not args.full_grids else f" K {'<=' if r['k_range'][0] == 0 else '>='} 8192"
        print(f"{r['schedule'][:34]:34s} {r['m']:4d}x{r['n']:<4d}{ks} {r['ctas']:4d} {r['clock_ghz']:.2f}   "
              f"{r['measured_intercept_us']:6.2f} / {r['model_intercept_us']:6.2f}"
              f"              {r['measured_slope_us']:6.3f} / {r['model_slope_us']:6.3f} "
              f"({r['model_slope_us'] / r['measured_slope_us'] - 1:+.0%})")
    if args.calibrate:
        c = calibrate(args.gpu)
        print(f"consumer_k_tile_clk {c['consumer_k_tile_clk']}  kernel_fixed_us {c['kernel_fixed_us']} "
              f"(intercept gaps {', '.join(f'{g:+.2f}' for g in c['intercept_gaps_us'])} us)")


if __name__ == "__main__":
    main()
