"""Host time of a warm call: gemm.matmul against cupy.matmul and torch.matmul.

  python -m experiments.host            # -> experiments/results/h200-sxm/host.csv

For each size (64^3, 256^3, 1024^3, fp16, B = W.T as in the suite): each function is called
once to warm it, then `calls` times back to back on the same inputs with the GPU
synchronised once at the end; the wall time over the calls is the per-call cost a Python
caller pays (at these sizes the host, not the GPU, sets the pace). Contenders alternate in
rounds; the median round is kept. Needs the H200.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from .paths import results_dir

RESULTS = results_dir()
SIZES = (64, 256, 1024)


def per_call_us(fn, calls: int, sync) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def measure(size: int, calls: int, rounds: int) -> dict:
    import cupy
    import torch

    import gemm
    a = torch.randn(size, size, device="cuda").half()
    w = torch.randn(size, size, device="cuda").half()
    b = w.t()
    ca, cb = cupy.from_dlpack(a), cupy.from_dlpack(b)
    fns = {"ours": lambda: gemm.matmul(a, b), "cupy": lambda: cupy.matmul(ca, cb), "torch": lambda: torch.matmul(a, b)}
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(per_call_us(fn, calls, torch.cuda.synchronize))
    return {name: statistics.median(t) for name, t in times.items()} | {"schedule": gemm.plan(a, b).schedule.name}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out-dir", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    from .bench import _provenance, _write
    meta = _provenance()
    rows = []
    for size in SIZES:
        r = measure(size, args.calls, args.rounds)
        rows.append({"size": size, "ours_us": f"{r['ours']:.1f}", "cupy_us": f"{r['cupy']:.1f}",
                     "torch_us": f"{r['torch']:.1f}", "schedule": r["schedule"], "date": meta["date"]})
        print(f"{size:5d}^3  ours {r['ours']:6.1f} us  cupy {r['cupy']:6.1f} us  torch {r['torch']:6.1f} us "
              f"({r['schedule']})", flush=True)
    _write(args.out_dir / "host.csv", ["size", "ours_us", "cupy_us", "torch_us", "schedule", "date"], rows, meta,
           "python -m experiments.host " + " ".join(argv if argv is not None else sys.argv[1:]),
           protocol=f"per-call wall time of {args.calls} warm calls back to back, the GPU synchronised once at the "
                    f"end; contenders alternate, the median of {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
