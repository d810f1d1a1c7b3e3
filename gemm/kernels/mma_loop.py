"""Microbenchmark: the V1/V2 main loop without its loads.

The ring is filled once; then every iteration does what V1 and V2 do around
their WGMMAs (block-wide sync, wgmma fence, the K tile's WGMMAs, commit,
wait_group(0), a second sync), reading the same stages over and over. No TMA
traffic, no mbarrier waits: what is left is the tensor cores, the WGMMA
fill/drain around each wait_group(0) and the syncs, at the residency (CTAs per
SM) of the schedule's shared memory and registers. Its throughput per SM clock
is the ceiling the pipeline model's WGMMA parameters must reproduce.
The product it computes is A @ B with each loaded K tile reused: not a GEMM.
"""
from numba import cuda, uint8

from .. import ptx
from .tiles import kernel_parts


def build_mma_loop_kernel(config):
    BK, STAGES = config.block_k, config.stages
    FULL = config.barrier_offset
    setup, probe_start, probe_finish, load_k_tile, mma_k_tile, epilogue, zeros = kernel_parts(config)

    def mma_loop_kernel(tmap_a, tmap_b, c, ldc, m, n, k, pair_ok, probe):
        probe_start(probe)
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base, off_m, off_n = setup(smem, tmap_a, tmap_b, m, n)
        tid = cuda.threadIdx.x
        if tid == 0:
            for stage in range(STAGES):
                load_k_tile(base, stage, stage, off_m, off_n, tmap_a, tmap_b)
            for stage in range(STAGES):
                ptx.mbarrier_wait(base + FULL + 8 * stage, 0)
        acc = zeros()
        num_iters = (k + BK - 1) // BK
        for it in range(num_iters):
            stage = it % STAGES
            cuda.syncthreads()
            ptx.wgmma_fence()
            acc = mma_k_tile(acc, base, stage, 1 if it > 0 else 0, 0)
            ptx.wgmma_commit_group()
            ptx.wgmma_wait_group(0)
            cuda.syncthreads()
        epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok)
        probe_finish(probe)

    return mma_loop_kernel
