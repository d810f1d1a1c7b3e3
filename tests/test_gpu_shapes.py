"""Every shape a user may pass, on the GPU: a randomized grid (M, N, K from 1 to a few
thousand, batches with and without broadcasting, both dtypes, every majorness, strided and
offset views) against a float64 reference; split-K's bits across runs; CUDA-graph capture
and replay; an output that overlaps an input; the autotune cache on the device."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from experiments.reference import TOLERANCE  # noqa: E402
from gemm.schedule import from_spec  # noqa: E402

SCHEDULES = {
    "v7": from_spec("v7"),
    "v7-stream-k": from_spec("v7:stream_k=true"),
    "64x128-splitk4": from_spec("v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,"
                                "consumer_registers=0,stages=8,split_k=4"),
}


def _draws(count, seed):
    """Deterministic random cases: (m, n, k, a_batch, b_batch, dtype, a_order, b_order, offset)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m, n, k = (int(round(float(np.exp(rng.uniform(0, np.log(3000)))))) for _ in range(3))
        batch = int(rng.choice([1, 1, 2, 3, 8]))
        a_batch, b_batch = [(batch, batch), (batch, 0), (0, batch), (1, batch), (0, 0)][rng.integers(5)]
        yield (m, n, k, a_batch, b_batch, str(rng.choice(["float16", "bfloat16"])),
               str(rng.choice(["row", "col"])), str(rng.choice(["row", "col"])), bool(rng.integers(2)))


def _operand(rows, cols, batch, dtype, order, offset, g):
    """A [batch?, rows, cols] operand stored row- or column-major, optionally as a view at an
    offset inside a larger buffer (so its rows need not be 16-byte aligned)."""
    import torch
    lead = (batch,) if batch else ()
    scale = 1.0
    if order == "row":
        base = torch.randn(lead + (rows + offset, cols + offset), generator=g, device="cuda") * scale
        x = base[..., offset:, offset:]
    else:
        base = torch.randn(lead + (cols + offset, rows + offset), generator=g, device="cuda") * scale
        x = base[..., offset:, offset:].transpose(-1, -2)
    return x.to(getattr(torch, dtype))


def _reference(a, b):
    return (a.double() @ b.double())


def _rel(c, ref):
    import torch
    if not torch.isfinite(c.double()).all():
        return float("inf")
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("seed", range(3))
def test_random_shapes(name, seed):
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(seed)
    for m, n, k, a_batch, b_batch, dtype, a_order, b_order, offset in _draws(6, seed * 7 + len(name)):
        a = _operand(m, k, a_batch, dtype, a_order, int(offset), g) * (k ** -0.5)
        b = _operand(k, n, b_batch, dtype, b_order, int(offset), g)
        a, b = a.to(getattr(torch, dtype)), b.to(getattr(torch, dtype))
        ref = _reference(a, b)
        c = torch.full(ref.shape, float("nan"), dtype=a.dtype, device="cuda")
        gemm.matmul(a, b, schedule=SCHEDULES[name], out=c)
        err = _rel(c, ref)
        assert err < TOLERANCE[dtype], (m, n, k, a_batch, b_batch, dtype, a_order, b_order, offset, err)


def test_batched_products_broadcast_like_numpy():
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(1)
    x = lambda *s: torch.randn(*s, generator=g, device="cuda").half()  # noqa: E731
    cases = [(x(4, 300, 200), x(200, 130)),        # a linear layer over a batch: one product of 1200 rows
             (x(300, 200), x(4, 200, 130)),        # one A against a batch of B
             (x(4, 300, 200), x(4, 200, 130)),     # a batch of both
             (x(1, 300, 200), x(4, 200, 130)),     # a batch of one broadcast
             (x(4, 300, 200)[:, :, :136], x(4, 136, 130))]   # strided batch matrices (rows 400 B apart)
    for a, b in cases:
        want = a.double() @ b.double()
        got = gemm.matmul(a, b)
        assert tuple(got.shape) == tuple(want.shape)
        assert _rel(got, want) < TOLERANCE["float16"], (tuple(a.shape), tuple(b.shape))


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_split_k_bits_reproducible(name):
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randn(64, 4096, generator=g, device="cuda").half()
    b = torch.randn(4096, 11008, generator=g, device="cuda").half()
    first = gemm.matmul(a, b, schedule=SCHEDULES[name])
    for _ in range(5):
        assert torch.equal(gemm.matmul(a, b, schedule=SCHEDULES[name]), first)


