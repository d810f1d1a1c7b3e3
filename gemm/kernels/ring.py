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
As in the tutorial the stage index is computed at run time (iter % stages). The
per-stage phases live either in one word (bit s is stage s's phase: the default)
or, with phase_storage="local", in a per-stage array indexed at run time, which
the compiler must place in local memory, as the tutorial's phase register tensor
ends up; V3 unrolls the loop by `stages` and keeps one phase instead. wait_group(0) plus the trailing sync is
what keeps a stage from being refilled while WGMMA still reads it.

The same loop, cut in two, is what the model's calibration measures (KernelConfig switches;
V1's loop is the one-stage ring):
  mma_loop_only   the ring is filled once and waited for; then every iteration keeps only
                  the syncs, the WGMMAs and wait_group(0), reading the same stages over and
                  over (no TMA, no mbarrier wait): the tensor side's ceiling. Not a GEMM.
  load_loop_only  everything that feeds the tensor cores stays (prefill, the one-thread
                  wait, both syncs, the refill), the WGMMAs go: what the loads, waits and
                  syncs cost at the schedule's residency. The output is zeros.
"""
from numba import cuda, uint8, uint32

from .. import ptx
from .tiles import kernel_parts


def build_ring_kernel(config):
    BK, STAGES = config.block_k, config.stages
    FULL = config.barrier_offset
    PHASES_IN_LOCAL_MEMORY = config.schedule.phase_storage == "local"
    LOADS, MMAS = not config.mma_loop_only, not config.load_loop_only
    setup, probe_start, probe_finish, load_k_tile, mma_k_tile, epilogue, zeros = kernel_parts(config)

    def ring_kernel(tmap_a, tmap_b, tmap_c, c, ldc, m, n, k, pair_ok, probe, workspace, batch, flags):
        probe_start(probe)
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base, off_m, off_n = setup(smem, tmap_a, tmap_b, m, n)
        tid = cuda.threadIdx.x

        num_iters = (k + BK - 1) // BK
        if tid == 0:
            if LOADS:  # prefill: guarded for a K loop shorter than the ring
                for stage in range(min(num_iters, STAGES)):
                    load_k_tile(base, stage, stage, off_m, off_n, tmap_a, tmap_b, 0, k)
            else:      # mma_loop_only: every stage once, and wait for it
                for stage in range(STAGES):
                    load_k_tile(base, stage, stage, off_m, off_n, tmap_a, tmap_b, 0, k)
                for stage in range(STAGES):
                    ptx.mbarrier_wait(base + FULL + 8 * stage, 0)

        acc = zeros()
        phases = 0                                   # bit s: stage s's phase
        phase_of = cuda.local.array(STAGES, uint32)  # or one word per stage, in local memory
        for s in range(STAGES):
            phase_of[s] = 0
        for it in range(num_iters):
            stage = it % STAGES
            if LOADS and tid == 0:
                phase = phase_of[stage] if PHASES_IN_LOCAL_MEMORY else (phases >> stage) & 1
                ptx.mbarrier_wait(base + FULL + 8 * stage, phase)
            cuda.syncthreads()

            if MMAS:
                ptx.wgmma_fence()
                acc = mma_k_tile(acc, base, stage, 1 if it > 0 else 0, 0)
                ptx.wgmma_commit_group()
                ptx.wgmma_wait_group(0)
            if LOADS:
                if PHASES_IN_LOCAL_MEMORY:
                    phase_of[stage] ^= 1
                else:
                    phases ^= 1 << stage

                preload = it + STAGES
                if preload < num_iters and tid == 0:
                    load_k_tile(base, preload % STAGES, preload, off_m, off_n, tmap_a, tmap_b, 0, k)
            cuda.syncthreads()

        epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok)
        probe_finish(probe)

    ring_kernel.__name__ = config.name
    return ring_kernel
