"""V3 and on: warp specialization. One warp loads, the warpgroups compute.

V2 made every thread do every job, so the 128 threads met at a block-wide sync
between loading and computing and the tensor cores waited for the slowest step.
Here the block is split by role:

  consumer warpgroups (threads 0 .. 128*W-1)   wait until a stage is full, run its
      WGMMAs, and hand the stage back by arriving on its "empty" mbarrier once
      wgmma.wait_group(N) says the WGMMAs that read it are done;
  one producer warp (the last warp)            one elected thread waits until a stage
      is empty, announces its bytes on the "full" mbarrier and issues the TMA loads.

The two sides talk only through the per-stage full / empty mbarriers: no
block-wide sync after setup. Each role keeps one (stage, phase) pair and flips the
phase when the stage index wraps (the tutorial's "single per-role phase scalar"):
no modulo, no per-stage phase array. The producer starts on phase 1, because a
freshly initialised mbarrier counts its "previous" phase as complete: every stage
starts empty.

Knobs read from the Schedule:
  consumer_warpgroups  W warpgroups split the tile's rows (V4: W=2 on 128 rows);
  wgmma_in_flight      N of wait_group(N): with N=0 (V3) each K tile's WGMMAs are
                       waited for before the next are issued; with N=1 (V5) the next
                       K tile's WGMMAs are issued first, so the tensor cores never
                       drain between K tiles, and a stage is released one K tile late.
A stage is released by one arrival per consumer warp (lane 0, after that warp's
wait_group), so the empty barrier's count is 4*W.

The same kernel is its own pair of microbenchmarks (KernelConfig flags, not GEMMs):
mma_loop_only  the producer fills the ring once; the consumers then run their WGMMAs
               over those stages again and again, with no waits and no loads;
load_loop_only the consumers wait for each stage and hand it straight back: the
               producer's loads and the handshake, with no WGMMA (the output is zeros).
An experiment's knob, prefetch_limit=P < stages, keeps the producer at most P K tiles ahead
of the releases: the loads in flight of a P-deep ring in the shared memory of a deeper one.
"""
from numba import cuda, uint8

from .. import ptx
from .tiles import kernel_parts


def build_specialized_kernel(config):
    BK, STAGES = config.block_k, config.stages
    FULL, EMPTY = config.barrier_offset, config.empty_barrier_offset
    CONSUMER_THREADS = 128 * config.schedule.consumer_warpgroups
    LOADS, MMAS = not config.mma_loop_only, not config.load_loop_only
    IN_FLIGHT = config.schedule.wgmma_in_flight if MMAS else 0
    PREFETCH = config.prefetch_limit or STAGES
    LIMITED = PREFETCH < STAGES
    setup, probe_start, probe_finish, load_k_tile, mma_k_tile, epilogue, zeros = kernel_parts(config)

    def specialized_kernel(tmap_a, tmap_b, tmap_c, c, ldc, m, n, k, pair_ok, probe, workspace, batch, flags):
        probe_start(probe)
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base, off_m, off_n = setup(smem, tmap_a, tmap_b, m, n)
        tid = cuda.threadIdx.x
        num_iters = (k + BK - 1) // BK

        if tid >= CONSUMER_THREADS:
            # producer warp: one thread keeps the ring full
            if tid == CONSUMER_THREADS:
                stage, phase = 0, 1
                gate_stage, gate_phase = 0, 0   # LIMITED: the release of K tile it - PREFETCH
                for it in range(num_iters if LOADS else min(num_iters, STAGES)):
                    if not LIMITED:
                        ptx.mbarrier_wait(base + EMPTY + 8 * stage, phase)
                    elif it >= PREFETCH:
                        ptx.mbarrier_wait(base + EMPTY + 8 * gate_stage, gate_phase)
                        gate_stage += 1
                        if gate_stage == STAGES:
                            gate_stage, gate_phase = 0, gate_phase ^ 1
                    load_k_tile(base, stage, it, off_m, off_n, tmap_a, tmap_b, 0, k)
                    stage += 1
                    if stage == STAGES:
                        stage, phase = 0, phase ^ 1
            return

        # consumer warpgroups. (The persistent kernel's consumers run the same loop over a tile's
        # K tiles. Written once as a shared inlined helper, this kernel's copy made ptxas
        # serialize the WGMMAs of rings with wgmma_in_flight > 0 (C7515: the accumulators'
        # zero-trip copies landed inside the WGMMA pipeline), so each kernel keeps its own.)
        warpgroup = tid // 128
        releases = tid % 32 == 0           # lane 0 of each consumer warp
        acc = zeros()
        stage, phase = 0, 0
        done_stage = 0                     # the oldest stage still read by WGMMAs in flight
        for it in range(num_iters):
            if LOADS or it < STAGES:
                ptx.mbarrier_wait(base + FULL + 8 * stage, phase)
            if MMAS:
                ptx.wgmma_fence()
                acc = mma_k_tile(acc, base, stage, 1 if it > 0 else 0, warpgroup)
                ptx.wgmma_commit_group()
                ptx.wgmma_wait_group(IN_FLIGHT)
            if LOADS and it >= IN_FLIGHT:  # K tile it - IN_FLIGHT is done: free its stage
                if releases:
                    ptx.mbarrier_arrive(base + EMPTY + 8 * done_stage)
                done_stage += 1
                if done_stage == STAGES:
                    done_stage = 0
            stage += 1
            if stage == STAGES:
                stage, phase = 0, phase ^ 1
        ptx.wgmma_wait_group(0)            # nothing reuses the ring: no release needed

        epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok)
        probe_finish(probe)

    specialized_kernel.__name__ = config.name
    return specialized_kernel
