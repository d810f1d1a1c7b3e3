"""cuBLAS's kernels and ours (the dispatcher's pick) on suite and off-suite shapes: names and device time."""
import sys, json, statistics
sys.path.insert(0, ".devrun_min")
from precompile import shapes
import torch
from experiments.bench import _operands
from experiments.timing import back_to_back_us
from experiments.research.cublas_kernels import _profile
import gemm

sh = shapes()
for name in sys.argv[1].split(","):
    s = dict(sh[name]); s.setdefault("batch", 1); s.setdefault("dtype", "float16")
    sets = [_operands(s, seed) for seed in range(3)]
    plan = gemm.plan(*sets[0]) if hasattr(gemm, "plan") else None
    for label, fn in (("cuBLAS", lambda i: torch.matmul(*sets[i % 3])), ("ours", lambda i: gemm.matmul(*sets[i % 3]))):
        fn(0); torch.cuda.synchronize()
        b2b = back_to_back_us(fn)
        kernels = "; ".join(f"{k[:100]} {t:.1f} us" for k, t in _profile(fn).items())
        print(f"{name:14s} {label:6s} b2b {b2b:7.1f} us | {kernels}", flush=True)
    print(f"{name:14s} plan {getattr(plan, 'schedule', plan)}"[:200], flush=True)
