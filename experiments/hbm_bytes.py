"""The HBM and L2 bytes one 8192^3 launch of each version moves, for Nsight Compute:

  ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum \\
      --kernel-name regex:"build_(serial|ring|specialized)_kernel" python3 -m experiments.hbm_bytes

The model's HBM bytes (sim.engines.memory_traffic: every panel once per wave that uses it)
are checked against dram__bytes_read; the seed's Nsight Compute profile had V2 moving 2.7x
V1's DRAM bytes, which a model where both run 3 CTAs/SM in one wave's lockstep cannot give.
Each kernel runs once, in the order printed."""
import torch

import gemm
from experiments.reference import random_operands

SCHEDULES = {"v1": gemm.preset("v1"), "v2": gemm.preset("v2"), "v2-local": gemm.preset("v2", phase_storage="local"),
             "v3 s2": gemm.preset("v3", stages=2), "v3 s4": gemm.preset("v3", stages=4),
             "v5 128x256 s4": gemm.preset("v5", block_n=256, stages=4)}

a, b = random_operands(8192, 8192, 8192, "float16", seed=0)
b = b.t().contiguous().t()   # the seed's layout: B stored [N, K]
out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
for name, s in SCHEDULES.items():
    gemm.matmul(a, b, schedule=s, out=out)
    torch.cuda.synchronize()
    print(name, flush=True)
