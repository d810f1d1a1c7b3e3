"""What a cluster of two costs beside its multicast: a remote mbarrier arrive's latency, and the
pair's cost by how many tiles each CTA walks.
python -m experiments.research.cluster_coupling --dump FILE.npz       (on the GPU)
python -m experiments.research.cluster_coupling --summarize FILE.npz [--csv F]   (no GPU)

A clustered GEMM couples its two CTAs at every stage: each CTA's consumers release a stage in
both CTAs (one arrive on the partner's "empty" mbarrier through the shared::cluster window), and
a producer refills only when both have. The model charges that remote arrive as
`cluster_arrive_clk` on the ring's round trip (sim.fast, sim.schedules), a value assumed so far.

1. **Ping-pong.** One thread of each CTA of a two-CTA cluster: rank 0 arrives on rank 1's
   mbarrier and waits on its own, rank 1 waits on its own and arrives on rank 0's, ROUNDS
   times; %clock64 around the loop on rank 0, so one arrive's latency to the partner's wait
   seeing it is the time over 2 ROUNDS. The same kernel with the two sides in two warps of
   one CTA (the arrive through the same shared::cluster address form, on its own CTA) is the
   local baseline. Launched as one cluster and as 66 (every SM busy), REPEATS times.
2. **Walks.** Kernels that differ only in the cluster (PAIRS: a plain tile and the same tile
   with cluster_m=2), on shapes whose tiles come out as exactly WALKS tiles for each of 132
   CTAs (an even number of tile rows, so no cluster partner idles and no wave is partial), at
   K 1024 and 4096; the call's device time back to back (experiments.timing.back_to_back_us)
   after the GPU rested REST_S, the points interleaved over REPEATS rounds, the median kept.
   What the clustered tile costs over the plain one, per call and per tile, against what the
   model (sim.fast_predict at the profile's early clock) gives for the same ratio.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import statistics
from pathlib import Path

import numpy as np

from experiments.research import check_and_time, cli

ROUNDS = 4096
PING_REPEATS = 7
SIDES = ("remote", "local")
CLUSTER_COUNTS = (1, 66)
THREADS = 64

# (plain, clustered, block_m, block_n)
PAIRS = (
    ("v7:block_n=160,stages=4", "v7:block_n=160,stages=4,cluster_m=2", 128, 160),
    ("v7", "v7:cluster_m=2", 128, 256),
)
WALKS = (1, 2, 4, 8)
KS = (1024, 4096)
REPEATS = 5
CALLS = 30
REST_S = 0.5
SMS = 132


def walk_shape(block_m: int, block_n: int, walk: int, k: int) -> tuple[int, int, int]:
    """(M, N, K) whose tiles are exactly `walk` per CTA of 132: 22 tile rows (44 from four tiles a
    CTA), the columns the rest; the tile rows even, so clusters of two along M pair up whole."""
    rows = 22 if walk <= 2 else 44
    cols = SMS * walk // rows
    assert rows * cols == SMS * walk and rows % 2 == 0
    return rows * block_m, cols * block_n, k


def points() -> list[tuple[str, int, int, int, str, int]]:
    """(spec, M, N, K, pair name, walk) of every kernel and shape timed."""
    out = []
    for plain, clustered, bm, bn in PAIRS:
        for walk in WALKS:
            for k in KS:
                m, n, _ = walk_shape(bm, bn, walk, k)
                out += [(spec, m, n, k, f"{bm}x{bn}", walk) for spec in (plain, clustered)]
    return out


def pingpong_ptx(side: str) -> str:
    """`pingpong(out, rounds)`: the two sides are rank 0 and 1's thread 0 ("remote") or warp 0 and
    warp 1's first lane in each CTA ("local"); side 0 writes its loop's clocks to out[cta]."""
    if side == "remote":
        pick = """
    mov.u32 s, rank;
    setp.eq.u32 active, tid, 0;
    xor.b32 other, rank, 1;
    mov.u32 own, bars;
    mapa.shared::cluster.u32 peer, own, other;"""
    else:
        pick = """
    shr.u32 s, tid, 5;
    and.b32 lane, tid, 31;
    setp.eq.u32 active, lane, 0;
    mov.u32 own, bars;
    mad.lo.u32 own, s, 8, own;
    mov.u32 peer, bars;
    xor.b32 other, s, 1;
    mad.lo.u32 peer, other, 8, peer;
    mapa.shared::cluster.u32 peer, peer, rank;"""
    return f""".version 8.0
