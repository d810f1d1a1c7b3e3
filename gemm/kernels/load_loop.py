"""Microbenchmark: the V2 main loop without its WGMMAs.

Everything of the ring's loop that feeds the tensor cores stays: the prefill,
one thread waiting on the stage's mbarrier, the block-wide sync, the refill of
the stage with K tile iter + stages, the second sync. The WGMMAs (and their
wait_group) are left out, so each iteration costs what the loads, the waits and
the syncs cost at the schedule's residency. With stages=1 it is V1's loop
(load, wait, sync, sync). The complement of mma_loop.py; the output is zeros.
"""
from numba import cuda, uint8

from .. import ptx
from .tiles import kernel_parts


def build_load_loop_kernel(config):
    BK, STAGES = config.block_k, config.stages
    FULL = config.barrier_offset
    setup, probe_start, probe_finish, load_k_tile, mma_k_tile, epilogue, zeros = kernel_parts(config)

    def load_loop_kernel(tmap_a, tmap_b, c, ldc, m, n, k, pair_ok, probe):
        probe_start(probe)
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base, off_m, off_n = setup(smem, tmap_a, tmap_b, m, n)
        tid = cuda.threadIdx.x
        num_iters = (k + BK - 1) // BK
        if tid == 0:
            for stage in range(min(num_iters, STAGES)):
                load_k_tile(base, stage, stage, off_m, off_n, tmap_a, tmap_b)
        phases = 0
        for it in range(num_iters):
            stage = it % STAGES
            if tid == 0:
                ptx.mbarrier_wait(base + FULL + 8 * stage, (phases >> stage) & 1)
            cuda.syncthreads()
            phases ^= 1 << stage
            preload = it + STAGES
            if preload < num_iters and tid == 0:
                load_k_tile(base, preload % STAGES, preload, off_m, off_n, tmap_a, tmap_b)
            cuda.syncthreads()
        epilogue(zeros(), c, ldc, m, n, off_m, off_n, pair_ok)
        probe_finish(probe)

    return load_loop_kernel
