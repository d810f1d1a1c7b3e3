"""How many CTAs a persistent kernel should launch: every resident one, or only as many as
its waves need.

A persistent grid of R resident clusters walks U work units in ceil(U / R) waves; when U is
not a multiple of R the last wave leaves clusters idle, and the busiest cluster runs
ceil(U / R) units either way. ceil(U / ceil(U / R)) clusters run the same number of waves
with every cluster busy to the end (4096^3 in 128x256 tiles, clusters of two: 256 units, 66
resident -> 64 clusters of exactly 4 units). The makespan in units is the same; what moves
is what the idle SMs cost or give: power (a power-limited clock shared by fewer busy SMs),
L2 (which tiles run side by side) and the last wave's lone units. fast.cu launches 128 of
132 SMs at 4096^3 and found all 132 "slightly slower". This study times one compiled
kernel launched both ways, with torch.matmul in the same alternating blocks:

  python -m experiments.research.persistent_grid --shapes sq4096,llama7b-down
  python -m experiments.research.persistent_grid --schedules 'v7;v7:cluster_m=2' --csv out.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_SHAPES = "sq4096,sq8192,sq8192-bf16,llama7b-up,llama7b-down,llama7b-qkv,llama70b-qkv,llama70b-down,k16k-2048"
DEFAULT_SCHEDULES = "table;v7;v7:cluster_m=2;v7:block_m=256,block_n=128,cluster_n=2"


def balanced_clusters(units: int, resident: int) -> int:
    """The fewest clusters that walk `units` in as few waves as `resident` clusters do."""
    waves = -(-units // resident)
    return -(-units // waves)


def resolve(shape: dict, spec: str):
    """The schedule `spec` names ('table': the dispatcher's pick for the shape)."""
    import torch

    import gemm
    from gemm.schedule import from_spec
    if spec != "table":
        return from_spec(spec)
    dt = getattr(torch, shape["dtype"])
    a = torch.empty(shape["m"], shape["k"], dtype=dt, device="cuda")
    w = torch.empty(shape["n"], shape["k"], dtype=dt, device="cuda")
    return gemm.plan(a, w.T).schedule


def measure(shape: dict, schedule) -> dict:
    """Time one schedule at one suite shape, launched on every resident cluster and on the
    balanced count, both checked first against a float64 reference (NaN-poisoned output)."""
    import torch

    from gemm.kernels import KernelConfig
    from gemm.launch import Launch, launch_gemm, load_kernel

    from ..bench import _operands, _relative_error, _tolerance
    from ..timing import time_blocks, tflops

    m, n, k, dtype = shape["m"], shape["n"], shape["k"], shape["dtype"]
    sets = [_operands(shape, seed) for seed in range(2)]
    a0, b0 = sets[0]
    if not schedule.persistent or schedule.stream_k or schedule.swap_ab:
        raise SystemExit(f"{schedule.name}: this study launches persistent, non-stream-K, non-swapped kernels")
    loaded = load_kernel(KernelConfig(schedule, dtype, "k", "k"))
    cfg = loaded.config
    units = cfg.units(m, n)
    resident = min(units, loaded.resident_clusters)
    balanced = balanced_clusters(units, resident)
    stream = torch.cuda.current_stream().cuda_stream
    outs = [torch.empty(m, n, dtype=a0.dtype, device="cuda") for _ in sets]

    def launches(clusters: int) -> list:
        prepared = []
        for (a, b), c in zip(sets, outs):
            # b = w.T, stored [N, K]: K-major with a row stride of K, like A
            first = launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), k, c.data_ptr(), n, m, n, k, stream)
            args = tuple(v.value or 0 for v in first.values)
            prepared.append(Launch(loaded, (clusters * schedule.cluster_size, 1, 1), stream, args))
        return prepared

    ways = {"resident": launches(resident), "balanced": launches(balanced)}
    ref = a0.double() @ b0.double()
    correct = True
    for way in ways.values():
        outs[0].fill_(float("nan"))
        way[0]()
        torch.cuda.synchronize()
        correct &= _relative_error(outs[0], ref) < _tolerance(dtype, schedule)
    del ref
    index = {id(a): i for i, (a, _) in enumerate(sets)}
    fns = {name: (lambda x, y, way=way: way[index[id(x)]]()) for name, way in ways.items()}
    ms = time_blocks({**fns, "torch": torch.matmul}, sets)
    tf = {name: tflops(m, n, k, t) for name, t in ms.items()}
    return {"name": shape["name"], "m": m, "n": n, "k": k, "dtype": dtype, "schedule": schedule.name,
            "units": units, "resident": resident, "balanced": balanced, "waves": -(-units // resident),
            "resident_tflops": f"{tf['resident']:.1f}", "balanced_tflops": f"{tf['balanced']:.1f}",
            "torch_tflops": f"{tf['torch']:.1f}", "gain": f"{ms['resident'] / ms['balanced']:.3f}",
            "correct": correct}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="suite shapes by name, comma-separated")
    ap.add_argument("--schedules", default=DEFAULT_SCHEDULES,
                    help="';'-separated schedules ('table': the dispatcher's pick for the shape)")
    ap.add_argument("--csv", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    from ..bench import suite_shapes
    from ..paths import write_csv
    rows = []
    print(f"{'shape':13s} {'schedule':44s} units res bal  resident balanced  torch  gain ok")
    for shape in suite_shapes(args.shapes.split(",")):
        schedules = {}
        for spec in args.schedules.split(";"):
            s = resolve(shape, spec)
            schedules.setdefault(s.name, s)
        for schedule in schedules.values():
            row = measure(shape, schedule)
            rows.append(row)
            print(f"{row['name']:13s} {row['schedule'][:44]:44s} {row['units']:5d} {row['resident']:3d} "
                  f"{row['balanced']:3d} {row['resident_tflops']:>9s} {row['balanced_tflops']:>8s} "
                  f"{row['torch_tflops']:>6s} {row['gain']} {row['correct']}", flush=True)
    if args.csv:
        from ..measure import provenance
        command = "measured by python -m experiments.research.persistent_grid " + " ".join(
            argv if argv is not None else sys.argv[1:])
        write_csv(args.csv, rows, [command] + [f"{key}: {val}" for key, val in provenance().items()]
                  + ["protocol: one compiled kernel launched on every resident cluster and on the balanced "
                     "count, each checked first (NaN-poisoned output, float64 reference); the two and "
                     "torch.matmul timed by experiments.timing.time_blocks (alternating blocks, median)"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
