"""What launching a kernel as a programmatic dependent (Schedule.dependent_launch) saves back to
back, on products outside the shape suite.

python -m experiments.research.dependent_launch --dump FILE.npz        (on the GPU)
python -m experiments.research.dependent_launch --summarize FILE.npz   (no GPU)

For each case, the same tile built with and without dependent_launch: the prepared launch
(no API host path) 30 times back to back between one pair of CUDA events, per launch (b2b), and
one launch between two events (event, the median of 30); inputs rotated over three sets so that
L2 holds none of one launch's operands at the next; every output checked against torch's fp32
product first. The saving is b2b(plain) - b2b(dependent). A dependent whose grid fills the GPU
(gemm.limits.fills_the_gpu) lets the next kernel in once its CTAs' loads are issued, a smaller
one after their last stores, so the cases are of both kinds and the profile takes each kind's
median: `dependent_launch_saving_us` and `dependent_launch_full_grid_saving_us`. One launch
between events should not change (the events sit between the kernels).
"""
from __future__ import annotations

import json
import statistics

import numpy as np

from experiments.research import cli

DECODE = "v7:block_m=64,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,"
CASES = (("stream-64x8192x8192", 64, 8192, 8192, DECODE + "block_n=128,stages=8"),
         ("stream-16x6144x8192-cluster", 16, 6144, 8192,
          DECODE + "block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,epilogue=direct,split_cluster=true"),
         ("split-k-256x2048x8192", 256, 2048, 8192, "v7:block_n=128,stages=4,split_k=2"),
         ("tiles-2048x1536x2048", 2048, 1536, 2048, "v7"),
         ("one-tile", 64, 128, 64, DECODE + "block_n=128,stages=8"),
         # grids that fill the GPU
         ("tiles-2048x4096x2048", 2048, 4096, 2048, "v7"),
         ("stream-16x8192x8192-cluster", 16, 8192, 8192,
          DECODE + "block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,epilogue=direct,split_cluster=true"),
         ("split-k-128x4096x8192-cluster", 128, 4096, 8192, "v7:block_n=64,stages=8,split_k=2,split_cluster=true"))
LAUNCHES = 30


def _spec(spec: str, dependent: bool) -> str:
    return f"{spec}{',' if ':' in spec else ':'}dependent_launch={'true' if dependent else 'false'}"


def _case(m, n, k, spec, seed) -> dict:
    import torch

    from experiments.timing import back_to_back_us
    from gemm.kernels import KernelConfig
    from gemm.launch import launch_gemm, load_kernel, sm_count
    from gemm.schedule import from_spec
    g = torch.Generator(device="cuda").manual_seed(seed)
    sets = [((torch.randn(m, k, generator=g, device="cuda") * k ** -0.5).half(),
             torch.randn(n, k, generator=g, device="cuda").half()) for _ in range(3)]
    stream = torch.cuda.current_stream().cuda_stream
    row = {}
    for dependent in (False, True):
        loaded = load_kernel(KernelConfig(from_spec(_spec(spec, dependent)), "float16", "k", "k"))
        km, kn = (n, m) if loaded.config.schedule.swap_ab else (m, n)
        row["ctas"] = loaded.config.grid(km, kn, loaded.resident_clusters)[0]
        row["sms"] = sm_count()
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")

        def prepare(a, w):
            ka, kb = (w, a) if loaded.config.schedule.swap_ab else (a, w)
            return launch_gemm(loaded, ka.data_ptr(), k, kb.data_ptr(), k, c.data_ptr(), n, km, kn, k, stream)
        preps = [prepare(a, w) for a, w in sets]
        torch.cuda.synchronize()
        a, w = sets[-1]
        ref = a.float() @ w.float().T
        err = float((c.float() - ref).abs().max() / ref.abs().max())   # NaN if an element is unwritten
        for i in range(10):
            preps[i % 3]()
        torch.cuda.synchronize()
        ev = []
        for i in range(LAUNCHES):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            preps[i % 3]()
            e.record()
            ev.append((s, e))
        torch.cuda.synchronize()
        key = "dependent" if dependent else "plain"
        row[f"{key}_event_us"] = statistics.median(x.elapsed_time(y) for x, y in ev) * 1e3
        row[f"{key}_b2b_us"] = statistics.median(
            back_to_back_us(lambda i: preps[i % 3](), LAUNCHES, warmup=0) for _ in range(5))
        row[f"{key}_rel_err"] = err
    return row


def dump(path) -> None:
    from experiments.measure import provenance
    record = {"provenance": provenance(), "cases": []}
    for i, (name, m, n, k, spec) in enumerate(CASES):
        row = dict(name=name, m=m, n=n, k=k, schedule=spec, **_case(m, n, k, spec, i))
        record["cases"].append(row)
        print(f"{name:30s} {row['ctas']:4d} CTAs b2b {row['plain_b2b_us']:7.2f} -> {row['dependent_b2b_us']:7.2f} us   event "
              f"{row['plain_event_us']:7.2f} -> {row['dependent_event_us']:7.2f}   err {row['plain_rel_err']:.1e} "
              f"{row['dependent_rel_err']:.1e}", flush=True)
    np.savez_compressed(path, record=json.dumps(record))


def summarize(path) -> dict:
    """Each case's saving back to back and its one-call change; the savings' median, over the grids
    smaller than the GPU (`saving_us`) and over those that fill it (`full_grid_saving_us`; records
    without the grid's size have none)."""
    from gemm.limits import fills_the_gpu
    record = json.loads(str(np.load(path)["record"]))
    for row in record["cases"]:
        row["saving_us"] = row["plain_b2b_us"] - row["dependent_b2b_us"]
        row["event_change_us"] = row["dependent_event_us"] - row["plain_event_us"]
        row["fills_the_gpu"] = "ctas" in row and fills_the_gpu(row["ctas"], row["sms"])
    small = [r["saving_us"] for r in record["cases"] if not r["fills_the_gpu"]]
    full = [r["saving_us"] for r in record["cases"] if r["fills_the_gpu"]]
    record["saving_us"] = statistics.median(small)
    record["full_grid_saving_us"] = statistics.median(full) if full else None
    return record


def print_summary(r: dict) -> None:
    for x in r["cases"]:
        print(f"{x['name']:28s} back to back {x['plain_b2b_us']:7.2f} -> {x['dependent_b2b_us']:7.2f} us "
              f"(saves {x['saving_us']:5.2f})   one call {x['plain_event_us']:7.2f} -> {x['dependent_event_us']:7.2f}"
              f"   max rel err {max(x['plain_rel_err'], x['dependent_rel_err']):.1e}")
    print(f"median saving back to back: {r['saving_us']:.2f} us a launch of a grid smaller than the GPU"
          + (f", {r['full_grid_saving_us']:.2f} of one that fills it" if r["full_grid_saving_us"] is not None else ""))


def csv_rows(r: dict, path):
    keys = ["name", "m", "n", "k", "schedule", "ctas", "fills_the_gpu", "plain_b2b_us", "dependent_b2b_us", "saving_us",
            "plain_event_us", "dependent_event_us", "plain_rel_err", "dependent_rel_err"]
    return ([{k: x.get(k, "") for k in keys} for x in r["cases"]],
            f"measured by python -m experiments.research.dependent_launch --summarize {path}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
