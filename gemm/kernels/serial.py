"""V1, serial: one K tile at a time.

Each iteration one thread asks TMA for the A and B tiles of this K step and waits
on the single mbarrier until they land; a block-wide sync publishes that to all
128 threads; the warpgroup runs the WGMMAs and waits for them; a second sync
keeps anyone from overwriting the tile while it is still being read. Load and
compute never overlap inside a CTA: only other CTAs on the SM fill the gaps.

Kernel arguments (all scalars, so that the launch is cheap): the device
addresses of A's and B's CUtensorMap, C's address and row stride (elements),
M, N, K, whether C's column pairs are 4-byte aligned, and where a clock probe
writes (unused unless the config asks for one).
"""
from numba import cuda, uint8

from .. import ptx
from .tiles import kernel_parts


def build_serial_kernel(config):
    BK = config.block_k
    FULL = config.barrier_offset
    setup, probe_start, probe_finish, load_k_tile, mma_k_tile, epilogue, zeros = kernel_parts(config)

    def serial_kernel(tmap_a, tmap_b, tmap_c, c, ldc, m, n, k, pair_ok, probe, workspace, batch, flags):
        probe_start(probe)
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base, off_m, off_n = setup(smem, tmap_a, tmap_b, m, n)
        tid = cuda.threadIdx.x

        acc = zeros()
        phase = 0
        num_iters = (k + BK - 1) // BK
        for it in range(num_iters):
            # load, and wait for it
            if tid == 0:
                load_k_tile(base, 0, it, off_m, off_n, tmap_a, tmap_b, 0, k)
                ptx.mbarrier_wait(base + FULL, phase)
            phase ^= 1
            cuda.syncthreads()
            # compute, and wait for it
            ptx.wgmma_fence()
            acc = mma_k_tile(acc, base, 0, 1 if it > 0 else 0, 0)
            ptx.wgmma_commit_group()
            ptx.wgmma_wait_group(0)
            cuda.syncthreads()

        epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok)
        probe_finish(probe)

    serial_kernel.__name__ = config.name
    return serial_kernel
