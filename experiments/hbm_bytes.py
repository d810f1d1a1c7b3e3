"""The HBM and L2 bytes one 8192^3 launch of each version moves, for Nsight Compute:

  ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum \\
      --kernel-name regex:"^(serial|ring|specialized)_kernel" python3 -m experiments.hbm_bytes

The model's HBM bytes (sim.engines.memory_traffic: every panel once per wave that uses it)
are checked against dram__bytes_read; the seed's Nsight Compute profile had V2 moving 2.7x
V1's DRAM bytes, which a model where both run 3 CTAs/SM in one wave's lockstep cannot give.
Each kernel runs once, in the order printed (Nsight Compute numbers them in that order)."""
import torch

import gemm
from experiments.reference import random_operands

P = gemm.preset
SCHEDULES = {
    "v1": P("v1"), "v2": P("v2"), "v2-local": P("v2", phase_storage="local"),
    "v2 s3": P("v2", stages=3), "v2 s4": P("v2", stages=4),
    "v3 s2": P("v3", stages=2), "v3 s3": P("v3", stages=3), "v3 s4": P("v3", stages=4),
    "v4 s2": P("v4", stages=2), "v5 s3": P("v5", stages=3), "v5 s4": P("v5", stages=4),
    "v5 128x256 s4": P("v5", block_n=256, stages=4),
    "v5 128x256 s4 grouped": P("v5", block_n=256, stages=4, raster="grouped"),
    "v1 128x192": P("v1", block_n=192), "v2 128x192 s2": P("v2", block_n=192),
    "v1 64x256": P("v1", block_m=64, block_n=256),
    "v2 64x256 s2": P("v2", block_m=64, block_n=256),
    "v2 64x256 s2 row": P("v2", block_m=64, block_n=256, raster="row"),
}

a, b = random_operands(8192, 8192, 8192, "float16", seed=0)
b = b.t().contiguous().t()   # the seed's layout: B stored [N, K]
out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
for name, s in SCHEDULES.items():
    gemm.matmul(a, b, schedule=s, out=out)
    torch.cuda.synchronize()
    print(name, flush=True)