.target sm_90a
.address_size 64

.visible .entry pingpong(.param .u64 out_param, .param .u32 rounds_param)
.reqntid {THREADS}, 1, 1
.reqnctapercluster 2, 1, 1
{{
    .shared .align 8 .b64 bars[2];
    .reg .pred p, done, active, first, leader;
    .reg .b32 tid, lane, rank, s, other, own, peer, r, rounds, parity, second, cta;
    .reg .b64 out, t0, t1, dt, address, offset;

    ld.param.u64 out, [out_param];
    ld.param.u32 rounds, [rounds_param];
    mov.u32 tid, %tid.x;
    mov.u32 rank, %cluster_ctarank;
    mov.u32 own, bars;
    setp.eq.u32 leader, tid, 0;
    @leader mbarrier.init.shared::cta.b64 [own], 1;
    add.u32 second, own, 8;
    @leader mbarrier.init.shared::cta.b64 [second], 1;
    @leader fence.mbarrier_init.release.cluster;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;{pick}
    setp.eq.u32 first, s, 0;
    @!active bra END;
    mov.u64 t0, %clock64;
    mov.u32 r, 0;
LOOP:
    setp.ge.u32 p, r, rounds;
    @p bra DONE;
    and.b32 parity, r, 1;
    @first mbarrier.arrive.shared::cluster.b64 _, [peer];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 done, [own], parity;
    @!done bra WAIT;
    @!first mbarrier.arrive.shared::cluster.b64 _, [peer];
    add.u32 r, r, 1;
    bra LOOP;
DONE:
    mov.u64 t1, %clock64;
    @!first bra END;
    sub.s64 dt, t1, t0;
    mov.u32 cta, %ctaid.x;
    mul.wide.u32 offset, cta, 8;
    add.s64 address, out, offset;
    st.global.u64 [address], dt;
END:
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    ret;
}}
"""


def pingpong_clocks(side: str, clusters: int) -> list[float]:
    """One launch: each measuring CTA's clocks per one-way arrive (its loop over 2 ROUNDS)."""
    import torch

    from gemm.compile import assemble
    from gemm.launch import Launch, load_function
    cubin, _ = assemble(pingpong_ptx(side))
    loaded = load_function(cubin, "pingpong", THREADS)
    out = torch.full((2 * clusters,), -1, dtype=torch.int64, device="cuda")
    Launch(loaded, (2 * clusters, 1, 1), torch.cuda.current_stream().cuda_stream, (out.data_ptr(), ROUNDS),
           arg_types=(ctypes.c_int64, ctypes.c_uint32))()
    torch.cuda.synchronize()
    got = out.tolist()
    measured = got[0::2] if side == "remote" else got   # remote: rank 0 of each cluster measures
    if any(v <= 0 for v in measured):
        raise RuntimeError(f"pingpong {side}: a measuring CTA wrote nothing ({measured[:4]}...)")
    return [v / (2 * ROUNDS) for v in measured]


def dump(path: Path) -> None:
    from experiments.measure import provenance
    ping = {f"{side}/{clusters}": [pingpong_clocks(side, clusters) for _ in range(PING_REPEATS)]
            for side in SIDES for clusters in CLUSTER_COUNTS}
    errors, times = check_and_time([p[:4] for p in points()], REPEATS, CALLS, REST_S)
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "pingpong_clk": ping,
                                                 "times_us": times, "rel_err": errors}))


def model_us(prof, spec: str, m: int, n: int, k: int) -> float:
    import sim
    from gemm.schedule import from_spec
    return sim.fast_predict(from_spec(spec), m, n, k, gpu=prof).ms * 1e3


