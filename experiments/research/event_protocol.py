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

python -m experiments.research.event_protocol --trace FILE.npz     (on the GPU)
python -m experiments.research.event_protocol --trace-summary FILE.npz

--trace asks when, in a suite row's loop, the kernel of a call starts: the same products timed
as a row times ours (time_blocks with torch.matmul and cupy.matmul taking turns), each run's
host clock and GPU events read against one anchor event (time_blocks' `trace`). Where the end
event lies past its host record, the GPU was still in the kernel, and the kernel started its
back-to-back time before the end event. Then the same call alone, the host pausing a set time
before each run: does a kernel start later the longer the GPU has idled?
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
TRACE_KS = (512, 1024, 2048, 3072, 4096, 5120, 6144, 8192, 12288)
PAUSE_K = 4096                          # a ~24 us kernel
PAUSES_US = (0, 10, 20, 40, 80, 160, 320)
END_WAITED_US = 1.0                     # events this much further apart than their records: the end waited


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
    import gemm
    from experiments.bench import _operands
    from experiments.measure import provenance
    from gemm.schedule import from_spec
    schedule = from_spec(SCHEDULE)
    rows = []
    for k in KS:
        sets = [_operands(dict(m=M, n=N, k=k, batch=1, dtype="float16"), seed) for seed in range(3)]
        kernel_us = _prepared(k, sets)
        api, wall = _blocks_wall(lambda x, y: gemm.matmul(x, y, schedule=schedule), sets)
        noop, noop_wall = _blocks_wall(lambda x, y: None, sets)
        rows.append(dict(k=k, kernel_us=kernel_us, api_event_us=api, api_wall_us=wall,
                         noop_event_us=noop, noop_wall_us=noop_wall))
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "schedule": SCHEDULE, "rows": rows}))


def summarize(path: Path) -> dict:
    return json.loads(str(np.load(path)["record"]))


def _prepared(k: int, sets):
    """The kernel's own time (us, prepared launches back to back) for [M, k] x [k, N]."""
    import torch

    from experiments.timing import back_to_back_us
    from gemm.kernels import KernelConfig
    from gemm.launch import launch_gemm, load_kernel
    from gemm.schedule import from_spec
    loaded = load_kernel(KernelConfig(from_spec(SCHEDULE), "float16", "k", "k"))
    stream = torch.cuda.current_stream().cuda_stream
    c = torch.empty(M, N, dtype=torch.float16, device="cuda")
    preps = [launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), k, c.data_ptr(), N, M, N, k, stream)
             for a, b in sets]
    return back_to_back_us(lambda i: preps[i % len(preps)]())


def _paused_runs(fn, sets, pause_us: float, runs: int = 30) -> list[dict]:
    """`runs` event-timed runs of fn alone, the host spinning `pause_us` before each (the GPU
    idles that long past the previous run's end, when the host is the slower), traced as
    time_blocks traces."""
    import time

    import torch

    from experiments.timing import _event_timed_run, _traced_runs
    for i in range(5):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    anchor = torch.cuda.Event(enable_timing=True)
    anchor_ns = time.perf_counter_ns()
    anchor.record()
    events, marks = [], []
    for i in range(runs):
        until = time.perf_counter_ns() + pause_us * 1e3
        while time.perf_counter_ns() < until:
            pass
        events.append(_event_timed_run(fn, sets[i % len(sets)], marks))
    torch.cuda.synchronize()
    return _traced_runs(anchor, anchor_ns, events, marks)


def dump_trace(path: Path) -> None:
    import gemm
    from experiments.bench import _operands, cublas_contenders
    from experiments.measure import provenance
    from experiments.timing import time_blocks
    from gemm.schedule import from_spec
    schedule = from_spec(SCHEDULE)
    ours = lambda x, y: gemm.matmul(x, y, schedule=schedule)   # noqa: E731
    rows, pauses = [], []
    for k in TRACE_KS:
        sets = [_operands(dict(m=M, n=N, k=k, batch=1, dtype="float16"), seed) for seed in range(3)]
        trace, paces = {}, {}
        time_blocks({"ours": ours, **cublas_contenders("float16")}, sets, host_us=paces, trace=trace)
        rows.append(dict(k=k, kernel_us=_prepared(k, sets), pace_us=paces, trace=trace))
    sets = [_operands(dict(m=M, n=N, k=PAUSE_K, batch=1, dtype="float16"), seed) for seed in range(3)]
    kernel_us = _prepared(PAUSE_K, sets)
    for pause in PAUSES_US:
        pauses.append(dict(pause_us=pause, k=PAUSE_K, kernel_us=kernel_us, trace=_paused_runs(ours, sets, pause)))
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "schedule": SCHEDULE,
                                                 "rows": rows, "pauses": pauses}))


