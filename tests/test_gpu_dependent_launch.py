"""Kernels launched as programmatic dependents (Schedule.dependent_launch, gemm/ptx/grid.py), on
the GPU: each call may start while the one before it on the stream ends, so every test here
launches calls back to back with no synchronisation between them and checks that a call saw
everything the call before it wrote: a chain of products each reading the last one's output,
two calls writing one output, split-K's counters shared by consecutive launches, an input that
a torch kernel (not a dependent launch) wrote just before, and a chain captured in a CUDA graph.
With `weights=` the kernels load the named operand's first K tiles before waiting for the kernel
ahead (Schedule.preload): the same chains, each product's weights constant and its other operand
the last one's output."""
import inspect

import pytest

pytestmark = pytest.mark.gpu

from experiments.reference import TOLERANCE  # noqa: E402
from gemm.schedule import from_spec  # noqa: E402

DECODE = "v7:block_m=64,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,"
SCHEDULES = {
    "v7": from_spec("v7"),
    "split-k-workspace": from_spec(DECODE + "block_n=128,stages=8,split_k=4"),
    "split-cluster-swap-ab": from_spec(DECODE + "block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
                                       "epilogue=direct,split_cluster=true"),
    "stream-k": from_spec("v7:stream_k=true"),
    "v7-cluster": from_spec("v7:block_n=192,stages=4,cluster_m=2"),
}
# the decode pair with a lead for its first CTA and the cluster's wait held (split_lead, defer_cluster_wait)
LEAD_PAIR = from_spec(DECODE + "block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,epilogue=direct,"
                      "split_cluster=true,split_lead=2,defer_cluster_wait=true")


def _rel(c, ref):
    import torch
    if not torch.isfinite(c.double()).all():
        return float("inf")
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


