"""The dispatcher's pick against the best candidate of the sweeps, shape by shape.

  python -m experiments.picks        # -> experiments/results/h200-sxm/picks.csv
  python -m experiments.picks --shapes .../shapes-offsuite.csv \
      --held-out .../sweep-offsuite-candidates.csv --out .../picks-offsuite.csv   # shapes off the suite

For every shape of shapes.csv (the suite as the dispatcher runs it), the schedule it ran and its
ratio to the faster cuBLAS, beside every dispatcher candidate the sweeps the table was made from
(its "from" files and "since" date; the median of each candidate's measurements at each
shape) measured there and the best of them; and, in a candidate sweep the table was not made
from (held out), the pick's ratio over the best candidate's, all timed in that one run: the
honest test of the table, since the sweeps it was made from choose their own best.
`pick_over_best` = the pick's ratio / the best candidate's ratio: 1.00 means the dispatcher
chose as well as timing every candidate would have, below 0.97 it trails by more than 3%.
The two come from different runs, so each is its ratio to cuBLAS timed beside it (a run's
clock moves both alike); where the dispatcher's pick is itself the best candidate, the
comparison is of one schedule measured twice, and says how much a ratio moves run to run.

A held-out sweep that times each candidate's calls back to back beside cuBLAS's (ours_b2b_us,
cublas_b2b_us) also gives `held_out_b2b_pick_over_best`: the pick's ratio to cuBLAS back to
back over the best candidate's. Where a shape's kernel is shorter than the host's time per
call, one call between events times the host (every candidate alike, within its noise: item
101 of docs/research/notes.md), and only the calls back to back say which kernel is faster.
The pooled comparison (`pick_over_best`) is by the measure the table was made by
(experiments.make_table `--by`): where that is the calls back to back (for every shape, or, by
pace, for the shapes the host paces), the suite row's own calls back to back beside its cuBLAS's.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from gemm.dispatch.table import TABLES

from .make_table import _ratio, candidate_ratios, host_paced
from .paths import REPO, read_rows, results_dir, write_csv

WITHIN = 0.97


def picks(shapes: list[dict], sweeps: list[dict], since: str = "", held_out: list[dict] | None = None,
          by: str = "one-call") -> list[dict]:
    """One row per measured suite shape. `sweeps` (from `since` on): what the table was made
    from, pooled as make_table pools them (`by` its measure); `held_out`: a candidate sweep it
    was not made from, where the pick and the others were timed in one run."""
    swept = candidate_ratios(sweeps, since, by)
    by_name = {shape[0]: ratios for shape, ratios in swept.items()}
    paced = {shape[0] for shape in host_paced(sweeps, since)} if by == "pace" else set()
    held = {shape[0]: ratios for shape, ratios in candidate_ratios(held_out or []).items()}
    held_b2b = {shape[0]: ratios for shape, ratios in candidate_ratios(held_out or [], measure="back-to-back").items()}
    out = []
    for r in shapes:
        if not r.get("ratio"):
            continue
        ratios = by_name.get(r["name"], {})
        row = {"name": r["name"], "m": r["m"], "n": r["n"], "k": r["k"], "batch": r.get("batch") or "1",
               "dtype": r["dtype"], "picked": r["schedule"], "picked_ratio": r["ratio"],
               "candidates_swept": len(ratios)}
        measure = ("back-to-back" if r["name"] in paced else "one-call") if by == "pace" else by
        measured = _ratio(r, measure)   # the suite row's own, by the table's measure
        if ratios and measured:
            best = max(ratios, key=ratios.get)
            ratio = measured / ratios[best]
            swept = ratios.get(r["schedule"])   # the pick as the sweeps measured it
            row.update(best_swept=best, best_swept_ratio=f"{ratios[best]:.3f}",
                       picked_swept_ratio=f"{swept:.3f}" if swept else "",
                       pick_over_best=f"{ratio:.3f}", within_3pct=ratio >= WITHIN)
        other = held.get(r["name"], {})
        if other.get(r["schedule"]):
            best = max(other, key=other.get)
            row.update(held_out_best=best, held_out_pick_over_best=f"{other[r['schedule']] / other[best]:.3f}")
        b2b = held_b2b.get(r["name"], {})
        if b2b.get(r["schedule"]):
            best = max(b2b, key=b2b.get)
            row.update(held_out_b2b_best=best, held_out_b2b_pick_over_best=f"{b2b[r['schedule']] / b2b[best]:.3f}")
        own = row.get("held_out_b2b_pick_over_best" if measure == "back-to-back" else "held_out_pick_over_best")
        if own:   # by the measure the table chose this shape's rule by
            row.update(held_out_table_measure=measure, held_out_table_measure_pick_over_best=own)
        out.append(row)
    return out


def one_run_per_shape(sweeps: list[list[dict]]) -> list[dict]:
    """The held-out rows: each shape's from the last of the sweeps that measured it. A held-out
    comparison is of candidates timed in one run; a later sweep of a shape may time candidates
    an earlier one lacked, and pooling their medians would set a candidate's two runs against
    the newcomers' one."""
    latest = {}
    for rows in sweeps:
        for name in {r["name"] for r in rows}:
            latest[name] = [r for r in rows if r["name"] == name]
    return [r for rows in latest.values() for r in rows]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=results_dir(), help="the GPU's results folder")
    p.add_argument("--held-out", type=Path, nargs="+",
                   help="candidate sweeps the table was not made from; a shape two of them measured is taken from "
                        "the later one given (default: the sweep-candidates*.csv outside the table's \"from\" "
                        "measured last)")
    p.add_argument("--shapes", type=Path, help="the dispatcher's rows (default: the results folder's shapes.csv)")
    p.add_argument("--out", type=Path, help="where to write (default: the results folder's picks.csv)")
    args = p.parse_args(argv)
    shapes_csv = args.shapes or args.results / "shapes.csv"
    made = json.loads((TABLES / f"{args.results.name}.json").read_text())   # the sweeps the table was made from
    sweep_paths = [REPO / path for path in made["from"]]   # relative to the repository (or absolute)
    newest = max((path for path in args.results.glob("sweep-candidates*.csv")
                  if path.resolve() not in {q.resolve() for q in sweep_paths}),
                 key=lambda path: max(r.get("date") or "" for r in read_rows(path)), default=None)
    held_out = args.held_out or ([newest] if newest else [])
    rows = picks(read_rows(shapes_csv), [r for path in sweep_paths for r in read_rows(path)],
                 made.get("since", ""), one_run_per_shape([read_rows(path) for path in held_out]) or None,
                 made.get("by", "one-call"))
    held_names = " and ".join(path.name for path in held_out) or "no sweep"
    out = args.out or args.results / "picks.csv"
    write_csv(out, rows, [f"derived by python -m experiments.picks from {shapes_csv.name}, the sweeps the table was made "
                          f"from ({', '.join(path.name for path in sweep_paths)}) and, held out, "
                          f"{held_names}",
                          "pick_over_best: the dispatcher's measured ratio / the best swept candidate's (pooled) ratio",
                          "held_out_pick_over_best: in the held-out sweep, the pick's ratio / the best candidate's",
                          "held_out_b2b_pick_over_best: there, the same of the ratios to cuBLAS of the calls back "
                          "to back",
                          "held_out_table_measure_pick_over_best: of the two, the one by the measure the table chose "
                          "the shape's rule by (held_out_table_measure)"])
    print(f"{'shape':14s} {'picked':44s} {'ratio':>6s}  {'best swept':44s} {'ratio':>6s} pick/best")
    for r in rows:
        print(f"{r['name']:14s} {r['picked'][:44]:44s} {r['picked_ratio']:>6s}  {r.get('best_swept', '-')[:44]:44s} "
              f"{r.get('best_swept_ratio', '-'):>6s} {r.get('pick_over_best', '-')}")
    scored = [float(r["pick_over_best"]) for r in rows if "pick_over_best" in r]
    if scored:
        print(f"{sum(x >= WITHIN for x in scored)} of {len(scored)} shapes within 3% of the best swept candidate; "
              f"geomean pick/best {math.exp(sum(map(math.log, scored)) / len(scored)):.3f} -> {out}")
    held = [float(r["held_out_pick_over_best"]) for r in rows if r.get("held_out_pick_over_best")]
    if held:
        print(f"in the held-out sweep ({held_names}), the pick beside the others: {sum(x >= WITHIN for x in held)} "
              f"of {len(held)} within 3% of the best, geomean {math.exp(sum(map(math.log, held)) / len(held)):.3f}")
    held = [float(r["held_out_b2b_pick_over_best"]) for r in rows if r.get("held_out_b2b_pick_over_best")]
    if held:
        print(f"  back to back there: {sum(x >= WITHIN for x in held)} of {len(held)} within 3% of the best "
              f"candidate, geomean {math.exp(sum(map(math.log, held)) / len(held)):.3f}")
        for r in rows:
            if float(r.get("held_out_b2b_pick_over_best") or 1) < WITHIN:
                print(f"    {r['name']:14s} {r['held_out_b2b_pick_over_best']}  best {r['held_out_b2b_best']}")
    held = [(r["name"], float(r["held_out_table_measure_pick_over_best"])) for r in rows
            if r.get("held_out_table_measure_pick_over_best")]
    if held:
        print(f"  by the measure the table chose each rule by: {sum(x >= WITHIN for _, x in held)} of {len(held)} "
              f"within 3% (misses: {', '.join(f'{n} {x:.3f}' for n, x in held if x < WITHIN) or 'none'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
