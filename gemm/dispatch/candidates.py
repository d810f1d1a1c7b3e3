"""The schedules the dispatcher chooses among: every one has a kernel and accumulates in fp32.

Named by their spec strings (gemm.schedule.from_spec), which is how tables, the autotune
cache and result files store them. Large tiles and clusters for large products, and stream-K
where their tiles leave the last wave part empty; 128x128 tiles and split-K (its partials
through a workspace or, split_cluster, through a cluster's shared memory) for grids that
large tiles leave mostly empty; 64-row tiles (one consumer
warpgroup) for decode-like products with few rows. The ring kernels are not offered: V2's
128x192 ring trails the fastest warp-specialized kernel by 5-20% on every shape whose time the
GPU decides, and comes near it only on host-paced shapes, where the order flips from run to run.
"""
from __future__ import annotations

from functools import lru_cache

from ..limits import INPUT_BYTES, SM_COUNT_H100_H200
from ..schedule import Schedule, from_spec

ONE_WARPGROUP = "consumer_warpgroups=1,producer_registers=0,consumer_registers=0"
# swap-AB: C^T = B^T A^T, so a product's few rows (M) become WGMMA's narrow N and its many
# columns fill 128-row tiles; C leaves transposed from registers. A narrow B' tile leaves room
# for a deep ring, which a memory-bound product needs to keep bytes in flight.
SWAP_AB = "swap_ab=true,epilogue=direct,producer_registers=0,consumer_registers=0"

# The L2 bytes that stay for lines several SMs read, on the smaller of the two parts: the H100
# SXM's l2_lru_bytes (sim/profiles/h100-sxm.json, the H200's measured capacity scaled by L2 size).
L2_SHARED_REUSE_BYTES = 30_233_941

# Tiles smaller than 128x128 for products whose 128x128 tiles leave SMs idle, measured back to
# back (CUPTI) on the H200: at 512^3 the 64x64 tile (64 CTAs) 4.7 us a call against 5.5 for
# 64x128; at 1024^3 64x128 with a WGMMA group kept in flight 6.6 us against 7.7 waiting for
# every K tile's; at 1000^3 (lines inside a sector) 128x64 in a cluster sharing A 9.2 us against
# 9.9 for the clustered 128x128. Offered only there (small_grid): on a full GPU they only add
# tiles, and for M <= 128 the swap-AB and 64-row tiles hold the rows.
# A small grid's K loop pays ~0.1 us a K tile beyond its WGMMAs (the full barrier's wait, the
# WGMMA group's), so each tile also comes 128 deep (two 64-wide boxes a stage, half the ring's
# stages): 512^3 64x64 4.34 us against 4.76, 1024^3 128x64 6.25 against 6.89, and 1024 x 1024 x
# 16384 split in two 53.8 against 56.4 (docs/research/notes.md item 170).
SMALL_GRID_SPECS = (
    f"v7:block_m=64,block_n=64,{ONE_WARPGROUP},stages=8",
    f"v7:block_m=64,block_n=128,{ONE_WARPGROUP},stages=8,wgmma_in_flight=1",
    "v7:block_n=64,stages=8",
    "v7:block_n=64,stages=8,cluster_n=2",
    f"v7:block_m=64,block_n=64,{ONE_WARPGROUP},block_k=128,stages=4",
    f"v7:block_m=64,block_n=128,{ONE_WARPGROUP},block_k=128,stages=4,wgmma_in_flight=1",
    "v7:block_n=64,block_k=128,stages=4",
    "v7:block_n=64,block_k=128,stages=4,cluster_n=2",
    "v7:block_n=128,block_k=128,stages=3,split_k=2",
)

# Tiles whose width is cut to the product's N so that they come out in fewer rounds of the 132
# SMs (DeepGEMM's and cuBLASLt's non-power-of-two block_n): at 2500 x 7000 x 3000 256x128 takes
# 550 tiles, 4.17 waves run as 5 rounds, where 256x192 takes 370 in 3; at 1536^3 128x144 makes
# 132 tiles, one whole wave, where 128x176 makes 108 of a larger tile. 256 rows in a cluster of 2 sharing A, or 128
# alone with a fourth stage. Their width moves the tile's own pace too, by the model's less surely
# than the rounds it saves, so the dispatcher takes one only where the model has it well ahead
# (gemm.dispatch.past_wave_fit_margin: WAVE_FIT_MARGIN, LONE_WAVE_FIT_MARGIN).
WAVE_FIT_SPECS = (
    "v7:block_m=256,block_n=144,cluster_n=2",
    "v7:block_m=256,block_n=160,cluster_n=2",
    "v7:block_m=256,block_n=192,cluster_n=2",
    "v7:block_n=144,stages=4",
)

