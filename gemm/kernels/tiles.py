"""Pieces every kernel family shares: the block's setup (ring address, tile
corner, mbarriers), loading one K tile with TMA, the WGMMAs over one K tile, the
epilogue, and the optional clock probe. Each is made for one KernelConfig; the
constants it closes over are compile-time constants in the kernel."""
from numba import cuda, uint32, uint64
from numba.cuda.extending import register_jitable

from .. import ptx
from ..smem_layout import (ELEMENT_BYTES, PACKED_BOX_BYTES, PACKED_BOX_ELEMS, PACKED_BOX_ROWS, PACKED_K_STEP,
                           PACKED_SWIZZLE, packed_gaps, packed_row_tile_bytes)


def _make_operand_loader(layout, region_offset, packed=False):
    """`load(smem_base, stage, k0, mn0, tmap, full, rank, k)`: the TMA boxes of one operand's
    K tile (A: mn0 = off_m; B: mn0 = off_n) into its ring slot `stage`. An operand shared by
    a cluster (layout.parts > 1) is loaded 1/parts by each CTA (the part of its `rank` in the
    cluster) and multicast into every CTA of the cluster; any other operand is loaded whole.
    A `packed` operand (gemm.smem_layout's packed weights; `tmap` is then the buffer's address
    and `k` its depth) is copied by plain bulk copies instead."""
    if packed:
        return _make_packed_loader(layout, region_offset)
    TILE, BOXES, BOX_BYTES, STEP = layout.tile_bytes, layout.boxes, layout.box_bytes, layout.row_elems
    K_MAJOR = layout.major == "k"
    PARTS = layout.parts
    MULTICAST = PARTS > 1
    MASK = (1 << PARTS) - 1
    PART_ROWS = layout.mn // PARTS                 # K-major: a part is a slab of rows
    PART_BYTES = PART_ROWS * layout.width
    PART_BOXES = BOXES // PARTS if not K_MAJOR else BOXES   # MN-major: a part is whole boxes
    SLABS = layout.row_slabs                       # K-major: a part's rows in loads of <= 256
    SLAB_ROWS = PART_ROWS // SLABS
    SLAB_BYTES = SLAB_ROWS * layout.width

    @register_jitable(inline="always")
    def copy(dst, tmap, inner, outer, full):
        if MULTICAST:
            ptx.tma_load_2d_multicast(dst, tmap, inner, outer, full, MASK)
        else:
            ptx.tma_load_2d(dst, tmap, inner, outer, full)

    @register_jitable(inline="always")
    def load(smem_base, stage, k0, mn0, tmap, full, rank, k):
        part = rank if MULTICAST else 0   # an operand the CTA loads whole ignores its rank
        tile = smem_base + region_offset + stage * TILE
        for j in range(PART_BOXES):
            if K_MAJOR:    # the tensor map is [MN rows, K columns]: boxes step along K
                for slab in range(SLABS):
                    copy(tile + j * BOX_BYTES + part * PART_BYTES + slab * SLAB_BYTES, tmap, k0 + j * STEP,
                         mn0 + part * PART_ROWS + slab * SLAB_ROWS, full)
            else:          # [K rows, MN columns]: boxes step along MN
                i = part * PART_BOXES + j
                copy(tile + i * BOX_BYTES, tmap, mn0 + i * STEP, k0, full)
    return load


