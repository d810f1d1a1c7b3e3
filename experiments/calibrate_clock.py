"""The SM clock our kernels actually run at, measured inside them.

A clock-probe build of a kernel (KernelConfig(clock_probe=True)) has thread 0 of
every CTA record %clock64 and %globaltimer at its start and end. Each CTA's clock
is its cycles over its nanoseconds; the kernel's is the median over CTAs. The probe
adds a handful of instructions per CTA, not per iteration.

  python -m experiments.calibrate_clock [--profile sim/profiles/h200-sxm.json]

Writes experiments/results/<gpu>/clock.csv and, with --profile, the measured
sustained clock into the simulator's profile (the seed's 128x128x64 V1 and V2 under
a full 8192^3 load), with provenance.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from gemm.schedule import preset
from sim.l2cache import probe_clock_ghz

from .measure import provenance
from .reference import random_operands
from .timing import time_interleaved, tflops

SCHEDULES = {
    "v1 128x128x64": preset("v1"),
    "v2 128x128x64 s2": preset("v2"),
    "v2 128x128x64 s2 local": preset("v2", phase_storage="local"),
    "v2 128x128x64 s3": preset("v2", stages=3),
    "v2 128x128x64 s4": preset("v2", stages=4),
    "v1 128x192x64": preset("v1", block_n=192),
    "v2 128x192x64 s2": preset("v2", block_n=192),
    "v1 64x256x64": preset("v1", block_m=64, block_n=256),
    "v2 64x256x64 s2": preset("v2", block_m=64, block_n=256),
    "v1 64x128x64": preset("v1", block_m=64),
    "v2 128x128x32 s2": preset("v2", block_k=32),
    "v1 64x128x16": preset("v1", block_m=64, block_k=16),
    "v3 128x128x64 s2": preset("v3", stages=2),
    "v3 128x128x64 s3": preset("v3", stages=3),
    "v3 128x128x64 s4": preset("v3", stages=4),
    "v3 128x128x64 s5": preset("v3", stages=5),
    "v3 128x128x64 s6": preset("v3", stages=6),
    "v2 128x128x64 s6": preset("v2", stages=6),
    "v4 128x128x64 s2": preset("v4", stages=2),
    "v4 128x128x64 s3": preset("v4", stages=3),
    "v5 128x128x64 s3": preset("v5", stages=3),
    "v5 128x128x64 s4": preset("v5", stages=4),
    "v5 128x256x64 s3": preset("v5", block_n=256, stages=3),
}
# the dense schedules whose median clock goes into the profile: not the seed's 128x128x64
# tile, so that those rows stay held out of the clock (sim/README.md)
PROFILE_KEYS = ("v1 128x192x64", "v2 128x192x64 s2", "v1 64x256x64", "v2 64x256x64 s2",
                "v1 64x128x64", "v2 128x128x32 s2")


# the V1/V2 loop with its loads taken out (gemm/kernels/ring.py, mma_loop_only), at 3, 2 and 1 CTAs/SM
MMA_LOOP_SCHEDULES = {
    "mma loop 128x128x64 s2": preset("v2"),
    "mma loop 128x128x64 s3": preset("v2", stages=3),
    "mma loop 128x128x64 s4": preset("v2", stages=4),
    "mma loop 128x192x64 s2": preset("v2", block_n=192),
    "mma loop 64x128x64 s2": preset("v2", block_m=64),
    # the warp-specialized loop: no syncs; wait_group(0) (V3, V4) or (1) (V5)
    "mma loop v3 128x128x64 s2": preset("v3", stages=2),
    "mma loop v3 128x128x64 s4": preset("v3", stages=4),
    "mma loop v4 128x128x64 s4": preset("v4", stages=4),
    "mma loop v5 128x128x64 s3": preset("v5", stages=3),
    "mma loop v5 128x128x64 s4": preset("v5", stages=4),
}


# the V2 loop with its WGMMAs taken out (gemm/kernels/ring.py, load_loop_only): the load side alone
LOAD_LOOP_SCHEDULES = {
    "load loop 128x128x64 s1": preset("v2", stages=1),
    "load loop 128x128x64 s2": preset("v2"),
    "load loop 128x128x64 s3": preset("v2", stages=3),
    "load loop 128x128x64 s4": preset("v2", stages=4),
    "load loop 128x192x64 s2": preset("v2", block_n=192),
    "load loop 64x128x64 s2": preset("v2", block_m=64),
    "load loop 128x128x16 s2": preset("v2", block_k=16),
    # raster order on the load side alone (column is the default; in run 14 every row ran in
    # row order, which its raster column says)
    "load loop 128x192x64 s2 row": preset("v2", block_n=192, raster="row"),
    "load loop 64x128x64 s2 row": preset("v2", block_m=64, raster="row"),
    "load loop 64x256x64 s2": preset("v2", block_m=64, block_n=256),
    "load loop 64x256x64 s2 row": preset("v2", block_m=64, block_n=256, raster="row"),
    # the warp-specialized handshake: the producer loads, the consumers hand each stage back
    "load loop v3 128x128x64 s2": preset("v3", stages=2),
    "load loop v3 128x128x64 s3": preset("v3", stages=3),
    "load loop v3 128x128x64 s4": preset("v3", stages=4),
    "load loop v3 128x128x64 s6": preset("v3", stages=6),
}


# V3 at one CTA/SM: the loads in flight of a shallow ring in the shared memory of a deep one
# (KernelConfig.prefetch_limit), against the deep and shallow rings themselves
PREFETCH_SCHEDULES = {
    "v3 128x128x64 s6 prefetch 3": (preset("v3", stages=6), 3),
    "v3 128x128x64 s6 prefetch 4": (preset("v3", stages=6), 4),
    "v3 128x128x64 s6": (preset("v3", stages=6), None),
    "v3 128x128x64 s4": (preset("v3", stages=4), None),
    "v3 128x128x64 s4 prefetch 2": (preset("v3", stages=4), 2),
    "v3 128x128x64 s3": (preset("v3", stages=3), None),
}


def probe_clock(schedule, sets, runs=5, mma_loop_only=False, load_loop_only=False, prefetch_limit=None):
    """(median GHz over CTAs of all runs, per-run medians, event-timed ms, CTAs per SM)."""
    import torch
    from gemm.kernels import KernelConfig

    from .probe import probed_launcher
    m, k = sets[0][0].shape
    n = sets[0][1].shape[1]
    run, probe, loaded = probed_launcher(KernelConfig(schedule, "float16", "k", "k", clock_probe=True,
                                                      mma_loop_only=mma_loop_only, load_loop_only=load_loop_only,
                                                      prefetch_limit=prefetch_limit), m, n, k)

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
    probe_clock.last_records = raw   # every CTA's words of the last run (for --dump)
    return statistics.median(all_ghz), per_run, ms, ctas_per_sm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("experiments/results/h200-sxm/clock.csv"))
    p.add_argument("--profile", type=Path, default=None, help="write the sustained clock into this sim profile")
    p.add_argument("--mma-loop", action="store_true",
                   help="instead: the load-free V1/V2 loop microbenchmark (experiments/results/<gpu>/mma_loop.csv)")
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
    meta = provenance()
    sets = []
    for seed in range(3):
        a, b = random_operands(8192, 8192, 8192, "float16", seed=seed)
        sets.append((a, b.t().contiguous().t()))
    rows, dumps = [], {}
    table = (MMA_LOOP_SCHEDULES if args.mma_loop else LOAD_LOOP_SCHEDULES if args.load_loop
             else PREFETCH_SCHEDULES if args.prefetch else SCHEDULES)
    if args.out.name == "clock.csv" and (args.mma_loop or args.load_loop or args.prefetch):
        args.out = args.out.with_name("mma_loop.csv" if args.mma_loop else "load_loop.csv" if args.load_loop
                                      else "prefetch.csv")
    for name, entry in table.items():
        if args.match and not any(t in name for t in args.match):
            continue
        sched, prefetch = entry if args.prefetch else (entry, None)
        ghz, per_run, ms, ctas_per_sm = probe_clock(sched, sets, mma_loop_only=args.mma_loop,
                                                    load_loop_only=args.load_loop, prefetch_limit=prefetch)
        tf = tflops(8192, 8192, 8192, ms)
        if args.dump:
            dumps[name] = probe_clock.last_records
        # every CTA's A and B panels: M N K x 2 B x (1/block_m + 1/block_n) (the first clock.csv
        # was written with an extra factor 2 here; its column was halved afterwards, as it says).
        # The load-free loop reads only its prefill.
        l2_bytes = 0 if args.mma_loop else 8192 ** 3 * 2 * (1 / sched.block_m + 1 / sched.block_n)
        rows.append({"schedule": name, "family": sched.family, "version": sched.name, "raster": sched.raster,
                     "prefetch_limit": prefetch or sched.stages,
                     "consumer_warpgroups": sched.consumer_warpgroups,
                     "wgmma_in_flight": sched.wgmma_in_flight, "block_m": sched.block_m,
                     "block_n": sched.block_n, "block_k": sched.block_k, "stages": sched.stages,
                     "phase_storage": sched.phase_storage, "ctas_per_sm": ctas_per_sm,
                     "clock_ghz": f"{ghz:.4f}",
                     "per_run_ghz": " ".join(f"{g:.4f}" for g in per_run),
                     "ms": f"{ms:.4f}", "tflops": f"{tf:.1f}",
                     # K tiles one SM gets through per microsecond, and SM clocks per CTA-iteration
                     "cta_iterations": (8192 // sched.block_m) * (8192 // sched.block_n) * (8192 // sched.block_k),
                     "clk_per_iteration_per_sm": f"{ms * 1e-3 * ghz * 1e9 * 132 / ((8192 // sched.block_m) * (8192 // sched.block_n) * (8192 // sched.block_k)):.1f}",
                     # activity per SM clock: share of the tensor peak, L2->SM bytes per SM
                     "tensor_util_per_clock": f"{tf * 1e12 / (132 * 4096 * ghz * 1e9):.4f}",
                     "l2_bytes_per_sm_clk": f"{l2_bytes / (ms * 1e-3) / (132 * ghz * 1e9):.2f}"})
        print(f"{name}: {ghz:.3f} GHz (runs: {rows[-1]['per_run_ghz']}), {rows[-1]['tflops']} TFLOPS", flush=True)
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
