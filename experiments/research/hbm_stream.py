"""How fast our kernels stream weights from HBM, by the bytes they keep in flight.
python -m experiments.research.hbm_stream --dump FILE.npz        (on the GPU)
python -m experiments.research.hbm_stream --summarize FILE.npz   (no GPU)

The decode rows read their weights at 65-87% of a copy's rate, and tiles of the same bytes
differ by the loads each SM keeps in flight (notes 112). This times our kernels on products that
are not in the shape suite and are bound by HBM alone (M of 1-64, weights of 0.2-0.6 GB), so that
what they show is the memory system's answer to the load and not any suite row's: the ring's
depth and width (the bytes each SM has in flight), the grid (all SMs or half), the length of
each CTA's stream (K), and split-K. Each case: correctness first (NaN-poisoned C against a float32
product, every element), then the calls back to back (experiments.timing.back_to_back_rounds),
and the weights' bytes in flight GPU-wide, busy CTAs x stages x the B box bytes of a stage
(A's few rows hit the L2). A 1 GiB device copy's rate beside them.

Summarized: the line of time against bytes of one kernel over K 2048-16384 (its intercept is
what a stream pays besides its bytes: the launch, the first misses, the rings' fill, the last
CTAs' end; its slope the rate the reads stream at), and each case's time over that line's: the
profile's hbm_read_efficiency and hbm_stream_fixed_us (less launch_us) come from the line.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

from experiments.research import cli, plain_launch

P0 = "producer_registers=0,consumer_registers=0"
NARROW = f"v7:block_m=64,consumer_warpgroups=1,{P0},"          # one 64-row consumer warpgroup
SWAP = f"v7:block_m=192,consumer_warpgroups=1,block_n=16,swap_ab=true,epilogue=direct,{P0},"
WIDE_N, HALF_N, SWAP_N, SPLIT_N = 132 * 256, 66 * 256, 132 * 192, 33 * 128
CASES = (  # name, m, n, k, schedule
    ("64x256 s2", 64, WIDE_N, 8192, NARROW + "block_n=256,stages=2"),
    ("64x256 s3", 64, WIDE_N, 8192, NARROW + "block_n=256,stages=3"),
    ("64x256 s4", 64, WIDE_N, 8192, NARROW + "block_n=256,stages=4"),
    ("64x256 bk128 s2", 64, WIDE_N, 8192, NARROW + "block_n=256,block_k=128,stages=2"),
    ("64x128 s2", 64, WIDE_N, 8192, NARROW + "block_n=128,stages=2"),
    ("64x128 s4", 64, WIDE_N, 8192, NARROW + "block_n=128,stages=4"),
    ("64x128 s8", 64, WIDE_N, 8192, NARROW + "block_n=128,stages=8"),
    ("swap 192x16 s2", 16, SWAP_N, 8192, SWAP + "stages=2"),
    ("swap 192x16 s4", 16, SWAP_N, 8192, SWAP + "stages=4"),
    ("swap 192x16 s8", 16, SWAP_N, 8192, SWAP + "stages=8"),
    ("64x256 s4 half grid", 64, HALF_N, 8192, NARROW + "block_n=256,stages=4"),
    ("64x256 s2 half grid", 64, HALF_N, 8192, NARROW + "block_n=256,stages=2"),
    ("64x256 s4 K2048", 64, WIDE_N, 2048, NARROW + "block_n=256,stages=4"),
    ("64x256 s4 K4096", 64, WIDE_N, 4096, NARROW + "block_n=256,stages=4"),
    ("64x256 s4 K16384", 64, WIDE_N, 16384, NARROW + "block_n=256,stages=4"),
    ("64x128 s8 split 4", 64, SPLIT_N, 22016, NARROW + "block_n=128,stages=8,split_k=4"),
    ("64x128 s8 no split", 64, SPLIT_N, 22016, NARROW + "block_n=128,stages=8"),
    ("swap 128x16 s10 split 4", 1, SPLIT_N, 22016,
     f"v7:block_n=16,stages=10,split_k=4,swap_ab=true,epilogue=direct,{P0}"),
)


def in_flight(schedule, m: int, n: int, k: int, sms: int = 132) -> dict:
    """The weights' bytes in flight GPU-wide when every busy CTA keeps its ring full: busy
    CTAs x stages x one stage's B (weight) bytes; the busy CTAs from the model's launch grid."""
    from gemm.schedule import INPUT_BYTES
    from sim.engines import launch_grid
    lg = launch_grid(schedule, m, n, k, 1, slots=sms)
    rows = schedule.block_m if schedule.swap_ab else schedule.block_n   # the weight's rows a tile reads
    stage = rows * schedule.block_k * INPUT_BYTES
    return {"ctas": min(lg.ctas, sms), "stage_bytes": stage,
            "in_flight_bytes": min(lg.ctas, sms) * schedule.stages * stage}


def dump(path: Path) -> None:
    import torch

    import gemm
    from experiments.bench import _operands, _relative_error, hbm_copy_gb_per_s
    from experiments.measure import provenance
    from experiments.timing import back_to_back_rounds
    record = {"provenance": provenance(), "cases": []}
    for name, m, n, k, spec in CASES:
        s = plain_launch(spec)
        sets = [_operands(dict(m=m, n=n, k=k, batch=1, dtype="float16"), seed) for seed in (1, 2)]
        a, b = sets[0]
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        gemm.matmul(a, b, schedule=s, out=out)
        err = _relative_error(out, (a.double() @ b.double()))
        outs = [torch.empty((m, n), device="cuda", dtype=torch.float16) for _ in sets]
        us = back_to_back_rounds({"ours": lambda x, y: gemm.matmul(x, y, schedule=s, out=outs[0])},
                                 sets, rounds=5, calls=20, warmup=5)["ours"]
        row = dict(name=name, m=m, n=n, k=k, schedule=spec, rel_err=err, b2b_us=us,
                   bytes=2 * (m * k + n * k + m * n),
                   **in_flight(s, m, n, k))
        print(f"{name:26s} err {err:.1e}  {us:8.2f} us", flush=True)
        record["cases"].append(row)
        del sets, a, b, out, outs
        torch.cuda.empty_cache()
    record["copy_1gib_gb_per_s"] = hbm_copy_gb_per_s(1 << 30)
    np.savez_compressed(path, record=json.dumps(record))


STREAM_SERIES = "64x256 s4"   # the cases of one kernel at K 2048-16384: time against bytes


def stream_fit(cases: list[dict]) -> tuple[float, float]:
    """(fixed us, GB/s): the least-squares line of time back to back against bytes over the
    STREAM_SERIES cases (the same kernel and grid, K from 2048 to 16384)."""
    series = [c for c in cases if c["name"] == STREAM_SERIES or
              (c["name"].startswith(STREAM_SERIES + " K"))]
    x = np.array([c["bytes"] for c in series], float)
    y = np.array([c["b2b_us"] for c in series], float)
    slope, fixed = np.polyfit(x, y, 1)
    return float(fixed), float(1e-3 / slope)


def model_fixed_us(cases: list[dict], gpu: str = "h200-sxm") -> float:
    """What sim.predict gives the STREAM_SERIES besides its bytes with hbm_stream_fixed_us at 0
    (the launch and the simulated CTAs' own prologue and epilogue): the intercept of the model's
    line over the same cases. The profile's hbm_stream_fixed_us is the measured intercept less it."""
    import dataclasses

    import sim
    g = dataclasses.replace(sim.load_profile(gpu), hbm_stream_fixed_us=0.0)
    series = {c[0]: c for c in CASES}
    pts = [(c["bytes"], sim.predict(plain_launch(series[c["name"]][4]), c["m"], c["n"], c["k"], gpu=g).ms * 1e3)
           for c in cases if c["name"] == STREAM_SERIES or c["name"].startswith(STREAM_SERIES + " K")]
    return float(np.polyfit([b for b, _ in pts], [t for _, t in pts], 1)[1])


def summarize(path: Path) -> dict:
    """The fit of time against bytes (stream_fit) and, per case, its time over the fit's."""
    record = json.loads(str(np.load(path)["record"]))
    fixed_us, gb_per_s = stream_fit(record["cases"])
    record.update(fixed_us=fixed_us, stream_gb_per_s=gb_per_s, model_fixed_us=model_fixed_us(record["cases"]))
    for row in record["cases"]:
        row["fit_us"] = fixed_us + row["bytes"] / gb_per_s / 1e3
        row["over_fit"] = row["b2b_us"] / row["fit_us"] - 1
    record["median_rel_err"] = statistics.median(r["rel_err"] for r in record["cases"])
    return record


def _print(s: dict) -> None:
    print(f"1 GiB copy {s['copy_1gib_gb_per_s']:.0f} GB/s (read + written); {STREAM_SERIES} at K 2048-16384: "
          f"{s['fixed_us']:.2f} us + bytes at {s['stream_gb_per_s']:.0f} GB/s; the model without "
          f"hbm_stream_fixed_us {s['model_fixed_us']:.2f} us besides the bytes: that term "
          f"{s['fixed_us'] - s['model_fixed_us']:.2f} us, hbm_read_efficiency "
          f"{s['stream_gb_per_s'] / 4800:.3f} of 4.8 TB/s")
    for r in s["cases"]:
        print(f"{r['name']:26s} {r['ctas']:4d} CTAs  in flight {r['in_flight_bytes'] / 2**20:6.1f} MiB  "
              f"{r['b2b_us']:8.1f} us  the fit {r['fit_us']:8.1f}  {100 * r['over_fit']:+6.1f}%  err {r['rel_err']:.1e}")


def _csv_rows(s: dict, record: Path):
    cols = ("name", "m", "n", "k", "schedule", "ctas", "stage_bytes", "in_flight_bytes", "b2b_us", "bytes",
            "fit_us", "over_fit", "rel_err")
    rows = [{c: r[c] for c in cols} for r in s["cases"]]
    return rows, (f"python -m experiments.research.hbm_stream --summarize {record}: {STREAM_SERIES} at K "
                  f"2048-16384 {s['fixed_us']:.2f} us + bytes at {s['stream_gb_per_s']:.0f} GB/s; 1 GiB copy "
                  f"{s['copy_1gib_gb_per_s']:.0f} GB/s")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, _print, _csv_rows, argv)


if __name__ == "__main__":
    main()
