"""CPU tests of gemm.torch_ops (the custom op and the drop-in nn.Linear), where torch is
installed; the GPU half is tests/test_gpu_torch.py. On the CPU the op's product is swapped for
a float reference (fixture `cpu_product`), so what is tested is the plumbing: the schema, the
fake implementation, tracing, the Linear's transposes, bias and shapes, and the backward."""
import importlib.util
import subprocess
import sys

import pytest

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


def test_importing_gemm_does_not_import_torch():
    code = "import sys, gemm, gemm.api, gemm.schedule; gemm.preset('v2'); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def hg():
    return pytest.importorskip("gemm.torch_ops")


@pytest.fixture
def cpu_product(hg, monkeypatch):
    """The op computes with a float64 product instead of the kernels (no GPU here)."""
    import torch

    def product(a, b, stages, version):
        return (a.double() @ b.double()).to(a.dtype)
    monkeypatch.setattr(hg, "_product", product)
    return torch


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fake_implementation_gives_the_products_shape_and_dtype(hg, dtype):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(300, 72, dtype=getattr(torch, dtype), device="cuda")
        w = torch.empty(136, 72, dtype=getattr(torch, dtype), device="cuda")
        c = torch.ops.hopper_gemm.matmul(a, w.t())
        assert tuple(c.shape) == (300, 136) and c.dtype == a.dtype and c.device.type == "cuda"
        with pytest.raises(Exception, match="inner dimensions"):
            torch.ops.hopper_gemm.matmul(a, w)


@needs_torch
def test_opcheck(cpu_product):
    """torch's own checks of a custom op: schema, fake against real, autograd registration."""
    torch = cpu_product
    a, b = torch.randn(33, 20), torch.randn(40, 20).t()
    torch.library.opcheck(torch.ops.hopper_gemm.matmul.default, (a, b))
    torch.library.opcheck(torch.ops.hopper_gemm.matmul.default, (a.requires_grad_(), b, 2, "v2"))


def _mlp(torch, bias=True, dtype=None):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(24, 40, bias=bias, dtype=dtype), torch.nn.SiLU(),
                               torch.nn.Sequential(torch.nn.Linear(40, 24, bias=bias, dtype=dtype)))


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
def test_linear_computes_what_nn_linear_does(cpu_product, hg, bias):
    torch = cpu_product
    ref = _mlp(torch, bias)
    ours = hg.swap_linears(_mlp(torch, bias))
    x = torch.randn(3, 5, 24)
    torch.testing.assert_close(ours(x), ref(x))
    x = torch.randn(7, 24, requires_grad=True)
    ref(x).square().sum().backward()
    expected = [p.grad.clone() for p in ref.parameters()] + [x.grad.clone()]
    x.grad = None
    ours(x).square().sum().backward()
    for got, want in zip([p.grad for p in ours.parameters()] + [x.grad], expected):
        torch.testing.assert_close(got, want)


@needs_torch
def test_swap_linears_shares_the_parameters(hg):
    import torch
    model = _mlp(torch)
    params = dict(model.named_parameters())
    swapped = hg.swap_linears(model, stages=3, version="v2")
    assert swapped is model
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 2 and all(type(m) is hg.Linear and m.stages == 3 for m in linears)
    assert all(p is params[name] for name, p in model.named_parameters()) and len(params) == 4
    single = torch.nn.Linear(8, 4)
    assert type(hg.swap_linears(single)) is hg.Linear and hg.swap_linears(single).weight is single.weight


@needs_torch
def test_export_traces_the_swapped_model_in_one_graph(hg):
    """torch.export (the tracer torch.compile uses, fullgraph) records the op from its fake
    implementation, without running it: one hopper_gemm.matmul per Linear, no graph break."""
    import torch
    model = hg.swap_linears(_mlp(torch, dtype=torch.float16))
    ep = torch.export.export(model, (torch.randn(2, 3, 24, dtype=torch.float16),))
    ops = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert ops.count("hopper_gemm.matmul.default") == 2


@needs_torch
def test_compile_traces_the_decoder_block_in_one_graph(cpu_product):
    """The torch client's block (experiments/torch_client.py), small and in float32 on the CPU:
    torch.compile(fullgraph=True) captures it in one graph with all seven products as the op,
    and the compiled block computes what the original does."""
    torch = cpu_product
    from experiments import torch_client
    theirs, ours = torch_client.pair(hidden=256, dtype="float32", heads=4, device="cpu")
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(ours, backend=backend, fullgraph=True)
    x = torch.randn(2, 16, 256)
    with torch.inference_mode():
        torch.testing.assert_close(compiled(x), theirs(x))
    assert len(graphs) == 1
    assert sum("hopper_gemm.matmul" in str(n.target) for n in graphs[0].graph.nodes) == 7
