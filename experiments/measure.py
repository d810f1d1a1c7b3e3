"""Measure our kernels against cuBLAS on the GPU and write measured.csv.

  python -m experiments.measure                 # the tutorial's V1/V2 search space at 8192^3
  python -m experiments.measure --quick         # a few schedules, for a smoke run
  python -m experiments.measure --host-overhead # warm-call host cost at 256^3 vs cupy.matmul
  python -m experiments.measure --ladder        # V1..V5 at the seed's tile and V5's larger tiles
                                                # (measured_ladder.csv)
  python -m experiments.measure --seed-pair     # the seed's case, every version taking turns
  python -m experiments.measure --rasters       # row / column / grouped order on non-square tiles
                                                # (rasters.csv)

Each row: one schedule at one shape, its median time, cuBLAS's median time on the
same inputs measured right after it in the same process, and whether its output
matched a float64 reference (relative Frobenius error). The file starts with a
provenance header (GPU, clocks, driver, package versions, date).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import platform
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

from gemm.schedule import ScheduleError, preset

from . import catalog
from .paths import results_dir
from .reference import TOLERANCE, random_operands
from .timing import time_interleaved, tflops

TILES = [(64, 128), (128, 128), (128, 256), (256, 128), (256, 256)]  # the tutorial's search space
EXTRA_TILES = [(128, 192), (64, 256)]  # outside it, but within one warpgroup's registers
BLOCK_KS = [16, 32, 64]
V2_STAGES = [2, 3, 4]
COLUMNS = ["kernel", "version", "m", "n", "k", "dtype", "block_m", "block_n", "block_k", "stages",
           "ms", "tflops", "cublas_ms", "cublas_tflops", "ratio", "correct", "rel_err", "registers",
           "ctas_per_sm", "b_major", "phase_storage", "raster", "ms_alone", "tflops_alone", "ratio_alone", "gpu", "sm_clock_mhz", "date"]


def search_space(extra=False):
    """(schedule, why-skipped) over the tutorial's space; skipped ones say which limit."""
    for bm, bn in TILES + (EXTRA_TILES if extra else []):
        for bk in BLOCK_KS:
            for version, stage_list in (("v1", [1]), ("v2", V2_STAGES)):
                for s in stage_list:
                    try:
                        yield preset(version, block_m=bm, block_n=bn, block_k=bk, stages=s), None
                    except ScheduleError as e:
                        yield (version, bm, bn, bk, s), str(e)
    if extra:  # the tutorial's V2 as it compiles there: phases in a runtime-indexed local array
        for s in (2, 3):
            yield preset("v2", stages=s, phase_storage="local", name="v2-local"), None


def ladder():
    """Every kernel version at the seed's 128x128x64 tile and the ring depths that fit,
    then the warp-specialized kernels on the larger tiles two consumer warpgroups allow."""
    yield preset("v1")
    for s in (2, 3, 4):
        yield preset("v2", stages=s)
    yield preset("v2", phase_storage="local", name="v2-local")
    for version in ("v3", "v4", "v5"):
        for s in (2, 3, 4):
            yield preset(version, stages=s)
    for bm, bn in ((128, 192), (128, 256), (256, 128)):
        for s in (3, 4):
            for raster in ("row", "grouped"):
                yield preset("v5", block_m=bm, block_n=bn, stages=s, raster=raster)


RASTER_TILES = [("v2", 64, 256, 2), ("v1", 64, 256, 1), ("v2", 128, 192, 2), ("v1", 64, 128, 1),
                ("v2", 128, 128, 2), ("v5", 128, 256, 4), ("v5", 256, 128, 4)]


def raster_sweep():
    """Each raster order on tiles that are not square (and the seed's, as a control)."""
    for version, bm, bn, st in RASTER_TILES:
        for raster in ("row", "column", "grouped"):
            kw = {} if version == "v1" else {"stages": st}
            yield preset(version, block_m=bm, block_n=bn, raster=raster, **kw)


