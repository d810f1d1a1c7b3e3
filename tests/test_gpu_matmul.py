"""gemm.matmul against a float64 reference and cuBLAS, on the GPU.

Fresh random inputs per case (unit-variance C), NaN-poisoned outputs, every
element checked (a NaN left anywhere fails the relative error)."""
import pytest

pytestmark = pytest.mark.gpu

from experiments.reference import TOLERANCE, poisoned, random_operands, relative_error  # noqa: E402

LARGE = [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 4096, 14336)]
ODD = [(333, 517, 259), (100, 300, 50), (1, 1, 1), (129, 65, 17), (777, 1000, 96), (64, 2048, 4000)]


def _check(c, a, b, dtype):
    import torch
    err = relative_error(c, a, b)
    assert err < TOLERANCE[dtype], f"relative error {err:.2e}"
    ref16 = (a @ b)  # cuBLAS, same dtype
    diff = float(torch.linalg.norm((c.double() - ref16.double())) / torch.linalg.norm(ref16.double()))
    assert diff < 2 * TOLERANCE[dtype], f"differs from cuBLAS by {diff:.2e}"


VERSIONS = ["v1", "v2", "v3", "v4", "v5"]


@pytest.mark.parametrize("shape", LARGE, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("version", VERSIONS)
def test_large_fp16(version, shape):
    import gemm
    m, n, k = shape
    a, b = random_operands(m, n, k, "float16", seed=hash((version, shape)) % 10_000)
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b, version=version, out=c)
    _check(c, a, b, "float16")


@pytest.mark.parametrize("version", VERSIONS)
def test_large_bf16(version):
    import gemm
    m, n, k = 4096, 4096, 4096
    a, b = random_operands(m, n, k, "bfloat16", seed=7)
    c = poisoned(m, n, "bfloat16")
    gemm.matmul(a, b, version=version, out=c)
    _check(c, a, b, "bfloat16")


def test_default_schedule_large():
    import gemm
    a, b = random_operands(8192, 8192, 8192, "float16", seed=8)
    b = b.t().contiguous().t()   # the seed's layout: B stored [N, K]
    c = poisoned(8192, 8192, "float16")
    gemm.matmul(a, b, out=c)
    _check(c, a, b, "float16")


@pytest.mark.parametrize("shape", ODD, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("version", VERSIONS)
def test_odd_shapes(version, dtype, shape):
    import gemm
    m, n, k = shape
    a, b = random_operands(m, n, k, dtype, seed=sum(shape))
    c = poisoned(m, n, dtype)
    gemm.matmul(a, b, version=version, out=c)
    _check(c, a, b, dtype)


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 5, 6, 7])
def test_every_stage_count_that_fits(stages):
    import gemm
    m, n, k = 300, 257, 64 * 9 + 5   # K tiles: 10, more and fewer than the ring
    a, b = random_operands(m, n, k, "bfloat16", seed=stages)
    c = poisoned(m, n, "bfloat16")
    gemm.matmul(a, b, stages=stages, out=c)
    _check(c, a, b, "bfloat16")
    short = random_operands(m, n, 40, "float16", seed=100 + stages)   # K < block_k * stages
    c2 = poisoned(m, n, "float16")
    gemm.matmul(*short, stages=stages, out=c2)
    _check(c2, *short, "float16")


SPECIALIZED = {
    "v3-s1": dict(version="v3", stages=1),
    "v3-s2": dict(version="v3", stages=2),
    "v3-s6": dict(version="v3", stages=6),
    "v4-s2": dict(version="v4", stages=2),
    "v5-s2": dict(version="v5", stages=2),
    "v5-s3-inflight2": dict(version="v5", stages=3, wgmma_in_flight=2),
    "v5-128x128": dict(version="v5", block_n=128, stages=3),
    "v5-256x128": dict(version="v5", block_m=256, block_n=128, stages=3),
    "v3-64x256-bk32": dict(version="v3", block_m=64, block_n=256, block_k=32, stages=4),
}


@pytest.mark.parametrize("raster", ["row", "column", "grouped"])
@pytest.mark.parametrize("case", SPECIALIZED, ids=str)
def test_specialized_pipelines(case, raster):
    """Ring depths around the K loop's length, in-flight WGMMA groups, two consumer
    warpgroups, the raster orders, on a grid of tiles that is ragged in M and N."""
    import gemm
    from gemm import preset
    kw = dict(SPECIALIZED[case])
    sched = preset(kw.pop("version"), raster=raster, raster_group=4, **kw)   # 9 tile rows: 4+4+1
    m, n, k = 1100, 900, 64 * 5 + 7   # 6 K tiles: more and fewer than the ring
    a, b = random_operands(m, n, k, "float16", seed=len(case) + len(raster))
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b, schedule=sched, out=c)
    _check(c, a, b, "float16")
    short = random_operands(m, n, 40, "bfloat16", seed=7 + len(case))   # one K tile
    c2 = poisoned(m, n, "bfloat16")
    gemm.matmul(*short, schedule=sched, out=c2)
    _check(c2, *short, "bfloat16")


