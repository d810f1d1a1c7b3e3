"""Which L2 partition each SM reads through, and what a near hit, a far hit and a miss cost.
python -m experiments.research.l2_sides --dump FILE.npz      (on the GPU; no profiler)
python -m experiments.research.l2_sides --summarize FILE.npz [--write] (no GPU; --write puts the sides
    into sim/profiles/h200-sxm.json and experiments/results/h200-sxm/l2_sides.csv)

The H100/H200 L2 is two partitions; the A100 whitepaper says each caches data for the SMs
of the GPCs attached to it. docs/research/notes.md item 28 saw the ring kernels split the SMs into two halves
that drift apart. This maps the halves by latency. One thread per block, one block per SM
(the SM id is read in the kernel) walks a random cycle through the 128-byte lines of one
region (256 lines, 32 KiB), each load's address taken from the load before, timing each
load with clock64 after its value is used. Per repeat:

  1. sweep 512 MB (L2 holds none of the regions);
  2. "miss": block b walks region b: every load comes from DRAM;
  3. "other SM": block b walks region (b + shift) % blocks: lines another SM brought in;
and once per repeat "again" instead of 3: the same walk as 2, now from L2 (blocks usually,
not always, land on the same SMs as in 2).

In "other SM", a reader on the same side as the SM that brought the lines in should find
them near (a copy on its side, or homed there); a reader on the other side finds some far
(those homed away from it, unless it keeps copies). The SM pairs with many slow loads mark
the two sides; their latencies give near and far hit costs in SM clocks.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from experiments.paths import REPO, results_dir
from sim.hardware import load_profile, write_profile_parameters

LINES = 256          # per region (32 KiB)
WORDS_PER_LINE = 32  # 128 B
SHIFTS = (1, 2, 3, 5, 8, 13, 21, 34, 55, 66, 89, 101)
SOURCE = r"""
extern "C" __global__ void walk(const unsigned* __restrict__ next, int lines, int shift,
                                unsigned* lat, unsigned* smid_out, unsigned long long* span) {
    __shared__ volatile unsigned sink[32];
    if (threadIdx.x != 0) return;
    unsigned sm;
    unsigned long long g0, g1;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    smid_out[blockIdx.x] = sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    long long c0 = clock64();
    const unsigned* base = next + (size_t)((blockIdx.x + shift) % gridDim.x) * lines * 32;
    unsigned p = 0;
    long long t0 = clock64();
    for (int i = 0; i < lines; ++i) {
        unsigned v = __ldcg(base + (size_t)p * 32);   // L2, not L1
        sink[i & 31] = v;  // the store needs the value: the clock below is read after it arrives
        p = v;
        long long t1 = clock64();
        lat[(size_t)blockIdx.x * lines + i] = (unsigned)(t1 - t0);
        t0 = t1;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    span[2 * blockIdx.x] = g1 - g0;                              // ns
    span[2 * blockIdx.x + 1] = (unsigned long long)(clock64() - c0);  // SM clocks
}
"""


STREAM_KIB = 192  # per SM region of the bandwidth mode
STREAM_SOURCE = r"""
extern "C" __global__ void stream(const uint4* __restrict__ buf, int region_u4, int shift,
                                  unsigned* smid_out, unsigned long long* span, unsigned* sink) {
    // every thread of one block per SM streams its share of one region, four 16-B loads in
    // flight per thread per round; the block's time from the first load to the last value
    const uint4* base = buf + (size_t)((blockIdx.x + shift) % gridDim.x) * region_u4;
    unsigned acc = 0;
    __syncthreads();
    long long c0 = clock64();
    unsigned long long g0, g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    for (int i = threadIdx.x; i < region_u4; i += 4 * blockDim.x) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            int j = i + u * blockDim.x;
            v[u] = j < region_u4 ? __ldcg(base + j) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // the loads must land before the barrier
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        smid_out[blockIdx.x] = sm;
        span[2 * blockIdx.x] = g1 - g0;
        span[2 * blockIdx.x + 1] = (unsigned long long)(clock64() - c0);
    }
}
"""


def chains(regions: int, rng) -> np.ndarray:
    """Word 0 of each line: the index of the next line of a random cycle through the region."""
    buf = np.zeros((regions, LINES, WORDS_PER_LINE), np.uint32)
    for r in range(regions):
        order = rng.permutation(LINES)
        buf[r, order, 0] = np.roll(order, -1)
    return buf.reshape(-1)


def run(dump: Path, repeats: int = 3) -> None:
    import cupy
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    kernel = cupy.RawKernel(SOURCE, "walk")
    rng = np.random.default_rng(11)
    nxt = cupy.asarray(chains(sms, rng))
    flush = cupy.random.default_rng(3).integers(0, 2**32, size=512 << 18, dtype=cupy.uint32)
    out = {}

    smem = 120 * 1024  # dynamic shared memory per block: no two blocks share an SM
    kernel.max_dynamic_shared_size_bytes = smem

    def walk(shift):
        lat = cupy.zeros((sms, LINES), cupy.uint32)
        smid = cupy.zeros(sms, cupy.uint32)
        span = cupy.zeros(2 * sms, cupy.uint64)
        kernel((sms,), (32,), (nxt, np.int32(LINES), np.int32(shift), lat, smid, span), shared_mem=smem)
        return lat.get(), smid.get(), span.get().reshape(sms, 2)

    for rep in range(repeats):
        flush.sum()
        out[f"r{rep} own miss"] = walk(0)
        out[f"r{rep} own again"] = walk(0)
        for shift in SHIFTS:
            flush.sum()
            out[f"r{rep} s{shift} miss"] = walk(0)
            out[f"r{rep} s{shift} other"] = walk(shift)
    np.savez_compressed(dump, **{f"{k} lat": v[0] for k, v in out.items()},
                        **{f"{k} sm": v[1] for k, v in out.items()},
                        **{f"{k} span": v[2] for k, v in out.items()}, sms=sms)
    print(f"wrote {dump}: {len(out)} walks of {sms} blocks x {LINES} lines")


def run_bandwidth(dump: Path, repeats: int = 3) -> None:
    """All SMs stream at once (one block of 1024 threads each): own region from DRAM
    ("dram"), own region again ("own"), a region another SM brought in ("other", shift d)."""
    import cupy
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    kernel = cupy.RawKernel(STREAM_SOURCE, "stream")
    smem = 120 * 1024  # one block per SM
    kernel.max_dynamic_shared_size_bytes = smem
    region_u4 = STREAM_KIB * 1024 // 16
    buf = cupy.random.default_rng(5).integers(0, 2**32, size=sms * region_u4 * 4, dtype=cupy.uint32)
    flush = cupy.random.default_rng(3).integers(0, 2**32, size=512 << 18, dtype=cupy.uint32)
    sink = cupy.zeros(1, cupy.uint32)
    out = {}

    def stream(shift):
        smid = cupy.zeros(sms, cupy.uint32)
        span = cupy.zeros(2 * sms, cupy.uint64)
        kernel((sms,), (1024,), (buf, np.int32(region_u4), np.int32(shift), smid, span, sink), shared_mem=smem)
        return smid.get(), span.get().reshape(sms, 2)

    for rep in range(repeats):
        for shift in SHIFTS:
            flush.sum()
            out[f"r{rep} s{shift} dram"] = stream(0)
            out[f"r{rep} s{shift} other"] = stream(shift)
            flush.sum()
            stream(0)
            out[f"r{rep} s{shift} own"] = stream(0)
    np.savez_compressed(dump, **{f"{k} sm": v[0] for k, v in out.items()},
                        **{f"{k} span": v[1] for k, v in out.items()}, sms=sms, kib=STREAM_KIB)
    print(f"wrote {dump}: {len(out)} streams of {sms} blocks x {STREAM_KIB} KiB")


def summarize_bandwidth(dump: Path, side_by_sm) -> dict:
    """Median per-SM stream time (ns) by case; 'other' split by whether the SM that brought
    the region in sits on the reader's side (all near) or not (half the bytes far)."""
    z = np.load(dump)
    sms, kib = int(z["sms"]), int(z["kib"])
    side = np.asarray(side_by_sm)
    times = {"dram": [], "own": [], "other, same side": [], "other, far side": []}
    for k in z.files:
        if not k.endswith(" span"):
            continue
        pre, case = k[:-5].rsplit(" ", 1)
        ns = z[k][:, 0].astype(float)
        if case in ("dram", "own"):
            times[case] += ns.tolist()
            continue
        shift = int(pre.split(" s")[1])
        src = z[f"{pre} dram sm"]  # block b's SM brought region b in
        rd = z[f"{pre} other sm"]
        for b in range(sms):
            same = side[rd[b]] == side[src[(b + shift) % sms]]
            times["other, same side" if same else "other, far side"].append(ns[b])
    med = {c: float(np.median(v)) for c, v in times.items() if v}
    near = med["other, same side"]
    return {"ns": med, "bytes_per_ns_near": kib * 1024 / near,
            "far_byte_extra": 2 * (med["other, far side"] / near - 1),  # half the bytes are far
            "miss_byte_extra": med["dram"] / near - 1, "kib": kib}


