"""What a cluster's TMA multicast saves on each SM's L2 -> SM port.
python -m experiments.research.multicast_port --dump FILE.npz       (on the GPU)
python -m experiments.research.multicast_port --summarize FILE.npz [--csv F]   (no GPU)

A cluster of two along M shares each B box: each CTA loads half of it and multicasts that
half to both CTAs' shared memory. Whether that halves the B bytes each SM's port carries (the
port's limit on the L2 side: the pair's ports carry the box once) or saves nothing (the limit
on the receiving side: each SM still takes in the whole box) is the profile's
`multicast_receive_cost`: the share of the partner's half that still costs this SM's port
time, 0 in the first case, 1 in the second.

This times kernels that differ only in the cluster, on shapes outside the suite whose tiles
fill whole waves with either (so no edge, no partial wave, no idle cluster partner tells them
apart) and whose operands fit in L2 (the port, not HBM, feeds them): PAIRS, each a plain
schedule and the same tile with cluster_m=2. Each point is the call's device time back to
back (experiments.timing.back_to_back_us, CALLS calls), after the GPU rested REST_S seconds,
so every point runs at the early clock of the first milliseconds of load; the pairs
interleaved over REPEATS rounds, the median kept.

The summary sets each clustered schedule's time over its plain twin's beside what the model
(sim.fast_predict at the profile's early clock, load_clock) gives for that ratio at
multicast_receive_cost from 0 to 1, and calibrates the value (on a 0.05 grid) that minimises
the squared log error of the ratios. Ratios, not times: the model's error common to both
kernels of a pair (the clock, the port's rate) cancels.
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import numpy as np

from experiments.research import cli

# (plain, clustered, M, N, K): tiles in whole waves of 132 SMs, operands in L2
PAIRS = (
    ("v7:block_n=128,stages=4", "v7:block_n=128,stages=4,cluster_m=2", 4096, 4224, 2048),  # 32 x 33 = 8 waves
    ("v7", "v7:cluster_m=2", 5632, 3072, 2048),                                            # 44 x 12 = 4 waves
)
REPEATS = 5
CALLS = 40
REST_S = 1.0
GRID = tuple(round(0.05 * i, 2) for i in range(0, 21))


def dump(path: Path) -> None:
    import time

    import torch

    import gemm
    from experiments.bench import _operands
    from experiments.measure import provenance
    from experiments.timing import back_to_back_us
    from gemm.schedule import from_spec
    points = [(spec, m, n, k) for plain, clustered, m, n, k in PAIRS for spec in (plain, clustered)]
    sets = {(m, n, k): [_operands(dict(m=m, n=n, k=k, batch=1, dtype="float16"), seed) for seed in range(3)]
            for _, _, m, n, k in PAIRS}
    errors = {}
    for spec, m, n, k in points:   # correct first: every element against float64
        a, b = sets[(m, n, k)][0]
        c = gemm.matmul(a, b, schedule=from_spec(spec))
        ref = a.double() @ b.double()
        errors[spec] = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
    times = {spec: [] for spec, *_ in points}
    for r in range(REPEATS):
        for spec, m, n, k in (points if r % 2 == 0 else points[::-1]):
            sch, ops = from_spec(spec), sets[(m, n, k)]
            time.sleep(REST_S)
            times[spec].append(back_to_back_us(lambda i: gemm.matmul(*ops[i % len(ops)], schedule=sch), calls=CALLS))
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "times_us": times, "rel_err": errors}))


def _model_ratio(prof, plain: str, clustered: str, m: int, n: int, k: int) -> float:
    import sim
    from gemm.schedule import from_spec
    return (sim.fast_predict(from_spec(clustered), m, n, k, gpu=prof).ms
            / sim.fast_predict(from_spec(plain), m, n, k, gpu=prof).ms)


def summarize(path: Path, gpu: str = "h200-sxm") -> dict:
    from sim.hardware import load_profile
    rec = json.loads(str(np.load(path)["record"]))
    prof = load_profile(gpu)
    early = dataclasses.replace(prof, clock_ghz=prof.load_clock["float16"]["early_ghz"])
    pairs = []
    for plain, clustered, m, n, k in PAIRS:
        t_plain, t_cl = statistics.median(rec["times_us"][plain]), statistics.median(rec["times_us"][clustered])
        model = {r: _model_ratio(dataclasses.replace(early, multicast_receive_cost=r), plain, clustered, m, n, k)
                 for r in GRID}
        pairs.append({"plain": plain, "clustered": clustered, "shape": [m, n, k], "plain_us": t_plain,
                      "clustered_us": t_cl, "measured_ratio": t_cl / t_plain, "model_ratio": model,
                      "max_rel_err": max(rec["rel_err"][plain], rec["rel_err"][clustered])})
    best = min(GRID, key=lambda r: sum(math.log(p["measured_ratio"] / p["model_ratio"][r]) ** 2 for p in pairs))
    return {"provenance": rec["provenance"], "pairs": pairs, "multicast_receive_cost": best,
            "clock_ghz": early.clock_ghz}


def print_summary(s: dict) -> None:
    print(f"clustered / plain, the call back to back (model: sim.fast_predict at {s['clock_ghz']:.3f} GHz)")
    for p in s["pairs"]:
        m, n, k = p["shape"]
        print(f"{p['clustered']} / {p['plain']} at {m}x{n}x{k}: {p['clustered_us']:.1f} / {p['plain_us']:.1f} us = "
              f"{p['measured_ratio']:.3f}; model at cost 0 {p['model_ratio'][0.0]:.3f}, 0.5 "
              f"{p['model_ratio'][0.5]:.3f}, 1 {p['model_ratio'][1.0]:.3f} (max rel err {p['max_rel_err']:.1e})")
    print(f"multicast_receive_cost = {s['multicast_receive_cost']:.2f}")


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    rows = [{"plain": p["plain"], "clustered": p["clustered"], "m": p["shape"][0], "n": p["shape"][1],
             "k": p["shape"][2], "plain_us": round(p["plain_us"], 2), "clustered_us": round(p["clustered_us"], 2),
             "measured_ratio": round(p["measured_ratio"], 4),
             **{f"model_ratio_cost_{r:g}": round(p["model_ratio"][r], 4) for r in (0.0, 0.5, 1.0)}}
            for p in s["pairs"]]
    return rows, (f"clustered over plain, the call back to back; medians of {REPEATS} rounds; "
                  f"python -m experiments.research.multicast_port --summarize {record}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