def calibrate(ping: dict, rows: list[dict], prof) -> dict:
    """The profile's two cluster terms from what was measured: `cluster_arrive_clk`, the remote
    one-way arrive with every SM busy less the arrive and try_wait the model charges beside it;
    `cluster_launch_us`, the median over the walks of the clustered call's extra time beyond
    what the model gives it with that arrive and no launch term (each row's model_extra_us)."""
    arrive = round(ping[f"remote/{max(CLUSTER_COUNTS)}"] - prof.mbarrier_arrive_clk - prof.mbarrier_wait_clk)
    launch = statistics.median(r["clustered_us"] - r["plain_us"] - r["model_extra_us"] for r in rows)
    return {"cluster_arrive_clk": arrive, "cluster_launch_us": round(launch, 2)}


def summarize(path: Path, gpu: str = "h200-sxm") -> dict:
    from sim.hardware import load_profile
    rec = json.loads(str(np.load(path)["record"]))
    prof = load_profile(gpu)
    early = dataclasses.replace(prof, clock_ghz=prof.load_clock["float16"]["early_ghz"])
    ping = {key: statistics.median(v for launch in launches for v in launch)
            for key, launches in rec["pingpong_clk"].items()}
    arrive_only = dataclasses.replace(early, cluster_launch_us=0.0, cluster_arrive_clk=round(
        ping[f"remote/{max(CLUSTER_COUNTS)}"] - prof.mbarrier_arrive_clk - prof.mbarrier_wait_clk))
    rows = []
    for plain, clustered, bm, bn in PAIRS:
        for walk in WALKS:
            for k in KS:
                m, n, _ = walk_shape(bm, bn, walk, k)
                t = {s: statistics.median(rec["times_us"][f"{s}@{m}x{n}x{k}"]) for s in (plain, clustered)}
                p = {s: model_us(early, s, m, n, k) for s in (plain, clustered)}
                bare = {s: model_us(arrive_only, s, m, n, k) for s in (plain, clustered)}
                rows.append({"tile": f"{bm}x{bn}", "walk": walk, "m": m, "n": n, "k": k,
                             "plain_us": t[plain], "clustered_us": t[clustered],
                             "measured_ratio": t[clustered] / t[plain],
                             "extra_us_per_tile": (t[clustered] - t[plain]) / walk,
                             "model_extra_us": bare[clustered] - bare[plain],
                             "model_ratio": p[clustered] / p[plain]})
    return {"provenance": rec["provenance"], "pingpong_clk": ping, "rows": rows, "clock_ghz": early.clock_ghz,
            "profile": {"cluster_arrive_clk": prof.cluster_arrive_clk, "cluster_launch_us": prof.cluster_launch_us},
            "calibrated": calibrate(ping, rows, prof), "max_rel_err": max(rec["rel_err"].values())}


def print_summary(s: dict) -> None:
    print("one arrive to the waiting side seeing it, clocks (median over launches and measuring CTAs):")
    for key, v in s["pingpong_clk"].items():
        side, clusters = key.split("/")
        print(f"  {side:6s} {clusters:>3s} cluster(s): {v:7.1f}")
    prof = s["profile"]
    print(f"clustered / plain, the call back to back (model: sim.fast_predict at {s['clock_ghz']:.3f} GHz, "
          f"the profile's cluster_arrive_clk {prof['cluster_arrive_clk']}, cluster_launch_us "
          f"{prof['cluster_launch_us']}); max rel err {s['max_rel_err']:.1e}")
    print(f"  {'tile':8s} {'walk':>4s} {'K':>5s} {'plain us':>9s} {'clust us':>9s} {'ratio':>6s} "
          f"{'us/tile':>8s} {'model':>6s}")
    for r in s["rows"]:
        print(f"  {r['tile']:8s} {r['walk']:4d} {r['k']:5d} {r['plain_us']:9.1f} {r['clustered_us']:9.1f} "
              f"{r['measured_ratio']:6.3f} {r['extra_us_per_tile']:8.2f} {r['model_ratio']:6.3f}")
    print("calibrated: " + ", ".join(f"{k} {v}" for k, v in s["calibrated"].items()))


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    rows = cli.rounded(s["rows"])
    rows += [{"tile": f"pingpong {key}", "measured_ratio": round(v, 1)} for key, v in s["pingpong_clk"].items()]
    return rows, (f"clustered over plain by walk (tiles a CTA), the call back to back, medians of {REPEATS} "
                  f"rounds; pingpong rows: clocks a one-way arrive (measured_ratio column); "
                  f"python -m experiments.research.cluster_coupling --summarize {record}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