def _two_means(x: np.ndarray) -> float:
    """The split between two clusters of latencies (1-D 2-means on log latency)."""
    lx = np.log(x.astype(float))
    lo, hi = np.percentile(lx, 10), np.percentile(lx, 90)
    for _ in range(50):
        cut = 0.5 * (lo + hi)
        lo, hi = lx[lx <= cut].mean(), lx[lx > cut].mean()
    return float(np.exp(0.5 * (lo + hi)))


def summarize(dump: Path) -> dict:
    z = np.load(dump)
    sms = int(z["sms"])
    walks = sorted({k.rsplit(" ", 1)[0] for k in z.files if k.endswith(" lat")})

    def lats(kind):
        return np.concatenate([z[f"{w} lat"][:, 8:].ravel() for w in walks if w.endswith(kind)])
    other = lats("other")
    cut = _two_means(other)
    spans = np.concatenate([z[f"{w} span"] for w in walks])
    ghz = float(np.median(spans[:, 1] / spans[:, 0]))
    res = {"ghz": ghz, "cut_clk": cut,
           "miss_clk": float(np.median(lats("miss"))), "own_again_clk": float(np.median(lats("again"))),
           "near_clk": float(np.median(other[other <= cut])), "far_clk": float(np.median(other[other > cut])),
           "slow_share_other": float(np.mean(other > cut))}
    slow = np.full((sms, sms), np.nan)  # [reader SM, SM that brought the lines in] -> share of slow loads
    for w in walks:
        if not w.endswith("other"):
            continue
        pre = w.rsplit(" ", 1)[0]
        shift = int(pre.split(" s")[1])
        src_sm = z[f"{pre} miss sm"]  # block b's SM brought region b in
        lat, sm = z[f"{w} lat"], z[f"{w} sm"]
        for b in range(sms):
            slow[sm[b], src_sm[(b + shift) % sms]] = np.mean(lat[b, 8:] > cut)
    res.update(pair_slow=slow, sms=sms)
    return res


