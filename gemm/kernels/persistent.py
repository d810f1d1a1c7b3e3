"""V6 and V7: a producer warpgroup, consumer warpgroups, and a grid that stays.

V3-V5 split the block into a producer warp and consumer warpgroups, but every CTA still
computed one C tile and left: its prologue (barrier setup, tensor-map fetch, the first
loads' latency) and its epilogue (the stores of C) ran with the tensor cores idle. This
kernel changes four things, each a Schedule field:

  persistent          the grid is only as large as the GPU holds at once (one CTA per SM,
                      or per SM slot), and each CTA walks the work units in raster order.
                      The ring and its phases carry on from tile to tile, so the producer
                      loads the next tile's K slices while the consumers store this one.
  cluster_m/_n        two CTAs of a cluster take neighbouring tiles that share an operand
                      (cluster_m = 2: the same B tile). Each loads half of it and TMA
                      multicasts that half into both CTAs' shared memory, which halves the
                      L2 -> SM bytes of that operand. A stage may be refilled only when the
                      consumers of *both* CTAs are done with it, so every consumer warp
                      arrives on the empty barrier of every CTA of the cluster.
  producer/consumer_registers
                      the producer is a whole warpgroup (setmaxnreg acts on warpgroups), of
                      which one thread issues the loads; it gives its registers back
                      (setmaxnreg.dec) and the consumers take them (setmaxnreg.inc), so a
                      64x256 fp32 tile fits one consumer warpgroup without spills.
  epilogue="tma"      each consumer warpgroup converts its accumulators to 16 bits and
                      writes them with stmatrix into a swizzled C tile in shared memory,
                      then one thread TMA-stores it; TMA clips the edges itself. Before the
                      next tile overwrites that staging tile, the thread waits until the
                      store has read it (cp.async.bulk.wait_group.read).

  batch               (an argument, not a field) `batch` independent products in one launch:
                      a work unit is one tile of one product; each product has its own tensor
                      maps (128 bytes apart: map b of A at tmap_a + 128 b when A is batched,
                      one map for all when it is broadcast) and its own C (m x ldc apart).
                      Thread 0 acquires the maps of every product the CTA's walk reaches,
                      once, before the CTA's barrier: not before each tile's loads and store,
                      where the acquire would hold the producer and the consumers every tile.
  split_k             a work unit is one K slice of a tile: the CTA writes its fp32 partial
                      tile to a workspace, fences, counts itself in on the tile's counter and
                      waits until all split_k slices have. Then each slice's CTA sums its own
                      1/split_k of the tile, every slice's partial in slice order (the same
                      bits whoever sums), and stores it into C: the sum runs on all of the
                      tile's CTAs at once, not on the last one alone after the others. The
                      last CTA past the wait resets the counter. The wait needs every slice
                      resident, so the grid (resident clusters) must be at least split_k;
                      a tile's slices are consecutive units, so a CTA waits only on units
                      its peers reach before they wait themselves. More, smaller units fill
                      a GPU that the tiles alone would leave idle.
  split_cluster       split-K without the workspace: a tile's split_k slices are the CTAs of
                      one cluster (the cluster's unit is the tile, its rank the slice). Each
                      sends its partial's shares straight into the shared memory of the CTAs
                      that add them up (gemm.ptx.exchange), arrives on their "ready" barrier,
                      and, once its own has seen every slice, adds its share in slice order and
                      stores it into C; then it arrives on every CTA's "free" barrier, which a
                      slice waits on before it sends the next tile's partial. The exchange
                      costs a tile's fp32 bytes through the cluster's SM-to-SM network and one
                      round of barriers, where the workspace costs them through L2 twice and a
                      handshake through global atomics (~1 us).
  split_lead          (split_cluster) the cluster's first CTA takes split_lead K tiles besides
                      its even share of the rest, the others fewer. They finish first and send
                      it their whole partials while it still loads; it waits on its "ready"
                      barrier (by then long complete), adds them to its accumulators in slice
                      order and stores the tile, then frees their slots. The handshake (~0.8
                      us of cluster-scope release and acquire) leaves the tile's path; the
                      lead's K tiles cost little there, because a call bound by HBM ends when
                      the HBM has moved its bytes, whichever SMs pull them.
  defer_cluster_wait  (split_cluster) a CTA arrives on the cluster barrier once its barriers
                      exist and waits on it only before its first remote store (a slice's
                      partial): its loads start without waiting for its partners to start.
  dependent_launch    launched as a programmatic dependent (gemm/ptx/grid.py): the kernel may
                      be scheduled before the one ahead of it on the stream has finished; its
                      CTAs set up (barriers, tensor maps, registers), then the producer and the
                      consumers wait (griddepcontrol.wait) for that kernel to complete before
                      they load or write anything in global memory. Each CTA lets the next
                      kernel be scheduled once its own work is done, or, where the launch's
                      grid fills the GPU (the launch's flags, FLAG_EARLY_TRIGGER), once its
                      producer has issued its last load: the next kernel is then scheduled
                      while this one's consumers drain the ring, and its CTAs take SMs as this
                      one's leave. Back to back, the launch and the prologue hide under the
                      previous kernel's last CTAs. (A grid smaller than the GPU keeps the late
                      trigger: the next kernel's CTAs would take the SMs it leaves idle and wait
                      there, and that kernel, placed on whatever SMs were free, runs slower.)
  packed operand      (KernelConfig.packed, an operand's form rather than a Schedule field) the
                      weights stored by gemm.pack_weights in the image each K tile takes in
                      shared memory, box after box in the order a CTA reads them: the producer
                      copies a K tile of a 64-row tile with one plain bulk copy where the tensor
                      map's box costs the TMA unit a request per row; the kernel's argument is
                      the buffer's address, with no map to acquire.
  preload             (dependent_launch) an operand that the kernel ahead does not write, such
                      as a layer's weights: before its wait the producer announces the first
                      unit's first `stages` K tiles on their full barriers and issues that
                      operand's boxes, so the HBM streams them while the kernel ahead ends (its
                      last CTAs, their stores, the grid's completion: otherwise idle time back to
                      back); after the wait it issues the other operand's boxes of those tiles,
                      which complete the announced bytes, and goes on as before. Only the
                      caller can know that no kernel still running writes the operand
                      (gemm.matmul's `weights=`); the public Hopper GEMMs for inference do the
                      same with their weights.
  k_order             "serpentine": the producer loads a unit's K tiles forward on the CTA's
                      even units and backward on its odd ones (the consumers add them up in
                      whatever order they arrive). A CTA's units are one a wave, so each wave
                      starts at the K end where the wave before finished, whose last K slices
                      are still in L2: the panels the two waves share are read from HBM less
                      often. The sum's order differs between units, not between runs.
                      (Not with stream_k: its producer has no registers left for it.)
  stream_k            a grid whose tiles do not fill whole waves leaves SMs idle in the last
                      one. The last partial wave's tiles and stream_k_waves full waves before
                      them (all tiles, if fewer) are shared out by K iteration instead: CTA g
                      takes iterations [g S / G, (g+1) S / G) of those tiles' S in all, cut at
                      tile boundaries, then whole tiles. A piece that ends a tile (K tiles from
                      some point to the last) belongs to a tile another CTA finishes: its
                      accumulators go to the CTA's slot in the workspace, as they lie in
                      registers, and a flag is raised. The piece that starts a tile is the last
                      piece of its CTA's run: that CTA waits for the next CTAs' flags (they
                      wrote those pieces first thing) and adds their slots in CTA order, then
                      stores C. No CTA waits on one that is itself waiting.

The tutorial series' V6 (a 256x256 tile, fp16 accumulators, TMA store) is this kernel
without `persistent`: one tile per CTA, the C tile staged over the drained ring.

Barriers: full[s] (count 1: the producer's arrive.expect_tx of the whole tile's bytes;
multicast copies from the partner complete bytes on it too) and empty[s] (count: consumer
warps x cluster size). The producer starts on phase 1 (a fresh barrier's previous phase
counts as complete: every stage starts empty), the consumers on phase 0. With
wgmma_in_flight = 1 a stage is released one K tile late, as in V5.
"""
from numba import cuda, uint8, uint32
from numba.cuda.extending import register_jitable

