"""Where a split-K or stream-K unit's time goes, phase by phase: a clock-probe build of the
persistent kernel with `docs/research/patches/split-k-phases.patch` applied (on trees with
split_cluster, `split-k-phases-cluster.patch`) stamps six points of
each of a CTA's first eight work units (clock64 and %globaltimer, consumer thread 0):

  0 the unit begins                 3 split-K: its partial stored and fenced (split_cluster: its
  1 its first K tile has landed       shares sent into the partners' shared memory; stream-K:
                                      given, or about to take the others' shares)
  2 its last WGMMA is done          4 split-K: every slice of the tile has counted in (stream-K:
                                      the shares taken)
                                    5 its share of C summed and stored (or the tile stored)

From them: the first load's wait (1 - 0), the K loop (2 - 1), the partial's store and fence
(3 - 2), the wait for the tile's other slices (4 - 3) and what of it is the handshake itself (4
less the last slice's 3, across CTAs by %globaltimer), the sum (5 - 4); and the launch's span
against the model's parts for the same kernel (sim.predict: kernel, in-kernel reduce).

  python -m experiments.research.split_k_phases --dump FILE.npz   # on the GPU, patched tree
  python -m experiments.research.split_k_phases --summarize FILE.npz
  python -m experiments.research.split_k_phases --calibrate FILE.npz   # the profile's split_* parameters

Each case runs LAUNCHES times back to back (fp16, A [M, K], B stored [N, K], NaN-poisoned C
checked against torch's fp32 product); the stamps of the last launch are kept, and the time
per launch of the same loop (CUDA events over all of them) beside.
"""
from __future__ import annotations

import argparse
import statistics

P0 = "producer_registers=0,consumer_registers=0"
CASES = (
    ("k16k-1024", 1024, 1024, 16384, "v7:block_n=128,stages=4,split_k=2"),
    ("k16k-1024", 1024, 1024, 16384, "v7:block_n=128,stages=4,split_k=4"),
    ("dec128-down", 128, 4096, 11008, "v7:block_n=128,stages=4,split_k=4"),
    ("dec128-down", 128, 4096, 11008, "v7:block_n=64,stages=8,split_k=2"),
    ("dec128-down", 128, 4096, 11008, "v7:block_n=128,stages=4,stream_k=true"),
    ("dec1-down", 1, 4096, 11008, f"v7:block_n=16,block_k=128,stages=5,split_k=4,swap_ab=true,epilogue=direct,{P0}"),
    ("dec64-down", 64, 4096, 11008, f"v7:block_n=64,stages=8,split_k=4,swap_ab=true,epilogue=direct,{P0}"),
    ("dec64-down", 64, 4096, 11008, f"v7:block_m=64,block_n=128,consumer_warpgroups=1,{P0},stages=8,split_k=4"),
    ("sq1024", 1024, 1024, 1024, "v7:block_n=128,stages=4,split_k=2"),
    ("sq1024", 1024, 1024, 1024, "v7:block_n=128,stages=4,stream_k=true"),
    ("sq1024", 1024, 1024, 1024, f"v7:block_m=64,block_n=128,consumer_warpgroups=1,{P0},stages=8"),
    ("sq1024", 1024, 1024, 1024, "v7:block_n=128,stages=4,cluster_m=2"),
    ("sq512", 512, 512, 512, "v7:block_n=64,stages=8,split_k=2"),
    ("sq512", 512, 512, 512, f"v7:block_m=64,block_n=128,consumer_warpgroups=1,{P0},stages=8"),
    ("sq4096", 4096, 4096, 4096, "v7:block_n=128,stages=4,split_k=2"),
    # split-K inside a cluster (split_cluster): 3 the shares sent and released, 4 every slice's in
    ("k16k-1024", 1024, 1024, 16384, "v7:block_n=128,stages=4,split_k=2,split_cluster=true"),
    ("k16k-1024", 1024, 1024, 16384, "v7:block_n=128,stages=4,split_k=4,split_cluster=true"),
    ("dec128-down", 128, 4096, 11008, "v7:block_n=128,stages=4,split_k=4,split_cluster=true"),
    ("dec128-down", 128, 4096, 11008, "v7:block_n=64,stages=8,split_k=2,split_cluster=true"),
    ("dec1-down", 1, 4096, 11008,
     f"v7:block_n=16,block_k=128,stages=5,split_k=4,swap_ab=true,epilogue=direct,{P0},split_cluster=true"),
    ("dec64-down", 64, 4096, 11008, f"v7:block_n=64,stages=8,split_k=4,swap_ab=true,epilogue=direct,{P0},"
                                    "split_cluster=true"),
    ("dec64-down", 64, 4096, 11008,
     f"v7:block_m=64,block_n=128,consumer_warpgroups=1,{P0},stages=8,split_k=4,split_cluster=true"),
    ("sq1024", 1024, 1024, 1024, "v7:block_n=128,stages=4,split_k=2,split_cluster=true"),
    ("sq512", 512, 512, 512, "v7:block_n=64,stages=8,split_k=2,split_cluster=true"),
    ("sq4096", 4096, 4096, 4096, "v7:block_n=128,stages=4,split_k=2,split_cluster=true"),
)
LAUNCHES = 20
UNITS, POINTS = 8, 6     # the patch's stamps: units per CTA, points per unit (clock64, globaltimer)
BASE = 5                 # words before them: the clock probe's start/end clock and time, SM id