@pytest.mark.parametrize("stages,prefetch", [(6, 3), (4, 2), (3, 1)])
def test_specialized_prefetch_limit(stages, prefetch):
    """The experiment's knob (KernelConfig.prefetch_limit): the producer waits for the
    release of K tile it - prefetch; the product is unchanged."""
    import torch
    from gemm import preset
    from gemm.kernels import KernelConfig
    from gemm.launch import launch_gemm, load_kernel
    m, n, k = 700, 600, 64 * 13 + 8   # rows 16-byte aligned: launch_gemm does not copy
    a, b = random_operands(m, n, k, "float16", seed=stages * 10 + prefetch)
    loaded = load_kernel(KernelConfig(preset("v3", stages=stages), "float16", "k", "mn",
                                      prefetch_limit=prefetch))
    c = poisoned(m, n, "float16")
    launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), n, c.data_ptr(), n, m, n, k,
                torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    _check(c, a, b, "float16")


@pytest.mark.parametrize("a_t", [False, True], ids=["a", "aT"])
@pytest.mark.parametrize("b_t", [False, True], ids=["b", "bT"])
def test_specialized_transposed_views(a_t, b_t):
    import gemm
    m, n, k = 640, 384, 512 + 24
    a, b = random_operands(m, n, k, "bfloat16", seed=31 + 2 * a_t + b_t)
    a_in = a.t().contiguous().t() if a_t else a
    b_in = b.t().contiguous().t() if b_t else b
    for version in ("v3", "v5"):
        c = poisoned(m, n, "bfloat16")
        gemm.matmul(a_in, b_in, version=version, out=c)
        _check(c, a, b, "bfloat16")


@pytest.mark.parametrize("tile", [(64, 128), (128, 128), (128, 192), (64, 256)])
@pytest.mark.parametrize("block_k", [16, 32, 64])
def test_tiles(tile, block_k):
    import gemm
    from gemm import preset
    m, n, k = 1000, 700, 1111
    a, b = random_operands(m, n, k, "float16", seed=block_k + tile[0])
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b, schedule=preset("v2", block_m=tile[0], block_n=tile[1], block_k=block_k, stages=3),
                out=c)
    _check(c, a, b, "float16")


@pytest.mark.parametrize("a_t", [False, True], ids=["a", "aT"])
@pytest.mark.parametrize("b_t", [False, True], ids=["b", "bT"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_transposed_views(a_t, b_t, dtype):
    """a.T / b.T views are mapped onto WGMMA's transpose bits, not copied."""
    import gemm
    m, n, k = 640, 384, 512 + 24
    a, b = random_operands(m, n, k, dtype, seed=11 + 2 * a_t + b_t)
    a_in = a.t().contiguous().t() if a_t else a      # column-major [m, k]
    b_in = b.t().contiguous().t() if b_t else b      # [k, n] with k contiguous: the seed's A @ B.T
    c = poisoned(m, n, dtype)
    gemm.matmul(a_in, b_in, out=c)
    _check(c, a, b, dtype)


def test_unaligned_rows_are_copied():
    """K = 333: rows of 666 bytes are not 16-byte aligned; matmul copies them."""
    import gemm
    a, b = random_operands(200, 136, 333, "float16", seed=5)
    c = gemm.matmul(a, b)
    _check(c, a, b, "float16")


def test_cupy_and_numpy_in_same_kind_out():
    import cupy
    import numpy as np
    import gemm
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((300, 200)) / 200 ** 0.25).astype(np.float16)
    b = (rng.standard_normal((200, 100)) / 200 ** 0.25).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    c_np = gemm.matmul(a, b)
    assert isinstance(c_np, np.ndarray) and c_np.dtype == np.float16
    c_cp = gemm.matmul(cupy.asarray(a), cupy.asarray(b), stages=3)
    assert isinstance(c_cp, cupy.ndarray) and c_cp.dtype == cupy.float16
    for c in (c_np, c_cp.get()):
        err = np.linalg.norm(c.astype(np.float64) - want) / np.linalg.norm(want)
        assert err < TOLERANCE["float16"]


def test_second_call_does_not_compile():
    import gemm
    from gemm import compile as gcompile
    a, b = random_operands(256, 256, 256, "float16", seed=1)
    gemm.matmul(a, b, stages=2)
    before = gcompile.compile_kernel.cache_info().misses
    gemm.matmul(a, b, stages=2)
    assert gcompile.compile_kernel.cache_info().misses == before


def test_k_zero_gives_zeros():
    import torch
    import gemm
    a = torch.ones((5, 0), dtype=torch.float16, device="cuda")
    b = torch.ones((0, 7), dtype=torch.float16, device="cuda")
    assert (gemm.matmul(a, b) == 0).all()


@pytest.mark.parametrize("stages", [2, 3])
def test_tutorial_phase_array_in_local_memory(stages):
    import gemm
    from gemm import preset
    m, n, k = 500, 300, 64 * 7 + 9
    a, b = random_operands(m, n, k, "float16", seed=40 + stages)
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b, schedule=preset("v2", stages=stages, phase_storage="local"), out=c)
    _check(c, a, b, "float16")