def _make_packed_loader(layout, region_offset):
    """The loader of a packed operand (see _make_operand_loader): each box of the K tile is the
    one stored at (row box, K box) of the buffer, already in its shared-memory image, so each
    lands by a bulk copy where the TMA box would have put it (rows g x 64 on of K box j). A
    64-row tile's K tile is one run in the buffer and in shared memory: one copy."""
    problems = packed_gaps(layout)
    assert not problems, problems
    TILE, BOX_BYTES = layout.tile_bytes, layout.box_bytes
    PARTS = layout.parts
    MULTICAST = PARTS > 1
    MASK = (1 << PARTS) - 1
    PART_ROWS = layout.mn // PARTS
    ROW_BOXES = PART_ROWS // PACKED_BOX_ROWS          # a part's row boxes
    K_BOXES = layout.boxes                            # the K tile's boxes
    ONE_RUN = BOX_BYTES == PACKED_BOX_BYTES           # one row box: the K tile is one run
    RUN = K_BOXES * PACKED_BOX_BYTES if ONE_RUN else PACKED_BOX_BYTES
    STEP_SHIFT = PACKED_K_STEP.bit_length() - 1
    TILE_BYTES_A_STEP = packed_row_tile_bytes(PACKED_K_STEP)     # a row tile's bytes per K step
    assert PACKED_K_STEP == 1 << STEP_SHIFT and PACKED_BOX_ELEMS == 64 and PACKED_BOX_ROWS == 64

    @register_jitable(inline="always")
    def copy(dst, src, full):
        if MULTICAST:
            ptx.bulk_load_multicast(dst, src, RUN, full, MASK)
        else:
            ptx.bulk_load(dst, src, RUN, full)

    @register_jitable(inline="always")
    def load(smem_base, stage, k0, mn0, buffer, full, rank, k):
        part = rank if MULTICAST else 0
        tile = smem_base + region_offset + stage * TILE
        row_tile_bytes = uint64(uint32(k + (PACKED_K_STEP - 1)) >> STEP_SHIFT) * TILE_BYTES_A_STEP
        first_row_box = uint32(mn0 + part * PART_ROWS) >> 6
        src = uint64(buffer) + uint64(first_row_box) * row_tile_bytes + uint64(uint32(k0) >> 6) * PACKED_BOX_BYTES
        dst = tile + part * PART_ROWS * PACKED_SWIZZLE
        if ONE_RUN:
            copy(dst, src, full)
        else:
            for j in range(K_BOXES):
                for g in range(ROW_BOXES):
                    copy(dst + j * BOX_BYTES + g * PACKED_BOX_BYTES,
                         src + g * row_tile_bytes + j * PACKED_BOX_BYTES, full)
    return load


def _make_tile_halves(config, first):
    """`(announce_first, second)`, each `(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b,
    rank, k)`: `announce_first` announces the whole K tile's bytes on the stage's mbarrier and issues
    operand `first`'s TMA boxes ("a" or "b"), `second` the other operand's, which complete the
    announced bytes (in a cluster, each CTA its part of a shared operand; `rank` is its rank)."""
    load_a = _make_operand_loader(config.a_layout, config.a_offset, config.packed == "a")
    load_b = _make_operand_loader(config.b_layout, config.b_offset, config.packed == "b")
    BARRIERS, BK, TX = config.barrier_offset, config.block_k, config.tx_bytes
    A_FIRST = first == "a"

    @register_jitable(inline="always")
    def load_one(a_side, smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k):
        full = uint32(smem_base + BARRIERS + 8 * stage)
        if a_side:
            load_a(smem_base, stage, k_tile * BK, off_m, tmap_a, full, rank, k)
        else:
            load_b(smem_base, stage, k_tile * BK, off_n, tmap_b, full, rank, k)

    @register_jitable(inline="always")
    def announce_first(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k):
        # the whole tile: the other operand, and partners' multicast parts, complete it
        ptx.mbarrier_arrive_expect_tx(uint32(smem_base + BARRIERS + 8 * stage), TX)
        load_one(A_FIRST, smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k)

    @register_jitable(inline="always")
    def second(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k):
        load_one(not A_FIRST, smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k)
    return announce_first, second


def make_tile_loader(config):
    """`load(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k)`: one thread
    announces the K tile's bytes on the stage's mbarrier and issues its TMA boxes, A's then B's
    (in a cluster, its part of a shared operand; `rank` is its rank in the cluster; `k` the
    product's depth, which a packed operand's addresses need)."""
    first, second = _make_tile_halves(config, "a")

    @register_jitable(inline="always")
    def load(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k):
        first(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k)
        second(smem_base, stage, k_tile, off_m, off_n, tmap_a, tmap_b, rank, k)
    return load


def make_preload(config):
    """`(early, late)` for a schedule with `preload` (a dependent launch's operand that the
    kernel ahead does not write): `early` announces the K tile and issues the preloaded
    operand's boxes, before the wait for the kernel ahead; `late`, after it, the other's."""
    return _make_tile_halves(config, config.schedule.preloaded_operand)


