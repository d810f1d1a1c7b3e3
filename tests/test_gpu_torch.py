"""A real client on the GPU: a transformer decoder block (experiments/torch_client.py: attention
q/k/v/o projections and a gated MLP, random weights) with its nn.Linear layers swapped for
gemm.torch_ops.Linear, against the same block on torch's own Linear, eager and torch.compile'd.

Tolerance. Both blocks do the same arithmetic up to the order of the fp32 accumulation inside
each product; each product's output is then rounded once to 16 bits (fp16: 2^-11 relative, bf16:
2^-8), and those roundings propagate through the norms, the attention and the residuals. So the
yardstick is torch's own error: against a float32 copy of the block (same weights, fp32 all the
way), our block's relative Frobenius error must be at most 1.5x torch's half-precision block's,
and the two half-precision outputs within 2x that error of each other. A wrong transpose, a
dropped bias or a stale output would be off by O(1), not by a factor of 1.5."""
import copy

import pytest

torch = pytest.importorskip("torch")
torch_client = pytest.importorskip("experiments.torch_client")

pytestmark = pytest.mark.gpu

BATCH, SEQ = 2, 256


def _relative_error(x, ref) -> float:
    return float(torch.linalg.norm((x.double() - ref.double()).flatten()) / torch.linalg.norm(ref.double().flatten()))


@pytest.fixture(scope="module", params=["bfloat16", "float16"])
def blocks(request):
    """(dtype, torch's block, ours, a float32 copy, an input, torch's error against float32)."""
    dtype = request.param
    theirs, ours = torch_client.pair(hidden=2048, dtype=dtype)
    ref = copy.deepcopy(theirs).float()
    torch.manual_seed(1)
    x = torch.randn(BATCH, SEQ, 2048, dtype=getattr(torch, dtype), device="cuda")
    with torch.inference_mode():
        expected = ref(x.float())
        yardstick = _relative_error(theirs(x), expected)
    assert 0 < yardstick < 0.05
    return dtype, theirs, ours, ref, x, expected, yardstick


def test_every_linear_is_ours(blocks):
    _, _, ours, *_ = blocks
    linears = [m for m in ours.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 7 and all(type(m) is torch_client.torch_ops.Linear for m in linears)


def test_eager_block_matches_torch(blocks):
    dtype, theirs, ours, _, x, expected, yardstick = blocks
    with torch.inference_mode():
        got, want = ours(x), theirs(x)
    assert got.dtype == x.dtype and got.shape == x.shape and torch.isfinite(got).all()
    assert _relative_error(got, expected) <= 1.5 * yardstick, (dtype, _relative_error(got, expected), yardstick)
    assert _relative_error(got, want) <= 2 * yardstick, (dtype, _relative_error(got, want), yardstick)


def test_compiled_block_has_no_graph_break_and_matches_torch(blocks):
    """fullgraph=True raises on any graph break; the one graph holds all seven products as
    hopper_gemm.matmul (the op's fake implementation traced them)."""
    dtype, theirs, ours, _, x, expected, yardstick = blocks
    from torch._inductor.compile_fx import compile_fx
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(ours, backend=backend, fullgraph=True)
    with torch.inference_mode():
        got = compiled(x)
    assert len(graphs) == 1
    assert sum("hopper_gemm.matmul" in str(n.target) for n in graphs[0].graph.nodes) == 7
    assert _relative_error(got, expected) <= 1.5 * yardstick, (dtype, _relative_error(got, expected), yardstick)


def test_backward_through_our_linear():
    """Training works too: the op's backward is two more products on the kernels."""
    torch.manual_seed(2)
    theirs = torch.nn.Linear(1024, 768, dtype=torch.bfloat16, device="cuda")
    ours = torch_client.torch_ops.Linear.from_linear(copy.deepcopy(theirs))
    x = torch.randn(300, 1024, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    xs = x.detach().clone().requires_grad_()
    theirs(x).float().square().mean().backward()
    ours(xs).float().square().mean().backward()
    for got, want in ((xs.grad, x.grad), (ours.weight.grad, theirs.weight.grad), (ours.bias.grad, theirs.bias.grad)):
        assert _relative_error(got, want) < 2e-2
