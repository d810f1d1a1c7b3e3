"""Compile-only checks of the producer-warpgroup kernel (V6, V7 and their variants), with
no GPU: ptxas honours setmaxnreg (no C7504/C7508), nothing spills, the PTX holds the
instructions each feature is made of, and kernels ask for the cluster they need."""
import dataclasses
import re

import pytest

from gemm.schedule import KernelGapError, ScheduleError, preset

pytest.importorskip("numba.cuda")

from gemm.compile import compile_kernel  # noqa: E402
from gemm.kernels import KernelConfig  # noqa: E402

CASES = [
    KernelConfig(preset("v7")),
    KernelConfig(preset("v7", cluster_m=2), "bfloat16", "mn", "mn"),
    KernelConfig(preset("v7", cluster_m=1, cluster_n=2), "float16", "k", "mn"),
    KernelConfig(preset("v7", cluster_m=1, epilogue="direct", dependent_launch=False)),
    KernelConfig(preset("v7", block_n=192, stages=4, wgmma_in_flight=1)),
    KernelConfig(preset("v7", block_n=160, stages=4, cluster_m=2), "bfloat16"),   # 5 C boxes of 32 columns
    KernelConfig(preset("v7", block_m=256, block_n=128, cluster_m=1, cluster_n=2), "bfloat16"),
    # 256-row tiles cut to the product's width: n=144's C in nine 16-column boxes (32-byte
    # swizzle), n=192's 192 accumulators a thread staged in two passes
    KernelConfig(preset("v7", block_m=256, block_n=144, cluster_n=2), "float16", "k", "mn"),
    KernelConfig(preset("v7", block_m=256, block_n=192, cluster_n=2), "bfloat16"),
    KernelConfig(preset("v7", block_n=144, stages=4)),
    # two m64n160 column blocks a warpgroup; B loaded in two 160-row slabs; C staged in two passes
    KernelConfig(preset("v7", block_n=320)),
    KernelConfig(preset("v7", block_n=320, cluster_m=2, producer_registers=48, consumer_registers=224),
                 "bfloat16", "mn", "mn"),   # (at 40 registers the producer of 5 B boxes spills)
    KernelConfig(preset("v6")),
    KernelConfig(preset("v6", epilogue="direct")),
    KernelConfig(preset("v7", block_n=160, persistent=False, cluster_m=1, producer_registers=0,
                        consumer_registers=0)),
    KernelConfig(preset("v7", block_n=16, stages=10, split_k=4, swap_ab=True, epilogue="direct",
                        producer_registers=0, consumer_registers=0), "bfloat16", "k", "mn"),
    KernelConfig(preset("v7", stream_k=True)),
    # each CTA's odd units loaded from their last K tile down (the producer's order alone)
    KernelConfig(preset("v7", block_n=192, stages=4, cluster_m=2, k_order="serpentine")),
    # split-K's reduce writes C from the workspace: no stmatrix, no TMA store, no staging tile
    KernelConfig(preset("v7", stages=4, split_k=4)),
    # split-K inside a cluster: the slices' partials through distributed shared memory
    KernelConfig(preset("v7", block_n=128, stages=4, split_k=2, split_cluster=True)),
    KernelConfig(preset("v7", block_m=64, block_n=128, consumer_warpgroups=1, stages=8, producer_registers=0,
                        consumer_registers=0, split_k=4, split_cluster=True), "bfloat16", "mn", "k"),
    KernelConfig(preset("v7", block_n=16, block_k=128, stages=5, split_k=4, swap_ab=True, epilogue="direct",
                        producer_registers=0, consumer_registers=0, split_cluster=True), "float16", "k", "mn"),
    # ... with a lead (the first CTA adds the others' whole partials) and the cluster's wait held
    # until the first remote store
    KernelConfig(preset("v7", block_n=64, stages=8, split_k=2, split_cluster=True, split_lead=4,
                        defer_cluster_wait=True)),
    KernelConfig(preset("v7", block_m=64, consumer_warpgroups=1, block_n=16, block_k=128, stages=8, split_k=3,
                        swap_ab=True, epilogue="direct", producer_registers=0, consumer_registers=0,
                        split_cluster=True, split_lead=2), "bfloat16", "k", "k"),
    # the weights' first ring loaded before the wait for the kernel ahead: the swapped decode
    # pair (the product's B is the kernel's A) and a multicast pair sharing B
    KernelConfig(preset("v7", block_m=64, consumer_warpgroups=1, block_n=16, block_k=128, stages=8, split_k=2,
                        swap_ab=True, epilogue="direct", producer_registers=0, consumer_registers=0,
                        split_cluster=True, split_lead=2, defer_cluster_wait=True, preload="b")),
    KernelConfig(preset("v7", block_n=192, stages=4, cluster_m=2, preload="b"), "bfloat16", "k", "mn"),
    # weights packed for bulk copies (gemm.pack_weights): the swapped decode pair's A, preloaded,
    # one copy a K tile; a multicast pair's B, each CTA its 128 rows in 64-row boxes
    KernelConfig(preset("v7", block_m=64, consumer_warpgroups=1, block_n=16, block_k=128, stages=8, split_k=2,
                        swap_ab=True, epilogue="direct", producer_registers=0, consumer_registers=0,
                        split_cluster=True, split_lead=2, preload="b"), "float16", "k", "k", packed="a"),
    KernelConfig(preset("v7", cluster_m=2), "bfloat16", "k", "k", packed="b"),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.name)