def test_cuda_graph_capture_and_replay():
    import torch

    import gemm
    a = torch.randn(512, 1024, device="cuda").half()
    b = torch.randn(1024, 768, device="cuda").half()
    c = torch.empty(512, 768, device="cuda", dtype=torch.half)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gemm.matmul(a, b, out=c)             # warm: the kernel loaded, the tensor maps made
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            gemm.matmul(a, b, out=c)
    for _ in range(2):
        a.copy_(torch.randn_like(a))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert _rel(c, a.double() @ b.double()) < TOLERANCE["float16"]


def test_output_overlapping_an_input_is_refused():
    import torch

    import gemm
    a = torch.randn(256, 256, device="cuda").half()
    with pytest.raises(ValueError, match="out overlaps an input"):
        gemm.matmul(a, a, out=a)


def test_autotune_keeps_the_fastest_on_disk(tmp_path, monkeypatch):
    import torch

    import gemm
    from gemm import api
    monkeypatch.setenv("HOPPER_GEMM_CACHE", str(tmp_path))
    api._dispatch.cache_clear()
    a = torch.randn(1000, 2000, device="cuda").half()
    b = torch.randn(2000, 3000, device="cuda").half()
    plan = gemm.autotune(a, b, top=2)
    assert plan.source == "autotune"
    assert list((tmp_path / "autotune").glob("*.json"))
    api._dispatch.cache_clear()                     # a new process would read it back
    assert gemm.plan(a, b).source == "autotune" and gemm.plan(a, b).schedule == plan.schedule
    assert _rel(gemm.matmul(a, b), a.double() @ b.double()) < TOLERANCE["float16"]
    api._dispatch.cache_clear()


def test_autotune_times_the_device_not_the_host():
    """Calls held until the host has queued them take the kernel's time back to back, however
    slow the host: here 200 us of host a call around a kernel of a few."""
    import time

    import torch

    import gemm
    from gemm.api import _stream_handle
    from gemm.dispatch.autotune import back_to_back_ms
    a = torch.randn(256, 512, device="cuda").half()
    b = torch.randn(512, 256, device="cuda").half()

    def slow_host_call():
        time.sleep(200e-6)
        gemm.matmul(a, b)
    ms = back_to_back_ms(slow_host_call, _stream_handle("torch", torch.cuda.current_device()))
    assert 0 < ms < 0.05


def test_a_repeated_call_replays_its_launch_and_stays_right():
    """The second call with the same operands runs the prepared launch: a fresh output each
    time (or the same out=), and the product of the operands' values at that moment."""
    import torch

    import gemm
    from gemm import api
    g = torch.Generator(device="cuda").manual_seed(4)
    # K = 904: rows of 1808 bytes, which TMA reads in place (a K whose rows are not a multiple
    # of 16 bytes is copied first, and a call with copies is not replayed)
    a = torch.randn(700, 904, generator=g, device="cuda").half()
    b = torch.randn(904, 500, generator=g, device="cuda").half().t().contiguous().t()
    first = gemm.matmul(a, b)
    assert api._signature(a, b, None, None, None, None) in api._REPEATS
    a.copy_(torch.randn(700, 904, generator=g, device="cuda").half())
    second = gemm.matmul(a, b)
    assert second.data_ptr() != first.data_ptr() or not torch.equal(first, second)
    assert _rel(second, a.double() @ b.double()) < TOLERANCE["float16"]
    out = torch.full((700, 500), float("nan"), device="cuda", dtype=torch.half)
    for _ in range(2):
        assert gemm.matmul(a, b, out=out) is out
        assert _rel(out, a.double() @ b.double()) < TOLERANCE["float16"]
