"""What gemm.autotune picks on shapes the table does not hold, against the dispatcher's pick.

    python -m experiments.research.autotune_picks --dump OUT.json --suite-file F [F ...]   (GPU)
    python -m experiments.research.autotune_picks --summarize OUT.json                      (no GPU)

--dump: for every shape of the suite files (shapes.json's format), random operands as the bench
makes them (A row-major, B the transpose of a row-major weight; a batch where the shape has one),
the dispatcher's plan, then `gemm.autotune(.., force=True)`, whose entry holds every candidate's
time back to back; the tuned call's output is checked against a float64 reference. One record a
shape: the pick, the candidates in autotune's order, their times, the winner and its index.
--summarize: the winner over the pick by autotune's own times, per shape and as a geomean, and
how many picks are within 3% of the winner. The same two in the bench, round by round:
`experiments.research.moved_picks` on the merged sweeps of each moved shape (runs 218-219,
docs/research/notes.md items 224-225).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

WITHIN = 0.97   # a pick within 3% of the winner counts as held


def dump(suite_files: list[Path], out: Path) -> list[dict]:
    import torch

    import gemm
    import gemm.api
    from experiments.reference import relative_error
    from gemm.dispatch import tuning_candidates
    from gemm.dispatch.autotune import lookup
    records = []
    for f in suite_files:
        for x in json.loads(Path(f).read_text())["shapes"]:
            m, n, k, batch, dt = x["m"], x["n"], x["k"], x.get("batch", 1), x.get("dtype", "float16")
            g = torch.Generator(device="cuda").manual_seed(m + n + k)
            lead = (batch,) if batch > 1 else ()
            a = torch.randn(*lead, m, k, device="cuda", dtype=getattr(torch, dt), generator=g)
            b = torch.randn(*lead, n, k, device="cuda", dtype=getattr(torch, dt), generator=g).transpose(-1, -2)
            pick = gemm.plan(a, b)
            order = [s.name for s in tuning_candidates(m, n, k, batch, dt)]
            tuned = gemm.autotune(a, b, force=True)
            times = lookup(gemm.api._tune_key(*gemm.api._operands(a, b, None).key))["timed_ms"]
            c = gemm.matmul(a, b)
            err = max(relative_error(c[i], a[i], b[i]) for i in range(batch)) if batch > 1 else relative_error(c, a, b)
            records.append({"suite_file": str(f), "name": x["name"], "pick": pick.schedule.name,
                            "pick_source": pick.source, "candidates": order, "timed_ms": times,
                            "winner": tuned.schedule.name, "winner_index": order.index(tuned.schedule.name),
                            "rel_err": err})
            print(f"{x['name']:26s} winner #{records[-1]['winner_index']} {tuned.schedule.name}", flush=True)
    out.write_text(json.dumps(records, indent=1))
    return records


def summary(records: list[dict]) -> dict:
    """{rows: [{name, pick, winner, winner_index, winner_over_pick}], geomean, held, moved}: the
    winner's time over the pick's by autotune's own times (a pick autotune did not time: None)."""
    rows = []
    for r in records:
        t = r["timed_ms"]
        ratio = t[r["winner"]] / t[r["pick"]] if r["pick"] in t else None
        rows.append({"name": r["name"], "pick": r["pick"], "winner": r["winner"], "winner_index": r["winner_index"],
                     "winner_over_pick": ratio})
    ratios = [row["winner_over_pick"] for row in rows if row["winner_over_pick"] is not None]
    return {"rows": rows, "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
            "held": sum(x >= WITHIN for x in ratios), "timed": len(ratios),
            "moved": sum(row["winner"] != row["pick"] for row in rows)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", type=Path, metavar="OUT", help="measure (GPU) and write the records here")
    ap.add_argument("--suite-file", type=Path, nargs="+", help="with --dump: the shapes")
    ap.add_argument("--summarize", type=Path, metavar="FILE", help="the table from a dump (no GPU)")
    args = ap.parse_args(argv)
    if bool(args.dump) == bool(args.summarize):
        ap.error("give one of --dump or --summarize")
    if args.dump:
        if not args.suite_file:
            ap.error("--dump needs --suite-file")
        dump(args.suite_file, args.dump)
        return
    s = summary(json.loads(args.summarize.read_text()))
    for row in s["rows"]:
        ratio = f"{row['winner_over_pick']:.3f}" if row["winner_over_pick"] is not None else "  -  "
        print(f"{row['name']:26s} {ratio}  #{row['winner_index']} {row['winner'] if row['winner'] != row['pick'] else '(the pick)'}")
    print(f"winner over pick, autotune's own times: geomean {s['geomean']:.3f}; the pick within 3% on "
          f"{s['held']} of {s['timed']}; moved {s['moved']}")


if __name__ == "__main__":
    main()
