"""Board power against the number of busy SMs: one loop, the grid swept from 12 CTAs to 3 per SM.
python -m experiments.research.power_sweep --dump FILE.npz [--seconds 2]   (on the H200)
python -m experiments.research.power_sweep --summarize FILE.npz [--csv F]  (no GPU)

Why: in runs 34-35 every loop sat at the 700 W cap, each at its own clock, so a power form
P = p0 + pT T + f^g (b + kt u) + .. could not tell its exponent g (fit_power --power, twelfth
pass), and g decides what clock a GEMM earns. Here one loop runs on G CTAs (G = 12 .. 396, one
per SM up to 132). Few busy SMs stay under the cap at the maximum clock: the power grows with
the busy SMs, and its slope is one SM's power at 1.98 GHz. Once the cap binds, the controller
lowers the clock as G grows: each point is the same work per SM at another clock, and the clock
at which n SMs fill the cap is what pins g. The grid goes up and then down again, so that a
drift in temperature shows as two clocks for one G.

Loops: the WGMMA-only loop (tensor work, no L2 traffic) and the load-only loop (L2 and DRAM
traffic, no tensor work) of the seed's 128x128x64 2-stage ring (experiments.calibrate_clock),
K = 131072, B [N, K] as the seed's; with --match, the GEMMs V1, V2 and V3 s2 on the same
grids (`--match "v2 "` sweeps V2: a key is "KIND CTAS PASS"). `--summarize`: per point the median power, reported clock
and temperature over the second half of the loop, the clock the last launch's CTAs counted
(clock64 over globaltimer), the SMs they ran on, and the work per busy SM: tensor activity per
counted clock, or L2 -> SM bytes per second and the DRAM bytes of an LRU replay of the launch.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from experiments import catalog
from experiments.reference import random_operands
from experiments.research.power_draw import (GPU, dump_then_summarize, measure_looped, memory_power_w,
                                              parse_power_cli, print_power_rows, sample_while, smi_medians)
from sim.hardware import load_profile
from sim.l2cache import probe_clock_ghz, probe_timeline, replay

K = 131072
# each point's key starts with the loop's: 'load 132 up'; the catalog name it runs
LOOPS = {"mma": "mma loop 128x128x64 s2", "load": "load loop 128x128x64 s2",
         # the GEMMs themselves (run 40 on): only with --match, e.g. --match "v2 "
         "v1": "v1", "v2": "v2", "v3 s2": "v3 s2"}
# tile rows x tile columns: G = 12, 24, 44, 66, 88, 110, 132 CTAs (one per SM), then 2 and 3 per SM
GRIDS = [(3, 4), (4, 6), (4, 11), (6, 11), (8, 11), (10, 11), (11, 12), (12, 22), (18, 22)]
LOOPS_BY_DEFAULT = ("mma ", "load ")  # what --dump sweeps without --match


def _key(kind, pass_, rows, cols):
    """'load 132 up' for the sweep's own grids; 'load 1x132 up' for a grid given with --grids."""
    return f"{kind} {rows * cols if (rows, cols) in GRIDS else f'{rows}x{cols}'} {pass_}"


def _passes(grids=None):
    """Up then down over the sweep's grids, or once each way over the grids given."""
    grids = grids or GRIDS
    return [("up", grids), ("down", grids[-2::-1])]


def dump(path: Path, seconds: float, match: list[str], memory_power: bool, grids=None) -> None:
    out = {}
    for kind, name in LOOPS.items():
        entry = catalog.entry(name)
        s, config = entry.schedule, entry.kernel_config(clock_probe=True)
        if not any(t in _key(kind, p, r, c) for p, shapes in _passes(grids) for r, c in shapes
                   for t in match or LOOPS_BY_DEFAULT):
            continue
        _, idle, detail = sample_while(lambda: time.sleep(1.0), memory_power)
        out[f"smi {kind} idle"] = np.array(idle)
        out[f"detail {kind} idle"] = np.array(detail)
        for pass_, shapes in _passes(grids):
            for rows, cols in shapes:
                key = _key(kind, pass_, rows, cols)
                if not any(t in key for t in match or LOOPS_BY_DEFAULT):
                    continue
                m, n = rows * s.block_m, cols * s.block_n
                a, b = random_operands(m, n, K, "float16", seed=rows * 100 + cols)
                b = b.t().contiguous().t()
                out.update(measure_looped(key, config, m, n, K, a, b, seconds, memory_power))
                out[f"grid {key}"] = np.array([rows, cols])
    if grids:
        out["grids"] = np.array(grids)
    np.savez_compressed(path, **out)


