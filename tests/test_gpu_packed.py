"""Weights packed for bulk copies (gemm.pack_weights), on the GPU: `matmul(a, pack_weights(b))`
against a float64 reference and, bit for bit, against `matmul(a, b)` on the same schedule (the
same shared-memory image, the same WGMMAs), over edge shapes (N and K not multiples of the
boxes, one row, fewer tiles than SMs), both dtypes, both array kinds, swapped and plain tiles,
clusters that multicast the weights, a lead, a preload, the dispatcher's own choice, batches,
replayed calls and a chain of dependent launches."""
import pytest

pytestmark = pytest.mark.gpu

from experiments.reference import TOLERANCE  # noqa: E402
from gemm.schedule import from_spec  # noqa: E402

DECODE = "v7:block_m=64,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,"
SCHEDULES = {
    # the decode down rows' pairs: swap-AB, the weights the kernel's A, K split over a cluster
    "pair16-lead": from_spec(DECODE + "block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,epilogue=direct,"
                             "split_cluster=true,split_lead=2"),
    "pair64-lead": from_spec(DECODE + "block_n=64,stages=8,split_k=2,swap_ab=true,epilogue=direct,"
                             "split_cluster=true,split_lead=4"),
    "pair16-preload": from_spec(DECODE + "block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,epilogue=direct,"
                                "split_cluster=true,preload=b"),
    # the weights the kernel's B: 256 rows whole; 128 rows, multicast to a pair in 64-row halves
    "v7": from_spec("v7"),
    "v7-cluster": from_spec("v7:block_n=128,stages=4,cluster_m=2"),
    "v7-split-k": from_spec(DECODE + "block_n=128,stages=8,split_k=4"),
}
SHAPES = [(1, 64, 64), (16, 200, 1000), (64, 4096, 1088), (128, 300, 4160), (300, 513, 777)]


def _operands(m, n, k, dtype, seed, kind="torch"):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).to(getattr(torch, dtype))
    w = (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).to(getattr(torch, dtype))
    if kind == "cupy":
        import cupy
        return cupy.from_dlpack(a), cupy.from_dlpack(w).T
    return a, w.T


def _check(gemm, a, b, packed, schedule, dtype):
    """The packed product: within tolerance of float64, and the unpacked one's bits. A torch call
    writes into a NaN-poisoned `out`; a cupy call returns a fresh array."""
    import torch
    outs = []
    for operand in (b, packed):
        if isinstance(a, torch.Tensor):
            out = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=a.dtype)
            gemm.matmul(a, operand, schedule=schedule, out=out)
        else:
            out = torch.from_dlpack(gemm.matmul(a, operand, schedule=schedule))
        outs.append(out)
    torch.cuda.synchronize()
    a64, b64 = (torch.from_dlpack(x).double() if not isinstance(x, torch.Tensor) else x.double() for x in (a, b))
    ref = a64 @ b64
    plain, got = outs
    assert torch.isfinite(got).all()
    err = float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref))
    assert err < TOLERANCE[dtype], err
    assert torch.equal(got.view(torch.int16), plain.view(torch.int16))


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_packed_weights_match_the_unpacked_product_bit_for_bit(name, m, n, k):
    import gemm
    schedule = SCHEDULES[name]
    if schedule.swap_ab and m > schedule.block_n:
        pytest.skip("swap-AB holds M in one tile's narrow side")
    a, b = _operands(m, n, k, "float16", seed=m + n + k)
    _check(gemm, a, b, gemm.pack_weights(b), schedule, "float16")


@pytest.mark.parametrize("kind,dtype", [("torch", "bfloat16"), ("cupy", "float16")])
def test_both_kinds_and_dtypes(kind, dtype):
    import gemm
    a, b = _operands(16, 704, 2112, dtype, seed=3, kind=kind)
    packed = gemm.pack_weights(b)
    assert packed.kind == kind and packed.shape == (2112, 704)
    _check(gemm, a, b, packed, SCHEDULES["pair16-lead"], dtype)


