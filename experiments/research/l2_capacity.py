"""How much data the H200's L2 keeps between two sweeps: its capacity as an LRU would see it.
Run under Nsight Compute (`bash experiments/research/device.sh l2-capacity`):

  ncu --nvtx --nvtx-include "measured/" --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct \\
      --clock-control none --cache-control none --csv python3 -m experiments.research.l2_capacity --labels L

For each buffer size S (random bytes), after a 512 MB sweep, one launch reads the buffer
twice in one grid-stride loop (the blocks keep together, so between a line's two reads the
whole buffer passes through L2); Nsight Compute measures the launch's dram__bytes_read.
Within one launch, because Nsight Compute's own work between launches empties L2 (a first
try measured a second launch over an 8 MB buffer reading all of it from DRAM). In a true
LRU of capacity C the launch reads S while S <= C and 2S once S > C (each line is evicted
just before it is needed again); with the second sweep in reverse it reads 2S - C (the
last C bytes of the first sweep are still there). A third mode has every line read by two
blocks on different SMs in the same sweep: if L2 keeps a copy per partition for lines read
from both sides (the A100 whitepaper: each partition caches data for the SMs directly
connected to it), such lines take twice the capacity, as the GEMM's shared panels would.
`sim.l2cache` and `sim.timeline` model the L2 as one LRU of `l2_bytes` (50 MB by the
datasheet); this sets what that capacity should be. Labels (launch order) go to --labels.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from experiments.research.hbm_compare import read_ncu

SIZES_MB = (8, 16, 24, 32, 36, 40, 44, 48, 52, 56, 64, 80, 96)
BLOCKS_PER_SM, THREADS = 8, 256
SOURCE = r"""
__device__ __forceinline__ unsigned long long at(unsigned long long i, unsigned long long n, int mode) {
    // sweep 1 reads 0..n-1; sweep 2 reads them again, forward or (mode 1) in reverse
    return i < n ? i : (mode == 1 ? 2 * n - 1 - i : i - n);
}

