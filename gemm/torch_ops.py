"""gemm.matmul for PyTorch models: a `torch.library` custom op and a drop-in `nn.Linear`.

    import gemm.torch_ops as hg
    c = hg.matmul(a, b)                     # torch.ops.hopper_gemm.matmul: a @ b on our kernels
    model = hg.swap_linears(model)          # every nn.Linear computes on our kernels, same weights
    model = torch.compile(model, fullgraph=True)   # traced, not a graph break

The op has a fake (meta) implementation, so torch.compile and torch.export trace through it
without running it; its backward is two more products on the same kernels. Inputs are CUDA
fp16/bf16 tensors (gemm.matmul's limits). Importing this module imports torch; importing
`gemm` does not.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from . import api


@torch.library.custom_op("hopper_gemm::matmul", mutates_args=())
def matmul(a: torch.Tensor, b: torch.Tensor, stages: Optional[int] = None,
           version: Optional[str] = None) -> torch.Tensor:
    """`a @ b` for 2-D CUDA fp16/bf16 tensors (either may be a transposed view), fp32
    accumulation; `stages` / `version` as in gemm.matmul (default: its default schedule)."""
    return _product(a, b, stages, version)


def _product(a, b, stages, version):
    # the op's real implementation, looked up at call time (tests put a CPU product here)
    return api.matmul(a, b, stages, version=version)


@matmul.register_fake
def _(a, b, stages=None, version=None):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "hopper_gemm::matmul takes 2-D matrices")
    torch._check(a.shape[1] == b.shape[0], lambda: f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    torch._check(a.dtype == b.dtype, lambda: f"a is {a.dtype} and b is {b.dtype}")
    return a.new_empty((a.shape[0], b.shape[1]))


def _setup_context(ctx, inputs, output):
    a, b, stages, version = inputs
    ctx.save_for_backward(a, b)
    ctx.stages, ctx.version = stages, version


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = matmul(grad, b.t(), ctx.stages, ctx.version) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.t(), grad, ctx.stages, ctx.version) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None, None


matmul.register_autograd(_backward, setup_context=_setup_context)


class Linear(nn.Linear):
    """`nn.Linear` whose product runs on gemm.matmul: y = x @ W.T + bias, x of any leading
    shape (flattened to one M dimension). W.T is passed as a transposed view: the kernel reads
    the [out, in] weight K-major, as stored, without a copy."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None,
                 stages: int | None = None, version: str | None = None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.stages, self.version = stages, version

    @classmethod
    def from_linear(cls, linear: nn.Linear, stages: int | None = None, version: str | None = None) -> "Linear":
        """A Linear sharing `linear`'s weight and bias (the same Parameters, not copies)."""
        new = cls.__new__(cls)
        nn.Module.__init__(new)
        new.in_features, new.out_features = linear.in_features, linear.out_features
        new.register_parameter("weight", linear.weight)
        new.register_parameter("bias", linear.bias)
        new.stages, new.version = stages, version
        return new.train(linear.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        y = matmul(x.reshape(-1, self.in_features), self.weight.t(), self.stages, self.version)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", stages={self.stages}, version={self.version!r}"


def swap_linears(model: nn.Module, stages: int | None = None, version: str | None = None) -> nn.Module:
    """Replace every nn.Linear inside `model` (in place) by a Linear sharing its parameters;
    returns `model` (or its replacement, if `model` is itself an nn.Linear). Subclasses of
    nn.Linear are left alone (some, like MultiheadAttention's out_proj, are never called)."""
    if type(model) is nn.Linear:
        return Linear.from_linear(model, stages, version)
    for name, child in model.named_children():
        setattr(model, name, swap_linears(child, stages, version))
    return model
