"""Each PTX primitive on the GPU against a NumPy/PyTorch reference.

- TMA load: the box in shared memory equals its source slice, swizzled as the
  hardware's Swizzle<B,4,3> pattern says, with zeros outside the tensor.
- TMA store: a shared-memory box lands at its coordinates; nothing else is written.
- mbarrier: 128 arrivals complete a phase, twice (phase parity flips).
- WGMMA: one K tile through the V1 kernel equals A @ B exactly (small integer
  inputs, so every product and sum is exact), for each N, dtype, swizzle and
  majorness of A and B.
"""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from experiments.reference import swizzle_offsets  # noqa: E402

BOX_BYTES = 16384


def _kernels():
    from numba import cuda, uint8, uint64
    from gemm import ptx

    @cuda.jit
    def tma_load_probe(tmap, out, x0, y0, nbytes):
        smem = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
        bars = cuda.shared.array(1, uint64, alignment=8)
        base = ptx.shared_base(smem)
        bar = ptx.shared_base(bars)
        tid = cuda.threadIdx.x
        if tid == 0:
            ptx.mbarrier_init(bar, 1)
            ptx.fence_mbarrier_init()
        cuda.syncthreads()
        if tid == 0:
            ptx.fence_tensormap_acquire(tmap)
            ptx.mbarrier_arrive_expect_tx(bar, nbytes)
            ptx.tma_load_2d(base, tmap, x0, y0, bar)
        ptx.mbarrier_wait(bar, 0)
        for i in range(tid, nbytes // 4, cuda.blockDim.x):
            out[i] = ptx.ld_shared_u32(base + 4 * i)

    @cuda.jit
    def tma_store_probe(tmap, words, x0, y0, nbytes):
        smem = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
        base = ptx.shared_base(smem)
        tid = cuda.threadIdx.x
        for i in range(tid, nbytes // 4, cuda.blockDim.x):
            ptx.st_shared_u32(base + 4 * i, words[i])
        ptx.fence_proxy_async_shared()
        cuda.syncthreads()
        if tid == 0:
            ptx.fence_tensormap_acquire(tmap)
            ptx.tma_store_2d(tmap, x0, y0, base)
            ptx.bulk_commit_group()
            ptx.bulk_wait_group_read(0)

    @cuda.jit
    def mbarrier_probe(out):
        bars = cuda.shared.array(1, uint64, alignment=8)
        bar = ptx.shared_base(bars)
        tid = cuda.threadIdx.x
        if tid == 0:
            ptx.mbarrier_init(bar, cuda.blockDim.x)
            ptx.fence_mbarrier_init()
        cuda.syncthreads()
        for phase in range(2):
            ptx.mbarrier_arrive(bar)
            ptx.mbarrier_wait(bar, phase)
            out[phase, tid] = 1 + phase
        out[2, tid] = ptx.elect_one()

    return tma_load_probe, tma_store_probe, mbarrier_probe


@pytest.fixture(scope="module")
def probes():
    return _kernels()


def _tmap(arr_u16, box, swizzle, dtype="float16"):
    from gemm.tensormap import cache
    rows, cols = arr_u16.shape
    return cache.get(arr_u16.data.ptr, dtype, cols, rows, arr_u16.strides[0], box, swizzle)


@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
@pytest.mark.parametrize("edge", [False, True], ids=["inside", "past-the-edge"])
def test_tma_load_tile_equals_source_slice(probes, swizzle, edge):
    import cupy
    from gemm.tensormap import cache
    tma_load_probe = probes[0]
    rng = np.random.default_rng(swizzle + 7 * edge)
    inner = (swizzle or 16) // 2          # one swizzle row of elements
    outer = 64
    rows, cols, pitch = 300, 196, 200     # a pitched [300, 196] view of a [300, 200] buffer
    src = rng.integers(1, 60000, size=(rows, pitch), dtype=np.uint16)  # no zeros
    # box corners are 16-byte aligned, as in the kernels; past-the-edge crosses col 196 and row 300
    x0, y0 = ((cols - inner // 2) // 8 * 8, rows - 16) if edge else (24, 40)
    dev = cupy.asarray(src)
    nbytes = inner * outer * 2
    out = cupy.full(nbytes // 4, 0xDEADBEEF, dtype=cupy.uint32)
    tmap = cache.get(dev.data.ptr, "float16", cols, rows, pitch * 2, (inner, outer), swizzle)
    tma_load_probe[1, 128](tmap, out, x0, y0, nbytes)
    got = out.get().view(np.uint8)
    want_box = np.zeros((outer, inner), np.uint16)
    part = src[y0:min(y0 + outer, rows), x0:min(x0 + inner, cols)]
    want_box[:part.shape[0], :part.shape[1]] = part
    linear = want_box.view(np.uint8).reshape(-1)
    want = np.empty_like(linear)
    want[swizzle_offsets(nbytes, swizzle)] = linear
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("edge", [False, True], ids=["inside", "past-the-edge"])
def test_tma_store_writes_box_only(probes, edge):
    import cupy
    tma_store_probe = probes[1]
    rng = np.random.default_rng(3 + edge)
    inner, outer = 64, 32
    box = rng.integers(1, 60000, size=(outer, inner), dtype=np.uint16)
    dst = cupy.full((100, 96), 0x7E00, dtype=cupy.uint16)  # fp16 NaN everywhere
    x0, y0 = (64, 80) if edge else (8, 20)
    words = cupy.asarray(box.view(np.uint32).reshape(-1))
    tma_store_probe[1, 128](_tmap(dst, (inner, outer), 0), words, x0, y0, box.nbytes)
    cupy.cuda.Device().synchronize()
    got = dst.get()
    want = np.full((100, 96), 0x7E00, np.uint16)
    region = want[y0:y0 + outer, x0:x0 + inner]
    region[...] = box[:region.shape[0], :region.shape[1]]
    np.testing.assert_array_equal(got, want)


def test_mbarrier_phases_complete_with_all_arrivals(probes):
    import cupy
    mbarrier_probe = probes[2]
    out = cupy.zeros((3, 128), dtype=cupy.int32)
    mbarrier_probe[1, 128](out)
    got = out.get()
    assert (got[0] == 1).all() and (got[1] == 2).all()
    assert got[2].reshape(4, 32).sum(axis=1).tolist() == [1, 1, 1, 1]  # elect.sync: one lane a warp


# (major, swizzle) of an operand; K-major rows are 2*block_k bytes, so the K tile
# is 64 wide to allow every swizzle.
LAYOUTS = [("k", 128), ("k", 64), ("k", 32), ("k", 0), ("mn", 128), ("mn", 64), ("mn", 32), ("mn", 0)]


def _one_k_tile(n, dtype, a_layout, b_layout, block_k=64, seed=0):
    """Run the V1 kernel on a 64 x n x block_k problem (one K tile) with small
    integer inputs and return (ours, exact reference) as float64 arrays."""
    import torch
    from gemm.launch import launch_gemm
    from gemm.schedule import preset

    m, k = 64, block_k
    sched = preset("v1", block_m=64, block_n=n, block_k=block_k)
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = getattr(torch, dtype)
    a = torch.randint(-3, 4, (m, k), generator=g, device="cuda").to(dt)
    b = torch.randint(-3, 4, (k, n), generator=g, device="cuda").to(dt)
    a[0, 0], b[0, 0] = 1, 1  # never all zeros
    (am, asw), (bm, bsw) = a_layout, b_layout
    a_store = a.contiguous() if am == "k" else a.t().contiguous()   # [M,K] or [K,M]
    b_store = b.t().contiguous() if bm == "k" else b.contiguous()   # [N,K] or [K,N]
    from gemm.kernels import KernelConfig
    from gemm.launch import load_kernel
    loaded = load_kernel(KernelConfig(sched, dtype, am, bm, asw, bsw))
    c = torch.full((m, n), float("nan"), dtype=dt, device="cuda")
    launch_gemm(loaded, a_store.data_ptr(), a_store.stride(0), b_store.data_ptr(), b_store.stride(0),
                c.data_ptr(), n, m, n, k, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return c.double().cpu().numpy(), (a.double() @ b.double()).cpu().numpy()


@pytest.mark.parametrize("n", [64, 128, 192, 256])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_each_n_and_dtype(n, dtype):
    got, want = _one_k_tile(n, dtype, ("k", 128), ("k", 128), seed=n)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layout", LAYOUTS, ids=[f"{m}{s}" for m, s in LAYOUTS])
@pytest.mark.parametrize("operand", ["A", "B"])
def test_wgmma_each_swizzle_and_major(layout, operand):
    other = ("k", 128)
    a_layout, b_layout = (layout, other) if operand == "A" else (other, layout)
    got, want = _one_k_tile(128, "float16", a_layout, b_layout, seed=hash(layout) % 1000)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a_layout,b_layout", [(("k", 32), ("mn", 128)), (("mn", 64), ("k", 0))])
def test_single_wgmma_k16(a_layout, b_layout):
    """One wgmma.mma_async instruction: a 64 x 128 x 16 tile."""
    got, want = _one_k_tile(128, "bfloat16", a_layout, b_layout, block_k=16)
    np.testing.assert_array_equal(got, want)
