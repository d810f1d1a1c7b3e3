"""Bitwise repeatability of split_cluster kernels whose clusters reduce several tiles (the slot
reuse racecheck flags), back to back, many launches."""
import torch
import gemm
from experiments.reference import random_operands
from gemm.schedule import from_spec
CASES = [("v7:block_n=128,stages=4,split_k=2,split_cluster=true", (1100, 1300, 1000)),
         ("v7:block_n=128,stages=4,split_k=2,split_cluster=true", (4096, 4096, 2048)),
         ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
          "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true", (13, 16896, 2048)),
         ("v7:block_n=64,stages=8,split_k=2,split_cluster=true", (128, 8192, 4096))]
for spec, (m, n, k) in CASES:
    s = from_spec(spec)
    a, b = random_operands(m, n, k, "float16", seed=m + n)
    first = gemm.matmul(a, b, schedule=s)
    ref = a.double() @ b.double()
    err = float((first.double() - ref).norm() / ref.norm())
    outs = [torch.full_like(first, float("nan")) for _ in range(8)]
    bad = torch.zeros((), dtype=torch.int64, device="cuda")
    for rep in range(64):
        for o in outs:
            gemm.matmul(a, b, schedule=s, out=o)
        for o in outs:
            bad += (o.view(torch.int16) != first.view(torch.int16)).sum()
            o.fill_(float("nan"))
    torch.cuda.synchronize()
    print(f"{spec[:60]:60s} {m}x{n}x{k}: rel err {err:.1e}; 512 launches, elements differing from the first: {int(bad)}", flush=True)
