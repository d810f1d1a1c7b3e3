"""What a call costs besides streaming its bytes: the launch, the CTA's fixed work, the bench loop.
python -m experiments.research.fixed_costs --dump FILE.npz        (on the GPU)
python -m experiments.research.fixed_costs --summarize FILE.npz   (no GPU)

The decode rows move A + B + C at 60-84% of a 1 GiB device copy's rate, and the model's
`launch_us` (a kernel's launch and drain on a stream) was an assumption. This measures, per
kernel (the decode rows' own schedules; one 64x128 tile with K = 64 and K = 4096):
  event   the prepared launch (no API host path) between two CUDA events, 30 launches, 3
          input sets rotated so the L2 holds none of the weights;
  b2b     the same 30 launches back to back between one pair of events, per launch;
  span    the clock-probe build's first CTA start to last CTA end (%globaltimer), per launch;
          b2b - span is the launch and drain a kernel pays on a busy stream (`launch_us`);
  api     gemm.matmul with that schedule in the bench's blocks (experiments.timing.time_blocks);
  copy    a device copy moving the same bytes (read + written = A + B + C), same blocks;
and the bench loop's own cost: a no-op between the events, gemm.matmul and torch.matmul at 64^3
and 256^3 (wall time per iteration and the event median). And a 1 GiB copy's rate.
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

from experiments.research import cli, plain_launch

DECODE = "v7:block_m=64,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,"
CASES = (("dec64-up", 64, 22016, 4096, DECODE + "block_n=256,stages=4"),
         ("dec128-up", 128, 22016, 4096, "v7:block_n=176"),
         ("dec64-down", 64, 4096, 11008, DECODE + "block_n=128,stages=8,split_k=4"),
         ("dec128-down", 128, 4096, 11008, "v7:block_n=128,stages=4,split_k=4"),
         ("dec64-down-nosplit", 64, 4096, 11008, DECODE + "block_n=128,stages=8"),
         ("one-tile", 64, 128, 64, DECODE + "block_n=128,stages=8"),
         ("one-tile-k4096", 64, 128, 4096, DECODE + "block_n=128,stages=8"))
LAUNCHES = 30
MAX_CTAS = 1024


def _operands(m, n, k, seed):
    """The bench's operands (A [M, K], B = W.T for W [N, K]) of one fp16 product."""
    from experiments.bench import _operands as bench_operands
    return bench_operands(dict(m=m, n=n, k=k, batch=1, dtype="float16"), seed)


def _loop(fn, sets, iters=300):
    """time_blocks' body for one fn: (wall us per iteration, event median us)."""
    import torch
    for i in range(10):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    ev = []
    t = time.perf_counter()
    for i in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*sets[i % len(sets)])
        e.record()
        ev.append((s, e))
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t) / iters * 1e6
    return wall, statistics.median(s.elapsed_time(e) for s, e in ev) * 1e3


def _kernel_times(name, m, n, k, spec, sets):
    """(row, stamps) of one case: event/b2b of the plain and the clock-probe builds."""
    import cupy
    import torch

    from experiments.timing import back_to_back_us
    from gemm.kernels import KernelConfig
    from gemm.kernels.tiles import PROBE_WORDS
    from gemm.launch import Launch, load_kernel, launch_gemm
    stream = torch.cuda.current_stream().cuda_stream
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    row, stamps = dict(name=name, m=m, n=n, k=k, schedule=spec), None
    for probed in (False, True):
        loaded = load_kernel(KernelConfig(plain_launch(spec), "float16", "k", "k", clock_probe=probed))
        probe = cupy.zeros((LAUNCHES, MAX_CTAS, PROBE_WORDS), dtype=cupy.uint64)
        slot = MAX_CTAS * PROBE_WORDS * 8
        preps = [launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), k, c.data_ptr(), n, m, n, k, stream,
                             probe.data.ptr if probed else 0) for a, b in sets]
        for i in range(10):
            preps[i % len(preps)]()
        torch.cuda.synchronize()
        ev = []
        for i in range(LAUNCHES):
            launch = preps[i % len(preps)]
            if probed:
                launch.values[Launch.PROBE].value = probe.data.ptr + i * slot
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            launch()
            e.record()
            ev.append((s, e))
        torch.cuda.synchronize()
        key = "probe" if probed else "plain"
        row[f"{key}_event_us"] = statistics.median(a.elapsed_time(b) for a, b in ev) * 1e3
        row[f"{key}_b2b_us"] = back_to_back_us(lambda i: preps[i % len(preps)](), LAUNCHES, warmup=0)
        if probed:
            ctas = preps[0].grid[0] * preps[0].grid[1]
            stamps = cupy.asnumpy(probe[:, :ctas, :]).astype(np.int64)
    return row, stamps


