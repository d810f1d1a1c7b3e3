"""Time sim.predict for the seed's 8192^3 case, and the GPU-wide timeline (sim/timeline.py,
`sim.run --grid-timeline`) once per version: python -m experiments.bench_sim

The first prediction of a schedule ("cold") includes sim/convoy.py's decision and, for a
free-running grid, its replay through L2 (cached per schedule, shape and profile); the
repeats ("warm") are the one-SM simulation alone."""
from __future__ import annotations

import argparse
import statistics
import time

from tqdm import tqdm

import sim
from gemm.schedule import preset
from sim import convoy, timeline


def main(repeats: int = 10) -> None:
    for v, gpu in tqdm([(v, g) for v in ("v1", "v2", "v3", "v6") for g in ("h100-sxm", "h200-sxm")],
                       desc="predictions", unit="case", leave=False):
        convoy._CACHE.clear()
        t0 = time.perf_counter()
        sim.predict(preset(v), 8192, 8192, 8192, gpu=gpu)
        cold = time.perf_counter() - t0
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            p = sim.predict(preset(v), 8192, 8192, 8192, gpu=gpu)
            ts.append(time.perf_counter() - t0)
        tqdm.write(f"{v} {gpu}: cold {1e3 * cold:6.1f} ms, then {1e3 * statistics.median(ts):6.1f} ms per prediction "
                   f"(median of {repeats}, max {1e3 * max(ts):.1f}) -> {p.tflops:.0f} TFLOPS")
    for v in tqdm(("v1", "v2", "v3"), desc="GPU-wide timelines", unit="version", leave=False):
        t0 = time.perf_counter()
        r = timeline.run(preset(v), 8192, 8192, 8192, "h200-sxm")
        tqdm.write(f"{v} h200-sxm GPU-wide timeline: {time.perf_counter() - t0:5.2f} s "
                   f"({len(r['starts_ns'])} CTAs, one event per K step) -> {r['hbm_read_bytes'] / 1e9:.2f} GB from HBM")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_sim", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=10, help="warm predictions timed per case (default: %(default)s)")
    main(ap.parse_args().repeats)