SPECS = (
    "v7",                                                        # 128x256, persistent
    "v7:cluster_m=2",                                            # a cluster of 2 sharing B
    "v7:block_n=192,stages=4,cluster_m=2",
    "v7:block_n=176",                                            # 128x176: 126 tiles of a 22016-wide
                                                                 # product on 132 SMs, where 128x256 has 86
    "v7:block_m=256,block_n=128,cluster_n=2",                    # 256x128, a cluster sharing A
    "v7:block_n=128,stages=4,cluster_m=2",                       # 128x128
    "v7:block_n=160,stages=4,cluster_m=2",                       # 128x160: 512 tiles of a 1024 x 10240
                                                                 # product (3.88 waves), where 128x256
                                                                 # has 2.42 and 128x128 twice the tiles
    "v7:block_n=320",                                            # 128x320 (two WGMMA column blocks a
                                                                 # warpgroup, cuBLAS's mid-M tile): one or
                                                                 # two whole waves of a 768 x 13824 where
                                                                 # 128x160 has four (114.5 us against 129.7)
    "v7:stream_k=true",                                          # stream-K: the last waves evened out
    "v7:block_n=128,stages=4,stream_k=true",
    "v7:block_n=128,stages=4,split_k=2",
    "v7:block_n=128,stages=4,split_k=4",
    "v7:block_n=128,stages=6,split_k=2",                         # a deeper ring for K-heavy products
    "v7:block_n=64,stages=8,split_k=2",                          # 128x64: 128 units of a 128-row down-
                                                                 # projection, 8 stages in flight each
    f"v7:block_m=64,block_n=128,{ONE_WARPGROUP},stages=8",       # 64-row tiles
    f"v7:block_m=64,block_n=128,{ONE_WARPGROUP},stages=8,split_k=4",
    f"v7:block_m=64,block_n=256,{ONE_WARPGROUP},stages=4",
    f"v7:block_n=16,stages=10,{SWAP_AB}",                        # swap-AB: M <= 16
    f"v7:block_n=16,stages=10,split_k=4,{SWAP_AB}",
    f"v7:block_n=16,block_k=128,stages=5,split_k=4,{SWAP_AB}",  # two 64-wide boxes a stage in the
                                                                 # same ring bytes: each weight row is
                                                                 # read 256 contiguous bytes at a time
    f"v7:block_m=192,consumer_warpgroups=1,block_n=16,stages=8,{SWAP_AB}",   # cuBLAS's decode cut: 192 rows
                                                                 # of W a CTA, 115 CTAs of 22016, 8 stages
    f"v7:block_m=192,consumer_warpgroups=1,block_n=16,block_k=128,stages=4,{SWAP_AB}",
    f"v7:block_n=64,stages=8,{SWAP_AB}",                         # swap-AB: M <= 64
    # 64 rows of W a CTA: a product of 4-8k weight rows on 66-132 SMs, where 128-row tiles leave
    # half the SMs idle and split ones a second wave (32 x 6144 x 4096: 17.6 us back to back
    # against 23.1 for 128 rows, 25.1 split 2). A B' tile no wider than M (at block_n=64 its
    # zero-filled rows cost: 21.6 us), and a ring too large for two CTAs an SM (a dependent
    # launch's next CTAs would crowd onto SMs still running: 8192 rows at 10 stages of 64, 124 us
    # against 114)
    f"v7:block_m=64,consumer_warpgroups=1,block_n=32,block_k=128,stages=6,{SWAP_AB}",
    f"v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,{SWAP_AB}",
    f"v7:block_n=64,stages=8,split_k=4,{SWAP_AB}",
    # split-K inside a cluster: the slices add their partials through distributed shared memory
    # (no workspace round trip through L2, no global handshake). Clusters of 2: the H200 holds 66
    # of them (every SM) but only 30 of 4, whose 32-tile products then run a second wave
    "v7:block_n=128,stages=4,split_k=2,split_cluster=true",
    "v7:block_n=64,stages=8,split_k=2,split_cluster=true",
    f"v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,{SWAP_AB},split_cluster=true",
    f"v7:block_m=64,consumer_warpgroups=1,block_n=64,stages=8,split_k=2,{SWAP_AB},split_cluster=true",
    # ... with a lead: the cluster's first CTA takes 2 (4) K tiles more, so the other slice sends
    # its partial and hands over while the first still loads, and only the sum is left after the
    # loop (16 x 4096 x 11008: 25.75 us back to back against 26.12 without, 1 row 25.87 against
    # 26.13; 64 rows 27.34 against 27.57; 128 rows with a lead of 8, 29.79 against 29.64, gains
    # nothing)
    f"v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,{SWAP_AB},split_cluster=true,"
    "split_lead=2",
    f"v7:block_m=64,consumer_warpgroups=1,block_n=64,stages=8,split_k=2,{SWAP_AB},split_cluster=true,split_lead=4",
) + SMALL_GRID_SPECS + WAVE_FIT_SPECS
# The sweep measured these schedules under the names they had while v7 was the clustered
# kernel (cluster_m=2); the same fields, named as SPECS names them now.
RENAMED = {
    "v7": "v7:cluster_m=2",
    "v7:cluster_m=1": "v7",
    "v7:block_n=192,stages=4": "v7:block_n=192,stages=4,cluster_m=2",
    "v7:block_m=256,block_n=128,cluster_m=1,cluster_n=2": "v7:block_m=256,block_n=128,cluster_n=2",
    "v7:block_n=128,stages=4": "v7:block_n=128,stages=4,cluster_m=2",
    "v7:block_n=128,stages=4,cluster_m=1,split_k=2": "v7:block_n=128,stages=4,split_k=2",
    "v7:block_n=128,stages=4,cluster_m=1,split_k=4": "v7:block_n=128,stages=4,split_k=4",
    "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,cluster_m=1,stages=8":
        f"v7:block_m=64,block_n=128,{ONE_WARPGROUP},stages=8",
    "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,cluster_m=1,stages=8,"
    "split_k=4": f"v7:block_m=64,block_n=128,{ONE_WARPGROUP},stages=8,split_k=4",
    "v7:block_m=64,block_n=256,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,cluster_m=1,stages=4":
        f"v7:block_m=64,block_n=256,{ONE_WARPGROUP},stages=4",
}