@pytest.mark.parametrize("m", [1, 16, 64, 128, 300])
def test_the_dispatchers_choice_reads_packed_weights(m):
    """No schedule named: the plan with packed weights is one that can read them."""
    import torch

    import gemm
    from gemm.packed import packed_gaps_of
    a, b = _operands(m, 4096, 11008, "float16", seed=m)
    packed = gemm.pack_weights(b)
    plan = gemm.plan(a, packed)
    assert packed_gaps_of(plan.schedule) == []
    got = gemm.matmul(a, packed)
    ref = a.double() @ b.double()
    err = float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref))
    assert err < TOLERANCE["float16"], (plan, err)


def test_a_repeated_call_reads_the_new_activations():
    """The second call replays the first's prepared launch: it must still read `a` as it is now,
    bit for bit what a fresh launch on a copy of it computes."""
    import torch

    import gemm
    a, b = _operands(16, 4096, 4096, "float16", seed=5)
    packed = gemm.pack_weights(b)
    schedule = SCHEDULES["pair16-lead"]
    first = gemm.matmul(a, packed, schedule=schedule).clone()
    a.mul_(-2)
    second = gemm.matmul(a, packed, schedule=schedule)
    fresh = gemm.matmul(a.clone(), packed, schedule=schedule)     # another address: not a replay
    torch.cuda.synchronize()
    assert not torch.equal(second, first)
    assert torch.equal(second.view(torch.int16), fresh.view(torch.int16))


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_a_batch_against_packed_weights(layout):
    """[B, M, K] @ packed [K, N]: rows that run on fold into one product; a batch whose matrices
    do not (a transposed view of each) runs as a batch against the one packed B."""
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(7)
    a = torch.randn(3, 40, 512, generator=g, device="cuda").half()
    if layout == "strided":
        a = torch.randn(3, 512, 40, generator=g, device="cuda").half().transpose(1, 2)
    w = (torch.randn(320, 512, generator=g, device="cuda") * 512 ** -0.5).half()
    got = gemm.matmul(a, gemm.pack_weights(w.T), schedule=SCHEDULES["v7"])
    ref = a.double() @ w.T.double()
    assert got.shape == (3, 40, 320)
    assert float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref)) < TOLERANCE["float16"]


def test_preloaded_packed_weights_in_a_chain():
    """x_{i+1} = x_i @ W_i with packed weights and weights="b": each kernel copies its packed
    W_i before the kernel ahead (which writes x_i) has ended."""
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(11)
    widths = [8192, 1024, 1024, 768]
    x = torch.randn(16, widths[0], generator=g, device="cuda").half()
    ws = [(torch.randn(i, o, generator=g, device="cuda") * i ** -0.5).half() for i, o in zip(widths, widths[1:])]
    packs = [gemm.pack_weights(w) for w in ws]
    outs = [torch.full((16, w.shape[1]), float("nan"), device="cuda", dtype=torch.half) for w in ws]
    inputs = [x] + outs[:-1]
    torch.cuda.synchronize()
    for _ in range(2):
        for inp, p, out in zip(inputs, packs, outs):
            gemm.matmul(inp, p, schedule=SCHEDULES["pair16-lead"], out=out, weights="b")
    torch.cuda.synchronize()
    for inp, w, out in zip(inputs, ws, outs):
        ref = inp.double() @ w.double()
        assert float(torch.linalg.norm(out.double() - ref) / torch.linalg.norm(ref)) < TOLERANCE["float16"]


def test_a_schedule_that_cannot_read_packed_weights_is_refused_before_launch():
    import torch

    import gemm
    from gemm.schedule import ScheduleError
    a, b = _operands(16, 256, 256, "float16", seed=1)
    out = torch.full((16, 256), float("nan"), device="cuda", dtype=torch.half)
    narrow = from_spec("v7:block_n=16,stages=10,producer_registers=0,consumer_registers=0,epilogue=direct")
    with pytest.raises(ScheduleError, match="packed"):
        gemm.matmul(a, gemm.pack_weights(b), schedule=narrow, out=out)
    assert torch.isnan(out).all()
