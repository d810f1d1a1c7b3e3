"""The SM clock our kernels actually run at, measured inside them.

A clock-probe build of a kernel (KernelConfig(clock_probe=True)) has thread 0 of
every CTA record %clock64 and %globaltimer at its start and end. Each CTA's clock
is its cycles over its nanoseconds; the kernel's is the median over CTAs. The probe
adds a handful of instructions per CTA, not per iteration.

  python -m experiments.calibrate_clock [--profile sim/profiles/h200-sxm.json]

Writes experiments/results/<gpu>/clock.csv and, with --profile, the measured
sustained clock into the simulator's profile (the median over PROFILE_KEYS, dense
schedules that are not the seed's tile), with provenance. `--mma-loop` / `--load-loop`
time the two halves of the loop instead (the kernels with their loads, or their WGMMAs,
taken out: the microbenchmarks that set the model's tensor-core and L2 -> SM parameters),
`--prefetch` V3 at one CTA per SM with the producer's lead capped. The kernels are
experiments.catalog's sets.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from tqdm import tqdm

from sim.l2cache import probe_clock_ghz

from . import catalog
from .measure import provenance
from .paths import results_dir
from .probe import probed_launcher
from .reference import random_operands
from .timing import time_interleaved, tflops

# the dense schedules whose median clock goes into the profile: not the seed's 128x128x64
# tile, so that those rows stay held out of the clock (experiments.compare)
PROFILE_KEYS = ("v1 128x192x64", "v2 128x192x64 s2", "v1 64x256x64", "v2 64x256x64 s2",
                "v1 64x128x64", "v2 128x128x32 s2")
# the load_loop.csv rows that set the profile's L2 -> SM port (sim/hardware.py); the others are
# held out of it
LOAD_LOOP_CALIBRATION = ("load loop 128x128x64 s2", "load loop 128x128x64 s4", "load loop 128x128x16 s2")
# what each mode probes (experiments.catalog) and where its rows go
MODES = {"clock": (catalog.CLOCK_PROBED, "clock.csv"), "mma_loop": (catalog.MMA_LOOPS, "mma_loop.csv"),
         "mma_loop_small_tiles": (catalog.MMA_LOOPS_SMALL_TILES, "mma_loop_small_tiles.csv"),
         "load_loop": (catalog.LOAD_LOOPS, "load_loop.csv"), "prefetch": (catalog.PREFETCH, "prefetch.csv")}


def probe_clock(entry: catalog.Entry, sets, runs=5):
    """(median GHz over CTAs of all runs, per-run medians, event-timed ms, CTAs per SM, every
    CTA's probe words of the last run) of a catalog entry's clock-probe build."""
    import torch
    m, k = sets[0][0].shape
    n = sets[0][1].shape[1]
    run, probe, loaded = probed_launcher(entry.kernel_config(clock_probe=True), m, n, k)

    # timed alone, after a warm-up long enough for the power controller to settle:
    # the sustained speed of this kernel at the clock it earns itself
    ms = time_interleaved({"probe": run}, sets, warmup=20, iters=30)["probe"]
    per_run, all_ghz = [], []
    for r in range(runs):
        run(*sets[r % len(sets)])
        torch.cuda.synchronize()
        raw = probe.get()
        ghz = probe_clock_ghz(raw)
        per_run.append(float(np.median(ghz)))
        all_ghz.extend(ghz.tolist())
    ctas_per_sm = loaded.occupancy.max_active_blocks_per_multiprocessor(loaded.threads, loaded.shared_bytes)
    return statistics.median(all_ghz), per_run, ms, ctas_per_sm, raw


def probe_row(name: str, entry: catalog.Entry, ghz, per_run, ms, ctas_per_sm, records=None) -> dict:
    """One row of clock.csv (or its siblings): the kernel, its clock, time and activity per clock;
    with the last run's probe words, also a CTA's own clocks per K tile (start to end, the
    prologue and epilogue shared out over its K tiles; no launch gaps between CTAs)."""
    sched = entry.schedule
    tf = tflops(8192, 8192, 8192, ms)
    iterations = (8192 // sched.block_m) * (8192 // sched.block_n) * (8192 // sched.block_k)
    # every CTA's A and B panels: M N K x 2 B x (1/block_m + 1/block_n) (the first clock.csv
    # was written with an extra factor 2 here; its column was halved afterwards, as it says).
    # The load-free loop reads only its prefill.
    l2_bytes = 0 if entry.kind == "mma" else 8192 ** 3 * 2 * (1 / sched.block_m + 1 / sched.block_n)
    return {"schedule": name, "family": sched.family, "version": sched.name, "raster": sched.raster,
            "prefetch_limit": entry.prefetch_limit or sched.stages,
            "consumer_warpgroups": sched.consumer_warpgroups,
            "wgmma_in_flight": sched.wgmma_in_flight, "block_m": sched.block_m,
            "block_n": sched.block_n, "block_k": sched.block_k, "stages": sched.stages,
            "phase_storage": sched.phase_storage, "ctas_per_sm": ctas_per_sm,
            "clock_ghz": f"{ghz:.4f}",
            "per_run_ghz": " ".join(f"{g:.4f}" for g in per_run),
            "ms": f"{ms:.4f}", "tflops": f"{tf:.1f}",
            # K tiles one SM gets through per microsecond, and SM clocks per CTA-iteration
            "cta_iterations": iterations,
            "clk_per_iteration_per_sm": f"{ms * 1e-3 * ghz * 1e9 * 132 / iterations:.1f}",
            # activity per SM clock: share of the tensor peak, L2->SM bytes per SM
            "tensor_util_per_clock": f"{tf * 1e12 / (132 * 4096 * ghz * 1e9):.4f}",
            "l2_bytes_per_sm_clk": f"{l2_bytes / (ms * 1e-3) / (132 * ghz * 1e9):.2f}",
            **({} if records is None
               else {"cta_clk_per_k_tile": f"{cta_clocks_per_k_tile(records, sched.block_k):.1f}"})}


def cta_clocks_per_k_tile(records, block_k: int, k: int = 8192) -> float:
    """The median CTA's %clock64 cycles from its start to its end over its K tiles."""
    rec = np.asarray(records).astype(np.int64)
    return float(np.median(rec[..., 2] - rec[..., 0])) / -(-k // block_k)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", default="h200-sxm", help="results folder (default %(default)s)")
    p.add_argument("--out", type=Path, default=None,
                   help="the CSV to write (default: experiments/results/<gpu>/clock.csv, or mma_loop.csv, "
                        "load_loop.csv, prefetch.csv by mode)")
    p.add_argument("--profile", type=Path, default=None, help="write the sustained clock into this sim profile")
    p.add_argument("--mma-loop", action="store_true",
                   help="instead: the load-free V1/V2 loop microbenchmark (experiments/results/<gpu>/mma_loop.csv)")
    p.add_argument("--mma-loop-small-tiles", action="store_true",
                   help="instead: the load-free warp-specialized loop on the small grids' tiles, one CTA an SM "
                        "(experiments/results/<gpu>/mma_loop_small_tiles.csv)")
    p.add_argument("--load-loop", action="store_true",
                   help="instead: the WGMMA-free V2 loop microbenchmark (experiments/results/<gpu>/load_loop.csv)")
    p.add_argument("--prefetch", action="store_true",
                   help="instead: V3 at one CTA/SM with the producer's lead capped below the ring's depth "
                        "(experiments/results/<gpu>/prefetch.csv)")
    p.add_argument("--dump", type=Path, default=None,
                   help="also save every CTA's probe words (start clock, start ns, end clock, end ns, SM) "
                        "of each schedule's last run, in launch order, to this .npz")
    p.add_argument("--match", action="append", default=[], metavar="TEXT",
                   help="only the schedules whose name contains TEXT (repeatable)")
    args = p.parse_args(argv)
    mode = next((name for name, on in (("mma_loop", args.mma_loop), ("mma_loop_small_tiles", args.mma_loop_small_tiles),
                                       ("load_loop", args.load_loop), ("prefetch", args.prefetch)) if on), "clock")
    names, csv_name = MODES[mode]
    args.out = args.out or results_dir(args.gpu) / csv_name
    meta = provenance()
    sets = []
    for seed in range(3):
        a, b = random_operands(8192, 8192, 8192, "float16", seed=seed)
        sets.append((a, b.t().contiguous().t()))
    rows, dumps = [], {}
    chosen = [n for n in names if not args.match or any(t in n for t in args.match)]
    for name in (bar := tqdm(chosen, desc=mode, unit="kernel")):
        entry = catalog.entry(name)
        ghz, per_run, ms, ctas_per_sm, records = probe_clock(entry, sets)
        if args.dump:
            dumps[name] = records
        rows.append(probe_row(name, entry, ghz, per_run, ms, ctas_per_sm, records))
        bar.write(f"{name}: {ghz:.3f} GHz (runs: {rows[-1]['per_run_ghz']}), {rows[-1]['tflops']} TFLOPS")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.dump:
        np.savez_compressed(args.dump, **dumps)
    with open(args.out, "w", newline="") as f:
        f.write("# measured by python -m experiments.calibrate_clock: %clock64 / %globaltimer of each CTA, "
                "median over CTAs and 5 runs, 8192^3 fp16, B stored [N, K]; ms: each kernel alone, 20 "
                "warm-up runs then the median of 30 (the sustained speed at the clock it earns)\n")
        for key, val in meta.items():
            f.write(f"# {key}: {val}\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if args.profile:
        seed_clock = statistics.median(float(r["clock_ghz"]) for r in rows if r["schedule"] in PROFILE_KEYS)
        data = json.loads(args.profile.read_text()) if args.profile.exists() else {}
        data.setdefault("parameters", {})["clock_ghz"] = round(seed_clock, 4)
        data.setdefault("provenance", {})["clock_ghz"] = (
            f"python -m experiments.calibrate_clock on {meta['gpu']}, {meta['date']}: median of the in-kernel "
            f"clocks of {', '.join(PROFILE_KEYS)} at 8192^3 fp16 ({args.out})")
        args.profile.parent.mkdir(parents=True, exist_ok=True)
        args.profile.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote clock_ghz = {seed_clock:.4f} into {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