def smi(query: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # no nvidia-smi
        return f"n/a ({e.__class__.__name__})"


def provenance() -> dict:
    import cupy
    import numba
    import numba_cuda
    import numpy
    import torch
    return {
        "gpu": smi("name"), "driver": smi("driver_version"), "max_sm_clock_mhz": smi("clocks.max.sm"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "numba": numba.__version__,
        "numba_cuda": getattr(numba_cuda, "__version__", "?"), "numpy": numpy.__version__,
        "cupy": cupy.__version__, "torch": torch.__version__,
    }


def measure(schedules, m, n, k, dtype, b_major, writer, meta, log):
    import torch

    import gemm
    from gemm.compile import compile_kernel
    from gemm.kernels import KernelConfig
    from gemm.launch import load_kernel

    sets = []
    for seed in range(3):  # 3 input sets of 2*8192^2*2 B each: far more than the 60 MB L2
        a, b = random_operands(m, n, k, dtype, seed=seed)
        if b_major == "k":     # the seed's layout: B stored [N, K], passed as a transposed view
            b = b.t().contiguous().t()
        sets.append((a, b))
    ref = sets[0][0].double() @ sets[0][1].double()
    out = torch.empty((m, n), dtype=getattr(torch, dtype), device="cuda")
    cublas_alone_ms = time_interleaved({"cublas": lambda a, b: torch.matmul(a, b, out=out)},
                                       sets, warmup=20)["cublas"]
    log(f"cuBLAS alone: {tflops(m, n, k, cublas_alone_ms):.1f} TFLOPS")
    meta["cublas_tflops_alone"] = f"{tflops(m, n, k, cublas_alone_ms):.1f}"
    rows = []
    for sched in tqdm(schedules, desc="measure", unit="schedule"):
        t0 = time.time()
        out.fill_(float("nan"))
        gemm.matmul(*sets[0], schedule=sched, out=out)
        torch.cuda.synchronize()
        err = float(torch.linalg.norm(out.double() - ref) / torch.linalg.norm(ref))
        if not torch.isfinite(out).all():
            err = float("inf")
        times = time_interleaved({"ours": lambda a, b: gemm.matmul(a, b, schedule=sched, out=out),
                                  "cublas": lambda a, b: torch.matmul(a, b, out=out)}, sets)
        ms, cublas_ms = times["ours"], times["cublas"]
        # and alone, after a long warm-up: the sustained speed at the clock this kernel earns
        ms_alone = time_interleaved({"ours": lambda a, b: gemm.matmul(a, b, schedule=sched, out=out)},
                                    sets, warmup=20)["ours"]
        loaded = load_kernel(KernelConfig(sched, dtype, "k", b_major))
        regs = compile_kernel(loaded.config).registers
        clock = smi("clocks.sm")
        row = {
            "kernel": loaded.config.name, "version": sched.name, "m": m, "n": n, "k": k, "dtype": dtype,
            "block_m": sched.block_m, "block_n": sched.block_n, "block_k": sched.block_k,
            "stages": sched.stages, "ms": f"{ms:.4f}", "tflops": f"{tflops(m, n, k, ms):.1f}",
            "cublas_ms": f"{cublas_ms:.4f}", "cublas_tflops": f"{tflops(m, n, k, cublas_ms):.1f}",
            "ratio": f"{cublas_ms / ms:.3f}", "correct": err < TOLERANCE[dtype],
            "rel_err": f"{err:.2e}", "registers": regs,
            "ctas_per_sm": loaded.occupancy.max_active_blocks_per_multiprocessor(
                sched.threads, sched.shared_bytes),
            "b_major": b_major, "phase_storage": sched.phase_storage, "raster": sched.raster, "ms_alone": f"{ms_alone:.4f}",
            "tflops_alone": f"{tflops(m, n, k, ms_alone):.1f}",
            "ratio_alone": f"{cublas_alone_ms / ms_alone:.3f}", "gpu": meta["gpu"], "sm_clock_mhz": clock.split()[0], "date": meta["date"],
        }
        writer.writerow(row)
        rows.append(row)
        log(f"{sched.name} {sched.block_m}x{sched.block_n}x{sched.block_k} s{sched.stages} {sched.raster}: "
            f"{row['tflops']} TFLOPS, cuBLAS {row['cublas_tflops']}, ratio {row['ratio']}, "
            f"err {row['rel_err']}, {regs} regs, {row['ctas_per_sm']} CTA/SM, clock {clock} "
            f"({time.time() - t0:.1f}s)")
    return rows


def seed_pair(log, repeats=3, iters=200):
    """Every version at the seed's case (128x128x64, 8192^3 fp16, B stored [N, K]) and
    cuBLAS taking turns run by run, so all see the same clock; `repeats` independent
    medians of `iters` runs each show the spread."""
    import torch

    import gemm
    sets = []
    for seed in range(3):
        a, b = random_operands(8192, 8192, 8192, "float16", seed=seed)
        sets.append((a, b.t().contiguous().t()))
    out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
    fns = {name: (lambda a, b, s=s: gemm.matmul(a, b, schedule=s, out=out))
           for name, s in catalog.schedules(catalog.SEED_CASE).items()}
    fns["cublas"] = lambda a, b: torch.matmul(a, b, out=out)
    results = []
    for r in tqdm(range(repeats), desc="seed pair", unit="repeat"):
        ms = time_interleaved(fns, sets, iters=iters)
        t = {name: tflops(8192, 8192, 8192, v) for name, v in ms.items()}
        results.append(t)
        log(f"seed case, repeat {r}: " + "  ".join(f"{name} {v:.1f}" for name, v in t.items())
            + f" TFLOPS  V2/V1 {t['v2'] / t['v1']:.4f}  V2-local/V1 {t['v2-local'] / t['v1']:.4f}"
            + f"  V3/V1 {t['v3'] / t['v1']:.4f}  V3/V2 {t['v3'] / t['v2']:.4f}")
    return results


def host_overhead(log, calls=2000, profile=False):
    """Host microseconds per warm call at 256^3, back to back, for us and cupy.matmul."""
    import cupy
    import gemm
    a = cupy.asarray(cupy.random.standard_normal((256, 256)), dtype=cupy.float16)
    b = cupy.asarray(cupy.random.standard_normal((256, 256)), dtype=cupy.float16)
    out = cupy.empty((256, 256), dtype=cupy.float16)
    results = {}
    for name, fn in (("gemm.matmul", lambda: gemm.matmul(a, b, stages=2)),
                     ("gemm.matmul(out=)", lambda: gemm.matmul(a, b, stages=2, out=out)),
                     ("cupy.matmul", lambda: cupy.matmul(a, b))):
        for _ in range(50):
            fn()
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        cupy.cuda.Device().synchronize()
        results[name] = (t1 - t0) / calls * 1e6
        log(f"host time per warm call, {name}: {results[name]:.1f} us")
    if profile:
        import cProfile
        import io
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            gemm.matmul(a, b, stages=2)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        log(text.getvalue())
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, nargs=3, default=[8192, 8192, 8192], metavar=("M", "N", "K"))
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    p.add_argument("--b-major", default="k", choices=["k", "mn"],
                   help="k: B stored [N, K] as in the seed (A @ B.T); mn: B row-major [K, N]")
    p.add_argument("--quick", action="store_true", help="only the seed's 128x128x64 V1 and V2")
    p.add_argument("--extra", action="store_true",
                   help=f"also the tiles {EXTRA_TILES} and the tutorial's local-memory phase array")
    p.add_argument("--host-overhead", action="store_true", help="also time warm calls at 256^3")
    p.add_argument("--profile", action="store_true", help="with --host-overhead: cProfile the warm call")
    p.add_argument("--only-host", action="store_true", help="skip the GEMM sweep")
    p.add_argument("--seed-pair", action="store_true",
                   help="only every version and cuBLAS at the seed's case, interleaved, 3 x 200 runs")
    p.add_argument("--rasters", action="store_true",
                   help="instead: the raster orders (row, column, grouped) on non-square tiles")
    p.add_argument("--ladder", action="store_true",
                   help="instead of the tutorial's V1/V2 space: V1..V5 at 128x128x64 and V5 on larger tiles")
    p.add_argument("--gpu", default="h200-sxm", help="results folder (default %(default)s)")
    p.add_argument("--out", type=Path, default=None, help="the CSV to write (default: experiments/results/<gpu>/"
                   "measured.csv; measured_ladder.csv with --ladder, rasters.csv with --rasters)")
    p.add_argument("--log", type=Path, default=None, help="also write the log here")
    args = p.parse_args(argv)

    logf = open(args.log, "a") if args.log else None

    def log(msg):
        tqdm.write(msg)
        if logf:
            logf.write(msg + "\n")
            logf.flush()

    if args.only_host:
        host_overhead(log, profile=args.profile)
        return 0
    if args.seed_pair:
        seed_pair(log)
        return 0
    meta = provenance()
    if args.quick:
        schedules = [preset("v1"), preset("v2")]
    elif args.ladder:
        schedules = list(ladder())
    elif args.rasters:
        schedules = list(raster_sweep())
    else:
        schedules = []
        for s, why in search_space(args.extra):
            if why:
                log(f"skip {s}: {why}")
            else:
                schedules.append(s)
    args.out = args.out or results_dir(args.gpu) / (
        "measured_ladder.csv" if args.ladder else "rasters.csv" if args.rasters else "measured.csv")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        f.write("# measured by python -m experiments.measure " + " ".join(argv or sys.argv[1:]) + "\n")
        for key, val in meta.items():
            f.write(f"# {key}: {val}\n")
        f.write("# ms: median of 30 CUDA-event-timed runs over 3 rotating input sets, alternating run by run "
                "with cuBLAS (torch.matmul) on the same inputs; ms_alone: the kernel alone, 20 warm-up runs "
                "then the median of 30 (its sustained speed at the clock it earns under the power cap)\n")
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        m, n, k = args.size
        rows = measure(schedules, m, n, k, args.dtype, args.b_major, writer, meta, log)
        f.write(f"# cuBLAS alone at the start of the sweep: {meta['cublas_tflops_alone']} TFLOPS "
                "(ratio_alone divides by it)\n")
        if args.host_overhead:
            for name, us in host_overhead(log, profile=args.profile).items():
                f.write(f"# host time per warm call at 256^3, {name}: {us:.1f} us\n")
    best = {}
    for r in rows:
        if r["correct"] and (r["version"] not in best or float(r["ratio"]) > float(best[r["version"]]["ratio"])):
            best[r["version"]] = r
    log("\nbest per version (TFLOPS, ratio to cuBLAS):")
    for v, r in sorted(best.items()):
        log(f"  {v}: {r['block_m']}x{r['block_n']}x{r['block_k']} s{r['stages']}  {r['tflops']} TFLOPS  "
            f"cuBLAS {r['cublas_tflops']}  ratio {r['ratio']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