def make_tile_mma(config):
    """`acc = mma(acc, smem_base, stage, scale_d, warpgroup)`: the WGMMAs over the K
    tile in `stage` (not committed or waited: the kernel decides when). Consumer
    warpgroup w multiplies its own rows_per_warpgroup rows of A; B is shared."""
    a, b = config.a_layout, config.b_layout
    a_offsets, b_offsets = config.mma_offsets()
    k_tile = ptx.wgmma_k_tile(config.schedule.wgmma_n, config.dtype, a.transpose_bit, b.transpose_bit,
                              a_offsets, b_offsets, config.schedule.accumulate)
    A_BITS, B_BITS = a.descriptor_bits, b.descriptor_bits
    A_TILE, B_TILE = a.tile_bytes, b.tile_bytes
    A_BASE, B_BASE = config.a_offset, config.b_offset
    A_WARPGROUP = config.warpgroup_a_offset

    @register_jitable(inline="always")
    def mma(acc, smem_base, stage, scale_d, warpgroup):
        desc_a = ptx.smem_descriptor(smem_base + A_BASE + stage * A_TILE + warpgroup * A_WARPGROUP, A_BITS)
        desc_b = ptx.smem_descriptor(smem_base + B_BASE + stage * B_TILE, B_BITS)
        return k_tile(acc, desc_a, desc_b, scale_d)
    return mma


