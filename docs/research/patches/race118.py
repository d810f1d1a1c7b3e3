"""One launch each of two split_cluster kernels whose clusters reduce several tiles, for racecheck."""
import sys
import torch
import gemm
from experiments.reference import random_operands
from gemm.schedule import from_spec
spec, m, n, k = sys.argv[1], *map(int, sys.argv[2:5])
a, b = random_operands(m, n, k, "float16", seed=1)
c = gemm.matmul(a, b, schedule=from_spec(spec))
torch.cuda.synchronize()
ref = a.double() @ b.double()
print(spec[:50], m, n, k, "rel err", float((c.double() - ref).norm() / ref.norm()))
