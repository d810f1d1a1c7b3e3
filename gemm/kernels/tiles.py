"""Pieces every kernel family shares: loading one K tile with TMA, the WGMMAs
over one K tile, and the epilogue. Each is made for one KernelConfig; the
constants it closes over are compile-time constants in the kernel."""
from numba import cuda, uint32
from numba.cuda.extending import register_jitable

from .. import ptx
from ..smem_layout import ELEMENT_BYTES


def make_tile_loader(config):
    """`load(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b)`: one thread
    announces the K tile's bytes on the stage's mbarrier and issues its TMA boxes."""
    a, b = config.a_layout, config.b_layout
    A_TILE, B_TILE = a.tile_bytes, b.tile_bytes
    A_BASE, B_BASE, BARRIERS = config.a_offset, config.b_offset, config.barrier_offset
    A_BOXES, B_BOXES = a.boxes, b.boxes
    A_BOX_BYTES, B_BOX_BYTES = a.box_bytes, b.box_bytes
    A_STEP, B_STEP = a.row_elems, b.row_elems
    A_K_MAJOR, B_K_MAJOR = a.major == "k", b.major == "k"
    BK, TX = config.block_k, config.tx_bytes

    @register_jitable(inline="always")
    def load(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b):
        full = uint32(smem_base + BARRIERS + 8 * stage)
        ptx.mbarrier_arrive_expect_tx(full, TX)
        k0 = k_tile * BK
        for i in range(A_BOXES):
            dst = smem_base + A_BASE + stage * A_TILE + i * A_BOX_BYTES
            if A_K_MAJOR:
                ptx.tma_load_2d(dst, tmap_a, k0 + i * A_STEP, off_m, full)
            else:
                ptx.tma_load_2d(dst, tmap_a, off_m + i * A_STEP, k0, full)
        for i in range(B_BOXES):
            dst = smem_base + B_BASE + stage * B_TILE + i * B_BOX_BYTES
            if B_K_MAJOR:
                ptx.tma_load_2d(dst, tmap_b, k0 + i * B_STEP, off_n, full)
            else:
                ptx.tma_load_2d(dst, tmap_b, off_n + i * B_STEP, k0, full)
    return load


def make_tile_mma(config):
    """`acc = mma(acc, smem_base, stage, scale_d)`: the WGMMAs over the K tile in
    `stage` (not committed or waited: the kernel decides when)."""
    a, b = config.a_layout, config.b_layout
    a_offsets, b_offsets = config.mma_offsets()
    k_tile = ptx.wgmma_k_tile(config.block_n, config.dtype, a.transpose_bit, b.transpose_bit,
                              a_offsets, b_offsets)
    A_BITS, B_BITS = a.descriptor_bits, b.descriptor_bits
    A_TILE, B_TILE = a.tile_bytes, b.tile_bytes
    A_BASE, B_BASE = config.a_offset, config.b_offset

    @register_jitable(inline="always")
    def mma(acc, smem_base, stage, scale_d):
        desc_a = ptx.smem_descriptor(smem_base + A_BASE + stage * A_TILE, A_BITS)
        desc_b = ptx.smem_descriptor(smem_base + B_BASE + stage * B_TILE, B_BITS)
        return k_tile(acc, desc_a, desc_b, scale_d)
    return mma


def make_epilogue(config):
    """`store(acc, c, ldc, m, n, off_m, off_n, pair_ok)`: cast the fp32 fragment to
    C's dtype and write it, skipping elements past M and N."""
    store = ptx.store_accumulators(config.m_blocks, config.block_n, config.dtype)
    ELEM = ELEMENT_BYTES

    @register_jitable(inline="always")
    def epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok):
        tid = cuda.threadIdx.x
        row = off_m + (tid // 32) * 16 + (tid % 32) // 4
        col = off_n + 2 * (tid % 4)
        corner = c + (row * ldc + col) * ELEM
        store(acc, corner, ldc, m - row, n - col, pair_ok)
    return epilogue


def make_barrier_init(config):
    """`init(smem_base, tmap_a, tmap_b)`: thread 0 acquires the tensor maps and
    sets up one full mbarrier (count 1) per stage; the caller syncs afterwards."""
    BARRIERS, STAGES = config.barrier_offset, config.stages

    @register_jitable(inline="always")
    def init(smem_base, tmap_a, tmap_b):
        ptx.fence_tensormap_acquire(tmap_a)
        ptx.fence_tensormap_acquire(tmap_b)
        for s in range(STAGES):
            ptx.mbarrier_init(smem_base + BARRIERS + 8 * s, 1)
        ptx.fence_mbarrier_init()
    return init


