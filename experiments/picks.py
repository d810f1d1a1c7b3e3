"""The dispatcher's pick against the best candidate of the sweeps, shape by shape.

  python -m experiments.picks        # -> experiments/results/h200-sxm/picks.csv

For every shape of shapes.csv (the suite as the dispatcher runs it), the schedule it ran and its
ratio to the faster cuBLAS, beside every dispatcher candidate the sweeps (sweep*.csv, the
geometric mean of each candidate's measurements at each shape) measured there and the best of them.
`pick_over_best` = the pick's ratio / the best candidate's ratio: 1.00 means the dispatcher
chose as well as timing every candidate would have, below 0.97 it trails by more than 3%.
The two come from different runs, so each is its ratio to cuBLAS timed beside it (a run's
clock moves both alike); where the dispatcher's pick is itself the best candidate, the
comparison is of one schedule measured twice, and says how much a ratio moves run to run.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from .make_table import candidate_ratios
from .paths import read_rows, results_dir, write_csv

WITHIN = 0.97


def picks(shapes: list[dict], sweeps: list[dict]) -> list[dict]:
    swept = candidate_ratios(sweeps)
    by_name = {shape[0]: ratios for shape, ratios in swept.items()}
    out = []
    for r in shapes:
        if not r.get("ratio"):
            continue
        ratios = by_name.get(r["name"], {})
        row = {"name": r["name"], "m": r["m"], "n": r["n"], "k": r["k"], "batch": r.get("batch") or "1",
               "dtype": r["dtype"], "picked": r["schedule"], "picked_ratio": r["ratio"],
               "candidates_swept": len(ratios)}
        if ratios:
            best = max(ratios, key=ratios.get)
            ratio = float(r["ratio"]) / ratios[best]
            swept = ratios.get(r["schedule"])   # the pick as the sweep measured it, beside the others
            row.update(best_swept=best, best_swept_ratio=f"{ratios[best]:.3f}",
                       picked_swept_ratio=f"{swept:.3f}" if swept else "",
                       swept_pick_over_best=f"{swept / ratios[best]:.3f}" if swept else "",
                       pick_over_best=f"{ratio:.3f}", within_3pct=ratio >= WITHIN)
        out.append(row)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=results_dir(), help="the GPU's results folder")
    args = p.parse_args(argv)
    sweep_paths = sorted(args.results.glob("sweep*.csv"))
    rows = picks(read_rows(args.results / "shapes.csv"), [r for path in sweep_paths for r in read_rows(path)])
    out = args.results / "picks.csv"
    write_csv(out, rows, [f"derived by python -m experiments.picks from shapes.csv and "
                          f"{', '.join(path.name for path in sweep_paths)}",
                          "pick_over_best: the dispatcher's measured ratio / the best swept candidate's ratio",
                          "swept_pick_over_best: the pick's ratio in the sweep / the best swept candidate's ratio"])
    print(f"{'shape':14s} {'picked':44s} {'ratio':>6s}  {'best swept':44s} {'ratio':>6s} pick/best")
    for r in rows:
        print(f"{r['name']:14s} {r['picked'][:44]:44s} {r['picked_ratio']:>6s}  {r.get('best_swept', '-')[:44]:44s} "
              f"{r.get('best_swept_ratio', '-'):>6s} {r.get('pick_over_best', '-')}")
    scored = [float(r["pick_over_best"]) for r in rows if "pick_over_best" in r]
    if scored:
        print(f"{sum(x >= WITHIN for x in scored)} of {len(scored)} shapes within 3% of the best swept candidate; "
              f"geomean pick/best {math.exp(sum(map(math.log, scored)) / len(scored)):.3f} -> {out}")
    swept = [float(r["swept_pick_over_best"]) for r in rows if r.get("swept_pick_over_best")]
    if swept:
        print(f"the pick as the sweeps measured it: {sum(x >= WITHIN for x in swept)} of {len(swept)} within 3% of "
              f"the best, geomean {math.exp(sum(map(math.log, swept)) / len(swept)):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
