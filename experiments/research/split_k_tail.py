"""Where a split-K (or stream-K) kernel's time goes: each CTA's start and end (%globaltimer,
from a clock-probe build), one launch after five warm ones, and the spread of the CTAs' ends.
The CTAs that finish a tile (split-K's reduce, stream-K's fix-up) end later than the rest by
the time their sum takes: notes item 83.

  python -m experiments.research.split_k_tail                      # the cases of item 83
  python -m experiments.research.split_k_tail --case dec128-down:128:4096:11008:v7:split_k=4

The event time printed beside is one launch between two events, issued from Python: on a
kernel this short it is mostly the host's time, not the kernel's (the CTA span is)."""
from __future__ import annotations

import argparse

CASES = (
    "dec128-down:128:4096:11008:v7:block_n=128,stages=4,split_k=4",
    "dec128-down:128:4096:11008:v7:split_k=8",
    "k16k-1024:1024:1024:16384:v7:block_n=128,stages=4,split_k=2",
    "k16k-1024:1024:1024:16384:v7:split_k=4",
    "dec64-down:64:4096:11008:v7:block_n=128,stages=4,split_k=4",
)


def case_spans(m: int, n: int, k: int, spec: str) -> dict:
    """Run the probed kernel of `spec` (fp16, A [M, K], B stored [N, K]) and return the CTAs'
    ends in microseconds from the first CTA's start, and the output's largest error relative
    to torch's fp32 product."""
    import cupy
    import numpy as np
    import torch

    from gemm.kernels import KernelConfig
    from gemm.kernels.tiles import PROBE_WORDS
    from gemm.launch import launch_gemm, load_kernel
    from gemm.schedule import from_spec

    schedule = from_spec(spec)
    if schedule.swap_ab:
        raise SystemExit(f"{spec}: a swap-AB kernel stores C transposed; probe it through gemm.matmul")
    loaded = load_kernel(KernelConfig(schedule, "float16", "k", "k", clock_probe=True))
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, generator=g, device="cuda").half()
    w = torch.randn(n, k, generator=g, device="cuda").half()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    ctas = loaded.config.grid(m, n, loaded.resident_clusters)[0]
    probe = cupy.zeros((ctas, PROBE_WORDS), dtype=cupy.uint64)
    stream = torch.cuda.current_stream().cuda_stream

    def launch():
        launch_gemm(loaded, a.data_ptr(), k, w.data_ptr(), k, out.data_ptr(), n, m, n, k, stream, probe.data.ptr)
    for _ in range(5):
        launch()
    ref = a.float() @ w.float().T
    err = float((out.float() - ref).abs().max() / ref.abs().max())
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    launch()
    end.record()
    torch.cuda.synchronize()
    stamps = probe.get().astype(np.int64)
    t0 = stamps[:, 1].min()
    ends = np.sort((stamps[:, 3] - t0) / 1e3)
    return {"ctas": ctas, "event_us": start.elapsed_time(end) * 1e3, "rel_err": err,
            "start_spread_us": (stamps[:, 1].max() - t0) / 1e3,
            "end_p10_us": ends[len(ends) // 10], "end_median_us": ends[len(ends) // 2],
            "end_p90_us": ends[9 * len(ends) // 10], "end_last_us": ends[-1]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", action="append", help="NAME:M:N:K:SPEC (repeatable; default: item 83's cases)")
    args = p.parse_args(argv)
    print(f"{'shape':12s} {'schedule':44s} {'CTAs':>4s} {'event':>7s} {'median end':>10s} "
          f"{'p90 end':>8s} {'last end':>8s}  (us)")
    for case in args.case or CASES:
        name, m, n, k, spec = case.split(":", 4)
        r = case_spans(int(m), int(n), int(k), spec)
        print(f"{name:12s} {spec[:44]:44s} {r['ctas']:4d} {r['event_us']:7.1f} {r['end_median_us']:10.1f} "
              f"{r['end_p90_us']:8.1f} {r['end_last_us']:8.1f}  err {r['rel_err']:.1e}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
