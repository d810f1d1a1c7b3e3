"""Every CTA's start and end, and the DRAM bytes, of one and the same launch.

Run under Nsight Compute, which profiles only the launch inside the NVTX range "measured":

  ncu --nvtx --nvtx-include "measured/" --metrics dram__bytes_read.sum,gpu__time_duration.sum \\
      --clock-control none --cache-control none --csv \\
      python3 -m experiments.research.l2_same_launch --dump probes.npz > ncu.csv

For each kernel: its clock-probe build (experiments.calibrate_clock) runs 20 times unprofiled
to reach its sustained clock, then once inside the range; that launch's per-CTA stamps go
into the .npz under the kernel's name, in the order ncu numbers the launches. No cache flush
and no locked clock, so the measured launch runs as in a back-to-back loop.
`python -m experiments.research.l2_replay` then replays these stamps through the LRU L2 model.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from experiments import catalog
from experiments.probe import probed_launcher
from experiments.reference import random_operands
from experiments.research.activity import CONVOY

# (name, catalog name, K)
KERNELS = [
    ("v1", "v1", 8192), ("v2", "v2", 8192), ("v2-local", "v2-local", 8192), ("v2 s3", "v2 s3", 8192),
    ("v3 s2", "v3 s2", 8192), ("v3 s3", "v3 s3", 8192), ("v5 s3", "v5 s3", 8192),
    ("v2 k=4096", "v2", 4096), ("v3 s3 k=4096", "v3 s3", 4096),
    ("v2 64x256 s2", "v2 64x256 s2", 8192), ("v2 64x256 s2 row", "v2 64x256 s2 row", 8192),
]


# Run 57 (experiments/drift.py): is the split of the rings' SMs by L2 side a cause of their lost
# reuse or its effect? The seed's kernels in the column raster and in a grouped one (which keeps
# the reuse, run 54), three measured launches each.
DRIFT_NAMES = ("v1", "v2", "v2-local", "v3 s2", "v3 s3")
DRIFT = DRIFT_NAMES + tuple(f"{name} grouped" for name in DRIFT_NAMES)
DRIFT_REPEATS = 3


# Run 59 (NOTES 73-74): sim/convoy.py's held-out GEMMs of run 58 (experiments.research.activity.CONVOY),
# stamped: what spreads the two that lost their reuse although a miss would stall them.


def configs(kernel_set: str = "seed"):
    """(name, clock-probe KernelConfig, K) of the set: "seed" (KERNELS, runs 22/29), "drift"
    (DRIFT, run 57) or "convoy" (activity.CONVOY, run 59)."""
    if kernel_set in ("drift", "convoy"):
        names = DRIFT if kernel_set == "drift" else tuple(CONVOY)
        return [(name, catalog.entry(name).kernel_config(clock_probe=True), 8192) for name in names]
    return [(name, catalog.entry(key).kernel_config(clock_probe=True), k) for name, key, k in KERNELS]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, required=True, help="where to write the per-CTA stamps (.npz)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--set", dest="kernel_set", choices=("seed", "drift", "convoy"), default="seed",
                    help="seed: KERNELS, one measured launch each (runs 22, 29); drift: DRIFT, "
                         f"{DRIFT_REPEATS} measured launches each, stamps named 'kernel#i' (run 57); "
                         "convoy: experiments.research.activity.CONVOY, the same way (run 59)")
    args = ap.parse_args(argv)
    import torch
    stamps = {}
    operands = {}
    repeats = 1 if args.kernel_set == "seed" else DRIFT_REPEATS
    for name, config, k in configs(args.kernel_set):
        m = n = 8192
        if k not in operands:  # b: a [K, N] view of a [N, K] buffer (K-major), the seed's layout
            a, b = random_operands(m, n, k, "float16", seed=1)
            operands[k] = (a, b.t().contiguous().t())
        a, b = operands[k]
        run, probe, _ = probed_launcher(config, m, n, k)
        for _ in range(args.warmup):
            run(a, b)
        for i in range(repeats):
            label = f"{name}#{i}" if repeats > 1 else name
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("measured")
            run(a, b)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            stamps[label] = probe.get()
            rec = stamps[label].astype(np.int64)
            print(f"{label}: {(rec[:, 3].max() - rec[:, 1].min()) / 1e3:.0f} us from first start to last end",
                  flush=True)
    # the labels in launch order: the rows of ncu.csv follow it
    np.savez_compressed(args.dump, labels=np.array(list(stamps)), **stamps)


if __name__ == "__main__":
    main()
