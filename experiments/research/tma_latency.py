"""How long a GEMM's TMA box takes when it misses L2, against a hit, under load.
python -m experiments.research.tma_latency --dump FILE.npz       (on the GPU; no profiler)
python -m experiments.research.tma_latency --summarize FILE.npz [--csv F]   (no GPU)

sim/convoy.py decides whether a schedule's CTAs are held in convoy by comparing the latency
its ring hides with what a missed box waits beyond a hit: the profile's hbm_latency_ns -
tma_latency_ns, 550 ns, assumed. This measures it. Blocks of one issuing thread fetch the
seed's A boxes (128 rows x 64 fp16, 128-B swizzle, 16 KB, through the kernels' own gemm.ptx
TMA and mbarrier primitives), each down its own 128-row panel of a [529 x 128, 8192] operand,
one or two boxes in flight per block, 1, 2 or 4 blocks per SM on all 132 SMs (1 to 8 boxes in
flight per SM, as a GEMM's CTAs per SM times its prefetch), stamping with %clock64 when each
box is issued and when its mbarrier completes (waited for in order). Per condition and repeat,
on addresses no launch has read before:

  miss    after a 512 MB read: every box comes from DRAM;
  hit     the same launch again: every box is in L2 (brought in by this SM, if the block
          landed where it did before);
  shared  again, each block reading the panel of the block after it: lines another SM
          brought in (the follower in a convoy hits these).
The summary sorts the hits by whether the reading SM is the one that brought the lines in,
and gives per condition the median latency of each kind in ns (%clock64 over %globaltimer
per block), the miss's extra over a hit, and the DRAM throughput of the miss launch.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from experiments.paths import write_csv

BOX_ROWS, BOX_K = 128, 64            # the seed's A box: 128 rows x 64 fp16 (128 B), 128-B swizzle
BOX_BYTES = BOX_ROWS * BOX_K * 2
SLOTS = 2                             # ring slots per block (32 KB: static shared memory stops at 48 KB)
RING_BYTES = SLOTS * BOX_BYTES
K = 8192
SMS = 132
# (blocks per SM, boxes in flight per block): 1, 2, 4 and 8 boxes in flight per SM, as a GEMM's
# CTAs per SM times its prefetch
CONDITIONS = ((1, 1), (1, 2), (2, 2), (4, 2))
PANELS = SMS * 4 + 1                  # one 128-row panel per block, one more for the shifted pass
BOXES_PER_SM = 8                      # per launch: 132 x 8 x 16 KB = 17 MB, which L2 holds
REPEATS = 4                           # per condition, each on K slices no launch has read


def _kernel():
    from numba import cuda, uint8, uint64

    from gemm import ptx

    @cuda.jit
    def box_latency(tmap, panel0, slice0, n_boxes, depth, issued, done, stamps):
        smem = cuda.shared.array(RING_BYTES, uint8, alignment=1024)
        bars = cuda.shared.array(SLOTS, uint64, alignment=8)
        base = ptx.shared_base(smem)
        bar0 = ptx.shared_base(bars)
        if cuda.threadIdx.x == 0:
            for s in range(SLOTS):
                ptx.mbarrier_init(bar0 + 8 * s, 1)
            ptx.fence_mbarrier_init()
        cuda.syncthreads()
        if cuda.threadIdx.x != 0:
            return
        b = cuda.blockIdx.x
        ptx.fence_tensormap_acquire(tmap)
        row = (panel0 + b) * BOX_ROWS
        g0 = ptx.globaltimer()
        c0 = ptx.clock64()
        for i in range(n_boxes + depth):
            if i >= depth:           # the oldest box in flight: wait, stamp
                j = i - depth
                ptx.mbarrier_wait(bar0 + 8 * (j % depth), (j // depth) & 1)
                done[b * n_boxes + j] = ptx.clock64()
            if i < n_boxes:          # reuse its slot for the next box
                slot = i % depth
                issued[b * n_boxes + i] = ptx.clock64()
                ptx.mbarrier_arrive_expect_tx(bar0 + 8 * slot, BOX_BYTES)
                ptx.tma_load_2d(base + slot * BOX_BYTES, tmap, (slice0 + i) * BOX_K, row, bar0 + 8 * slot)
        stamps[b, 0] = ptx.clock64() - c0
        stamps[b, 1] = ptx.globaltimer() - g0
        stamps[b, 2] = ptx.smid()
    return box_latency


def run(dump: Path) -> None:
    import cupy

    from gemm.tensormap import cache
    kernel = _kernel()
    rows = PANELS * BOX_ROWS
    a = (cupy.arange(rows * K, dtype=cupy.uint32) % 59999 + 1).astype(cupy.uint16).reshape(rows, K)  # no zeros
    tmap = cache.get(a.data.ptr, "float16", K, rows, K * 2, (BOX_K, BOX_ROWS), 128)
    sweep = cupy.ones(512 * 2**20 // 4, dtype=cupy.uint32)  # written once; read to empty L2
    out = {}

    def launch(blocks, boxes, depth, panel0, slice0):
        issued = cupy.zeros(blocks * boxes, dtype=cupy.uint64)
        done = cupy.zeros_like(issued)
        stamps = cupy.zeros((blocks, 3), dtype=cupy.uint64)
        kernel[blocks, 32](tmap, panel0, slice0, boxes, depth, issued, done, stamps)
        cupy.cuda.Device().synchronize()
        return np.stack([issued.get(), done.get()]).reshape(2, blocks, boxes), stamps.get()

    launch(SMS, 1, 1, 0, K // BOX_K - 1)  # compile and warm the tensor map (a slice not used below)
    slice0 = 0
    for per_sm, depth in CONDITIONS:
        blocks, boxes = SMS * per_sm, BOXES_PER_SM // per_sm
        for r in range(REPEATS):
            float(sweep.sum())  # 512 MB read through L2 (no dirty lines): none of the operand stays
            for kind, panel0 in (("miss", 0), ("hit", 0), ("shared", 1)):
                t, st = launch(blocks, boxes, depth, panel0, slice0)
                out[f"{kind}_b{per_sm}_d{depth}_r{r}"] = t
                out[f"{kind}_b{per_sm}_d{depth}_r{r}_stamps"] = st
            slice0 += boxes
            assert slice0 < K // BOX_K - 1  # fresh slices for every repeat
    np.savez_compressed(dump, **out)
    print(f"wrote {dump}: {len(out) // 2} launches")


def summarize(dump: Path) -> list[dict]:
    """Per condition (blocks per SM, boxes in flight per block): median latency (ns) of misses, of
    hits on lines the reading SM brought in ("own") and on lines another SM brought in ("other";
    blocks do not always land on the same SM from one launch to the next, so both passes feed
    both), the miss's extra over each, and the miss launch's DRAM throughput (TB/s: its boxes
    over the median block's span)."""
    d = np.load(dump)
    rows = []
    for per_sm, depth in CONDITIONS:
        lat = {"miss": [], "own": [], "other": []}
        tbs = []
        for r in range(REPEATS):
            tag = f"b{per_sm}_d{depth}_r{r}"
            brought_by = d[f"miss_{tag}_stamps"][:, 2].astype(np.int64)  # SM of each panel's miss
            for kind, shift in (("miss", 0), ("hit", 0), ("shared", 1)):
                t = d[f"{kind}_{tag}"].astype(np.int64)
                st = d[f"{kind}_{tag}_stamps"].astype(np.int64)
                ns = (t[1] - t[0]) / (st[:, 0] / np.maximum(st[:, 1], 1))[:, None]  # clocks -> ns per block
                if kind == "miss":
                    lat["miss"].append(ns.ravel())
                    tbs.append(t.shape[1] * t.shape[2] * BOX_BYTES / np.median(st[:, 1]) / 1e3)
                    continue
                blocks = np.arange(st.shape[0] - shift)  # the shifted pass's last block read a panel no one brought in
                own = st[blocks, 2].astype(np.int64) == brought_by[blocks + shift]
                lat["own"].append(ns[blocks][own].ravel())
                lat["other"].append(ns[blocks][~own].ravel())
        row = {"blocks_per_sm": per_sm, "depth": depth, "in_flight_per_sm": per_sm * depth,
               "miss_tbs": round(float(np.median(tbs)), 2)}
        for kind, parts in lat.items():
            v = np.concatenate(parts)
            row[f"{kind}_n"] = int(v.size)
            row[f"{kind}_ns"] = round(float(np.median(v)), 1) if v.size else None
            row[f"{kind}_p90_ns"] = round(float(np.percentile(v, 90)), 1) if v.size else None
        for kind in ("own", "other"):
            row[f"miss_extra_over_{kind}_ns"] = (round(row["miss_ns"] - row[f"{kind}_ns"], 1)
                                                 if row[f"{kind}_ns"] is not None else None)
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, help="measure (GPU) and write the stamps here")
    ap.add_argument("--summarize", type=Path, metavar="FILE", help="the table from a dump (no GPU)")
    ap.add_argument("--csv", type=Path, help="with --summarize: write the rows here")
    args = ap.parse_args(argv)
    if args.dump:
        run(args.dump)
        return
    if not args.summarize:
        ap.error("give --dump FILE (on the GPU) or --summarize FILE")
    rows = summarize(args.summarize)
    for r in rows:
        print(f"{r['blocks_per_sm']} block(s)/SM x {r['depth']} in flight (misses at {r['miss_tbs']:4.2f} TB/s): "
              f"miss {r['miss_ns']:6.0f} ns (p90 {r['miss_p90_ns']:6.0f})  hit, own SM's lines {r['own_ns']} "
              f"(n {r['own_n']}), another SM's {r['other_ns']} (n {r['other_n']})  miss extra "
              f"{r['miss_extra_over_own_ns']} / {r['miss_extra_over_other_ns']} ns")
    if args.csv:
        write_csv(args.csv, rows, f"TMA box latency (128 x 64 fp16, 128-B swizzle), 132 SMs x blocks per SM x "
                      f"boxes in flight per block; medians over {REPEATS} launches of {BOXES_PER_SM} boxes per SM; "
                      f"python -m experiments.research.tma_latency --summarize {args.summarize}")


if __name__ == "__main__":
    main()
