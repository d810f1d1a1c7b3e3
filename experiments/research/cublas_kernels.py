"""Which kernels cuBLAS runs on the suite's shapes, and how long theirs and ours take inside the GPU.
python -m experiments.research.cublas_kernels [--shapes sq4096,dec64-up] [--suite-file F] [--ours SPEC]   (on the GPU)

For each shape: torch.matmul's kernels as CUPTI sees them (torch.profiler: name, which for
cuBLASLt's nvjet kernels spells the tile, K step, stages and cluster, and device time per
launch) and, with --ours, the same for one of our schedules launched straight, each beside the
time per call of 30 calls back to back. The difference between the two says whether a gap to
cuBLAS is inside the kernel or between kernels (the launch). Input sets rotate (3), as the bench's.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from experiments.bench import SUITE, _operands
from experiments.timing import back_to_back_us


def _profile(fn, launches=9):
    """{kernel name: median device time in us} of `launches` calls of fn(i)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(launches):
            fn(i)
        torch.cuda.synchronize()
    times = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(ev.name, []).append(ev.device_time)
    return {name: statistics.median(v) for name, v in times.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="sq4096,sq8192,llama7b-qkv,llama7b-up,llama7b-down,dec1-up,dec64-up,"
                    "dec64-down,dec128-down,k16k-1024", help="suite shapes by name")
    ap.add_argument("--suite-file", type=Path, default=SUITE, help="the shape list (shapes.json's format)")
    ap.add_argument("--ours", help="also time this schedule of ours (e.g. v7:cluster_m=2)")
    args = ap.parse_args(argv)
    import torch
    shapes = {s["name"]: s for s in json.loads(args.suite_file.read_text())["shapes"]}
    for name in args.shapes.split(","):
        s = shapes[name]
        m, n, k, dtype = s["m"], s["n"], s["k"], s.get("dtype", "float16")
        sets = [_operands(dict(s, batch=1, dtype=dtype), seed) for seed in range(3)]   # A, B = W.T
        fns = {"cuBLAS": lambda i: torch.matmul(*sets[i % 3])}
        if args.ours:
            from gemm.kernels import KernelConfig
            from gemm.launch import launch_gemm, load_kernel
            from gemm.schedule import from_spec
            loaded = load_kernel(KernelConfig(from_spec(args.ours), dtype, "k", "k"))
            c = torch.empty(m, n, device="cuda", dtype=getattr(torch, dtype))
            stream = torch.cuda.current_stream().cuda_stream
            preps = [launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), k, c.data_ptr(), n, m, n, k, stream)
                     for a, b in sets]
            fns["ours"] = lambda i: preps[i % 3]()
        for label, fn in fns.items():
            b2b = back_to_back_us(fn)
            kernels = "; ".join(f"{kname[:90]} {t:.1f} us" for kname, t in _profile(fn).items())
            print(f"{name:13s} {label:6s} back to back {b2b:7.1f} us/call | {kernels}", flush=True)


if __name__ == "__main__":
    main()