def summarize(path: Path) -> list[dict]:
    prof = load_profile(GPU)
    z = np.load(path)
    rows_out = []
    mem = lambda key: ({"memory_power_w": memory_power_w(z[f"detail {key}"])}  # noqa: E731
                       if f"detail {key}" in z.files and len(z[f"detail {key}"]) else {})
    for kind, name in LOOPS.items():
        s = catalog.schedule(name)
        if f"smi {kind} idle" not in z.files:
            continue
        rows_out.append({"loop": kind, "pass": "idle", "ctas": 0, "busy_sms": 0, **smi_medians(z[f"smi {kind} idle"]),
                         **mem(f"{kind} idle")})
        for pass_, shapes in _passes([tuple(g) for g in z["grids"]] if "grids" in z.files else None):
            for rows, cols in shapes:
                key = _key(kind, pass_, rows, cols)
                if f"ms {key}" not in z.files:
                    continue
                m, n = rows * s.block_m, cols * s.block_n
                ms = float(z[f"ms {key}"][0])
                rec = np.asarray(z[f"probe {key}"]).astype(np.int64)
                starts, durations = probe_timeline(rec)
                counted = float(np.median(probe_clock_ghz(rec)))
                busy = len(np.unique(rec[:, 4]))
                row = {"loop": kind, "pass": pass_, "ctas": rows * cols, "grid": f"{rows}x{cols}", "busy_sms": busy,
                       **smi_medians(z[f"smi {key}"]), **mem(key), "ms": round(ms, 4), "probe_clock_ghz": round(counted, 3)}
                if kind != "load":  # tensor activity per busy SM per counted clock
                    flops = 2 * m * n * K
                    row["tensor_util_per_clock"] = round(
                        flops / (ms * 1e-3) / (busy * prof.tensor_flops_per_clk * counted * 1e9), 4)
                if kind != "mma":  # every CTA's A and B panels, and what an LRU replay of the launch misses
                    l2 = m * n * K * 2 * (1 / s.block_m + 1 / s.block_n)
                    dram = replay(s, m, n, K, starts, durations, prof.l2_lru_bytes, slices_per_step=8)["hbm_read_bytes"]
                    row["l2_to_sm_tbs"] = round(l2 / (ms * 1e-3) / 1e12, 3)
                    row["dram_tbs"] = round(dram / (ms * 1e-3) / 1e12, 3)
                rows_out.append(row)
    return rows_out


def main(argv=None):
    def grids_argument(ap):
        ap.add_argument("--grids", metavar="RxC,..", help="with --dump: these grids of tiles instead of the "
                        "sweep's, e.g. 11x12,1x132,132x1 (the same CTAs per SM, other DRAM bytes)")
    args = parse_power_cli(__doc__, "sweep the grid of each loop while nvidia-smi samples", 2.0,
                           "only the points whose key ('mma 132 up', 'load 264 down') contains TEXT", argv,
                           grids_argument)
    grids = [tuple(int(x) for x in g.split("x")) for g in args.grids.split(",")] if args.grids else None
    rows = dump_then_summarize(args, lambda *a: dump(*a, grids=grids), summarize, "board power against busy SMs (nvidia-smi power.draw.instant "
                               "every 20 ms, median of the second half of each point)", "experiments.research.power_sweep")
    print_power_rows(rows, f"{'loop':5s} {'pass':5s} {'CTAs':>5s} {'SMs':>4s}",
                     lambda r: f"{r['loop']:5s} {r['pass']:5s} {r['ctas']:5d} {r['busy_sms']:4d}")


if __name__ == "__main__":
    main()