def compiled(request):
    return compile_kernel(request.param, use_disk_cache=False)


def test_setmaxnreg_honoured_and_nothing_spills(compiled):
    log, s = compiled.ptxas_log, compiled.config.schedule
    assert "C7504" not in log and "C7508" not in log, log        # setmaxnreg ignored
    assert "Potential Performance Loss" not in log, log          # e.g. serialized WGMMAs
    assert compiled.spill_bytes == 0 and compiled.stack_bytes == 0, log
    assert not re.search(r"\b(ld|st)\.local", compiled.ptx)
    if s.uses_setmaxnreg:
        assert f"setmaxnreg.dec.sync.aligned.u32 {s.producer_registers};" in compiled.ptx
        assert f"setmaxnreg.inc.sync.aligned.u32 {s.consumer_registers};" in compiled.ptx
        # every thread starts with the count the register file holds for one CTA
        assert compiled.registers == s.launch_registers, log
    else:
        assert "setmaxnreg" not in compiled.ptx


def test_feature_instructions(compiled):
    cfg, ptx = compiled.config, compiled.ptx
    s = cfg.schedule
    acc = "f16" if s.accumulate == "float16" else "f32"
    assert f"m64n{s.wgmma_n}k16.{acc}." in ptx
    per_tile = (s.block_k // 16) * s.wgmmas_per_k_step
    assert len(re.findall(r"wgmma\.mma_async", ptx)) % per_tile == 0
    assert (f".reqnctapercluster {s.cluster_size}, 1, 1" in ptx) == (s.cluster_size > 1)
    assert ("multicast::cluster" in ptx) == (s.multicast_size == 2)
    assert ("mapa.shared::cluster" in ptx) == (s.cluster_size > 1)
    assert ("barrier.cluster.arrive" in ptx) == (s.cluster_size > 1)
    # a stage is released on the partner's barrier with the default (CTA-scope release)
    # semantics: `.release.cluster` costs a GPU-wide MEMBAR before every arrival, in the K loop.
    # Split-K inside a cluster releases its partials so, once a tile: "ready" and "free" on
    # every slice's CTA, and no global workspace
    # (with a lead: a later slice's one "ready", the first CTA's "free" on each other slice)
    releases = len(re.findall(r"mbarrier\.arrive\.release\.cluster", ptx))
    assert releases == ((s.split_k if s.split_lead else 2 * s.split_k) if s.split_cluster else 0)
    assert ("st.shared::cluster.v2.f32" in ptx) == s.split_cluster
    # the cluster barrier: one meeting at the start and one at the end, or, deferred, the start's
    # arrive alone and its wait in each role (the consumers' before their first remote store)
    meetings = len(re.findall(r"barrier\.cluster\.arrive\.release\.aligned;\s*barrier\.cluster\.wait", ptx))
    assert meetings == ((1 if s.defer_cluster_wait else 2) if s.cluster_size > 1 else 0)
    assert len(re.findall(r"barrier\.cluster\.arrive", ptx)) == (2 if s.cluster_size > 1 else 0)
    assert ("atom.global" in ptx) == ((s.split_k > 1 and not s.split_cluster) or s.stream_k)
    tma_store = s.stores_via_tma
    assert ("stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx) == tma_store
    assert ("cp.async.bulk.tensor.2d.global.shared::cta" in ptx) == tma_store
    if tma_store:
        assert "fence.proxy.async.shared::cta" in ptx and "cp.async.bulk.wait_group.read 0" in ptx
    # a programmatic dependent waits for the kernel ahead (producer and consumers) before its
    # loads and stores, and lets the next one be scheduled once per CTA: from the producer once
    # its last load is issued where the launch's flags say the grid fills the GPU, else from a
    # consumer after its last store
    assert len(re.findall(r"griddepcontrol\.wait;", ptx)) == (2 if s.dependent_launch else 0)
    assert len(re.findall(r"griddepcontrol\.launch_dependents;", ptx)) == (2 if s.dependent_launch else 0)
    if s.dependent_launch:
        assert re.search(r"griddepcontrol\.wait;.*?cp\.async\.bulk\.tensor\.2d\.shared::cluster", ptx, re.S)
    # with a preload the producer's wait follows loads (TMA boxes, or a packed operand's bulk
    # copies) that waited for no stage (the empty ring's first pass); the K loop's loads each wait
    # for their stage first
    early = re.search(r"cp\.async\.bulk\.(?:tensor\.2d\.)?shared::cluster(?:(?!griddepcontrol|mbarrier\.try_wait).)*"
                      r"griddepcontrol\.wait;", ptx, re.S)
    assert bool(early) == (s.preload != "none")
    # the tile loop of a persistent kernel steps by the grid: no 64-bit division in the kernel
    assert not re.search(r"\b(div|rem)\.[su]64", ptx)


def test_packed_operand_is_copied_in_bulk_without_a_map(compiled):
    """A packed operand's K tile arrives by plain bulk copies (multicast where a cluster shares
    it), one a K tile for a 64-row side; its address is acquired as no tensor map."""
    cfg, ptx = compiled.config, compiled.ptx
    bulk = re.findall(r"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes(\.multicast::cluster)?",
                      ptx)
    acquires = len(re.findall(r"fence\.proxy\.tensormap::generic\.acquire", ptx))
    if cfg.packed is None:
        assert not bulk
        return
    layout = cfg.a_layout if cfg.packed == "a" else cfg.b_layout
    assert bulk and all(bool(m) == (layout.parts > 1) for m in bulk)
    unpacked = compile_kernel(dataclasses.replace(cfg, packed=None), use_disk_cache=False).ptx
    assert acquires < len(re.findall(r"fence\.proxy\.tensormap::generic\.acquire", unpacked))
    # the unpacked twin's tensor-map loads of that operand (one box a K box of the tile, or of the
    # CTA's part) become one copy a K tile where the tile's side is 64 rows (its K tile is one
    # run), else one copy for each 64 rows of each such box
    tensor_loads = r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global"
    weight_boxes = len(re.findall(tensor_loads, unpacked)) - len(re.findall(tensor_loads, ptx))
    if layout.mn == 64:
        assert len(bulk) * layout.boxes == weight_boxes
    else:
        assert len(bulk) == weight_boxes * (layout.mn // layout.parts // 64)


def test_next_unit_is_worked_out_in_the_first_k_tiles_shadow(compiled):
    """The consumers divide out the next unit's coordinates between a K tile's WGMMA commit and
    its wait (notes 103), where the tensor cores are busy; kernels with a group in flight across
    K tiles, split-K or stream-K do it after the loop (C7515, registers)."""
    s = compiled.config.schedule
    between = re.findall(r"wgmma\.commit_group\.sync\.aligned;(.*?)wgmma\.wait_group\.sync\.aligned",
                         compiled.ptx, re.S)
    shadowed = any("div.u32" in body for body in between)
    assert shadowed == (s.wgmma_in_flight == 0 and s.split_k == 1 and not s.stream_k)


def test_staged_c_tile_fits_beside_the_ring():
    v7 = KernelConfig(preset("v7", cluster_m=2))
    assert v7.c_offset == v7.b_offset + 3 * v7.b_layout.tile_bytes           # past the ring
    assert v7.barrier_offset == v7.c_offset + 128 * 256 * 2
    v6 = KernelConfig(preset("v6"))
    assert v6.c_offset == 0 and v6.barrier_offset == 3 * (256 + 256) * 64 * 2   # over the drained ring
    assert v7.b_layout.tma_box == (64, 128)     # each CTA of the pair loads half the B tile
    assert [p[2] for p in v7.b_layout.part_boxes(1)] == [128]


def test_wide_tile_loads_b_in_slabs_and_multiplies_in_column_blocks():
    """128x320: B's 320 rows are two TMA loads of 160 a box column (a box is at most 256 rows),
    or, multicast in a cluster, each CTA's 160; each warpgroup's two m64n160 WGMMAs a k16 step
    read B 160 rows apart, and their registers follow one another as one 320-wide fragment's."""
    from gemm.ptx.wgmma import k_tile_ptx
    wide = KernelConfig(preset("v7", block_n=320))
    assert wide.b_layout.row_slabs == 2 and wide.b_layout.tma_box == (64, 160)
    assert [(p[0], p[2]) for p in wide.b_layout.part_boxes(0)] == [(0, 0), (160 * 128, 160)]
    pair = KernelConfig(preset("v7", block_n=320, cluster_m=2))
    assert pair.b_layout.row_slabs == 1 and [p[2] for p in pair.b_layout.part_boxes(1)] == [160]
    _, b_offsets = wide.mma_offsets()
    assert [blocks[1] - blocks[0] for blocks in b_offsets] == [160 * 128] * 4
    # an MN-major B's blocks start on a swizzle row: 64-byte rows (32 columns), 5 boxes apart
    mn = KernelConfig(preset("v7", block_n=320), "float16", "k", "mn")
    assert mn.b_layout.swizzle == 64 and mn.mma_offsets()[1][0] == (0, 5 * mn.b_layout.box_bytes)
    body, total = k_tile_ptx(160, "float16", 0, 0, ((0,),), ((0, 20480),))
    assert total == 160
    first, second = re.findall(r"m64n160k16\.f32\.f16\.f16 \{([^}]*)\}", body)
    assert first.split(", ")[0] == "$0" and second.split(", ")[0] == "$80"
    assert "add.s64 bdesc, $321, 1280;" in body        # the second block's B, 20480 bytes on (descB: $2 x 160 + 1)


def test_split_k_stages_no_c_tile():
    """Split-K's reduce writes C from the fp32 workspace, so the ring takes the staging tile's
    room: four 128x256 stages fit (beside a TMA-store tile only with C staged in two passes, and
    five not at all)."""
    split = KernelConfig(preset("v7", stages=4, split_k=4))
    assert split.c_layout is None and not split.schedule.stores_via_tma
    assert split.barrier_offset == 4 * (128 + 256) * 64 * 2
    assert split.shared_bytes == 4 * (128 + 256) * 64 * 2 + 2 * 8 * 4 + 1024
    assert preset("v7", stages=4).c_staging_passes == 2 and preset("v7").c_staging_passes == 1
    with pytest.raises(ScheduleError, match="227 KB"):
        preset("v7", stages=5)


def test_split_cluster_exchange_fits_past_the_barriers():
    """Split-K inside a cluster keeps no workspace: its slots (every slice's share of each
    consumer thread's fp32 pairs) and its two barriers follow the ring's barriers."""
    cfg = KernelConfig(preset("v7", block_n=128, stages=4, split_k=2, split_cluster=True))
    s = cfg.schedule
    assert s.cluster_size == 2 and s.multicast_size == 1 and cfg.empty_arrivals == 8
    assert cfg.split_barrier_offset == cfg.barrier_offset + 2 * 8 * 4
    assert cfg.exchange_offset == cfg.split_barrier_offset + 16
    assert s.split_exchange_bytes == 128 * 128 * 4          # two slots of half the tile's fp32 pairs
    assert cfg.exchange_offset + s.split_exchange_bytes + 1024 <= cfg.shared_bytes
    assert cfg.workspace_regions(1024, 1024, 1, 132) == (0, 0)
    assert cfg.units(1024, 1024) == 64                       # a cluster's unit is a whole tile
    assert cfg.grid(1024, 1024, resident_clusters=66) == (128, 1, 1)
    # three slices of 32 pairs: shares of 10, 11 and 11, slots sized for the largest
    three = preset("v7", block_n=128, stages=4, split_k=3, split_cluster=True)
    assert three.split_exchange_bytes == 3 * 11 * 256 * 8


def test_split_lead_cuts_k_and_sizes_the_slots():
    """A lead gives the first slice that many K tiles more (all of them, when K is shorter) and
    the rest even shares; the first CTA receives the other slices' whole partials."""
    even = preset("v7", block_n=128, stages=3, split_k=3, split_cluster=True)
    lead = even.replace(split_lead=3)
    assert [even.k_slice(q, 86) for q in range(3)] == [(0, 28), (28, 29), (57, 29)]
    assert [lead.k_slice(q, 86) for q in range(3)] == [(0, 30), (30, 28), (58, 28)]
    assert [lead.k_slice(q, 2) for q in range(3)] == [(0, 2), (2, 0), (2, 0)]
    for s, k_tiles in ((even, 86), (lead, 86), (lead, 2), (lead, 3), (lead, 1000)):
        cuts = [s.k_slice(q, k_tiles) for q in range(3)]
        assert all(first + count == nxt for (first, count), (nxt, _) in zip(cuts, cuts[1:]))
        assert cuts[-1][0] + cuts[-1][1] == k_tiles
    assert lead.split_exchange_bytes == 2 * 128 * 128 * 4     # two whole fp32 partials
    assert even.split_exchange_bytes == 3 * 11 * 256 * 8
    cfg = KernelConfig(lead)
    assert cfg.exchange_offset + lead.split_exchange_bytes + 1024 <= cfg.shared_bytes
    assert "lead3" in cfg.name and "latewait" in KernelConfig(lead.replace(defer_cluster_wait=True)).name


@pytest.mark.parametrize("changes,limit", [
    (dict(split_lead=2), "needs split_cluster"),
    (dict(split_k=2, split_lead=2), "needs split_cluster"),
    (dict(block_n=64, stages=2, split_k=2, split_cluster=True, split_lead=-1), "0 or more"),
    (dict(defer_cluster_wait=True), "needs split_cluster"),
    (dict(cluster_m=2, defer_cluster_wait=True), "needs split_cluster"),
    (dict(split_cluster=True), "needs split_k > 1"),
    (dict(block_n=64, stages=2, split_k=2, split_cluster=True, cluster_m=2), "not both"),
    (dict(block_n=64, stages=2, split_k=16, split_cluster=True), "portable maximum"),
])
def test_split_cluster_limits(changes, limit):
    with pytest.raises(ScheduleError, match=limit):
        preset("v7", **changes)


def test_split_cluster_needs_the_persistent_kernel():
    with pytest.raises(KernelGapError, match="persistent"):
        KernelConfig(preset("v7", block_n=128, stages=4, split_k=2, split_cluster=True, persistent=False))


@pytest.mark.parametrize("changes,limit", [
    (dict(cluster_m=4), "multicasts to pairs"),
    (dict(cluster_m=2, cluster_n=2), "multicasts to pairs"),
    (dict(swap_ab=True), "epilogue='direct'"),
    (dict(swap_ab=True, epilogue="direct", accumulate="float16"), "accumulate='float32'"),
    (dict(stream_k=True, cluster_m=2), "stream_k with clusters"),
])
def test_kernel_gaps_raise(changes, limit):
    with pytest.raises(KernelGapError, match=limit):
        KernelConfig(preset("v7", **changes))


def test_serpentine_k_order_walks_whole_tiles_or_split_k_slices():
    with pytest.raises(KernelGapError, match="serpentine' with stream_k"):
        KernelConfig(preset("v7", stream_k=True, k_order="serpentine"))


def test_dependent_launch_needs_the_producer_warpgroup_kernel():
    with pytest.raises(KernelGapError, match="dependent_launch is built only in the producer-warpgroup"):
        KernelConfig(preset("v5", dependent_launch=True))


@pytest.mark.parametrize("changes,limit", [
    (dict(consumer_registers=240), "registers per role"),
    (dict(producer_registers=48), "starts with"),          # 48 x 128 + 232 x 256 > 168 x 384: hangs
    (dict(producer_registers=20), "multiple of 8 in 24..256"),
    (dict(consumer_registers=0), "both producer_registers and consumer_registers"),
    (dict(producer_warps=1), "producer must be a warpgroup"),
    (dict(stages=5), "227 KB"),        # (four fit, C staged in two passes)
    (dict(cluster_m=3), "power of two"),
    (dict(block_n=256, block_m=256), "accumulator registers"),
    (dict(stream_k=True, persistent=False), "needs persistent=True"),
    (dict(stream_k=True, split_k=2), "choose one"),
    (dict(stream_k=True, stream_k_waves=3), "0 to 2 full waves"),
    (dict(stream_k=True, stream_k_waves=-1), "0 to 2 full waves"),
    (dict(k_order="serpentine", persistent=False), "needs persistent=True"),
    (dict(k_order="backward"), "k_order must be one of"),
])
def test_impossible_schedules_name_the_limit(changes, limit):
    with pytest.raises(ScheduleError, match=limit):
        preset("v7", **changes)


def test_split_k_and_stream_k_workspaces():
    """Split-K: split_k fp32 planes with rows padded to 4 floats (every 4-column chunk one
    16-byte load), a counter per tile. Stream-K: one slot of a tile's fp32 accumulators and one
    flag per CTA, its grid every resident CTA however few tiles; the CTAs of a split tile wait
    for one another, so fewer resident CTAs than slices is refused."""
    split = KernelConfig(preset("v7", block_n=128, stages=4, split_k=3))
    assert split.workspace_regions(100, 130, 2) == (-(-3 * 2 * 100 * 132 * 4 // 256) * 256, 4 * 2 * 2)
    stream = KernelConfig(preset("v7", stream_k=True))
    assert stream.workspace_regions(100, 130, 1, 132) == (132 * 128 * 256 * 4, 4 * 132)
    assert stream.grid(100, 130, 132) == (132, 1, 1)
    assert KernelConfig(preset("v7")).workspace_regions(100, 130) == (0, 0)
    with pytest.raises(ScheduleError, match="split_k=3 needs"):
        split.grid(1000, 1000, 2)


def test_fp16_accumulation_takes_fp16_inputs():
    with pytest.raises(KernelGapError, match="fp16 inputs"):
        KernelConfig(preset("v6"), "bfloat16")


def test_swap_ab_stores_each_element_of_c_transposed():
    """Swap-AB's fragment is a tile of C^T: a column pair of it lies in two rows of C, so each
    element is converted and stored on its own (no packed pair), and nothing else changes."""
    s = preset("v7", block_n=16, stages=10, swap_ab=True, epilogue="direct", producer_registers=0,
               consumer_registers=0)
    swapped = compile_kernel(KernelConfig(s), use_disk_cache=False)
    plain = compile_kernel(KernelConfig(s.replace(swap_ab=False)), use_disk_cache=False)
    assert "cvt.rn.f16.f32" in swapped.ptx and "cvt.rn.f16x2.f32" not in swapped.ptx
    assert "cvt.rn.f16x2.f32" in plain.ptx
    assert "m64n16k16.f32" in swapped.ptx