def _chain(m, widths, seed):
    """x0 [m, widths[0]] and weights W_i [widths[i], widths[i+1]], scaled so every product has
    entries of unit size."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, widths[0], generator=g, device="cuda").half()
    ws = [(torch.randn(a, b, generator=g, device="cuda") * a ** -0.5).half() for a, b in zip(widths, widths[1:])]
    return x, ws


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("m", [16, 300])
def test_each_call_reads_the_output_of_the_call_before(name, m):
    """x_{i+1} = x_i @ W_i, all launched before any is checked: the first has a long K (its
    kernel still runs when the next one starts), the rest read what the one before wrote."""
    import torch

    import gemm
    schedule = SCHEDULES[name]
    assert schedule.dependent_launch
    x, ws = _chain(m, [8192, 1024, 1024, 1024, 768], seed=m)
    outs = [torch.full((m, w.shape[1]), float("nan"), device="cuda", dtype=torch.half) for w in ws]
    torch.cuda.synchronize()
    inputs = [x] + outs[:-1]
    for inp, w, out in zip(inputs, ws, outs):
        gemm.matmul(inp, w, schedule=schedule, out=out)
    torch.cuda.synchronize()
    for i, (inp, w, out) in enumerate(zip(inputs, ws, outs)):
        assert _rel(out, inp.double() @ w.double()) < TOLERANCE["float16"], (name, m, i)


@pytest.fixture
def launch_flags(monkeypatch):
    """The `flags` argument of every GEMM launch made while the test runs."""
    import gemm.launch
    seen, launch = [], gemm.launch.launch

    def recording(*args, **kwargs):
        seen.append(inspect.signature(launch).bind(*args, **kwargs).arguments.get("flags", 0))
        return launch(*args, **kwargs)
    monkeypatch.setattr(gemm.launch, "launch", recording)
    return seen


# chains whose every product's grid fills the GPU: each CTA lets the next kernel in as soon as its
# producer has issued its last load (FLAG_EARLY_TRIGGER), while its consumers still compute and store
FULL_GRID_CHAINS = {
    "v7": (2048, [4096, 4096, 4096, 2048]),
    "stream-k": (2048, [4096, 4096, 4096, 2048]),
    "v7-cluster": (2048, [4096, 4096, 4096, 2048]),
    "split-k-workspace": (64, [4096, 4096, 4096, 4096]),
    "split-cluster-swap-ab": (16, [11008, 4096, 11008, 4096]),
}


@pytest.mark.parametrize("name", list(FULL_GRID_CHAINS))
def test_a_chain_of_full_grids_lets_each_next_kernel_in_early(name, launch_flags):
    import torch

    import gemm
    from gemm.kernels import FLAG_EARLY_TRIGGER
    schedule = SCHEDULES[name]
    m, widths = FULL_GRID_CHAINS[name]
    x, ws = _chain(m, widths, seed=13)
    outs = [torch.full((m, w.shape[1]), float("nan"), device="cuda", dtype=torch.half) for w in ws]
    torch.cuda.synchronize()
    inputs = [x] + outs[:-1]
    for _ in range(2):   # twice: the second chain's first call follows the first chain's last
        for inp, w, out in zip(inputs, ws, outs):
            gemm.matmul(inp, w, schedule=schedule, out=out)
    torch.cuda.synchronize()
    assert launch_flags and all(f & FLAG_EARLY_TRIGGER for f in launch_flags), (name, launch_flags)
    for i, (inp, w, out) in enumerate(zip(inputs, ws, outs)):
        assert _rel(out, inp.double() @ w.double()) < TOLERANCE["float16"], (name, i)


def test_a_grid_smaller_than_the_gpu_keeps_the_late_trigger(launch_flags):
    import torch

    import gemm
    from gemm.kernels import FLAG_EARLY_TRIGGER
    a = torch.randn(256, 1024, device="cuda").half()
    b = torch.randn(1024, 1024, device="cuda").half()
    gemm.matmul(a, b, schedule=SCHEDULES["v7"])   # 2 x 4 tiles of 128x256
    assert launch_flags and not any(f & FLAG_EARLY_TRIGGER for f in launch_flags)


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_the_later_of_two_calls_into_one_output_wins(name):
    import torch

    import gemm
    schedule = SCHEDULES[name]
    g = torch.Generator(device="cuda").manual_seed(5)
    a1 = torch.randn(256, 8192, generator=g, device="cuda").half() * 8192 ** -0.5
    a2 = torch.randn(256, 512, generator=g, device="cuda").half() * 512 ** -0.5
    b1 = torch.randn(8192, 1024, generator=g, device="cuda").half()
    b2 = torch.randn(512, 1024, generator=g, device="cuda").half()
    out = torch.full((256, 1024), float("nan"), device="cuda", dtype=torch.half)
    for _ in range(3):
        gemm.matmul(a1, b1, schedule=schedule, out=out)   # long
        gemm.matmul(a2, b2, schedule=schedule, out=out)   # short: it must not finish first
    torch.cuda.synchronize()
    assert _rel(out, a2.double() @ b2.double()) < TOLERANCE["float16"], name


def test_split_k_counters_between_consecutive_launches():
    """Consecutive launches of one split-K kernel share its workspace and tile counters: twenty
    of them back to back, each on its own inputs, every output checked."""
    import torch

    import gemm
    schedule = SCHEDULES["split-k-workspace"]
    g = torch.Generator(device="cuda").manual_seed(7)
    cases = [(torch.randn(64, 4096, generator=g, device="cuda").half() * 64 ** -1,
              torch.randn(4096, 2048, generator=g, device="cuda").half()) for _ in range(20)]
    outs = [torch.full((64, 2048), float("nan"), device="cuda", dtype=torch.half) for _ in cases]
    torch.cuda.synchronize()
    for (a, b), out in zip(cases, outs):
        gemm.matmul(a, b, schedule=schedule, out=out)
    torch.cuda.synchronize()
    for i, ((a, b), out) in enumerate(zip(cases, outs)):
        assert _rel(out, a.double() @ b.double()) < TOLERANCE["float16"], i


@pytest.mark.parametrize("name", ["v7", "split-cluster-swap-ab"])
def test_an_input_a_torch_kernel_just_wrote(name):
    """The kernel before a dependent launch need not be ours: a torch copy writes A (and a
    fill poisons C) right before each call."""
    import torch

    import gemm
    schedule = SCHEDULES[name]
    g = torch.Generator(device="cuda").manual_seed(9)
    b = torch.randn(4096, 2048, generator=g, device="cuda").half()
    a = torch.empty(32, 4096, device="cuda", dtype=torch.half)
    out = torch.empty(32, 2048, device="cuda", dtype=torch.half)
    for i in range(4):
        new = torch.randn(32, 4096, generator=g, device="cuda").half() * 64 ** -1
        torch.cuda.synchronize()
        a.copy_(new)
        out.fill_(float("nan"))
        gemm.matmul(a, b, schedule=schedule, out=out)
        torch.cuda.synchronize()
        assert _rel(out, new.double() @ b.double()) < TOLERANCE["float16"], (name, i)


@pytest.mark.parametrize("schedule,weights", [(SCHEDULES["split-cluster-swap-ab"], None), (LEAD_PAIR, "b")],
                         ids=["pair", "lead-pair-preloaded"])
def test_a_dependent_chain_in_a_cuda_graph(schedule, weights):
    import torch

    import gemm
    x, ws = _chain(16, [4096, 2048, 1024], seed=11)
    mid = torch.empty(16, 2048, device="cuda", dtype=torch.half)
    out = torch.empty(16, 1024, device="cuda", dtype=torch.half)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gemm.matmul(x, ws[0], schedule=schedule, out=mid, weights=weights)   # warm: kernels loaded, maps made
        gemm.matmul(mid, ws[1], schedule=SCHEDULES["v7"], out=out, weights=weights)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            gemm.matmul(x, ws[0], schedule=schedule, out=mid, weights=weights)
            gemm.matmul(mid, ws[1], schedule=SCHEDULES["v7"], out=out, weights=weights)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        mid.fill_(float("nan"))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want_mid = x.double() @ ws[0].double()
        assert _rel(mid, want_mid) < TOLERANCE["float16"]
        assert _rel(out, mid.double() @ ws[1].double()) < TOLERANCE["float16"]



@pytest.fixture
def preloads(monkeypatch):
    """The `preload` of every kernel a call runs while the test runs."""
    from gemm import api
    seen, kernel = [], api._kernel

    def recording(schedule, *args):
        seen.append(schedule.preload)
        return kernel(schedule, *args)
    monkeypatch.setattr(api, "_kernel", recording)
    return seen


PRELOADED = {
    "v7": SCHEDULES["v7"],
    "v7-cluster": SCHEDULES["v7-cluster"],                    # B multicast to the pair
    "stream-k": SCHEDULES["stream-k"],
    "split-k-workspace": SCHEDULES["split-k-workspace"],
    "split-cluster-swap-ab": SCHEDULES["split-cluster-swap-ab"],   # the product's B is the kernel's A
    "split-cluster-swap-ab-lead": LEAD_PAIR,
}


@pytest.mark.parametrize("name", list(PRELOADED))
@pytest.mark.parametrize("m", [16, 300])
def test_preloaded_weights_in_a_chain(name, m, preloads):
    """x_{i+1} = x_i @ W_i with weights="b": each kernel loads its W_i before the kernel ahead
    (which writes its x_i) has ended, and x_i only after; run twice, so the second pass's first
    product follows the first pass's last, which wrote nothing it reads early."""
    import torch

    import gemm
    x, ws = _chain(m, [8192, 1024, 1024, 1024, 768], seed=m + 1)
    outs = [torch.full((m, w.shape[1]), float("nan"), device="cuda", dtype=torch.half) for w in ws]
    torch.cuda.synchronize()
    inputs = [x] + outs[:-1]
    for _ in range(2):
        for inp, w, out in zip(inputs, ws, outs):
            gemm.matmul(inp, w, schedule=PRELOADED[name], out=out, weights="b")
    torch.cuda.synchronize()
    assert preloads and set(preloads) == {"b"}
    for i, (inp, w, out) in enumerate(zip(inputs, ws, outs)):
        assert _rel(out, inp.double() @ w.double()) < TOLERANCE["float16"], (name, m, i)


