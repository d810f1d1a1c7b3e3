"""What the bench's timing protocol sees of a call, against the kernel's own time.
python -m experiments.research.event_protocol --dump FILE.npz        (on the GPU)
python -m experiments.research.event_protocol --summarize FILE.npz   (no GPU)

experiments.timing.time_blocks records two CUDA events around each call, ten calls in a row.
When the kernel is longer than the host's time per iteration, the GPU never waits and the
events measure the kernel; when it is shorter, the GPU idles between calls and the events take
in host work too (docs/research/notes.md 97). This maps the one onto the other on shapes outside
the suite: [64, K] x [K, 4096] products on one schedule, K = 64 .. 32768, so the kernel runs
from a few to ~100 us. Per K: the kernel back to back (30 prepared launches between one pair
of events, per launch), gemm.matmul in time_blocks' blocks (alone, and the wall time per
iteration of those blocks), and a no-op in the same blocks.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from experiments.research import cli

SCHEDULE = "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=8"
M, N = 64, 4096
KS = (64, 256, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768)


def _blocks_wall(fn, sets):
    """(event median us, wall us per iteration) of fn alone in time_blocks' blocks."""
    import torch

    from experiments.timing import time_blocks
    time_blocks({"f": fn}, sets)   # warm
    torch.cuda.synchronize()
    t = time.perf_counter()
    ms = time_blocks({"f": fn}, sets, warmup=0)["f"]
    wall = (time.perf_counter() - t) / 30 * 1e6   # 3 blocks x 10 runs, one sync at the end
    return ms * 1e3, wall


def dump(path: Path) -> None:
    import torch

    import gemm
    from experiments.bench import _operands
    from experiments.measure import provenance
    from experiments.timing import back_to_back_us
    from gemm.kernels import KernelConfig
    from gemm.launch import launch_gemm, load_kernel
    from gemm.schedule import from_spec
    schedule = from_spec(SCHEDULE)
    loaded = load_kernel(KernelConfig(schedule, "float16", "k", "k"))
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for k in KS:
        sets = [_operands(dict(m=M, n=N, k=k, batch=1, dtype="float16"), seed) for seed in range(3)]
        c = torch.empty(M, N, dtype=torch.float16, device="cuda")
        preps = [launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), k, c.data_ptr(), N, M, N, k, stream)
                 for a, b in sets]
        kernel_us = back_to_back_us(lambda i: preps[i % 3]())
        api, wall = _blocks_wall(lambda x, y: gemm.matmul(x, y, schedule=schedule), sets)
        noop, noop_wall = _blocks_wall(lambda x, y: None, sets)
        rows.append(dict(k=k, kernel_us=kernel_us, api_event_us=api, api_wall_us=wall,
                         noop_event_us=noop, noop_wall_us=noop_wall))
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "schedule": SCHEDULE, "rows": rows}))


def summarize(path: Path) -> dict:
    return json.loads(str(np.load(path)["record"]))


def main(argv=None) -> None:
    args = cli.parse(cli.dump_summarize_parser(__doc__, "measure and write the record here"), argv)
    if args.dump:
        dump(args.dump)
    r = summarize(args.record)
    print(f"[{M}, K] x [K, {N}] on {r['schedule']}")
    for x in r["rows"]:
        print(f"K {x['k']:6d}  kernel back to back {x['kernel_us']:7.1f} us  gemm.matmul in the bench's blocks "
              f"{x['api_event_us']:7.1f} us (+{x['api_event_us'] - x['kernel_us']:5.1f}; wall {x['api_wall_us']:5.1f} us "
              f"an iteration)  no-op {x['noop_event_us']:5.1f} (wall {x['noop_wall_us']:5.1f})")


if __name__ == "__main__":
    main()