def sides(slow: np.ndarray) -> np.ndarray:
    """Two-colour the SMs: the sign of the leading eigenvector of the centred 'same side'
    similarity (1 - slow fraction) over the observed pairs."""
    sim = 1.0 - np.where(np.isnan(slow), np.nanmean(slow), slow)
    sim = 0.5 * (sim + sim.T)
    sim -= sim.mean()
    w, v = np.linalg.eigh(sim)
    return (v[:, -1] > 0).astype(int)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, help="run on the GPU and write the walks here (.npz)")
    ap.add_argument("--summarize", type=Path, help="read a dump and print near/far/miss costs and the sides")
    ap.add_argument("--bandwidth", type=Path, metavar="FILE.npz",
                    help="run the streaming mode on the GPU (with --dump) or summarize it (without)")
    ap.add_argument("--write", action="store_true", help="with --summarize: write the sides and the far-hit "
                                                         "cost into sim/profiles/h200-sxm.json and l2_sides.csv")
    args = ap.parse_args(argv)
    if args.dump:
        run(args.dump)
        if args.bandwidth:
            run_bandwidth(args.bandwidth)
    if args.bandwidth and args.bandwidth.exists():
        bw = summarize_bandwidth(args.bandwidth, load_profile("h200-sxm").l2_side_by_sm)
        print(f"streams of {bw['kib']} KiB per SM, all SMs at once, median ns: "
              + ", ".join(f"{c} {v:.0f}" for c, v in bw["ns"].items())
              + f"; near {bw['bytes_per_ns_near']:.0f} B/ns per SM; a far byte costs "
                f"{bw['far_byte_extra']:+.2f}, a DRAM byte {bw['miss_byte_extra']:+.2f} x a near byte's time extra")
    if args.summarize:
        res = summarize(args.summarize)
        ghz = res["ghz"]
        print(f"SM clock in the walks {ghz:.3f} GHz; median latency per dependent load (clk / ns): "
              + ", ".join(f"{k[:-4]} {res[k]:.0f} / {res[k] / ghz:.0f}"
                          for k in ("miss_clk", "own_again_clk", "near_clk", "far_clk"))
              + f"; {100 * res['slow_share_other']:.0f}% of loads of lines another SM brought in are slow "
                f"(> {res['cut_clk']:.0f} clk)")
        slow = res["pair_slow"]
        vals = slow[~np.isnan(slow)]
        print("fraction of slow loads per (reader SM, SM that brought the lines in) pair: histogram",
              np.histogram(vals, bins=10, range=(0, 1))[0].tolist())
        side = sides(slow)
        print("side of each SM:", "".join(map(str, side)))
        same = [slow[i, j] for i in range(len(side)) for j in range(len(side))
                if not np.isnan(slow[i, j]) and side[i] == side[j]]
        diff = [slow[i, j] for i in range(len(side)) for j in range(len(side))
                if not np.isnan(slow[i, j]) and side[i] != side[j]]
        print(f"slow fraction: same side {np.mean(same):.3f} ({len(same)} pairs), other side "
              f"{np.mean(diff):.3f} ({len(diff)} pairs); sides of {np.bincount(side).tolist()} SMs")
        if args.write:
            write(args.summarize, res, side)