def _median(xs):
    xs = sorted(x for x in xs if x == x)
    return xs[len(xs) // 2] if xs else float("nan")


def run_times(runs: list[dict], kernel_us: float) -> dict:
    """Medians over traced runs (us): what the events measured; the host's floor (start record
    to end record) and time from the start record to the call's return; the GPU's lag behind
    the host at the start event (against the anchor's, which the first record after a
    synchronisation makes late); and, over the runs whose end event waited on the kernel (the
    events further apart on the GPU than their records on the host, by END_WAITED_US or more),
    the kernel's start after the start event (the end event less the kernel's back-to-back
    time) and after the call returned."""
    waited = [r for r in runs
              if (r["gpu_end"] - r["gpu_start"]) - (r["host_end"] - r["host_start"]) > END_WAITED_US]
    return {"event_us": _median(r["gpu_end"] - r["gpu_start"] for r in runs),
            "floor_us": _median(r["host_end"] - r["host_start"] for r in runs),
            "called_us": _median(r["host_called"] - r["host_start"] for r in runs),
            "start_lag_us": _median(r["gpu_start"] - r["host_start"] for r in runs),
            "waited": len(waited), "runs": len(runs),
            "kernel_start_us": _median(r["gpu_end"] - kernel_us - r["gpu_start"] for r in waited),
            "kernel_after_call_us": _median(r["gpu_end"] - kernel_us - r["host_called"] for r in waited),
            # where the kernel starts within the host's call (start record to return), as a share
            "start_share": _median((r["gpu_end"] - kernel_us - r["gpu_start"]) / (r["host_called"] - r["host_start"])
                                   for r in waited),
            "idle_before_us": _median(b["gpu_start"] - a["gpu_end"] for a, b in zip(runs, runs[1:]))}


def print_trace(record: dict) -> None:
    print(f"[{M}, K] x [K, {N}] on {record['schedule']}, in a suite row's loop (torch and cupy taking turns)")
    print("    K  kernel  event  floor  called  start-lag  waited  kernel-start  after-call   pace")
    for row in record["rows"]:
        t = run_times(row["trace"]["ours"], row["kernel_us"])
        print(f"{row['k']:5d} {row['kernel_us']:7.1f} {t['event_us']:6.1f} {t['floor_us']:6.1f} {t['called_us']:7.1f} "
              f"{t['start_lag_us']:10.1f} {t['waited']:4d}/{t['runs']:<2d} {t['kernel_start_us']:12.1f} "
              f"{t['kernel_after_call_us']:11.1f} {row['pace_us']['ours']:6.1f}")
    print("the same call alone, the host pausing before each run")
    print("pause  kernel  event  floor  called  idle-before  waited  kernel-start  after-call  start/called")
    for row in record["pauses"]:
        t = run_times(row["trace"], row["kernel_us"])
        print(f"{row['pause_us']:5d} {row['kernel_us']:7.1f} {t['event_us']:6.1f} {t['floor_us']:6.1f} "
              f"{t['called_us']:7.1f} {t['idle_before_us']:12.1f} {t['waited']:4d}/{t['runs']:<2d} "
              f"{t['kernel_start_us']:12.1f} {t['kernel_after_call_us']:11.1f} {t['start_share']:13.3f}")
    print(f"kernel start share (the profile's kernel_start_share): {kernel_start_share(record):.3f}, the median "
          f"over the pauses of {IDLE_PAUSE_US} us or more (the GPU idle when the start event is recorded)")


IDLE_PAUSE_US = 10


def kernel_start_share(record: dict) -> float:
    """Where a kernel that finds the GPU idle starts within the host's call, as a share of the
    host's time from the start event's record to the call's return: the median over the paused
    runs (pause >= IDLE_PAUSE_US) of each pause's median. sim.call.event_ms's start."""
    return _median(run_times(row["trace"], row["kernel_us"])["start_share"] for row in record["pauses"]
                   if row["pause_us"] >= IDLE_PAUSE_US)


def main(argv=None) -> None:
    ap = cli.dump_summarize_parser(__doc__, "measure and write the record here")
    ap.add_argument("--trace", type=Path, metavar="FILE.npz",
                    help="trace when the kernels start in a row's loop and write the record here (needs the H200)")
    ap.add_argument("--trace-summary", type=Path, metavar="FILE.npz", help="summarize what --trace wrote (no GPU)")
    args = ap.parse_args(argv)
    if args.trace or args.trace_summary:
        if args.trace:
            dump_trace(args.trace)
        print_trace(summarize(args.trace or args.trace_summary))
        return
    args = cli.parse(ap, argv)
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
