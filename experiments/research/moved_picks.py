"""The dispatcher's pick beside the other schedules each shape was timed on in the same round.

    python -m experiments.research.moved_picks --suite-file experiments/research/shapes-wave-fit.json \
        --sweeps experiments/results/h200-sxm/logs/bench/run208-sweeps.csv

Reads merged sweeps (one `experiments.bench --sweep` per shape and round, merged with a `tag`
column `<shape>-r<round>`, as runs 204 and 208-214 keep them) and asks gemm.dispatch which
schedule it picks now for each shape (its operands contiguous, as the bench makes them). For
every round, the pick's time per call back to back over each other schedule's, and the geomean
of those ratios per round: below 1 the pick is the faster. This is the test each change of the
dispatcher's candidates was landed by (docs/research/notes.md items 210, 215-221).
"""
from __future__ import annotations

import argparse
import json
import math
import re
from collections import defaultdict
from pathlib import Path

from experiments.paths import read_rows


def paired(rows: list[dict], picks: dict[str, str]) -> list[dict]:
    """One row per (shape, round, other schedule): the pick's ours_b2b_us over the other's.
    `picks` maps a shape's name to the pick's spec; rounds without the pick are left out."""
    by_round = defaultdict(dict)
    for r in rows:
        m = re.fullmatch(r"(.+)-r(\d+)", r["tag"])
        if m and r["name"] in picks and r.get("correct", "True") == "True":
            by_round[(r["name"], int(m.group(2)))][r["schedule"]] = float(r["ours_b2b_us"])
    out = []
    for (name, rnd), times in sorted(by_round.items()):
        pick = picks[name]
        if pick not in times:
            continue
        for other, us in sorted(times.items()):
            if other != pick:
                out.append({"name": name, "round": rnd, "pick": pick, "other": other,
                            "pick_us": times[pick], "other_us": us, "pick_over_other": times[pick] / us})
    return out


def geomeans(pairs: list[dict]) -> dict[int, float]:
    """Per round, the geomean of pick_over_other."""
    logs = defaultdict(list)
    for p in pairs:
        logs[p["round"]].append(math.log(p["pick_over_other"]))
    return {rnd: math.exp(sum(v) / len(v)) for rnd, v in sorted(logs.items())}


def current_picks(shapes: list[dict]) -> dict[str, str]:
    """gemm.dispatch's pick for each shape, its rows contiguous (the bench's operands)."""
    from gemm.dispatch import choose
    from gemm.limits import line_start
    return {s["name"]: choose(s["m"], s["n"], s["k"], s.get("batch", 1), s.get("dtype", "float16"),
                              line_starts=(line_start(s["k"] * 2),) * 2).schedule.name for s in shapes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite-file", type=Path, required=True, help="the shapes (shapes.json's format)")
    ap.add_argument("--sweeps", type=Path, required=True, help="merged sweeps with a tag column <shape>-r<round>")
    args = ap.parse_args(argv)
    data = json.loads(args.suite_file.read_text())
    pairs = paired(read_rows(args.sweeps), current_picks(data["shapes"] if isinstance(data, dict) else data))
    for p in pairs:
        print(f"{p['name']:24s} r{p['round']}  {p['pick_us']:9.2f} us  {p['pick']}\n"
              f"{'':24s}     {p['other_us']:9.2f} us  {p['other']}   pick / other {p['pick_over_other']:.3f}")
    for rnd, g in geomeans(pairs).items():
        worst = max(p["pick_over_other"] for p in pairs if p["round"] == rnd)
        print(f"round {rnd}: geomean pick / other back to back {g:.3f}, worst {worst:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
