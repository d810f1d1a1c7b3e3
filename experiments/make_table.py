"""Make the dispatcher's table (gemm/dispatch/tables/<gpu>.json) from a measured sweep.

  python -m experiments.make_table                       # experiments/results/h200-sxm/sweep*.csv
  python -m experiments.make_table --sweep FILE.csv ...  # other sweeps

For every shape the sweeps measured, the fastest correct candidate becomes the rule for the
shape's half-octave bucket of M, N and K (gemm.dispatch.table.bucket). Candidates are compared by
their ratio to the faster cuBLAS timed in the same run, which carries over between runs whose
clocks differ (time alone does not); where sweeps measured one candidate at one shape more than
once, the median of its ratios counts: one run's ratio moves by a few percent (the host's pace,
the clock between blocks), more than what separates the leading candidates, so the newest alone
would pick by noise, and now and then by far more (a cuBLAS block the host slowed by 10-40%),
which a mean would carry into the pick. `--since DATE` leaves out rows measured before it (after a kernel change);
`--padded-since DATE` does so for the shapes whose rows TMA cannot address only (after a change
to the copies their calls make: those shapes have rules of their own, gemm.dispatch.table).
`--by back-to-back` compares the candidates' calls back to back instead (each sweep's
cublas_b2b_us over ours_b2b_us, timed in rounds): the device's speed under a stream of calls,
which one call between events cannot see where the host paces it. `--by pace` (the table's) takes
the calls back to back for the shapes the host paces (their candidates' calls back to back take
under HOST_PACED of a call between events, the median over the candidates: a call there measures
the host, whose noise is larger than what separates the kernels) and one call elsewhere.
Where several measured shapes share a bucket, the candidate with the best geometric-mean time
ratio over them wins. Only fp32-accumulating candidates the dispatcher may choose
(gemm.dispatch.candidates.SPECS) are kept.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from gemm.dispatch.candidates import SPECS
from gemm.dispatch.table import TABLES, contiguous_lines_off, padded, shape_key

from .paths import REPO, read_rows, results_dir

RESULTS = results_dir()


MEASURES = ("one-call", "back-to-back", "pace")
# a shape whose calls back to back take under this share of one call between events is paced by
# the host: sq512-sq1024 and odd1000 at 0.2-0.45 on the H200, sq2048 0.6, the decode rows 0.9
HOST_PACED = 0.5


# Back-to-back times measured before this date were taken without the GPU waiting for the host to
# queue the calls (experiments.timing.back_to_back_us): where the host paces a shape they time the
# host, alike for every candidate, and each block carries the host's way to its first launch.
HELD_B2B_SINCE = "2026-12-03T19:00:00"


def _ratio(r: dict, measure: str) -> float | None:
    """A sweep row's speed relative to cuBLAS's: one call between events (`ratio`), or the calls
    back to back (cublas_b2b_us / ours_b2b_us, from HELD_B2B_SINCE on), None where the row lacks it."""
    if measure == "one-call":
        return float(r["ratio"]) if r.get("ratio") else None
    if (r.get("date") or "") < HELD_B2B_SINCE:
        return None
    if r.get("ours_b2b_us") and r.get("cublas_b2b_us"):
        return float(r["cublas_b2b_us"]) / float(r["ours_b2b_us"])
    return None


def _kept(rows, since: str, padded_since: str):
    """(shape, row) of the correct rows of dispatcher candidates measured on or after `since` (an
    ISO date), and for shapes whose rows TMA cannot address (gemm.dispatch.table.padded) on or
    after `padded_since` as well; shape = (name, m, n, k, batch, dtype)."""
    for r in rows:
        date = r.get("date") or ""
        if r["schedule"] in SPECS and r.get("correct") == "True" and date >= since:
            shape = (r["name"], int(r["m"]), int(r["n"]), int(r["k"]), int(r.get("batch") or 1), r["dtype"])
            if not (padded(shape[2], shape[3]) and date < padded_since):
                yield shape, r


def host_paced(rows, since: str = "", padded_since: str = "") -> set:
    """The shapes whose candidates' calls back to back take under HOST_PACED of one call between
    events (the median over the candidates' rows)."""
    shares = defaultdict(list)
    for shape, r in _kept(rows, since, padded_since):
        if r.get("ours_b2b_us") and r.get("ours_tflops"):
            _, m, n, k, batch, _ = shape
            one_call_us = 2 * m * n * k * batch / float(r["ours_tflops"]) / 1e6
            shares[shape].append(float(r["ours_b2b_us"]) / one_call_us)
    return {shape for shape, s in shares.items() if statistics.median(s) < HOST_PACED}


def candidate_ratios(rows, since: str = "", measure: str = "one-call", padded_since: str = "") -> dict:
    """{(name, m, n, k, batch, dtype): {spec: ratio to the faster cuBLAS}} of the rows `_kept`
    keeps, the median of each candidate's measurements at each shape; `measure`
    (MEASURES): by one call, by the calls back to back, or by pace (back to back where the host
    paces the shape's calls, `host_paced`; else one call)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    if measure == "pace":
        paced = host_paced(rows, since, padded_since)
        one_call = candidate_ratios(rows, since, "one-call", padded_since)
        back_to_back = candidate_ratios(rows, since, "back-to-back", padded_since)
        return {shape: back_to_back.get(shape) if shape in paced and back_to_back.get(shape) else ratios
                for shape, ratios in one_call.items()}
    ratios = defaultdict(lambda: defaultdict(list))
    for shape, r in _kept(rows, since, padded_since):
        ratio = _ratio(r, measure)
        if ratio:
            ratios[shape][r["schedule"]].append(ratio)
    return {shape: {spec: statistics.median(v) for spec, v in specs.items()} for shape, specs in ratios.items()}


def best_per_bucket(rows, since: str = "", measure: str = "one-call", padded_since: str = "") -> dict:
    """{shape_key: (spec, [measured shape names])}."""
    by_shape = {shape: {spec: 1.0 / ratio for spec, ratio in ratios.items()}   # time over cuBLAS's
                for shape, ratios in candidate_ratios(rows, since, measure, padded_since).items()}
    buckets = defaultdict(list)
    for shape, times in by_shape.items():
        name, m, n, k, batch, dtype = shape
        buckets[shape_key(m, n, k, batch, dtype, contiguous_lines_off(n, k))].append((name, times))
    table = {}
    for key, members in buckets.items():
        common = set.intersection(*(set(t) for _, t in members))
        def score(spec):   # geomean over the bucket's shapes of time / that shape's best time
            return math.exp(sum(math.log(t[spec] / min(t.values())) for _, t in members) / len(members))
        # ties (medians of the same rounded ratios) go to the first spec by name: a set's order
        # changes with the process's string hashing, and the table must not
        ranked = sorted(common, key=lambda spec: (score(spec), spec))
        if ranked:
            table[key] = (ranked[0], [name for name, _ in members])
    return table


def _in_repo(path: Path) -> str:
    """A sweep's path as the table records it: relative to the repository where it lies inside it,
    so that the table reads the same on every checkout (experiments.picks opens these files)."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweep", type=Path, nargs="+", default=None, help="sweep CSVs (default: results/*/sweep*.csv)")
    p.add_argument("--gpu", default="h200-sxm")
    p.add_argument("--since", default="", help="leave out rows measured before this ISO date")
    p.add_argument("--padded-since", default="",
                   help="for shapes whose rows TMA cannot address, leave out rows measured before this ISO date as "
                        "well (after a change to the copies those calls make, gemm/padding.py)")
    p.add_argument("--by", choices=MEASURES, default="pace",
                   help="compare candidates by one call between events, by their calls back to back (sweeps "
                        "that time them in rounds, experiments.timing.back_to_back_rounds), or by pace "
                        "(default: back to back for the shapes the host paces, else one call)")
    args = p.parse_args(argv)
    sweeps = args.sweep or sorted(RESULTS.glob("sweep*.csv"))
    rows = [r for path in sweeps for r in read_rows(path)]
    table = best_per_bucket(rows, args.since, args.by, args.padded_since)
    rules = [{"m_bucket": key[0], "n_bucket": key[1], "k_bucket": key[2], "batch_bucket": key[3], "dtype": key[4],
              "padded": key[5], **({"lines_off": True} if key[6] else {}), "schedule": spec,
              "measured": "fastest measured on " + ", ".join(names)}
             for key, (spec, names) in sorted(table.items())]
    out = TABLES / f"{args.gpu}.json"
    out.write_text(json.dumps({
        "gpu": args.gpu,
        "made_by": "python -m experiments.make_table",
        "from": [_in_repo(path) for path in sweeps],
        **({"since": args.since} if args.since else {}),
        **({"padded_since": args.padded_since} if args.padded_since else {}),
        "by": args.by,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "buckets": "round(2 log2 x) / 2 of M, N, K and the batch; padded: rows TMA cannot address (K or N x 2 "
                   "bytes not a multiple of 16); lines_off: the operands' lines start off 128-byte lines (K x 2 "
                   "bytes not a multiple of 128)",
        "rules": rules,
    }, indent=1) + "\n")
    for rule in rules:
        print(f"  {rule['measured'][len('fastest measured on '):]:40s} -> {rule['schedule']}")
    print(f"{len(rules)} rules -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
