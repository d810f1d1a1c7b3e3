"""Launch after launch of the same kernel: does the ring keep its L2 reuse, and is V2 behind V1?
python -m experiments.research.launch_spread --dump FILE.npz [--launches 10]   (on the H200)
python -m experiments.research.launch_spread --summarize FILE.npz              (no GPU)

The seed times each kernel alone with CUDA events after a warm-up, so each runs at the clock
it earns itself. Run 18's stamped V2 kept its L2 sharing for the whole launch, run 29's lost
it from wave 2, and Nsight Compute has counted 3.2-6.1 GB for V2 in five launches: whether a
ring's CTAs drift apart changes from launch to launch. This measures how often, and what it
does to the time order of V1 and V2. Per kernel (the seed's 128x128x64 tile): 20 warm-up
launches, then `--launches` launches back to back, each timed with CUDA events and stamped by
the clock probe (every CTA's SM, start and end on %globaltimer and %clock64).

`--summarize` reads the stamps (no GPU): per launch the event time, the settled waves' clock
and cycles per CTA (stamps.settled), and the DRAM read bytes of an LRU replay of
the launch's own timeline through the profile's l2_lru_bytes (sim.l2cache.replay; within 3%
of Nsight Compute for 10 of 11 kernels in run 29), against the per-wave figure.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from experiments import catalog
from experiments.paths import write_csv
from experiments.probe import probed_launcher
from experiments.reference import random_operands
from experiments.research import cli
from experiments.research.stamps import settled
from sim.engines import memory_traffic
from sim.hardware import load_profile

KERNELS = ("v1", "v2", "v2-local", "v2 s3", "v3 s2", "v3 s3")
GPU = "h200-sxm"


def dump(path: Path, launches: int, warmup: int) -> None:
    import torch
    m = n = k = 8192
    a, b = random_operands(m, n, k, "float16", seed=1)
    b = b.t().contiguous().t()  # a [K, N] view of an [N, K] buffer (K-major), the seed's layout
    out = {}
    for name in KERNELS:
        run, probe, _ = probed_launcher(catalog.entry(name).kernel_config(clock_probe=True), m, n, k)
        for _ in range(warmup):
            run(a, b)
        torch.cuda.synchronize()
        ms = []
        for i in range(launches):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run(a, b)
            end.record()
            end.synchronize()
            ms.append(start.elapsed_time(end))
            out[f"{name}#{i}"] = probe.get()
        out[f"ms {name}"] = np.array(ms)
        print(f"{name}: event ms {' '.join(f'{x:.3f}' for x in ms)}", flush=True)
    out["device"] = np.array(f"{torch.cuda.get_device_name()}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%MZ}")
    np.savez_compressed(path, **out)


def summarize(path: Path) -> tuple[list[dict], str]:
    prof = load_profile(GPU)
    z = np.load(path)
    device = str(z["device"]) if "device" in z.files else "device not recorded"
    rows = []
    for name in KERNELS:
        if f"ms {name}" not in z.files:
            continue
        s = catalog.schedule(name)
        for i, ms in enumerate(z[f"ms {name}"]):
            st = settled(s, 8192, z[f"{name}#{i}"], prof)
            per_wave = memory_traffic(s, 8192, 8192, 8192, st["ctas_per_sm"] * prof.sm_count)["hbm_read_bytes"]
            rows.append({"kernel": name, "launch": i, "event_ms": round(float(ms), 4),
                         "tflops": round(2 * 8192 ** 3 / (ms * 1e-3) / 1e12, 1),
                         "clock_ghz_settled": round(st["clock_ghz"], 3), "kclk_per_cta_settled": st["kclk"],
                         "replayed_dram_gb": round(st["replayed_bytes"] / 1e9, 3),
                         "per_wave_dram_gb": round(per_wave / 1e9, 3)})
    return rows, device


def main(argv=None):
    ap = cli.dump_summarize_parser(__doc__, "launch and stamp the kernels")
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=20)
    args = cli.parse(ap, argv)
    if args.dump:
        dump(args.dump, args.launches, args.warmup)
    rows, device = summarize(args.record)
    if args.csv:
        write_csv(args.csv, rows, f"per launch, each kernel alone after {args.warmup} warm-ups (8192^3 fp16, "
                      f"B [N, K]); {device}; python -m experiments.research.launch_spread --summarize {args.record}")
    print(f"{'kernel':10s} {'launch':>6s} {'ms':>7s} {'TFLOPS':>7s} {'GHz':>5s} {'kclk/CTA':>8s} {'DRAM GB':>8s} (per wave)")
    for r in rows:
        print(f"{r['kernel']:10s} {r['launch']:6d} {r['event_ms']:7.3f} {r['tflops']:7.1f} {r['clock_ghz_settled']:5.2f} "
              f"{r['kclk_per_cta_settled']:8.1f} {r['replayed_dram_gb']:8.2f} ({r['per_wave_dram_gb']:.2f})")
    by = {}
    for r in rows:
        by.setdefault(r["kernel"], []).append(r)
    if "v1" in by and "v2" in by:
        v1 = np.median([r["event_ms"] for r in by["v1"]])
        print("\nmedian event ms over launches, and over V1's median: "
              + ", ".join(f"{k} {np.median([r['event_ms'] for r in v]):.3f} "
                          f"({np.median([r['event_ms'] for r in v]) / v1:.3f})" for k, v in by.items()))
        lost = {k: sum(r["replayed_dram_gb"] > 1.1 * r["per_wave_dram_gb"] for r in v) for k, v in by.items()}
        print("launches whose replay loses reuse (> 1.1x the per-wave bytes):",
              ", ".join(f"{k} {n}/{len(by[k])}" for k, n in lost.items()))


if __name__ == "__main__":
    main()