def measure(path) -> None:
    """Run every case on the GPU; save the last launch's stamps (npz, case<i>) and the loop's time."""
    import cupy
    import numpy as np
    import torch

    from gemm.kernels import KernelConfig
    from gemm.kernels.tiles import PROBE_WORDS
    from gemm.launch import launch_gemm, load_kernel
    from gemm.schedule import from_spec
    if PROBE_WORDS != BASE + UNITS * POINTS * 2:
        raise SystemExit("the clock probe has no phase stamps: apply docs/research/patches/split-k-phases.patch")
    arrays, loop_us, errors = {}, [], []
    for i, (_, m, n, k, spec) in enumerate(CASES):
        s = from_spec(spec)
        loaded = load_kernel(KernelConfig(s, "float16", "k", "k", clock_probe=True))
        g = torch.Generator(device="cuda").manual_seed(i)
        a = torch.randn(m, k, generator=g, device="cuda").half()
        w = torch.randn(n, k, generator=g, device="cuda").half()
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        # swap-AB: the kernel computes C^T = W A^T, its "A" the weights, and writes C transposed
        km, kn, ka, kb = (n, m, w, a) if s.swap_ab else (m, n, a, w)
        ctas = loaded.config.grid(km, kn, loaded.resident_clusters)[0]
        probe = cupy.zeros((ctas, PROBE_WORDS), dtype=cupy.uint64)
        stream = torch.cuda.current_stream().cuda_stream

        def launch():
            launch_gemm(loaded, ka.data_ptr(), k, kb.data_ptr(), k, out.data_ptr(), n, km, kn, k, stream,
                        probe.data.ptr)
        launch()
        ref = a.float() @ w.float().T
        errors.append(float((out.float() - ref).abs().max() / ref.abs().max()))   # NaN if any element unwritten
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(LAUNCHES):
            launch()
        end.record()
        torch.cuda.synchronize()
        loop_us.append(start.elapsed_time(end) * 1e3 / LAUNCHES)
        # the last launch's C too (poisoned again first): the counters were reset launch after launch
        out.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        last = float((out.float() - ref).abs().max() / ref.abs().max())
        errors[-1] = float(np.maximum(errors[-1], last))     # NaN if either launch left an element unwritten
        arrays[f"case{i}"] = probe.get().astype(np.int64)
        print(f"{CASES[i][0]:12s} {spec[3:60]:57s} {ctas:4d} CTAs {loop_us[-1]:8.2f} us a launch  err {errors[-1]:.1e}",
              flush=True)
    np.savez_compressed(path, loop_us=np.array(loop_us), rel_err=np.array(errors), **arrays)