extern "C" __global__ void sweep(const uint4* __restrict__ a, unsigned long long n, int mode,
                                 int partner_offset, unsigned* out) {
    // two sweeps over the buffer in one grid-stride loop: the blocks keep within a few
    // iterations of one another, so between a line's two reads the whole buffer passes.
    // mode 0: forward twice; 1: forward, then reverse; 2: forward twice, and each line also
    // read by the block `partner_offset` blocks away (another SM) in the same iteration
    unsigned acc = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long me = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long other = (unsigned long long)((blockIdx.x + partner_offset) % gridDim.x) * blockDim.x
                               + threadIdx.x;
    for (unsigned long long i = 0; i < 2 * n; i += stride) {
        if (i + me < 2 * n) {
            uint4 v = a[at(i + me, n, mode)];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        if (mode == 2 && i + other < 2 * n) {
            uint4 w = a[at(i + other, n, mode)];
            acc ^= w.x ^ w.y ^ w.z ^ w.w;
        }
    }
    if (acc == 0x9e3779b9u) out[0] = acc;  // keeps the loads; practically never true
}

extern "C" __global__ void sweep_panels(const uint4* __restrict__ a, unsigned long long rows,
                                        unsigned long long cols, unsigned long long row_uint4,
                                        int two_readers, int partner_offset, unsigned* out) {
    // the GEMM's pattern (--panels): a buffer of `rows` rows `row_uint4` x 16 B apart, of which
    // the first `cols` 128-B chunks of every row are read, chunk by chunk down all the rows
    // (a K slice of every A panel), twice; with two_readers each line also by a block on
    // another SM in the same iteration, as the CTAs sharing a panel do
    unsigned acc = 0;
    unsigned long long n = rows * cols * 8, stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long me = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long other = (unsigned long long)((blockIdx.x + partner_offset) % gridDim.x) * blockDim.x
                               + threadIdx.x;
    for (unsigned long long i = 0; i < 2 * n; i += stride) {
        for (int who = 0; who <= two_readers; ++who) {
            unsigned long long j = i + (who ? other : me);
            if (j >= 2 * n) continue;
            j = j < n ? j : j - n;
            unsigned long long c = j / (rows * 8), r = (j / 8) % rows;
            uint4 v = a[r * row_uint4 + c * 8 + (j % 8)];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}
"""
# --panels (run 55): the K slices of 8192 rows 16 KB apart (fp16, K = 8192), as the GEMM's A
# panels sit, and 128 B further apart (K + 64, run 53's padding); `cols` 128-B chunks per row =
# `cols` MiB touched
PANEL_ROWS = 8192
PANEL_STRIDES = {"panels": 16384, "panels ld+64": 16384 + 128}  # bytes between rows
PANEL_COLS = (4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64)


def half_miss_mib(rows) -> float | None:
    """The buffer size (MiB) at which the second sweep misses half its bytes, by linear
    interpolation: where a step-shaped LRU curve with the same midpoint would switch."""
    pts = sorted((r["mib"], r["second_sweep_miss"]) for r in rows)
    for (s0, f0), (s1, f1) in zip(pts, pts[1:]):
        if f0 < 0.5 <= f1:
            return s0 + (s1 - s0) * (0.5 - f0) / (f1 - f0)
    return None


def summarize(logs: Path, out_csv: Path | None = None) -> dict:
    """Rows of one run (its ncu.csv and labels.json) and the capacity each mode implies."""
    meta = json.loads((logs / "labels.json").read_text())
    launches = read_ncu(logs / "ncu.csv")
    if len(launches) != len(meta["labels"]):
        raise ValueError(f"{logs}: {len(launches)} profiled launches for {len(meta['labels'])} labels")
    rows = []
    for lab, m in zip(meta["labels"], launches):
        dram = m["dram__bytes_read.sum"] / 2**20
        rows.append({"mib": lab["mb"], "mode": lab["mode"], "dram_mib": round(dram, 2),
                     "second_sweep_miss": round(max(0.0, dram - lab["mb"]) / lab["mb"], 4),
                     "l2_hit_pct": m["lts__t_sector_hit_rate.pct"], "ns": m["gpu__time_duration.sum"]})
    modes = dict.fromkeys(r["mode"] for r in rows)
    caps = {mode: half_miss_mib([r for r in rows if r["mode"] == mode]) for mode in modes}
    # reverse second sweep, once the forward one thrashes: 2S - C bytes, so C = 2S - DRAM
    thrash = [r["mib"] for r in rows if r["mode"] == "forward" and r["second_sweep_miss"] > 0.97]
    kept = [2 * r["mib"] - r["dram_mib"] for r in rows if r["mode"] == "reverse" and r["mib"] in thrash]
    result = {"info": meta["info"], "rows": rows, "half_miss_mib": caps,
              "reverse_kept_mib": round(sum(kept) / len(kept), 1) if kept else None}
    if out_csv:
        with out_csv.open("w", newline="") as f:
            f.write(f"# L2 capacity sweep (experiments/research/l2_capacity.py, run under Nsight Compute by "
                    f"experiments/research/device.sh l2-capacity): {json.dumps(meta['info'])}; one launch = two sweeps "
                    f"over a buffer of `mib` MiB; second_sweep_miss = (DRAM bytes - buffer) / buffer; "
                    f"half-miss size by mode (MiB): {json.dumps({k: v and round(v, 1) for k, v in caps.items()})}; "
                    f"reverse sweep keeps {result['reverse_kept_mib']} MiB\n")
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", help="run the sweeps (on the GPU, under ncu); JSON file for the measured "
                                     "launches' labels, in order")
    ap.add_argument("--summarize", type=Path, metavar="DIR",
                    help="read DIR/ncu.csv and DIR/labels.json and print the table (no GPU)")
    ap.add_argument("--csv", type=Path, help="with --summarize: also write this CSV")
    ap.add_argument("--panels", action="store_true", help="with --labels: the GEMM's panel pattern instead "
                    "(PANEL_STRIDES, one and two readers)")
    args = ap.parse_args(argv)
    if args.summarize:
        res = summarize(args.summarize, args.csv)
        print(res["info"])
        for r in res["rows"]:
            print(f"{r['mib']:4d} MiB {r['mode']:12s} DRAM {r['dram_mib']:8.2f} MiB  second sweep missed "
                  f"{100 * r['second_sweep_miss']:5.1f}%  L2 hit {r['l2_hit_pct']:5.1f}%")
        print("second sweep misses half its bytes at (MiB):",
              {k: v and round(v, 1) for k, v in res["half_miss_mib"].items()},
              f"; a reverse second sweep keeps {res['reverse_kept_mib']} MiB")
        return
    if not args.labels:
        ap.error("give --labels (run the sweeps) or --summarize DIR")
    import cupy
    from cupy.cuda import nvtx

    dev = cupy.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    kernel = cupy.RawKernel(SOURCE, "sweep")
    grid = sms * BLOCKS_PER_SM
    partner = sms // 2 + 1  # blocks b and b + 67: other SMs in the dispatch order
    out = cupy.zeros(1, dtype=cupy.uint32)
    rng = cupy.random.default_rng(7)
    flush = rng.integers(0, 2**32, size=512 << 18, dtype=cupy.uint32)  # 512 MB

    def sweep(buf, mode):
        n = buf.size // 4  # uint4 elements
        kernel((grid,), (THREADS,), (buf, cupy.uint64(n), cupy.int32(mode), cupy.int32(partner), out))

    labels = []

    def measured(buf, mode, label):
        nvtx.RangePush("measured")
        sweep(buf, mode)
        cupy.cuda.runtime.deviceSynchronize()
        nvtx.RangePop()
        labels.append(label)

    info = {"gpu": cupy.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(),
            "l2_cache_size_attribute": dev.attributes["L2CacheSize"], "sms": sms, "grid": grid,
            "threads": THREADS, "partner_offset": partner}
    print(json.dumps(info), flush=True)
    if args.panels:
        panels = cupy.RawKernel(SOURCE, "sweep_panels")
        for name, row_bytes in PANEL_STRIDES.items():
            buf = rng.integers(0, 2**32, size=PANEL_ROWS * row_bytes // 4, dtype=cupy.uint32)
            for cols in PANEL_COLS:
                for readers in (0, 1):
                    sweep(flush, 0)
                    nvtx.RangePush("measured")
                    panels((grid,), (THREADS,), (buf, cupy.uint64(PANEL_ROWS), cupy.uint64(cols),
                                                 cupy.uint64(row_bytes // 16), cupy.int32(readers),
                                                 cupy.int32(partner), out))
                    cupy.cuda.runtime.deviceSynchronize()
                    nvtx.RangePop()
                    labels.append({"mb": cols * PANEL_ROWS * 128 // 2**20,
                                   "mode": name + (", two readers" if readers else "")})
            del buf
    for mb in () if args.panels else SIZES_MB:
        buf = rng.integers(0, 2**32, size=mb << 18, dtype=cupy.uint32)
        for mode, name in ((0, "forward"), (1, "reverse"), (2, "two readers")):
            sweep(flush, 0)
            measured(buf, mode, {"mb": mb, "mode": name})
        del buf
    with open(args.labels, "w") as f:
        json.dump({"info": info, "labels": labels}, f)
    print(f"{len(labels)} measured launches", flush=True)


if __name__ == "__main__":
    main()