def test_preloaded_weights_over_full_grids(launch_flags):
    """The decode pair's chain at full grids (W stored [N, K], as nn.Linear keeps it): the
    kernel ahead lets this one in once its loads are issued, so the preloads run beside its
    last CTAs."""
    import torch

    import gemm
    from gemm.kernels import FLAG_EARLY_TRIGGER
    x, ws = _chain(16, [11008, 4096, 11008, 4096], seed=17)
    ws = [w.T.contiguous() for w in ws]
    outs = [torch.full((16, w.shape[0]), float("nan"), device="cuda", dtype=torch.half) for w in ws]
    torch.cuda.synchronize()
    inputs = [x] + outs[:-1]
    for _ in range(3):
        for inp, w, out in zip(inputs, ws, outs):
            gemm.matmul(inp, w.T, schedule=LEAD_PAIR, out=out, weights="b")
    torch.cuda.synchronize()
    assert launch_flags and all(f & FLAG_EARLY_TRIGGER for f in launch_flags)
    for i, (inp, w, out) in enumerate(zip(inputs, ws, outs)):
        assert _rel(out, inp.double() @ w.double().T) < TOLERANCE["float16"], i


@pytest.mark.parametrize("name", ["v7", "v7-cluster", "split-k-workspace"])
def test_preloaded_weights_as_a(name):
    """y_{i+1} = W_i @ y_i with weights="a": the weights are the product's A."""
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(19)
    widths = [4096, 2048, 2048, 1024]
    y = torch.randn(widths[0], 256, generator=g, device="cuda").half()
    ws = [(torch.randn(b, a, generator=g, device="cuda") * a ** -0.5).half() for a, b in zip(widths, widths[1:])]
    outs = [torch.full((w.shape[0], 256), float("nan"), device="cuda", dtype=torch.half) for w in ws]
    torch.cuda.synchronize()
    inputs = [y] + outs[:-1]
    for w, inp, out in zip(ws, inputs, outs):
        gemm.matmul(w, inp, schedule=PRELOADED[name], out=out, weights="a")
    torch.cuda.synchronize()
    for i, (w, inp, out) in enumerate(zip(ws, inputs, outs)):
        assert _rel(out, w.double() @ inp.double()) < TOLERANCE["float16"], (name, i)


def test_weights_copied_on_the_stream_are_not_preloaded(preloads):
    """Weights whose rows TMA cannot address (K = 999: rows 1998 bytes apart) are copied into
    padded lines by a kernel ahead of the GEMM on the stream: that copy writes what would be
    preloaded, so the call does not preload."""
    import torch

    import gemm
    g = torch.Generator(device="cuda").manual_seed(23)
    a = torch.randn(64, 999, generator=g, device="cuda").half() * 999 ** -0.5
    w = torch.randn(515, 999, generator=g, device="cuda").half()
    out = torch.full((64, 515), float("nan"), device="cuda", dtype=torch.half)
    for _ in range(3):
        gemm.matmul(a, w.T, schedule=SCHEDULES["v7"], out=out, weights="b")
    torch.cuda.synchronize()
    assert preloads and set(preloads) == {"none"}
    assert _rel(out, a.double() @ w.double().T) < TOLERANCE["float16"]