def phases(stamps, schedule) -> dict:
    """Medians over the CTAs' recorded units of each phase (us, by each CTA's clock64 over its own
    span's clock), the handshake (a split-K unit's count-in wait less its tile's last slice's
    arrival, by %globaltimer), the span and the units per CTA."""
    import numpy as np
    st = np.asarray(stamps, dtype=np.int64)
    t0 = st[:, 1].min()
    span = (st[:, 3].max() - t0) / 1e3
    ghz = np.median((st[:, 2] - st[:, 0]) / np.maximum(st[:, 3] - st[:, 1], 1))
    pts = st[:, BASE:].reshape(len(st), UNITS, POINTS, 2)
    clk, ns = pts[..., 0], pts[..., 1]
    seen = clk[:, :, 0] > 0
    out = {"span_us": span, "ghz": float(ghz), "units": float(np.median(seen.sum(1)))}

    def med(a, b):
        ok = seen & (clk[:, :, a] > 0) & (clk[:, :, b] > 0)
        v = (clk[:, :, b] - clk[:, :, a])[ok] / ghz / 1e3
        return float(np.median(v)) if v.size else float("nan")
    for label, (a, b) in {"first_load": (0, 1), "k_loop": (1, 2), "store_fence": (2, 3), "wait": (3, 4),
                          "sum": (4, 5), "after_loop": (2, 5)}.items():
        out[label] = med(a, b)
    if schedule.split_k > 1:
        # a tile's slices are consecutive units: unit u on CTA u mod slots as its (u // slots)-th;
        # inside a cluster, the cluster's CTAs (consecutive blocks), each its j-th unit
        ctas = len(st)
        hand = []
        for cta in range(ctas):
            for j in range(UNITS):
                if not seen[cta, j]:
                    continue
                if schedule.split_cluster:
                    first = cta - cta % schedule.split_k
                    peers = [(p, j) for p in range(first, first + schedule.split_k)]
                else:
                    unit = cta + j * ctas
                    first = unit - unit % schedule.split_k
                    peers = [((p % ctas), p // ctas) for p in range(first, first + schedule.split_k)]
                if any(pj >= UNITS or not seen[pc, pj] for pc, pj in peers):
                    continue
                last_in = max(ns[pc, pj, 3] for pc, pj in peers)
                hand.append((ns[cta, j, 4] - last_in) / 1e3)
        out["handshake"] = float(np.median(hand)) if hand else float("nan")
        out["end_spread"] = float((np.percentile(st[:, 3], 90) - np.percentile(st[:, 3], 10)) / 1e3)
    out["start_to_first_unit"] = float(np.median((ns[:, 0, 0] - st[:, 1]) / 1e3))
    return out


def summarize(path, model: bool = True) -> list[dict]:
    """Each recorded case's phases; with `model`, sim.predict's device time and reduce beside."""
    import numpy as np

    import sim
    from gemm.schedule import from_spec
    record = np.load(path)
    rows = []
    for i, (name, m, n, k, spec) in enumerate(CASES):
        if f"case{i}" not in record:
            continue
        s = from_spec(spec)
        row = {"name": name, "schedule": spec, "loop_us": float(record["loop_us"][i]),
               "rel_err": float(record["rel_err"][i]), **phases(record[f"case{i}"], s)}
        if model:
            p = sim.predict(s, m, n, k, gpu="h200-sxm", dtype="float16", clock="load")
            row.update(model_device_us=p.ms * 1e3, model_reduce_us=p.call["reduce_ms"] * 1e3)
        rows.append(row)
    return rows


def _phase_lines(path, keep, first_bytes) -> tuple[int, float, float, float, float, float] | None:
    """Over a record's cases whose schedule `keep` accepts: the after-loop's first phase (the K
    loop's end to the partial out, 2 -> 3) a line in `first_bytes(schedule)` and the sum phase
    (4 -> 5) a line in the tile's fp32 bytes, least squares: (cases, first phase's bytes per ns,
    its intercept us, the sum's bytes per ns, its intercept us, the handshake's median us);
    None with fewer than two cases."""
    import numpy as np

    from gemm.schedule import from_spec
    cases = [(r, from_spec(r["schedule"])) for r in summarize(path, model=False)]
    cases = [(r, s) for r, s in cases if keep(s)]
    if len(cases) < 2:
        return None
    rows = [r for r, _ in cases]
    first = np.array([first_bytes(s) for _, s in cases], float)
    tile = np.array([s.block_m * s.block_n * 4 for _, s in cases], float)
    first_slope, first_at0 = np.polyfit(first, [r["store_fence"] * 1e3 for r in rows], 1)   # ns per byte, ns
    sum_slope, sum_at0 = np.polyfit(tile, [r["sum"] * 1e3 for r in rows], 1)
    handshake = float(np.median([r["handshake"] for r in rows]))
    return len(rows), 1.0 / first_slope, first_at0 / 1e3, 1.0 / sum_slope, sum_at0 / 1e3, handshake


def calibrate(path) -> dict:
    """The profile's split-K parameters from a record's split-K cases through the workspace
    (stream-K and split_cluster left out): the stores-and-fence phase and the sum phase each a
    line in the tile's fp32 bytes, whose slopes are split_store_bytes_per_ns and
    split_sum_bytes_per_ns; and split_sync_us, the two intercepts plus the handshake's median."""
    cases, store, store_at0, summed, sum_at0, handshake = _phase_lines(
        path, lambda s: s.split_k > 1 and not s.split_cluster, lambda s: s.block_m * s.block_n * 4)
    return {"cases": cases, "split_store_bytes_per_ns": store, "split_sum_bytes_per_ns": summed,
            "split_sync_us": store_at0 + sum_at0 + handshake,
            "store_intercept_us": store_at0, "sum_intercept_us": sum_at0, "handshake_us": handshake}


def calibrate_cluster(path) -> dict | None:
    """The profile's split_cluster parameters from a record's split_cluster cases: the send phase
    (the K loop's end to the shares sent and the consumers met) a line in the bytes sent to the
    partners (the tile's fp32 bytes but the CTA's own share), whose slope is
    cluster_exchange_bytes_per_ns; the sum phase (its slots, read from its own shared memory, with
    its C stores) cluster_sum_bytes_per_ns; and cluster_exchange_sync_us, the two intercepts plus
    the handshake's median. None without such cases."""
    lines = _phase_lines(path, lambda s: s.split_cluster,
                         lambda s: s.block_m * s.block_n * 4 * (s.split_k - 1) / s.split_k)
    if lines is None:
        return None
    cases, send, send_at0, summed, sum_at0, handshake = lines
    return {"cases": cases, "cluster_exchange_bytes_per_ns": send, "cluster_sum_bytes_per_ns": summed,
            "cluster_exchange_sync_us": send_at0 + sum_at0 + handshake,
            "send_intercept_us": send_at0, "sum_intercept_us": sum_at0, "handshake_us": handshake}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", help="measure on the GPU (the patched tree) and save the stamps here (npz)")
    p.add_argument("--summarize", help="summarize a saved record")
    p.add_argument("--calibrate", help="the profile's split-K parameters from a saved record")
    args = p.parse_args(argv)
    if args.calibrate:
        c = calibrate(args.calibrate)
        print(f"over {c['cases']} split-K cases: stores and fence {c['store_intercept_us']:.2f} us + bytes at "
              f"{c['split_store_bytes_per_ns']:.1f} B/ns; sum {c['sum_intercept_us']:.2f} us + bytes at "
              f"{c['split_sum_bytes_per_ns']:.1f} B/ns; handshake {c['handshake_us']:.2f} us")
        print(f"split_store_bytes_per_ns = {c['split_store_bytes_per_ns']:.1f}, split_sum_bytes_per_ns = "
              f"{c['split_sum_bytes_per_ns']:.1f}, split_sync_us = {c['split_sync_us']:.2f}")
        c = calibrate_cluster(args.calibrate)
        if c is not None:
            print(f"over {c['cases']} split_cluster cases: sends {c['send_intercept_us']:.2f} us + bytes sent at "
                  f"{c['cluster_exchange_bytes_per_ns']:.1f} B/ns; sum {c['sum_intercept_us']:.2f} us + bytes at "
                  f"{c['cluster_sum_bytes_per_ns']:.1f} B/ns; handshake {c['handshake_us']:.2f} us")
            print(f"cluster_exchange_bytes_per_ns = {c['cluster_exchange_bytes_per_ns']:.1f}, cluster_sum_bytes_per_ns = "
                  f"{c['cluster_sum_bytes_per_ns']:.1f}, cluster_exchange_sync_us = {c['cluster_exchange_sync_us']:.2f}")
        return 0
    path = args.dump or args.summarize
    if path is None:
        p.error("give --dump FILE (GPU), --summarize FILE or --calibrate FILE")
    if args.dump:
        measure(path)
    cols = ("loop_us", "span_us", "model_device_us", "units", "first_load", "k_loop", "store_fence", "wait",
            "handshake", "sum", "model_reduce_us", "ghz")
    print(f"{'shape':11s} {'schedule':40s} " + " ".join(f"{c[:9]:>9s}" for c in cols))
    for r in summarize(path):
        print(f"{r['name']:11s} {r['schedule'][3:43]:40s} " + " ".join(f"{r.get(c, float('nan')):9.2f}" for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