def write(dump: Path, res: dict, side: np.ndarray) -> None:
    ghz = res["ghz"]
    extra = round((res["far_clk"] - res["near_clk"]) / ghz, 1)
    rel = dump.resolve().relative_to(REPO)
    prov = (f"[measured] python -m experiments.research.l2_sides --summarize {rel} --write (NVIDIA H200, driver "
            f"580.159.04): dependent loads of lines another SM brought into L2, one block per SM, at "
            f"{ghz:.3f} GHz: near {res['near_clk']:.0f} clk, far {res['far_clk']:.0f} clk, DRAM miss "
            f"{res['miss_clk']:.0f} clk; sides = two-colouring of the (reader, SM that brought the lines in) "
            f"pairs by their share of far loads (same side ~0, other side ~0.5)")
    path = write_profile_parameters("h200-sxm", {"l2_side_by_sm": [int(x) for x in side], "l2_far_hit_extra_ns": extra},
                                    {"l2_side_by_sm": prov, "l2_far_hit_extra_ns": prov + f"; far - near = {extra} ns"})
    out = results_dir() / "l2_sides.csv"
    with out.open("w") as f:
        f.write(f"# {prov}; far - near = {extra} ns\nsm,side\n")
        f.writelines(f"{i},{int(x)}\n" for i, x in enumerate(side))
    print(f"wrote {path} and {out}")


if __name__ == "__main__":
    main()
