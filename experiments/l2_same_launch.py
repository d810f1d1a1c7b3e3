"""Every CTA's start and end, and the DRAM bytes, of one and the same launch.

Run under Nsight Compute, which profiles only the launch inside the NVTX range "measured":

  ncu --nvtx --nvtx-include "measured/" --metrics dram__bytes_read.sum,gpu__time_duration.sum \\
      --clock-control none --cache-control none --csv \\
      python3 -m experiments.l2_same_launch --dump probes.npz > ncu.csv

For each kernel: its clock-probe build (experiments.calibrate_clock) runs 20 times unprofiled
to reach its sustained clock, then once inside the range; that launch's per-CTA stamps go
into the .npz under the kernel's name, in the order ncu numbers the launches. No cache flush
and no locked clock, so the measured launch runs as in a back-to-back loop.
`python -m experiments.l2_replay` then replays these stamps through the LRU L2 model.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from experiments.hbm_bytes import SCHEDULES

# (name, schedule key in experiments.hbm_bytes.SCHEDULES, K)
KERNELS = [
    ("v1", "v1", 8192), ("v2", "v2", 8192), ("v2-local", "v2-local", 8192), ("v2 s3", "v2 s3", 8192),
    ("v3 s2", "v3 s2", 8192), ("v3 s3", "v3 s3", 8192), ("v5 s3", "v5 s3", 8192),
    ("v2 k=4096", "v2", 4096), ("v3 s3 k=4096", "v3 s3", 4096),
    ("v2 64x256 s2", "v2 64x256 s2", 8192), ("v2 64x256 s2 row", "v2 64x256 s2 row", 8192),
]


def configs():
    from gemm.kernels import KernelConfig
    return [(name, KernelConfig(SCHEDULES[key], "float16", "k", "k", clock_probe=True), k)
            for name, key, k in KERNELS]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, required=True, help="where to write the per-CTA stamps (.npz)")
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args(argv)
    import torch

    from .probe import probed_launcher
    from .reference import random_operands
    stamps = {}
    operands = {}
    for name, config, k in configs():
        m = n = 8192
        if k not in operands:  # b: a [K, N] view of a [N, K] buffer (K-major), the seed's layout
            a, b = random_operands(m, n, k, "float16", seed=1)
            operands[k] = (a, b.t().contiguous().t())
        a, b = operands[k]
        run, probe, _ = probed_launcher(config, m, n, k)
        for _ in range(args.warmup):
            run(a, b)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("measured")
        run(a, b)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        stamps[name] = probe.get()
        rec = stamps[name].astype(np.int64)
        print(f"{name}: {(rec[:, 3].max() - rec[:, 1].min()) / 1e3:.0f} us from first start to last end",
              flush=True)
    np.savez_compressed(args.dump, **stamps)


if __name__ == "__main__":
    main()