@pytest.mark.parametrize("version", ["v2", "v5"])
def test_clock_probe_records_every_cta(version):
    import cupy
    import numpy as np
    import torch
    from gemm import preset
    from gemm.kernels import KernelConfig
    from gemm.kernels.tiles import PROBE_WORDS
    from gemm.launch import launch_gemm, load_kernel
    m, n, k = 1024, 768, 2048
    a, b = random_operands(m, n, k, "float16", seed=3)
    loaded = load_kernel(KernelConfig(preset(version), "float16", "k", "mn", clock_probe=True))
    gx, gy, _ = loaded.config.grid(m, n)
    probe = cupy.zeros((gx * gy, PROBE_WORDS), dtype=cupy.uint64)
    c = poisoned(m, n, "float16")
    launch_gemm(loaded, a.data_ptr(), k, b.data_ptr(), n, c.data_ptr(), n, m, n, k,
                torch.cuda.current_stream().cuda_stream, probe.data.ptr)
    torch.cuda.synchronize()
    _check(c, a, b, "float16")
    rec = probe.get().astype(np.float64)
    ghz = (rec[:, 2] - rec[:, 0]) / (rec[:, 3] - rec[:, 1])
    assert (rec[:, 3] > rec[:, 1]).all()
    assert 0.3 < np.median(ghz) < 2.5, np.median(ghz)
    assert (rec[:, 4] < 132).all()


def test_probed_launcher_keeps_each_launchs_stamps_apart():
    """experiments/probe.py with launches=3: launch i writes its CTAs' stamps to slot i only,
    each later launch starting after the one before; an unknown slot is refused."""
    import numpy as np
    import torch
    from gemm import preset
    from gemm.kernels import KernelConfig
    from experiments.probe import probed_launcher
    m, n, k = 1024, 768, 2048
    a, b = random_operands(m, n, k, "float16", seed=5)
    b = b.t().contiguous().t()
    run, probe, loaded = probed_launcher(KernelConfig(preset("v2"), "float16", "k", "k", clock_probe=True), m, n, k, 3)
    ctas = loaded.config.grid(m, n)[0]
    run(a, b, 0)
    torch.cuda.synchronize()
    assert (probe.get()[ctas:] == 0).all()  # slots 1 and 2 untouched
    run(a, b, 1)
    run(a, b, 2)
    torch.cuda.synchronize()
    rec = probe.get().reshape(3, ctas, -1).astype(np.int64)
    assert (rec[..., 3] > rec[..., 1]).all()
    assert rec[0, :, 3].max() <= rec[1, :, 1].min() and rec[1, :, 3].max() <= rec[2, :, 1].min()
    with pytest.raises(IndexError, match="slot 3"):
        run(a, b, 3)


@pytest.mark.parametrize("offset,pitch,source", [(0, 4104, "model"), (8, 4160, "model"), (16, 4160, "table")],
                         ids=["pitch", "offset", "sector"])
def test_lines_off_128_bytes_are_read_in_place_and_weighed(offset, pitch, source):
    """Operands whose lines start off 128-byte boundaries (a pitch of 4104 elements, or a view
    starting 8 or 16 elements into 128-byte lines) are read in place, right to every element; the
    dispatcher knows where their lines start and, at this size, ranks with the model where they
    start inside a 32-byte sector, keeps the table's choice where they start on one."""
    import torch

    import gemm
    m, n, k = 4096, 4096, 4096
    g = torch.Generator(device="cuda").manual_seed(3)
    a_buf = (torch.randn(m, pitch, generator=g, device="cuda") * k ** -0.25).half()
    w_buf = (torch.randn(n, pitch, generator=g, device="cuda") * k ** -0.25).half()
    a, b = a_buf[:, offset:offset + k], w_buf[:, offset:offset + k].t()
    plan = gemm.plan(a, b)
    assert plan.source == source, plan
    assert source == "table" or "lines off 128 bytes" in plan.detail, plan
    out = poisoned(m, n, "float16")
    c = gemm.matmul(a, b, out=out)
    _check(c, a, b, "float16")
    assert gemm.plan(a.contiguous(), b.t().contiguous().t()).source == "table"   # the same, aligned
