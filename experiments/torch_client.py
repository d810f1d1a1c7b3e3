"""A real client of gemm.torch_ops: one transformer decoder block whose Linear layers run on our
kernels, timed beside the same block on torch's own (cuBLAS).

  python -m experiments.torch_client                      # bf16 and fp16, eager and torch.compile
  python -m experiments.torch_client --hidden 4096 --dtype bfloat16 --no-compile

The block (`DecoderBlock`): RMSNorm, attention with q/k/v/o projections (causal
scaled_dot_product_attention), RMSNorm, a gated MLP (down(silu(gate(x)) * up(x))), residuals;
random weights (nn.Linear's own initialisation), no bias. `pair()` builds it twice with the same
weights: as is, and with every nn.Linear swapped for gemm.torch_ops.Linear. Each forward pass
is timed with CUDA events, the two blocks taking turns run by run (experiments.timing), median
of `--iters`. tests/test_gpu_torch.py checks the swapped block's outputs against these.
"""
from __future__ import annotations

import argparse
import copy
import sys

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from gemm import torch_ops

from .timing import time_interleaved


class DecoderBlock(nn.Module):
    """A pre-norm decoder block: x + attention(norm(x)), then h + mlp(norm(h))."""

    def __init__(self, hidden: int = 2048, heads: int = 16, intermediate: int | None = None, dtype=torch.bfloat16,
                 device="cuda"):
        super().__init__()
        intermediate = intermediate or hidden * 11 // 4   # 5632 at 2048, as Llama-style blocks size it
        kw = {"bias": False, "dtype": dtype, "device": device}
        self.heads = heads
        self.attn_norm = nn.RMSNorm(hidden, eps=1e-5, dtype=dtype, device=device)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(hidden, hidden, **kw) for _ in range(4))
        self.mlp_norm = nn.RMSNorm(hidden, eps=1e-5, dtype=dtype, device=device)
        self.gate_proj = nn.Linear(hidden, intermediate, **kw)
        self.up_proj = nn.Linear(hidden, intermediate, **kw)
        self.down_proj = nn.Linear(intermediate, hidden, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        y = self.attn_norm(x)
        q, k, v = (p(y).view(b, t, self.heads, h // self.heads).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, t, h))
        y = self.mlp_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


def pair(hidden: int = 2048, dtype: str = "bfloat16", seed: int = 0, **kw) -> tuple[nn.Module, nn.Module]:
    """(the block on torch's Linear, a deep copy with every Linear on gemm.torch_ops.Linear)."""
    torch.manual_seed(seed)
    theirs = DecoderBlock(hidden, dtype=getattr(torch, dtype), **kw).eval()
    return theirs, torch_ops.swap_linears(copy.deepcopy(theirs))


def time_pair(theirs: nn.Module, ours: nn.Module, x: torch.Tensor, iters: int = 30) -> dict:
    """Median ms per forward pass of each block, the two taking turns run by run."""
    with torch.inference_mode():
        return time_interleaved({"torch": theirs, "ours": ours}, [(x,)], warmup=10, iters=iters)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dtype", choices=["bfloat16", "float16"], action="append",
                    help="repeatable (default: both)")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args(argv)
    dtypes = args.dtype or ["bfloat16", "float16"]
    modes = ["eager"] + ([] if args.no_compile else ["torch.compile"])
    tokens = args.batch * args.seq
    print(f"decoder block: hidden {args.hidden}, {args.heads} heads, batch {args.batch} x seq {args.seq} "
          f"({tokens} tokens), on {torch.cuda.get_device_name()}")
    print(f"{'dtype':9s} {'mode':14s} {'torch ms':>9s} {'ours ms':>8s} {'ratio':>7s}  (ratio: torch ms / ours ms, "
          "above 1 ours is faster)")
    for dtype, mode in tqdm([(d, m) for d in dtypes for m in modes], desc="torch client", unit="config"):
        theirs, ours = pair(args.hidden, dtype, heads=args.heads)
        if mode == "torch.compile":  # the first call compiles; time_pair's warm-up absorbs it
            theirs, ours = torch.compile(theirs, fullgraph=True), torch.compile(ours, fullgraph=True)
        x = torch.randn(args.batch, args.seq, args.hidden, dtype=getattr(torch, dtype), device="cuda")
        ms = time_pair(theirs, ours, x, args.iters)
        tqdm.write(f"{dtype:9s} {mode:14s} {ms['torch']:9.3f} {ms['ours']:8.3f} {ms['torch'] / ms['ours']:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