def dump(path: Path) -> None:
    import torch

    import gemm
    from experiments.measure import provenance
    from experiments.bench import hbm_copy_gb_per_s
    from experiments.timing import time_blocks
    record = {"provenance": provenance(), "loop": [], "cases": []}
    for size in (64, 256):
        sets = [_operands(size, size, size, i) for i in range(3)]
        for fname, fn in (("noop", lambda x, y: None), ("ours", gemm.matmul), ("torch", torch.matmul)):
            for rep in range(3):
                wall, ev = _loop(fn, sets)
                record["loop"].append(dict(size=size, fn=fname, rep=rep, wall_us=wall, event_us=ev))
    stamps = {}
    copy = lambda s, d: d.copy_(s)   # noqa: E731
    for name, m, n, k, spec in CASES:
        sets = [_operands(m, n, k, i) for i in range(3)]
        row, stamps[name] = _kernel_times(name, m, n, k, spec, sets)
        ms = time_blocks({"ours": lambda x, y, s=plain_launch(spec): gemm.matmul(x, y, schedule=s),
                          "torch": torch.matmul}, sets)
        row["api_us"], row["torch_us"] = ms["ours"] * 1e3, ms["torch"] * 1e3
        row["bytes"] = 2 * (m * k + n * k + m * n)
        src = [torch.empty(row["bytes"] // 2, dtype=torch.uint8, device="cuda").random_(0, 255) for _ in range(3)]
        row["copy_same_bytes_us"] = time_blocks({"copy": copy}, [(x, torch.empty_like(x)) for x in src])["copy"] * 1e3
        record["cases"].append(row)
    record["copy_1gib_gb_per_s"] = hbm_copy_gb_per_s(1 << 30)
    np.savez_compressed(path, record=json.dumps(record), **stamps)


def summarize(path: Path) -> dict:
    """Per case the timings and the stamps' span and CTA durations; the launch cost's median."""
    data = np.load(path)
    record = json.loads(str(data["record"]))
    for row in record["cases"]:
        p = data[row["name"]]
        t0 = p[:, :, 1].min(axis=1, keepdims=True)
        start, end = (p[:, :, 1] - t0) / 1e3, (p[:, :, 3] - t0) / 1e3
        row.update(ctas=p.shape[1], span_us=float(np.median(end.max(axis=1))),
                   start_max_us=float(np.median(start.max(axis=1))),
                   end_min_us=float(np.median(end.min(axis=1))), end_med_us=float(np.median(end)))
        row["launch_us"] = row["plain_b2b_us"] - row["span_us"]
    record["launch_us"] = statistics.median(r["launch_us"] for r in record["cases"])
    return record


def main(argv=None) -> None:
    args = cli.parse(cli.dump_summarize_parser(__doc__, "measure and write the record here"), argv)
    if args.dump:
        dump(args.dump)
    r = summarize(args.record)
    for x in r["loop"]:
        print(f"loop {x['size']:4d}^3 {x['fn']:6s} wall/iteration {x['wall_us']:6.1f} us  event median {x['event_us']:6.1f} us")
    copy = r["copy_1gib_gb_per_s"]
    print(f"copy of 1 GiB: {copy:.0f} GB/s")
    for x in r["cases"]:
        print(f"{x['name']:19s} {x['ctas']:4d} CTAs  event {x['plain_event_us']:5.1f}  b2b {x['plain_b2b_us']:5.1f}  "
              f"span {x['span_us']:5.1f} (CTA ends {x['end_min_us']:5.1f}..{x['span_us']:5.1f})  launch {x['launch_us']:4.1f}"
              f"  | api {x['api_us']:5.1f}  torch {x['torch_us']:5.1f}  copy of the same bytes {x['copy_same_bytes_us']:5.1f}"
              f" ({x['bytes'] / x['copy_same_bytes_us'] / 1e3 / copy:.0%} of the 1 GiB rate; ours "
              f"{x['bytes'] / x['api_us'] / 1e3 / copy:.0%})")
    print(f"launch and drain on a busy stream (b2b - span), median: {r['launch_us']:.1f} us")


if __name__ == "__main__":
    main()