def make_epilogue(config):
    """`store(acc, c, ldc, m, n, off_m, off_n, pair_ok)`: cast the fp32 fragment to
    C's dtype and write it, skipping elements past M and N. Consumer warpgroup w
    (threads 128w..128w+127) holds rows w * rows_per_warpgroup on. With swap_ab the
    kernel's product is C^T (m and n are C's columns and rows): element (row, col) is
    written to C[col, row], C's rows ldc apart."""
    SWAP = config.schedule.swap_ab
    store = ptx.store_accumulators(config.m_blocks, config.block_n, config.dtype, config.schedule.accumulate,
                                   transposed=SWAP)
    ELEM, ROWS = ELEMENT_BYTES, config.schedule.rows_per_warpgroup

    @register_jitable(inline="always")
    def epilogue(acc, c, ldc, m, n, off_m, off_n, pair_ok):
        tid = cuda.threadIdx.x
        lane_row = ((tid % 128) // 32) * 16 + (tid % 32) // 4
        row = off_m + (tid // 128) * ROWS + lane_row
        col = off_n + 2 * (tid % 4)
        corner = c + ((col * ldc + row) if SWAP else (row * ldc + col)) * ELEM
        store(acc, corner, ldc, m - row, n - col, pair_ok)
    return epilogue


def make_unit_corner(config):
    """`units_m, units_n = unit_grid(m, n)` and `off_m, off_n = corner(unit, units_m, units_n,
    rank)`: the C tile of work unit `unit` for the CTA of cluster rank `rank`. A unit is a
    cluster's cluster_m x cluster_n adjacent tiles (one tile without clusters); the schedule's
    raster order maps unit indices onto the grid of units, the same mapping the model uses
    (sim.engines.tile_order): "row" walks along N first, "column" along M, "grouped" walks G
    unit rows column by column. The grid is its own step because a 32-bit division costs
    ~100 clocks of dependent latency (div.u32 by a constant too): a persistent CTA computes it
    once, not at every tile."""
    BM, BN = config.block_m, config.block_n
    RASTER, G = config.schedule.raster, config.schedule.raster_group
    CM, CN = config.schedule.cluster_m, config.schedule.cluster_n

    @register_jitable(inline="always")
    def unit_grid(m, n):
        return (ptx.div_u32(ptx.div_u32(m + (BM - 1), BM) + (CM - 1), CM),
                ptx.div_u32(ptx.div_u32(n + (BN - 1), BN) + (CN - 1), CN))

    @register_jitable(inline="always")
    def corner(unit, units_m, units_n, rank):
        if RASTER == "row":
            row = ptx.div_u32(unit, units_n)
            col = unit - row * units_n
        elif RASTER == "column":
            col = ptx.div_u32(unit, units_m)
            row = unit - col * units_m
        else:
            group = ptx.div_u32(unit, G * units_n)
            first = group * G
            size = min(G, units_m - first)
            local = unit - group * (G * units_n)
            row = first + ptx.rem_u32(local, size)
            col = ptx.div_u32(local, size)
        if CM > 1:
            row = row * CM + rank
        if CN > 1:
            col = col * CN + rank
        return row * BM, col * BN
    return unit_grid, corner


def make_tile_corner(config):
    """`off_m, off_n = corner(m, n)`: the C tile of this CTA, one tile per CTA in launch order."""
    unit_grid, unit_corner = make_unit_corner(config)

    @register_jitable(inline="always")
    def corner(m, n):
        units_m, units_n = unit_grid(m, n)
        return unit_corner(cuda.blockIdx.x, units_m, units_n, 0)
    return corner


def make_block_setup(config):
    """`base, off_m, off_n = setup(smem, tmap_a, tmap_b, m, n)`: the ring's 1024-byte
    aligned shared address and this CTA's tile corner; thread 0 acquires the tensor
    maps and sets up one full mbarrier (count 1) per stage, and for a warp-specialized
    kernel one empty mbarrier per stage (one arrival per consumer warp); then the
    block syncs."""
    BARRIERS, STAGES = config.barrier_offset, config.stages
    EMPTY, EMPTY_ARRIVALS = config.empty_barrier_offset, config.empty_arrivals
    corner = make_tile_corner(config)

    @register_jitable(inline="always")
    def setup(smem, tmap_a, tmap_b, m, n):
        base = (ptx.shared_base(smem) + 1023) & -1024
        if cuda.threadIdx.x == 0:
            ptx.fence_tensormap_acquire(tmap_a)
            ptx.fence_tensormap_acquire(tmap_b)
            for s in range(STAGES):
                ptx.mbarrier_init(base + BARRIERS + 8 * s, 1)
                if EMPTY >= 0:
                    ptx.mbarrier_init(base + EMPTY + 8 * s, EMPTY_ARRIVALS)
            ptx.fence_mbarrier_init()
        cuda.syncthreads()
        off_m, off_n = corner(m, n)
        return base, off_m, off_n
    return setup


PROBE_WORDS = 5  # per CTA: start clock64, start globaltimer, end clock64, end globaltimer, SM id


def make_clock_probe(config):
    """`start(probe)` and `finish(probe)`: when the config asks for a clock probe, thread
    0 of each CTA writes PROBE_WORDS u64 to probe[cta] (its start clock and time as it
    starts, so that nothing stays live in a register across the kernel); otherwise both
    fold away at compile time."""
    ENABLED = config.clock_probe
    WORD = 8

    @register_jitable(inline="always")
    def slot(probe):
        return probe + (cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x) * (PROBE_WORDS * WORD)

    @register_jitable(inline="always")
    def start(probe):
        if ENABLED and cuda.threadIdx.x == 0:
            at = slot(probe)
            ptx.st_global_u64(at, ptx.clock64())
            ptx.st_global_u64(at + WORD, ptx.globaltimer())

    @register_jitable(inline="always")
    def finish(probe):
        if ENABLED and cuda.threadIdx.x == 0:
            end_clk = ptx.clock64()
            end_ns = ptx.globaltimer()
            at = slot(probe)
            ptx.st_global_u64(at + 2 * WORD, end_clk)
            ptx.st_global_u64(at + 3 * WORD, end_ns)
            ptx.st_global_u64(at + 4 * WORD, uint64(ptx.smid()))
    return start, finish


def kernel_parts(config):
    """Every piece above, made for one config, in the order the kernels unpack them:
    setup, probe_start, probe_finish, load_k_tile, mma_k_tile, epilogue, zeros."""
    probe_start, probe_finish = make_clock_probe(config)
    zeros = ptx.accumulator_zeros(ptx.accumulator_count(config.m_blocks, config.block_n, config.schedule.accumulate),
                                  config.schedule.accumulate)
    return (make_block_setup(config), probe_start, probe_finish, make_tile_loader(config),
            make_tile_mma(config), make_epilogue(config), zeros)
