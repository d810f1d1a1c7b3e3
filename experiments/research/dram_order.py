"""The DRAM bytes of the persistent tiles, by raster group and K order (Schedule.k_order): Nsight
Compute's count of one cold launch against the model's per-wave count (sim.engines.memory_traffic,
with the serpentine term).

ncu --clock-control none --cache-control all --csv --kernel-name regex:"persistent|nvjet" \\
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,\\
lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second \\
    python -m experiments.research.dram_order --launch 8192x8192x8192 v7 v7:k_order=serpentine torch \\
    > NCU.csv                                                      (on the GPU)
python -m experiments.research.dram_order --summarize NCU.csv [--csv OUT]   (no GPU)

--launch calls each schedule (or torch.matmul) once per shape, fp16, A [M, K] and B = W.T, and
prints a MARK line after each, in launch order: --summarize pairs the i-th profiled kernel with
the i-th MARK.
"""
from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "lts__t_sector_hit_rate.pct", "sm__cycles_elapsed.avg.per_second")
_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-9, "us": 1e-6, "ms": 1e-3,
          "msecond": 1e-3, "hz": 1, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "%": 1}


def launch(shapes: list[str], specs: list[str]) -> None:
    import torch

    import gemm
    from gemm.schedule import from_spec
    for shape in shapes:
        m, n, k = map(int, shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(n, k, device="cuda", dtype=torch.float16).t()
        for spec in specs:
            torch.matmul(a, b) if spec == "torch" else gemm.matmul(a, b, schedule=from_spec(spec))
            torch.cuda.synchronize()
            print("MARK", shape, spec, flush=True)


def read_ncu(path: Path) -> list[dict]:
    """One dict per profiled launch, in MARK order: shape, schedule, kernel and the metrics in SI units."""
    lines = path.read_text().splitlines()
    marks = [line.split()[1:3] for line in lines if line.startswith("MARK ")]
    kernels: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(line for line in lines if line.startswith('"')))):
        value = float(row["Metric Value"].replace(",", "")) * _UNITS.get(row["Metric Unit"], 1)
        kernels.setdefault(row["ID"], {"kernel": row["Kernel Name"]})[row["Metric Name"]] = value
    if len(kernels) != len(marks):
        raise ValueError(f"{path}: {len(kernels)} profiled kernels for {len(marks)} launches")
    return [{"shape": shape, "schedule": spec, **k} for (shape, spec), k in zip(marks, kernels.values())]


def summarize(path: Path) -> list[dict]:
    from gemm.schedule import from_spec
    from sim.engines import memory_traffic
    from sim.hardware import load_profile
    prof = load_profile("h200-sxm")
    rows = []
    for r in read_ncu(path):
        m, n, k = map(int, r["shape"].split("x"))
        model = None
        if r["schedule"] != "torch":
            model = memory_traffic(from_spec(r["schedule"]), m, n, k, prof.sm_count, 1,
                                   prof.l2_lru_bytes or prof.l2_bytes)["hbm_read_bytes"] / 1e9
        read = r["dram__bytes_read.sum"] / 1e9
        rows.append({"shape": r["shape"], "schedule": r["schedule"], "dram_read_gb": f"{read:.3f}",
                     "model_gb": "" if model is None else f"{model:.3f}",
                     "model_over_ncu": "" if model is None else f"{model / read:.3f}",
                     "dram_write_gb": f"{r['dram__bytes_write.sum'] / 1e9:.3f}",
                     "l2_hit_pct": f"{r['lts__t_sector_hit_rate.pct']:.1f}",
                     "us": f"{r['gpu__time_duration.sum'] * 1e6:.1f}",
                     "sm_ghz": f"{r['sm__cycles_elapsed.avg.per_second'] / 1e9:.3f}"})
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launch", nargs="+", metavar=("SHAPES", "SPEC"),
                    help="comma-separated MxNxK shapes, then schedules or 'torch' (on the GPU, under ncu)")
    ap.add_argument("--summarize", type=Path, metavar="NCU.csv", help="ncu's CSV with the MARK lines (no GPU)")
    ap.add_argument("--csv", type=Path, help="write the summary rows here")
    args = ap.parse_args(argv)
    if args.launch:
        launch(args.launch[0].split(","), args.launch[1:])
        return
    if not args.summarize:
        ap.error("give --launch or --summarize")
    rows = summarize(args.summarize)
    for r in rows:
        print(f"{r['shape']:16s} {r['schedule'][:58]:58s} ncu {r['dram_read_gb']:>6s} GB  model "
              f"{r['model_gb'] or '-':>6s}  {r['us']:>7s} us at {r['sm_ghz']} GHz")
    if args.csv:
        from experiments.paths import write_csv
        write_csv(args.csv, rows, [f"python -m experiments.research.dram_order --summarize {args.summarize}: "
                                   "DRAM bytes of one cold launch under Nsight Compute (--clock-control none, "
                                   "--cache-control all) against the model's per-wave count (sim.engines."
                                   "memory_traffic, l2_lru_bytes for the serpentine term)"])


if __name__ == "__main__":
    main()