from .. import ptx
from .config import FLAG_A_STEPS, FLAG_B_STEPS, FLAG_EARLY_TRIGGER
from .tiles import (make_clock_probe, make_epilogue, make_preload, make_tile_loader, make_tile_mma,
                    make_unit_corner)


def make_staged_epilogue(config):
    """`store(acc, smem_base, warpgroup, off_m, off_n, tmap_c)`: the consumer warpgroup's
    share of the C tile through shared memory and a TMA store (see the module docstring).
    Where the whole C tile does not fit beside the ring (Schedule.c_staging_passes), the
    share goes in two passes of half its columns through the same staging tile."""
    s = config.schedule
    layout = config.c_layout
    ROWS, BOXES, BOX_BYTES, BOX_COLS = layout.rows, layout.boxes, layout.box_bytes, layout.box[0]
    REGION = config.c_offset
    REGION_BYTES = layout.tile_bytes
    OVER_RING = not s.persistent          # staged over the ring: wait until every warpgroup is done
    ALL_CONSUMERS = 128 * s.consumer_warpgroups
    PASSES, PASS_COLS = s.c_staging_passes, s.c_staging_cols
    assert PASSES in (1, 2) and (PASSES == 1 or not OVER_RING), PASSES
    stages = [ptx.stage_accumulators(config.m_blocks, config.block_n, config.dtype, s.accumulate,
                                     layout.swizzle, BOX_BYTES, (p * PASS_COLS, PASS_COLS)) for p in range(PASSES)]
    stage_first, stage_second = stages[0], stages[-1]

    @register_jitable(inline="always")
    def store_pass(acc, region, warpgroup, row, col, tmap_c, second):
        t = cuda.threadIdx.x % 128
        lane = t % 32
        matrix = lane // 8                      # which of stmatrix's four 8x8 matrices this lane addresses
        lane_row = uint32(16 * (t // 32) + 8 * (matrix % 2) + lane % 8)
        lane_half = uint32(matrix // 2)
        leader = t == 0
        if OVER_RING:
            ptx.named_barrier_sync(15, ALL_CONSUMERS)
        elif leader:
            ptx.bulk_wait_group_read(0)         # the previous store (tile or pass) has read the region
        ptx.named_barrier_sync(1 + warpgroup, 128)
        if second:
            stage_second(acc, region, lane_row, lane_half)
        else:
            stage_first(acc, region, lane_row, lane_half)
        ptx.fence_proxy_async_shared()          # st.shared -> the TMA unit's reads
        ptx.named_barrier_sync(1 + warpgroup, 128)
        if leader:
            for b in range(BOXES):
                ptx.tma_store_2d(tmap_c, col + b * BOX_COLS, row, region + b * BOX_BYTES)
            ptx.bulk_commit_group()

    @register_jitable(inline="always")
    def store(acc, smem_base, warpgroup, off_m, off_n, tmap_c):
        region = uint32(smem_base + REGION + warpgroup * REGION_BYTES)
        row = off_m + warpgroup * ROWS
        store_pass(acc, region, warpgroup, row, off_n, tmap_c, False)
        if PASSES == 2:
            store_pass(acc, region, warpgroup, row, off_n + PASS_COLS, tmap_c, True)
    return store


@register_jitable(inline="always")
def partial_row(n):
    """Floats per row of a split-K partial plane (KernelConfig.partial_row)."""
    return (n + 3) // 4 * 4


def make_split_k_reduce(config):
    """`reduce(acc, workspace, counters, slice, tile, m, n, off_m, off_n, c, ldc)`:
    store this slice's fp32 partial, count in on the tile's counter, wait until every slice
    of the tile has, then sum this slice's share of the tile from every slice's partial, in
    slice order, into C (see the module docstring)."""
    s = config.schedule
    SPLIT = s.split_k
    THREADS = 128 * s.consumer_warpgroups
    ROWS = s.rows_per_warpgroup
    CHUNKS = config.block_m * config.block_n // 4          # 4-column chunks of a tile
    SHARE = -(-CHUNKS // SPLIT)                              # a slice's run of chunks
    SWAP = s.swap_ab
    store = ptx.store_accumulators(config.m_blocks, config.block_n, "float32")
    reduce_strip = ptx.reduce_strip(config.block_n, SPLIT, -(-SHARE // THREADS), THREADS, config.dtype, SWAP)

    @register_jitable(inline="always")
    def reduce(acc, workspace, counters, slice_, tile, m, n, off_m, off_n, c, ldc):
        tid = cuda.threadIdx.x
        lane_row = ((tid % 128) // 32) * 16 + (tid % 32) // 4
        row = off_m + (tid // 128) * ROWS + lane_row
        col = off_n + 2 * (tid % 4)
        ldw = partial_row(n)
        plane = m * ldw * 4
        store(acc, workspace + slice_ * plane + (row * ldw + col) * 4, ldw, m - row, n - col, uint32(1))
        ptx.fence_gpu()
        ptx.named_barrier_sync(14, THREADS)
        if tid == 0:
            counter = counters + tile * 4
            ptx.atomic_add_u32(counter, 1)
            while ptx.ld_acquire_u32(counter) < SPLIT:
                pass
            if ptx.atomic_add_u32(counter, 1) == 2 * SPLIT - 1:
                ptx.st_global_u32(counter, 0)  # every slice is past its wait: ready for the next launch
        ptx.named_barrier_sync(14, THREADS)
        ptx.fence_gpu()
        c_corner = c + ((off_n * ldc + off_m) if SWAP else (off_m * ldc + off_n)) * 2
        quad_ok = uint32(1 if (c | (ldc * 2)) % 8 == 0 else 0)
        first = slice_ * SHARE
        reduce_strip(first, min(first + SHARE, CHUNKS), workspace + (off_m * ldw + off_n) * 4, ldw, plane,
                     m - off_m, n - off_n, c_corner, ldc, quad_ok, tid)
    return reduce


def make_split_cluster_reduce(config):
    """`reduce(acc, smem_base, rank, reduced, m, n, off_m, off_n, c, ldc, pair_ok)`: split-K
    inside the cluster (see the module docstring); `reduced` counts the tiles this CTA has
    reduced before, which gives the barriers' phases."""
    s = config.schedule
    SPLIT = s.split_k
    THREADS = 128 * s.consumer_warpgroups
    ROWS = s.rows_per_warpgroup
    SWAP = s.swap_ab
    READY, EXCHANGE = config.split_barrier_offset, config.exchange_offset
    FREE = READY + 8
    send = ptx.send_partials(ptx.accumulator_count(config.m_blocks, config.block_n), THREADS, SPLIT)
    add_up = ptx.sum_partials(config.m_blocks, config.block_n, THREADS, SPLIT, config.dtype, SWAP)

    @register_jitable(inline="always")
    def reduce(acc, smem_base, rank, reduced, m, n, off_m, off_n, c, ldc, pair_ok):
        tid = cuda.threadIdx.x
        ready, free = uint32(smem_base + READY), uint32(smem_base + FREE)
        exchange = uint32(smem_base + EXCHANGE)
        if reduced > 0:                        # every slice has summed the last tile: the slots are free
            ptx.mbarrier_wait_cluster(free, (reduced - 1) & 1)
        send(acc, exchange, rank, uint32(tid))
        ptx.named_barrier_sync(14, THREADS)    # every thread's sends, before one thread releases them
        if tid == 0:
            for owner in range(SPLIT):
                ptx.mbarrier_arrive_release_cluster(ready, owner)
        ptx.mbarrier_wait_cluster(ready, reduced & 1)
        lane_row = ((tid % 128) // 32) * 16 + (tid % 32) // 4
        row = off_m + (tid // 128) * ROWS + lane_row
        col = off_n + 2 * (tid % 4)
        corner = c + ((col * ldc + row) if SWAP else (row * ldc + col)) * 2
        add_up(exchange, rank, uint32(tid), corner, ldc, m - row, n - col, pair_ok)
        ptx.named_barrier_sync(14, THREADS)    # every thread's reads of the slots, before the release
        if tid == 0:
            for owner in range(SPLIT):
                ptx.mbarrier_arrive_release_cluster(free, owner)
    return reduce


def make_split_lead_gather(config):
    """`acc = gather(acc, smem_base, rank, reduced)`: split-K inside the cluster with a lead (see
    the module docstring): a later slice sends its whole partial into the first CTA's slot
    rank - 1 and arrives on that CTA's "ready" barrier; the first CTA waits for every slice, adds
    the slots to its accumulators in slice order and frees them (it then stores `acc` as a whole
    tile). `reduced` counts the tiles this CTA has reduced before, which gives the phases."""
    s = config.schedule
    SPLIT = s.split_k
    THREADS = 128 * s.consumer_warpgroups
    COUNT = ptx.accumulator_count(config.m_blocks, config.block_n)
    SLOT = ptx.exchange.slot_bytes(COUNT // 2, 1, THREADS)   # one whole fp32 partial
    READY, EXCHANGE = config.split_barrier_offset, config.exchange_offset
    FREE = READY + 8
    send = ptx.send_partials(COUNT, THREADS, 1)
    add = ptx.add_partials(COUNT, THREADS, SPLIT - 1)

    @register_jitable(inline="always")
    def gather(acc, smem_base, rank, reduced):
        tid = cuda.threadIdx.x
        ready, free = uint32(smem_base + READY), uint32(smem_base + FREE)
        exchange = uint32(smem_base + EXCHANGE)
        if rank > 0:
            if reduced > 0:                    # the first CTA has added the last tile's slots
                ptx.mbarrier_wait_cluster(free, (reduced - 1) & 1)
            send(acc, uint32(exchange - SLOT), rank, uint32(tid))   # slot rank - 1
            ptx.named_barrier_sync(14, THREADS)
            if tid == 0:
                ptx.mbarrier_arrive_release_cluster(ready, 0)
        else:
            ptx.mbarrier_wait_cluster(ready, reduced & 1)
            acc = add(acc, exchange, uint32(tid))
            ptx.named_barrier_sync(14, THREADS)    # every thread's reads, before the slots are freed
            if tid == 0:
                for owner in range(1, SPLIT):
                    ptx.mbarrier_arrive_release_cluster(free, owner)
        return acc
    return gather


def make_stream_k(config):
    """`give(acc, slots, flags, cta)` and `acc = take(acc, slots, flags, cta, tile_end, ctas, shared)`:
    stream-K's partial tiles (see the module docstring)."""
    s = config.schedule
    THREADS = 128 * s.consumer_warpgroups
    COUNT = ptx.accumulator_count(config.m_blocks, config.block_n)
    SLOT = config.stream_k_slot_bytes
    store_slot = ptx.store_fragment_slot(COUNT, THREADS)
    add_slot = ptx.add_fragment_slot(COUNT, THREADS)

    @register_jitable(inline="always")
    def give(acc, slots, flags, cta):
        """This CTA's share of a tile it does not finish: its accumulators into its slot, then its flag."""
        tid = cuda.threadIdx.x
        store_slot(acc, slots + cta * SLOT, tid)
        ptx.fence_gpu()
        ptx.named_barrier_sync(14, THREADS)
        if tid == 0:
            ptx.atomic_add_u32(flags + cta * 4, 1)

    @register_jitable(inline="always")
    def take(acc, slots, flags, cta, tile_end, ctas, shared):
        """The shares of the tile this CTA finishes that the next CTAs computed (those whose
        run starts before the tile's end; a run may be empty when there are fewer K iterations
        than CTAs, and an empty run wrote nothing), added in CTA order."""
        tid = cuda.threadIdx.x
        peer = cta + 1
        start = ptx.div_u32(peer * shared, ctas)
        while peer < ctas and start < tile_end:
            end = ptx.div_u32((peer + 1) * shared, ctas)
            if end > start:
                if tid == 0:
                    flag = flags + peer * 4
                    while ptx.ld_acquire_u32(flag) == 0:
                        pass
                    ptx.st_global_u32(flag, 0)    # read once per launch: ready for the next
                ptx.named_barrier_sync(14, THREADS)
                ptx.fence_gpu()
                acc = add_slot(acc, slots + peer * SLOT, tid)
            peer += 1
            start = end
        return acc
    return give, take


def build_persistent_kernel(config):
    s = config.schedule
    BM, BN, BK, STAGES = config.block_m, config.block_n, config.block_k, config.stages
    CM, CN = s.cluster_m, s.cluster_n
    FULL, EMPTY = config.barrier_offset, config.empty_barrier_offset
    EMPTY_ARRIVALS = config.empty_arrivals
    CONSUMER_THREADS = 128 * s.consumer_warpgroups
    CLUSTER = s.cluster_size
    MULTICAST = s.multicast_size > 1          # a cluster sharing an operand (else its CTAs are K slices)
    SPLIT_CLUSTER = s.split_cluster
    SPLIT_BARRIERS = config.split_barrier_offset
    IN_FLIGHT = s.wgmma_in_flight
    SPLIT = s.split_k
    LEAD = s.split_lead
    DEFER_WAIT = s.defer_cluster_wait
    STREAM_K, STREAM_K_WAVES = s.stream_k, s.stream_k_waves
    SETMAXNREG = s.uses_setmaxnreg
    PRODUCER_REGS, CONSUMER_REGS = s.producer_registers, s.consumer_registers
    TMA_STORE = s.stores_via_tma
    DEPENDENT = s.dependent_launch
    SERPENTINE = s.k_order == "serpentine"
    SLOT_BYTES = config.stream_k_slot_bytes
    # The consumers work out their next unit inside the first K tile, between its WGMMAs' issue
    # and their wait. Only where a CTA walks many whole tiles: with a group kept in flight across
    # K tiles that code sits inside a WGMMA pipeline stage and ptxas serializes the WGMMAs
    # (C7515), and split-K's and stream-K's units carry more state than the registers beside a
    # 128x256 tile hold; those kernels work it out after the loop.
    LOOKAHEAD = IN_FLIGHT == 0 and SPLIT == 1 and not STREAM_K

    probe_start, probe_finish = make_clock_probe(config)
    load_k_tile, mma_k_tile = make_tile_loader(config), make_tile_mma(config)
    PRELOAD = s.preloaded_operand is not None
    # an operand packed for bulk copies (KernelConfig.packed) comes as its buffer's address, not a map
    PACKED_A, PACKED_B = config.packed == "a", config.packed == "b"
    preload_early, preload_late = make_preload(config) if PRELOAD else (None, None)
    unit_grid, corner = make_unit_corner(config)
    zeros = ptx.accumulator_zeros(ptx.accumulator_count(config.m_blocks, config.block_n, s.accumulate),
                                  s.accumulate)
    store_direct = make_epilogue(config)
    store_staged = make_staged_epilogue(config) if TMA_STORE else None
    split_k_reduce = make_split_k_reduce(config) if SPLIT > 1 and not SPLIT_CLUSTER else None
    split_cluster_reduce = make_split_cluster_reduce(config) if SPLIT_CLUSTER and not LEAD else None
    split_lead_gather = make_split_lead_gather(config) if SPLIT_CLUSTER and LEAD else None
    # split_cluster's barriers: with a lead, the first CTA's "ready" counts the other slices and
    # each other slice's "free" the first CTA; else every CTA's both count every slice
    READY_ARRIVALS, FREE_ARRIVALS = (SPLIT - 1, 1) if LEAD else (SPLIT, SPLIT)
    give, take = make_stream_k(config) if STREAM_K else (None, None)

    @register_jitable(inline="always")
    def corner_of(unit, m, n, units_m, units_n, rank):
        """A unit's corner. The grid of units stays in two registers where the lookahead needs
        it at every tile; elsewhere it is divided out again at each corner (kept live, it spills
        stream-K kernels whose MN-major operand's addressing already fills the registers)."""
        if LOOKAHEAD:
            return corner(unit, units_m, units_n, rank)
        grid_m, grid_n = unit_grid(m, n)
        return corner(unit, grid_m, grid_n, rank)

    @register_jitable(inline="always")
    def counters_offset(partials):
        """Where the counters (split-K) or flags (stream-K) start: past `partials` bytes of
        partials, rounded up to 256 (KernelConfig.workspace_regions)."""
        return (partials + 255) // 256 * 256

    @register_jitable(inline="always")
    def work(unit, tile_units, num_iters, rank):
        """(product, tile unit, K slice, first K tile, K tiles) of a work unit (with split_cluster,
        a whole tile, of which this CTA takes the slice of its cluster rank)."""
        if SPLIT_CLUSTER:
            product = ptx.div_u32(unit, tile_units)
            tile_unit = unit - product * tile_units
            slice_ = rank
        else:
            product = ptx.div_u32(unit, tile_units * SPLIT)
            rest = unit - product * (tile_units * SPLIT)
            tile_unit = rest // SPLIT
            slice_ = rest - tile_unit * SPLIT
        # even slices; with a lead, the first takes LEAD K tiles more (Schedule.k_slice)
        lead = min(LEAD, num_iters)
        rest = num_iters - lead
        first = 0 if slice_ == 0 else lead + (slice_ * rest) // SPLIT
        return product, tile_unit, slice_, first, lead + ((slice_ + 1) * rest) // SPLIT - first

    @register_jitable(inline="always")
    def shared_tiles(tiles, ctas):
        """Stream-K's shared tiles: the last partial wave's and STREAM_K_WAVES full waves before
        it (every tile when there are no more); none when the tiles fill whole waves. They come
        first, each CTA taking an even run of their K iterations; whole tiles follow."""
        if not STREAM_K:
            return uint32(0)
        waves = ptx.div_u32(tiles, ctas)
        if tiles == waves * ctas:
            return uint32(0)
        return uint32(tiles) if waves <= STREAM_K_WAVES else uint32(tiles - (waves - STREAM_K_WAVES) * ctas)

    @register_jitable(inline="always")
    def next_work(pos, end, unit, units, tile_units, num_iters, unit_step, rank):
        """The CTA's next piece of work: (found, product, tile unit, K slice, first K tile,
        K tiles, pos, unit). First its run [pos, end) of the shared tiles' K iterations, cut at
        tile boundaries; then whole work units, `unit` on."""
        if STREAM_K and pos < end:
            tile = ptx.div_u32(pos, num_iters)
            first = pos - tile * num_iters
            count = min(num_iters - first, end - pos)
            product = ptx.div_u32(tile, tile_units)
            return True, product, tile - product * tile_units, 0, first, count, pos + count, unit
        if unit < units:
            product, tile_unit, slice_, first, count = work(unit, tile_units, num_iters, rank)
            return True, product, tile_unit, slice_, first, count, pos, unit + unit_step
        return False, uint32(0), uint32(0), 0, 0, 0, pos, unit

    @register_jitable(inline="always")
    def release(smem_base, stage):
        """One arrival per consumer warp on the stage's empty barrier, in every CTA of a cluster that
        shares the operands by multicast (a split_cluster's CTAs each fill their own ring)."""
        if cuda.threadIdx.x % 32 == 0:
            bar = uint32(smem_base + EMPTY + 8 * stage)
            if MULTICAST:
                for rank in range(CLUSTER):
                    ptx.mbarrier_arrive_cluster(bar, rank)
            else:
                ptx.mbarrier_arrive(bar)

    def persistent_kernel(tmap_a, tmap_b, tmap_c, c, ldc, m, n, k, pair_ok, probe, workspace, batch, flags):
        probe_start(probe)
        smem = cuda.shared.array(0, uint8, alignment=1024)
        base = (ptx.shared_base(smem) + 1023) & -1024
        tid = cuda.threadIdx.x
        num_iters = (k + BK - 1) // BK
        units_m, units_n = unit_grid(m, n)
        tile_units = units_m * units_n
        product_units = tile_units * (1 if SPLIT_CLUSTER else SPLIT)
        units = product_units * batch
        a_map_step = 128 * (1 if flags & FLAG_A_STEPS else 0)   # the next product's A map, or the same
        b_map_step = 128 * (1 if flags & FLAG_B_STEPS else 0)   # (broadcast)
        early_trigger = DEPENDENT and (flags & FLAG_EARLY_TRIGGER) != 0
        cta = ptx.div_u32(cuda.blockIdx.x, CLUSTER)         # (a cluster's CTAs walk one unit)
        unit_step = ptx.div_u32(cuda.gridDim.x, CLUSTER)
        # stream-K: the shared tiles' K iterations in even runs, one per CTA, then whole tiles
        shared = shared_tiles(units, unit_step) * num_iters
        run_start = ptx.div_u32(cta * shared, unit_step)
        run_end = ptx.div_u32((cta + 1) * shared, unit_step)
        first_unit = cta + (ptx.div_u32(shared, num_iters) if STREAM_K else 0)
        if tid == 0:
            # the tensor maps of every product this CTA's walk reaches (see the module docstring);
            # a broadcast operand's one map once
            first_product, last_product = uint32(batch), uint32(0)
            if first_unit < units:             # whole units, unit_step apart
                last_unit = first_unit + ptx.div_u32(units - 1 - first_unit, unit_step) * unit_step
                first_product = ptx.div_u32(first_unit, product_units)
                last_product = ptx.div_u32(last_unit, product_units)
            if run_start < run_end:            # stream-K's run of the shared tiles' K iterations
                first_product = min(first_product, ptx.div_u32(ptx.div_u32(run_start, num_iters), tile_units))
                last_product = max(last_product, ptx.div_u32(ptx.div_u32(run_end - 1, num_iters), tile_units))
            for product in range(first_product, last_product + 1):
                if (product == first_product or a_map_step != 0) and not PACKED_A:
                    ptx.fence_tensormap_acquire(tmap_a + product * a_map_step)
                if (product == first_product or b_map_step != 0) and not PACKED_B:
                    ptx.fence_tensormap_acquire(tmap_b + product * b_map_step)
                if TMA_STORE:
                    ptx.fence_tensormap_acquire(tmap_c + product * 128)
            for st in range(STAGES):   # (st: `stage` is the roles' ring position below)
                ptx.mbarrier_init(base + FULL + 8 * st, 1)
                ptx.mbarrier_init(base + EMPTY + 8 * st, EMPTY_ARRIVALS)
            if SPLIT_CLUSTER:                  # "ready" and "free"
                ptx.mbarrier_init(base + SPLIT_BARRIERS, READY_ARRIVALS)
                ptx.mbarrier_init(base + SPLIT_BARRIERS + 8, FREE_ARRIVALS)
            ptx.fence_mbarrier_init()
        if DEFER_WAIT:
            cuda.syncthreads()                 # this CTA's barriers exist before its roles use them,
            ptx.cluster_arrive()               # the partners' before its first remote store (the wait)
            rank = ptx.cluster_ctarank()
        elif CLUSTER > 1:
            ptx.cluster_sync()                 # the partner's barriers exist before anyone arrives
            rank = ptx.cluster_ctarank()
        else:
            cuda.syncthreads()
            rank = uint32(0)

        plane_bytes = m * partial_row(n) * 4                # split-K: one slice's partial of one product
        flags = workspace + counters_offset(unit_step * SLOT_BYTES if STREAM_K else SPLIT * batch * plane_bytes)

        if tid >= CONSUMER_THREADS:
            # the producer warpgroup: one thread keeps the ring full, tile after tile
            if SETMAXNREG:
                ptx.setmaxnreg_dec(PRODUCER_REGS)
            if tid == CONSUMER_THREADS:
                stage, phase = 0, 1
                pos, unit = run_start, first_unit
                backward = False               # serpentine: this unit's K tiles from the last one down
                preloaded = 0                  # the first unit's K tiles whose preloaded operand is on its way
                if PRELOAD:
                    # the operand the kernel ahead does not write: its first ring streams while
                    # that kernel ends (the ring is empty: no stage to wait for)
                    found, product, tile_unit, _, first_k, count_k, _, _ = next_work(
                        pos, run_end, unit, units, tile_units, num_iters, unit_step, rank)
                    if found:
                        off_m, off_n = corner_of(tile_unit, m, n, units_m, units_n, rank)
                        preloaded = min(STAGES, count_k)
                        for st in range(preloaded):
                            preload_early(base, st, first_k + st, off_m, off_n, tmap_a + product * a_map_step,
                                          tmap_b + product * b_map_step, rank, k)
                if DEPENDENT:
                    ptx.grid_dependency_wait()  # A and B may be the kernel before's output
                while True:
                    found, product, tile_unit, _, first_k, count_k, pos, unit = next_work(
                        pos, run_end, unit, units, tile_units, num_iters, unit_step, rank)
                    if not found:
                        break
                    off_m, off_n = corner_of(tile_unit, m, n, units_m, units_n, rank)
                    map_a = tmap_a + product * a_map_step
                    map_b = tmap_b + product * b_map_step
                    k_tile, k_step = first_k, 1
                    if SERPENTINE and backward:
                        k_tile, k_step = first_k + count_k - 1, -1
                    for _ in range(count_k):
                        ptx.mbarrier_wait(base + EMPTY + 8 * stage, phase)
                        if PRELOAD and preloaded > 0:   # announced, half in flight: the other operand
                            preload_late(base, stage, k_tile, off_m, off_n, map_a, map_b, rank, k)
                            preloaded -= 1
                        else:
                            load_k_tile(base, stage, k_tile, off_m, off_n, map_a, map_b, rank, k)
                        k_tile += k_step
                        stage += 1
                        if stage == STAGES:
                            stage, phase = 0, phase ^ 1
                    backward = not backward
                if early_trigger:
                    ptx.launch_dependents()    # every load is issued: the next kernel may be scheduled
            if DEFER_WAIT:
                ptx.cluster_wait()             # (the producer stores nothing remotely)
        else:
            # the consumer warpgroups: wait for a stage, multiply, hand it back; then store C
            if SETMAXNREG:
                ptx.setmaxnreg_inc(CONSUMER_REGS)
            warpgroup = tid // 128
            acc = zeros()
            stage, phase = 0, 0
            done_stage = 0                     # the oldest stage still read by WGMMAs in flight
            pos, unit = run_start, first_unit
            reduced = 0                        # split_cluster: tiles reduced so far (the barriers' phases)
            found, product, tile_unit, slice_, first_k, count_k, pos, unit = next_work(
                pos, run_end, unit, units, tile_units, num_iters, unit_step, rank)
            off_m, off_n = corner_of(tile_unit, m, n, units_m, units_n, rank)
            if DEPENDENT:
                ptx.grid_dependency_wait()     # C and the workspace are the kernel before's until it ends
            while found:                       # (not a range: a run-time step divides in 64 bits)
                # the next unit and its corner are worked out while this tile's first WGMMAs
                # run: its divisions would otherwise hold the tensor cores idle (~1k clocks a tile)
                next_found, next_product, next_tile_unit, next_slice = found, product, tile_unit, slice_
                next_first_k, next_count_k, next_off_m, next_off_n = first_k, count_k, off_m, off_n
                if count_k == 0:                   # a K slice with no K tile (K shorter than the split)
                    acc = zeros()
                for it in range(count_k):
                    ptx.mbarrier_wait(base + FULL + 8 * stage, phase)
                    ptx.wgmma_fence()
                    acc = mma_k_tile(acc, base, stage, 1 if it > 0 else 0, warpgroup)
                    ptx.wgmma_commit_group()
                    if it == 0 and LOOKAHEAD:
                        next_found, next_product, next_tile_unit, next_slice, next_first_k, next_count_k, pos, unit = \
                            next_work(pos, run_end, unit, units, tile_units, num_iters, unit_step, rank)
                        next_off_m, next_off_n = corner_of(next_tile_unit, m, n, units_m, units_n, rank)
                    ptx.wgmma_wait_group(IN_FLIGHT)
                    if it >= IN_FLIGHT:        # K tile it - IN_FLIGHT is done: free its stage
                        release(base, done_stage)
                        done_stage += 1
                        if done_stage == STAGES:
                            done_stage = 0
                    stage += 1
                    if stage == STAGES:
                        stage, phase = 0, phase ^ 1
                ptx.wgmma_wait_group(0)
                if count_k == 0 or not LOOKAHEAD:
                    next_found, next_product, next_tile_unit, next_slice, next_first_k, next_count_k, pos, unit = \
                        next_work(pos, run_end, unit, units, tile_units, num_iters, unit_step, rank)
                    next_off_m, next_off_n = corner_of(next_tile_unit, m, n, units_m, units_n, rank)
                for _ in range(min(IN_FLIGHT, count_k)):   # the stages still held: free them
                    release(base, done_stage)
                    done_stage += 1
                    if done_stage == STAGES:
                        done_stage = 0
                if SPLIT_CLUSTER:
                    if DEFER_WAIT and reduced == 0:
                        ptx.cluster_wait()     # the partners' barriers exist: the first remote store
                    if LEAD:
                        acc = split_lead_gather(acc, base, rank, reduced)
                        if rank == 0:
                            store_direct(acc, c + product * (m * ldc * 2), ldc, m, n, off_m, off_n, pair_ok)
                    else:
                        split_cluster_reduce(acc, base, rank, reduced, m, n, off_m, off_n,
                                             c + product * (m * ldc * 2), ldc, pair_ok)
                    reduced += 1
                elif SPLIT > 1:
                    split_k_reduce(acc, workspace + product * SPLIT * plane_bytes, flags, slice_,
                                   (product * tile_units + tile_unit) * CLUSTER + rank,
                                   m, n, off_m, off_n, c + product * (m * ldc * 2), ldc)
                elif STREAM_K and first_k > 0:   # a later share of a tile another CTA finishes
                    give(acc, workspace, flags, cta)
                else:
                    if STREAM_K and count_k < num_iters:   # the first share of a shared tile: finish it
                        tile_end = (product * tile_units + tile_unit + 1) * num_iters
                        acc = take(acc, workspace, flags, cta, tile_end, unit_step, shared)
                    if TMA_STORE:
                        store_staged(acc, base, warpgroup, off_m, off_n, tmap_c + product * 128)
                    else:
                        store_direct(acc, c + product * (m * ldc * 2), ldc, m, n, off_m, off_n, pair_ok)
                found, product, tile_unit, slice_ = next_found, next_product, next_tile_unit, next_slice
                first_k, count_k, off_m, off_n = next_first_k, next_count_k, next_off_m, next_off_n
            if DEFER_WAIT and reduced == 0:
                ptx.cluster_wait()             # a cluster without a tile: every arrive has its wait
            if TMA_STORE and tid % 128 == 0:
                ptx.bulk_wait_group_read(0)    # shared memory must outlive the last store's reads
            if DEPENDENT and not early_trigger and tid == 0:
                # this CTA's work is done: the next kernel may be scheduled once every CTA is here
                # (earlier, its CTAs would take the SMs this grid leaves idle and crowd them)
                ptx.launch_dependents()
        if CLUSTER > 1:
            ptx.cluster_sync()                 # no CTA leaves while its partner may still arrive on it
        probe_finish(probe)

    persistent_kernel.__name__ = config.name
    return persistent_kernel
