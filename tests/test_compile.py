"""Compile-only checks of every kernel, with no GPU: numba-cuda emits PTX for
sm_90a, nvJitLink's ptxas assembles it, nothing goes to local memory, and the
PTX holds the instructions the kernel is about."""
import re

import pytest

from gemm.schedule import ScheduleError, preset

pytest.importorskip("numba.cuda")

from gemm.compile import compile_kernel  # noqa: E402
from gemm.kernels import KernelConfig  # noqa: E402

CASES = [
    KernelConfig(preset("v1")),
    KernelConfig(preset("v2")),
    KernelConfig(preset("v2", stages=7)),
    KernelConfig(preset("v2", block_m=64, block_n=128, block_k=16, stages=4)),
    KernelConfig(preset("v2", block_m=64, block_n=256, block_k=32, stages=3), "bfloat16"),
    KernelConfig(preset("v1", block_m=128, block_n=192, block_k=64), "bfloat16", "mn", "mn"),
    KernelConfig(preset("v2", stages=3), "float16", "k", "mn"),
    KernelConfig(preset("v1", block_m=64, block_n=64, block_k=32), "float16", "mn", "k", 0, 0),
    KernelConfig(preset("v2", stages=3), clock_probe=True),
    KernelConfig(preset("v2"), clock_probe=True, mma_loop_only=True),
    KernelConfig(preset("v3")),
    KernelConfig(preset("v3", stages=2, raster="column"), "bfloat16", "mn", "k"),
    KernelConfig(preset("v4", raster="grouped")),
    KernelConfig(preset("v5")),
    KernelConfig(preset("v5", block_n=256, stages=3, raster="grouped"), "float16", "k", "mn"),
    KernelConfig(preset("v5", block_m=256, block_n=128, stages=3, wgmma_in_flight=2), clock_probe=True),
    KernelConfig(preset("v3", stages=6), clock_probe=True, prefetch_limit=3),
]
LOAD_LOOP = KernelConfig(preset("v2", stages=3), clock_probe=True, load_loop_only=True)


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.name)
def compiled(request):
    return compile_kernel(request.param, use_disk_cache=False)


def test_targets_sm90a(compiled):
    assert re.search(r"^\.target sm_90a", compiled.ptx, re.M)
    assert len(compiled.cubin) > 1000


def test_no_local_memory(compiled):
    log = compiled.ptxas_log
    assert "spill" in log, log
    assert compiled.spill_bytes == 0, log
    assert compiled.stack_bytes == 0, log
    assert not re.search(r"\b(ld|st)\.local", compiled.ptx)


def test_no_injected_waits(compiled):
    # C7509/C7510/C7517...: ptxas serializes the WGMMAs (a call in the kernel, accumulators it
    # cannot prove untouched); every such warning starts "Potential Performance Loss"
    assert "Potential Performance Loss" not in compiled.ptxas_log, compiled.ptxas_log