@lru_cache(maxsize=1)
def all_candidates() -> tuple[Schedule, ...]:
    return tuple(from_spec(spec) for spec in SPECS)


def stream_k_keeps_reuse(s: Schedule, m: int, n: int, k: int, batch: int = 1) -> bool:
    """Whether stream-K's shared tiles keep the L2 reuse whole tiles have. Each CTA starts its
    run at a different K offset, so the tiles that share a panel (an A panel with two or more
    tiles along N, a B panel with two or more along M) read its K slices at different times;
    a slice stays in L2 for its later readers only if the L2 holds every shared panel at once.
    Where it does not, the shared tiles' reads turn into HBM traffic (at 1024 x 1024 x 16384 an
    LRU replay of the kernel's order misses 244 MB where whole tiles read 67)."""
    tm, tn = -(-m // s.block_m), -(-n // s.block_n)
    shared = (m * k if tn > 1 else 0) + (n * k if tm > 1 else 0)
    return shared * INPUT_BYTES * batch <= L2_SHARED_REUSE_BYTES


def whole_tiles(s: Schedule, m: int, n: int, batch: int = 1) -> int:
    """The tiles of a product under schedule `s`, unsplit (swap-AB: N's rows make its M)."""
    rows, cols = (n, m) if s.swap_ab else (m, n)
    return -(-rows // s.block_m) * -(-cols // s.block_n) * batch


def candidates(m: int, n: int, k: int, batch: int = 1, dtype: str = "float16",
               sm_count: int = SM_COUNT_H100_H200) -> list[Schedule]:
    """The candidates worth considering for one shape: split-K only where K holds at least
    4 K tiles per slice (less would spend more on the partials than it wins) and its whole
    tiles are fewer than the SMs (with a wave or more of them every SM has work, and the
    partials only add to it); stream-K only
    where its tiles are fewer than the SMs (with a full wave or more, sharing tiles by K
    iteration measured 3-27% slower than whole tiles: docs/research/notes.md items 84, 87)
    and the panels its tiles share fit in L2 (stream_k_keeps_reuse);
    for a batch, only the kernels that run batches (the producer-warpgroup ones, not
    swap-AB); swap-AB only where one tile of its narrow N holds all of M."""
    small_grid = m > 128 and -(-m // 128) * -(-n // 128) * batch < sm_count
    out = []
    for s in all_candidates():
        if s.name in SMALL_GRID_SPECS and not small_grid:
            continue
        if s.split_k > 1 and (k < 4 * s.split_k * s.block_k or whole_tiles(s, m, n, batch) >= sm_count):
            continue
        if s.stream_k and (whole_tiles(s, m, n, batch) >= sm_count
                           or not stream_k_keeps_reuse(s, m, n, k, batch)):
            continue
        if batch > 1 and (s.producer_warps != 4 or s.swap_ab):
            continue
        if s.swap_ab and m > s.block_n:
            continue
        out.append(s)
    return out
