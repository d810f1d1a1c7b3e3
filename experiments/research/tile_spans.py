"""Where a persistent kernel's time goes at large shapes: each CTA's span from a clock-probe
build, its time per work unit, the SM clock and the tensor cores' share of their peak per
clock, and what a dynamic tile scheduler (units handed to whichever CTA frees first) would
have saved over the static round robin the kernel walks (docs/research/notes.md 103).

  python -m experiments.research.tile_spans --dump FILE.npz   # on the GPU: launch, keep the stamps
  python -m experiments.research.tile_spans --summarize FILE.npz
  python -m experiments.research.tile_spans --staged-epilogue experiments/results/h200-sxm/logs/bench/run47-tile-trace.log
                                     # the profile's staged_epilogue_clk from the per-tile trace

Each case runs `LAUNCHES` times back to back (fp16, A [M, K], B stored [N, K]); the stamps of
the last `KEPT` are kept. A CTA's span runs from its own start to its end (%globaltimer), its
clock is its clock64 over that span; a unit's time is the span over the units the CTA walked.
"""
from __future__ import annotations

import argparse
import heapq
import re
import statistics
from pathlib import Path

CASES = (("sq4096", 4096, 4096, 4096, "v7"),
         ("sq4096", 4096, 4096, 4096, "v7:block_m=256,block_n=128,cluster_n=2"),
         ("llama7b-qkv", 4096, 12288, 4096, "v7"),
         ("llama7b-down", 4096, 4096, 11008, "v7"),
         ("sq8192", 8192, 8192, 8192, "v7"))
LAUNCHES, KEPT = 10, 4
DENSE_FLOPS_PER_CLK_PER_SM = 4096     # fp16 WGMMA: 4 tensor cores x 512 FMAs a clock