def test_expected_instructions(compiled):
    cfg = compiled.config
    ptx = compiled.ptx
    mmas = len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", ptx))
    per_tile = (cfg.block_k // 16) * cfg.m_blocks
    # one K tile's WGMMAs; the optimizer may duplicate the loop body (peeling the first iteration)
    assert mmas >= per_tile and mmas % per_tile == 0, (mmas, per_tile)
    assert f"m64n{cfg.block_n}k16.f32.{'f16' if cfg.dtype == 'float16' else 'bf16'}" in ptx
    for instr in ("cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
                  "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group.sync.aligned 0",
                  "fence.proxy.tensormap::generic.acquire", "mbarrier.init"):
        assert instr in ptx, instr
    syncs = ptx.count("bar.sync") + ptx.count("barrier.sync")
    if cfg.family == "specialized":
        # one block-wide sync, after setup; stages are handed back on the empty mbarriers
        assert syncs == 1, syncs
        assert "mbarrier.arrive.shared::cta.b64 _," in ptx
        assert f"wgmma.wait_group.sync.aligned {cfg.schedule.wgmma_in_flight};" in ptx
    else:
        assert syncs >= 2, syncs


def test_registers_fit_residency(compiled):
    assert 0 < compiled.registers <= 255


def test_serial_and_ring_differ_in_their_loop():
    v1 = compile_kernel(KernelConfig(preset("v1")), use_disk_cache=False).ptx
    v2 = compile_kernel(KernelConfig(preset("v2", stages=3)), use_disk_cache=False).ptx
    # V1 waits on its one barrier; V2 computes a runtime stage (iter % 3)
    assert v1.count("cp.async.bulk.tensor") == 2
    assert v2.count("cp.async.bulk.tensor") >= 4  # prefill and refill


def test_specialized_registers_allow_two_ctas_per_sm():
    """V3's 161 registers x 160 threads and V4/V5's ~100 x 288 leave room for two CTAs
    per SM (the model's residency assumes it: sim.hardware register figures)."""
    from gemm.schedule import REGISTERS_PER_SM
    for s in (preset("v3", stages=3), preset("v5", block_n=128, stages=3)):
        ck = compile_kernel(KernelConfig(s), use_disk_cache=False)
        per_thread = -(-ck.registers // 8) * 8
        assert REGISTERS_PER_SM // (per_thread * s.threads) >= 2, (s.name, ck.registers)


def test_load_loop_microbenchmark_has_loads_and_no_wgmma():
    ck = compile_kernel(LOAD_LOOP, use_disk_cache=False)
    assert ck.spill_bytes == 0 and ck.stack_bytes == 0
    assert "cp.async.bulk.tensor.2d" in ck.ptx and "mbarrier.try_wait.parity" in ck.ptx
    assert "wgmma.mma_async" not in ck.ptx


def test_microbenchmarks_are_switches_of_the_ring_kernel():
    """mma_loop_only and load_loop_only build the ring kernel with half its loop taken out,
    for V1 (the one-stage ring) as for V2: the WGMMA-only loop loads its stages once (the
    prefill's two boxes per stage, no refill), the load-only loop has no WGMMA."""
    for s in (preset("v1"), preset("v2", stages=3)):
        mma = compile_kernel(KernelConfig(s, mma_loop_only=True), use_disk_cache=False)
        load = compile_kernel(KernelConfig(s, load_loop_only=True), use_disk_cache=False)
        for ck in (mma, load):
            assert "ring_kernel" in ck.ptx and ck.spill_bytes == 0 and ck.stack_bytes == 0, s.name
        assert mma.ptx.count("cp.async.bulk.tensor") == 2 * s.stages, s.name
        assert "wgmma.mma_async" in mma.ptx and "wgmma.mma_async" not in load.ptx, s.name


def test_tutorial_phase_array_lives_in_local_memory():
    """phase_storage='local' reproduces the tutorial's V2: a per-stage phase array
    indexed at run time, which the compiler cannot keep in registers."""
    local = compile_kernel(KernelConfig(preset("v2", stages=3, phase_storage="local")), use_disk_cache=False)
    assert re.search(r"\bld\.local", local.ptx) and re.search(r"\bst\.local", local.ptx)
    assert local.stack_bytes > 0 and local.spill_bytes == 0


def test_clock_probe_folds_away_when_off():
    off = compile_kernel(KernelConfig(preset("v2")), use_disk_cache=False).ptx
    on = compile_kernel(KernelConfig(preset("v2"), clock_probe=True), use_disk_cache=False).ptx
    assert "%globaltimer" not in off and "%clock64" not in off
    assert on.count("%globaltimer") == 2 and "%smid" in on


def test_layouts_refused_when_tile_does_not_fit_swizzle():
    with pytest.raises(ValueError, match="swizzle row"):
        KernelConfig(preset("v1", block_k=16), "float16", "k", "k", 128, 128)
    with pytest.raises(ValueError, match="dtype"):
        KernelConfig(preset("v1"), "float32")
    with pytest.raises(ScheduleError):
        KernelConfig(preset("v1").replace(stages=2))
    with pytest.raises(ValueError, match="prefetch_limit"):
        KernelConfig(preset("v2", stages=4), prefetch_limit=2)
    with pytest.raises(ValueError, match="prefetch_limit"):
        KernelConfig(preset("v3", stages=4), prefetch_limit=5)


def test_primitive_probes_compile():
    """The GPU tests' probe kernels (TMA load/store, mbarrier, elect) build for sm_90a too."""
    import sys
    from pathlib import Path

    from numba import cuda

    from gemm.compile import ARCH, _device_functions_without_gpu
    sys.path.insert(0, str(Path(__file__).parent))
    import test_gpu_ptx
    sigs = ["void(int64, uint32[:], int64, int64, int64)", "void(int64, uint32[:], int64, int64, int64)",
            "void(int32[:,:])"]
    wanted = [("cp.async.bulk.tensor.2d.shared::cluster", "mbarrier.try_wait", "ld.shared.b32"),
              ("cp.async.bulk.tensor.2d.global", "fence.proxy.async.shared::cta", "cp.async.bulk.wait_group.read 0"),
              ("mbarrier.arrive.shared", "elect.sync")]
    with _device_functions_without_gpu():
        for probe, sig, instrs in zip(test_gpu_ptx._kernels(), sigs, wanted):
            ptx, _ = cuda.compile_ptx(probe.py_func, sig, cc=ARCH)
            for instr in instrs:
                assert instr in ptx, (probe.py_func.__name__, instr)


def test_copy_kernel_compiles_to_plain_loads_and_pair_stores():
    """gemm/padding.py's copy: 2-byte global loads, 4-byte global stores, all in registers,
    and its loads issued before its stores (so a thread keeps them all in flight)."""
    from gemm import padding
    ptx, name, cubin, log = padding.compiled()
    assert ".target sm_90a" in ptx and cubin
    assert not re.search(r"\b(ld|st)\.local", ptx)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log)
    body = ptx[ptx.index(name):]
    loads = [m.start() for m in re.finditer(r"\bld\.global(\.\w+)*\.u16\b", body)]
    stores = [m.start() for m in re.finditer(r"\bst\.global(\.\w+)*\.u32\b", body)]
    assert len(loads) >= 2 * padding.PAIRS and len(stores) >= padding.PAIRS
    assert sorted(loads)[2 * padding.PAIRS - 1] < min(stores)


def test_line_copy_grid_and_limits():
    from gemm.padding import PAIRS, THREADS, LineCopy, check, pitch_for
    assert [pitch_for(w) for w in (1, 8, 64, 65, 4099)] == [64, 64, 64, 128, 4160]
    copy = LineCopy(0, 4099, 0, 0, 4104, 4095, 4099)
    assert copy.grid(132) == (min(-(-4095 * 2052 // (THREADS * PAIRS)), 16 * 132), 1, 1)
    assert LineCopy(0, 3, 0, 0, 8, 2, 3, matrices=5).grid(132) == (1, 5, 1)
    check(LineCopy(0, 4104, 0, 0, 4097, 4095, 4097))       # unpadding into odd rows
    with pytest.raises(ValueError, match="too large"):
        check(LineCopy(0, 1 << 20, 0, 0, 1 << 20, 1 << 12, 1 << 20))
    with pytest.raises(ValueError, match="batch of 70000"):
        check(LineCopy(0, 8, 0, 0, 8, 1, 8, matrices=70000))
    with pytest.raises(ValueError, match="cannot hold"):
        check(LineCopy(0, 8, 0, 0, 6, 1, 8))
    with pytest.raises(ValueError, match="4-byte aligned"):
        check(LineCopy(0, 8, 0, 2, 8, 1, 8))
    with pytest.raises(ValueError, match="4-byte aligned"):
        check(LineCopy(0, 8, 64, 0, 7, 3, 7, matrices=2))   # the second matrix would start 2 bytes off
