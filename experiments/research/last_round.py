"""What a persistent launch's last, partial round of tiles costs, against a whole round.
python -m experiments.research.last_round --dump FILE.npz       (on the GPU)
python -m experiments.research.last_round --summarize FILE.npz [--csv F]   (no GPU)

A persistent grid of 132 CTAs walks T tiles: T // 132 whole rounds, then a round in which only
T % 132 CTAs have a tile while the other SMs idle. The model (sim.model, persistent) charged every
CTA the longest walk at the whole grid's contention and clock, so its time was a step in T: any
partial round cost a whole one. It now charges that round engines.last_round_share of a whole one,
whose two profile figures (last_round_floor, last_round_slope) `calibrate` sets from the K 4096
points of this study (docs/research/notes.md 209). This times one tile (TILES) on M = 1536 (12 tile rows) over COLUMNS tile columns: 264,
300, 336, 372 and 396 tiles, two whole rounds and a last round of 0, 36, 72, 108 and 132 CTAs, at
each K of KS; the call's device time back to back after the GPU rested REST_S, the points
interleaved over REPEATS rounds, the median kept. The summary gives each point's time over the
two-round point's, the last round's share of a whole one, and the model's.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import numpy as np

from experiments.research import check_and_time, cli

TILES = (("v7", 128, 256), ("v7:block_n=320", 128, 320))
ROWS = 12
COLUMNS = (22, 25, 28, 31, 33)
KS = (4096, 16384)
SMS = 132
REPEATS = 5
CALLS = 30
REST_S = 0.5


def shape(block_m: int, block_n: int, cols: int, k: int) -> tuple[int, int, int]:
    return ROWS * block_m, cols * block_n, k


def points(ks=KS) -> list[tuple[str, int, int, int]]:
    return [(spec, *shape(bm, bn, cols, k)) for k in ks for spec, bm, bn in TILES for cols in COLUMNS]


def dump(path: Path) -> None:
    from experiments.measure import provenance
    errors, times = check_and_time(points(), REPEATS, CALLS, REST_S)
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "times_us": times, "rel_err": errors}))


def summarize(path: Path, gpu: str = "h200-sxm") -> dict:
    import sim
    from gemm.schedule import from_spec
    from sim.hardware import load_profile
    rec = json.loads(str(np.load(path)["record"]))
    prof = load_profile(gpu)
    early = dataclasses.replace(prof, clock_ghz=prof.load_clock["float16"]["early_ghz"])
    ks = sorted({int(key.split("x")[-1]) for key in rec["times_us"]})
    rows = []
    for k in ks:
        for spec, bm, bn in TILES:
            t, p = {}, {}
            for cols in COLUMNS:
                m, n, _ = shape(bm, bn, cols, k)
                t[cols] = statistics.median(rec["times_us"][f"{spec}@{m}x{n}x{k}"])
                p[cols] = sim.fast_predict(from_spec(spec), m, n, k, gpu=early).ms * 1e3
            whole = t[COLUMNS[-1]] - t[COLUMNS[0]]          # a third round of 132 tiles
            model_whole = p[COLUMNS[-1]] - p[COLUMNS[0]]
            for cols in COLUMNS:
                m, n, _ = shape(bm, bn, cols, k)
                last = ROWS * cols - 2 * SMS
                rows.append({"tile": f"{bm}x{bn}", "tiles": ROWS * cols, "last_round_ctas": last, "m": m, "n": n,
                             "k": k, "measured_us": t[cols], "model_us": p[cols],
                             "last_round_share": (t[cols] - t[COLUMNS[0]]) / whole,
                             "model_last_round_share": (p[cols] - p[COLUMNS[0]]) / model_whole})
    return {"provenance": rec["provenance"], "rows": rows, "clock_ghz": early.clock_ghz,
            "calibrated": calibrate(rows), "max_rel_err": max(rec["rel_err"].values())}


def calibrate(rows: list[dict]) -> dict:
    """The profile's last_round_floor: the mean share of the rounds that leave at least 40% of the
    grid idle (they measure alike); last_round_slope: the mean of (1 - share) / idle share over the
    rounds between that and a whole one."""
    rows = [r for r in rows if r["k"] == KS[0]]   # the profile's figures: K 4096 (run 203)
    thin = [r["last_round_share"] for r in rows if 0 < r["last_round_ctas"] <= 0.6 * SMS]
    wide = [(1 - r["last_round_share"]) / (1 - r["last_round_ctas"] / SMS)
            for r in rows if 0.6 * SMS < r["last_round_ctas"] < SMS]
    return {"last_round_floor": round(statistics.mean(thin), 2), "last_round_slope": round(statistics.mean(wide), 2)}


def print_summary(s: dict) -> None:
    print(f"a persistent launch's last round (model: sim.fast_predict at {s['clock_ghz']:.3f} GHz); "
          f"max rel err {s['max_rel_err']:.1e}")
    print(f"  {'tile':8s} {'K':>5s} {'tiles':>5s} {'last':>4s} {'meas us':>8s} {'model us':>8s} {'share':>6s} "
          f"{'model':>6s}")
    for r in s["rows"]:
        print(f"  {r['tile']:8s} {r['k']:5d} {r['tiles']:5d} {r['last_round_ctas']:4d} {r['measured_us']:8.1f} "
              f"{r['model_us']:8.1f} {r['last_round_share']:6.2f} {r['model_last_round_share']:6.2f}")
    print("calibrated: " + ", ".join(f"{k} {v}" for k, v in s["calibrated"].items()))


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    rows = cli.rounded(s["rows"])
    return rows, (f"a persistent launch's last round: the call back to back, medians of {REPEATS} rounds; share: "
                  f"its time over a whole round's; python -m experiments.research.last_round --summarize {record}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