def units_per_cta(schedule, m: int, n: int, ctas: int) -> list[int]:
    """Work units each CTA walks in the persistent kernel's static order: cluster c takes
    units c, c + slots, ... (gemm/kernels/persistent.py), both CTAs of a cluster alike."""
    from gemm.kernels import KernelConfig
    units = KernelConfig(schedule).tile_units(m, n)
    slots = ctas // schedule.cluster_size
    return [len(range(cta // schedule.cluster_size, units, slots)) for cta in range(ctas)]


def greedy_end(starts: list[float], unit_times: list[float], units: int) -> float:
    """When the last unit ends if each unit goes to whichever slot is free first, each slot at
    its own measured time per unit."""
    heap = [(t, i) for i, t in enumerate(starts)]
    heapq.heapify(heap)
    last = 0.0
    for _ in range(units):
        t, i = heapq.heappop(heap)
        t += unit_times[i]
        last = max(last, t)
        heapq.heappush(heap, (t, i))
    return last


def launch_summary(stamps, schedule, m: int, n: int, k: int) -> dict:
    """One launch's stamps (CTAs x [start clk, start ns, end clk, end ns, SM]) -> its span (us),
    the median time per unit (us), the median clock (GHz), the median tensor share of the peak
    per clock, and the greedy replay's end (us) over slots of one cluster each."""
    ctas = len(stamps)
    per = units_per_cta(schedule, m, n, ctas)
    t0 = min(int(row[1]) for row in stamps)
    start = [(int(row[1]) - t0) / 1e3 for row in stamps]
    end = [(int(row[3]) - t0) / 1e3 for row in stamps]
    clocks = [(int(row[2]) - int(row[0])) / max(int(row[3]) - int(row[1]), 1) for row in stamps]
    unit_us = [(e - s) / u for s, e, u in zip(start, end, per)]
    flops = [2 * schedule.block_m * schedule.block_n * k * u / max(int(row[2]) - int(row[0]), 1)
             for u, row in zip(per, stamps)]
    c = schedule.cluster_size
    slots = ctas // c
    slot_start = [max(start[i * c:(i + 1) * c]) for i in range(slots)]
    slot_unit = [max(unit_us[i * c:(i + 1) * c]) for i in range(slots)]
    return {"span_us": max(end), "unit_us": statistics.median(unit_us), "clock_ghz": statistics.median(clocks),
            "tensor_share": statistics.median(flops) / DENSE_FLOPS_PER_CLK_PER_SM,
            "greedy_us": greedy_end(slot_start, slot_unit, sum(per) // c)}


def summarize(path) -> list[dict]:
    """Per case of the record: the medians over its kept launches."""
    import numpy as np

    from gemm.schedule import from_spec
    record = np.load(path, allow_pickle=False)
    out = []
    for i, (name, m, n, k, spec) in enumerate(CASES):
        s = from_spec(spec)
        launches = [launch_summary(st, s, m, n, k) for st in record[f"case{i}"]]
        row = {key: statistics.median(r[key] for r in launches) for key in launches[0]}
        out.append({"name": name, "schedule": spec, **row})
    return out


def measure(path) -> None:
    """Run every case on the GPU and save the kept launches' stamps to `path` (npz)."""
    import numpy as np
    import torch

    from experiments.probe import probed_launcher
    from gemm.kernels import KernelConfig
    from gemm.schedule import from_spec
    arrays = {}
    for i, (_, m, n, k, spec) in enumerate(CASES):
        config = KernelConfig(from_spec(spec), "float16", "k", "k", clock_probe=True)
        run, probe, _ = probed_launcher(config, m, n, k, LAUNCHES)
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(m, k, generator=g, device="cuda").half()
        w = torch.randn(n, k, generator=g, device="cuda").half()
        for j in range(LAUNCHES):
            run(a, w.T, j)
        torch.cuda.synchronize()
        stamps = probe.get().astype(np.int64).reshape(LAUNCHES, -1, probe.shape[1])
        arrays[f"case{i}"] = stamps[LAUNCHES - KEPT:]
    np.savez_compressed(path, **arrays)


EPILOGUE_MEDIAN = re.compile(r"^(\S+)\s+(v\S+)\s.*clk medians:.*?\bepilogue (\d+)")


def staged_epilogue_clk(log_path, gpu: str = "h200-sxm") -> list[dict]:
    """Per case of a per-tile trace (docs/research/patches/tile-trace-4d8c3a2.patch: consumer
    thread 0's clock64 around each tile's epilogue, run 47), the median epilogue less what the
    model's other terms give it (sim.fast: the warpgroup's share into shared memory at
    smem_bytes_per_clk, one consumers' barrier, a TMA issue per box): the profile's
    staged_epilogue_clk is their mean. The cases with the same tile measure the same thing
    (every tile's epilogue is the same code); each tile counts once."""
    import dataclasses

    from gemm.schedule import INPUT_BYTES, from_spec
    from sim.engines import staged_epilogue_clk as model_epilogue_clk
    from sim.hardware import load_profile
    g = load_profile(gpu)
    seen, rows = set(), []
    for line in Path(log_path).read_text().splitlines():
        m = EPILOGUE_MEDIAN.match(line)
        if not m or m.group(2) in seen:
            continue
        seen.add(m.group(2))
        s = from_spec(m.group(2))
        share = s.rows_per_warpgroup * s.block_n * INPUT_BYTES
        modelled = model_epilogue_clk(s, dataclasses.replace(g, staged_epilogue_clk=0.0), share)
        rows.append({"schedule": s.name, "measured_clk": int(m.group(3)), "modelled_clk": modelled,
                     "staged_epilogue_clk": int(m.group(3)) - modelled})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", help="measure on the GPU and save the stamps here (npz)")
    p.add_argument("--summarize", help="summarize a saved record")
    p.add_argument("--staged-epilogue", metavar="LOG", help="the profile's staged_epilogue_clk from a per-tile "
                   "trace's log (run 47)")
    args = p.parse_args(argv)
    if args.staged_epilogue:
        rows = staged_epilogue_clk(args.staged_epilogue)
        for r in rows:
            print(f"{r['schedule']:40s} epilogue {r['measured_clk']:5d} clk, the model's other terms "
                  f"{r['modelled_clk']:5.0f}: {r['staged_epilogue_clk']:5.0f}")
        print(f"staged_epilogue_clk = {statistics.mean(r['staged_epilogue_clk'] for r in rows):.0f}")
        return 0
    path = args.dump or args.summarize
    if path is None:
        p.error("give --dump FILE (GPU) or --summarize FILE")
    if args.dump:
        measure(path)
    print(f"{'shape':12s} {'schedule':40s} {'span':>7s} {'unit':>6s} {'clock':>6s} {'tensor':>6s} {'greedy':>7s}")
    for r in summarize(path):
        print(f"{r['name']:12s} {r['schedule'][:40]:40s} {r['span_us']:7.1f} {r['unit_us']:6.2f} {r['clock_ghz']:6.3f} "
              f"{r['tensor_share']:6.3f} {r['greedy_us']:7.1f}  (us, GHz, share of the peak per clock)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
