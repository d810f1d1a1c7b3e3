"""A small V1-V5 workload for compute-sanitizer (memcheck, racecheck, synccheck):

  compute-sanitizer --tool racecheck python3 -m experiments.sanitize_run

Edge tiles in M, N and K, every family, a ring deeper and shallower than K."""
import torch

import gemm
from experiments.reference import TOLERANCE, poisoned, random_operands, relative_error

CASES = [("v1", None, (200, 136, 100)), ("v2", 2, (200, 136, 333)), ("v2", 3, (130, 200, 70)),
         ("v2", 4, (64, 192, 256)), ("v3", 2, (200, 136, 333)), ("v3", 4, (130, 200, 70)),
         ("v4", 2, (300, 136, 333)), ("v5", 2, (200, 260, 520)), ("v5", 3, (130, 200, 70))]

for version, stages, (m, n, k) in CASES:
    a, b = random_operands(m, n, k, "float16", seed=m + n + k)
    b = b.t().contiguous().t() if version == "v1" else b
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b, version=version, stages=stages, out=c)
    torch.cuda.synchronize()
    err = relative_error(c, a, b)
    print(f"{version} stages={stages} {m}x{n}x{k}: rel err {err:.2e}",
          "ok" if err < TOLERANCE["float16"] else "WRONG")
