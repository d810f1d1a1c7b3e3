"""What a TMA box's rows outside the matrix cost: a GEMM whose M is short of its tile.
python -m experiments.research.tma_oob_rows --dump FILE.npz       (on the GPU)
python -m experiments.research.tma_oob_rows --summarize FILE.npz [--csv F]   (no GPU)

A box that hangs over the matrix's edge is filled with zeros by TMA for its rows outside it.
The model (sim.schedules.boxes) long took those rows as free; the decode-down study (notes
item 114) saw 128-row tiles slow down as M fell below the tile, about linearly in the rows
left out. This measures that on shapes outside the suite: [M, K] x [K, N] with K = 8192 and
N = 3840 (120 CTAs on every schedule below, fewer than the SMs, so each CTA has its own SM),
M from 1 to the activation box's rows, on four split-K schedules whose activation box (A, or
B under swap-AB) is 128, 64 or 16 rows tall. Each point is the call's device time back to
back (experiments.timing.back_to_back_us: 40 calls between two events, the host kept ahead),
the schedules and Ms interleaved over REPEATS rounds, the median kept.

The summary calibrates the profile's `tma_oob_row_ns` (the port time sim.engines.box_clk
charges for each row of a box outside the matrix, on top of the in-bounds rows' bytes) on the
schedule whose all-in-bounds point the model already predicts (CALIBRATE: the 128x64 tile,
within 1% at M = 128 before any row is left out): the value, on a 0.05 ns grid, that
minimises the squared log error of sim.fast_predict over its points with M below the box.
The other schedules are the check: their errors by M at that value, which also show where the
model misses with every row in bounds (the split-4 schedules, 20-27% fast at full M: the
split-K down-projections' miss of notes item 114, not this one).
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np

from experiments.research import cli, plain_launch

N, K = 3840, 8192
SCHEDULES = (
    "v7:block_n=64,stages=8,split_k=2",
    "v7:block_n=128,stages=4,split_k=4",
    "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=8,split_k=4",
    "v7:block_n=16,stages=10,split_k=4,swap_ab=true,epilogue=direct,producer_registers=0,consumer_registers=0",
)
MS = (1, 4, 8, 16, 24, 32, 48, 64, 96, 128)
REPEATS = 5
CALLS = 40


def activation_rows(schedule) -> int:
    """Rows of the box that carries the activations ([M, K]): A's block_m, or B's block_n
    under swap-AB (the kernel computes C^T, M becomes its N)."""
    return schedule.block_n if schedule.swap_ab else schedule.block_m


def k_tiles_per_cta(schedule) -> int:
    """K tiles one CTA's loop runs: K / block_k shared by the split."""
    tiles = -(-K // schedule.block_k)
    return -(-tiles // schedule.split_k)


def dump(path: Path) -> None:
    import torch

    import gemm
    from experiments.bench import _operands
    from experiments.measure import provenance
    from experiments.timing import back_to_back_us
    from gemm.schedule import from_spec
    points = [(spec, m) for spec in SCHEDULES for m in MS if m <= activation_rows(from_spec(spec))]
    sets = {m: [_operands(dict(m=m, n=N, k=K, batch=1, dtype="float16"), seed) for seed in range(3)]
            for m in sorted({m for _, m in points})}
    errors = {}
    for spec, m in points:   # correct first: every element against float64
        a, b = sets[m][0]
        c = gemm.matmul(a, b, schedule=from_spec(spec))
        ref = a.double() @ b.double()
        errors[f"{spec}|{m}"] = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
    times = {f"{spec}|{m}": [] for spec, m in points}
    for _ in range(REPEATS):
        for spec, m in points:
            sch = from_spec(spec)
            fn = (lambda sch, s: lambda i: gemm.matmul(*s[i % len(s)], schedule=sch))(sch, sets[m])
            times[f"{spec}|{m}"].append(back_to_back_us(fn, calls=CALLS))
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "n": N, "k": K,
                                                 "times_us": times, "rel_err": errors}))


CALIBRATE = SCHEDULES[0]
GRID_NS = tuple(round(0.05 * i, 2) for i in range(0, 201))


def _medians(rec: dict, spec: str) -> list[tuple[int, float]]:
    return sorted((int(key.split("|")[1]), statistics.median(v)) for key, v in rec["times_us"].items()
                  if key.split("|")[0] == spec)


def _predicted_us(prof, spec: str, m: int) -> float:
    import sim
    return sim.fast_predict(plain_launch(spec), m, N, K, gpu=prof).ms * 1e3


def summarize(path: Path, gpu: str = "h200-sxm") -> dict:
    """The measured times by schedule and M, the calibrated tma_oob_row_ns (module docstring),
    and every point's model error (measured / predicted - 1) with and without it."""
    import dataclasses

    from gemm.schedule import from_spec
    from sim.hardware import load_profile
    rec = json.loads(str(np.load(path)["record"]))
    base = dataclasses.replace(load_profile(gpu), tma_oob_row_ns=0.0)
    rows = activation_rows(from_spec(CALIBRATE))
    fit = [(m, t) for m, t in _medians(rec, CALIBRATE) if m < rows]

    def loss(ns):
        prof = dataclasses.replace(base, tma_oob_row_ns=ns)
        return sum(math.log(t / _predicted_us(prof, CALIBRATE, m)) ** 2 for m, t in fit)
    best = min(GRID_NS, key=loss)
    fitted = dataclasses.replace(base, tma_oob_row_ns=best)
    out = {"provenance": rec["provenance"], "tma_oob_row_ns": best, "calibrated_on": CALIBRATE, "schedules": []}
    for spec in SCHEDULES:
        sch = from_spec(spec)
        pts = _medians(rec, spec)
        out["schedules"].append({
            "schedule": spec, "box_rows": activation_rows(sch), "k_tiles_per_cta": k_tiles_per_cta(sch),
            "max_rel_err": max(e for key, e in rec["rel_err"].items() if key.split("|")[0] == spec),
            "points": [{"m": m, "us": t, "free_us": _predicted_us(base, spec, m),
                        "charged_us": _predicted_us(fitted, spec, m)} for m, t in pts]})
    return out


def print_summary(s: dict) -> None:
    print(f"[M, {K}] x [{K}, {N}], the call's device time back to back (us) by M: measured / the model with the "
          f"rows outside free / charged {s['tma_oob_row_ns']:.2f} ns each")
    for r in s["schedules"]:
        print(f"{r['schedule']}  ({r['box_rows']}-row activation box, {r['k_tiles_per_cta']} K tiles a CTA; "
              f"max rel err {r['max_rel_err']:.1e})")
        print("    " + "  ".join(f"M={p['m']}: {p['us']:.1f}/{p['free_us']:.1f}/{p['charged_us']:.1f}"
                                 for p in r["points"]))
    print(f"tma_oob_row_ns = {s['tma_oob_row_ns']:.2f} (calibrated on {s['calibrated_on']}, M below its box)")


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    rows = [{"schedule": r["schedule"], "m": p["m"], "us": round(p["us"], 2),
             "predicted_free_us": round(p["free_us"], 2), "predicted_charged_us": round(p["charged_us"], 2)}
            for r in s["schedules"] for p in r["points"]]
    return rows, (f"[M, {K}] x [{K}, {N}], the call back to back by M; medians of {REPEATS} rounds; "
                  f"python -m experiments.research.tma_oob_rows --summarize {record}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
