"""V2, a stage-parameterized shared-memory ring buffer.

Shared memory holds `stages` K tiles of A and B, each with its own mbarrier and
phase. Prefill issues the first min(stages, K tiles) loads without waiting. Then
each iteration
  waits on its stage's barrier (one thread) and syncs the block,
  runs the WGMMAs on that stage and waits for them (wait_group(0)),
  flips the stage's phase,
  refills the stage it just consumed with K tile iter + stages, if there is one,
  and syncs again, so that the loads of later stages are in flight before the
  next iteration begins.
As in the tutorial the stage index is computed at run time (iter % stages) and
the per-stage phases live in one runtime-indexed word (bit s is stage s's phase);
V3 unrolls the loop by `stages` instead. wait_group(0) plus the trailing sync is
what keeps a stage from being refilled while WGMMA still reads it.
"""
from numba import cuda, uint8

from .. import ptx
from .tiles import make_block_setup, make_epilogue, make_tile_loader, make_tile_mma


def build_ring_kernel(config):
    BN, BK, STAGES = config.block_n, config.block_k, config.stages
    FULL = config.barrier_offset
    setup = make_block_setup(config)
    load_k_tile = make_tile_loader(config)
    mma_k_tile = make_tile_mma(config)
    epilogue = make_epilogue(config)
    zeros = ptx.accumulator_zeros(config.m_blocks * BN // 2)

    def ring_kernel(tmap_a, tmap_b, c, ldc, m, n, k, pair_ok):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base, off_m, off_n = setup(smem, tmap_a, tmap_b)
        tid = cuda.threadIdx.x

        num_iters = (k + BK - 1) // BK
        # prefill: guarded for a K loop shorter than the ring
        if tid == 0:
            for stage in range(min(num_iters, STAGES)):
                load_k_tile(base, stage, stage, off_m, off_n, tmap_a, tmap_b)

        acc = zeros()
        phases = 0
        for it in range(num_iters):
            stage = it % STAGES
            if tid == 0:
                ptx.mbarrier_wait(base + FULL + 8 * stage, (phases >> stage) & 1)
            cuda.syncthreads()

            ptx.wgmma_fence()
            acc = mma_k_tile(acc, base, stage, 1 if it > 0 else 0)
            ptx.wgmma_commit_group()
            ptx.wgmma_wait_group(0)
            phases ^= 1 << stage

            preload = it + STAGES
            if preload < num_iters and tid == 0:
                load_k_tile(base, preload % STAGES, preload, off_m, off_n, tmap_a, tmap_b)
            cuda.syncthreads()

        epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok)

    ring_kernel.__name__ = config.name
    return ring_kernel
