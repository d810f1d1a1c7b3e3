"""Is it split-K itself that slows the decode-down kernels' reads? The same 64x128 s8 tile on
[64, K] x [K, N] shapes of equal bytes and equal CTAs (128), K per CTA the same 8192 (16 KB a
row segment): no split (N 16384, K 8192), split 2 (N 8192, K 16384), split 4 (N 4096, K 32768);
and the 128x64 split 2 likewise. Back to back, through gemm.matmul."""
import torch, gemm
from gemm.schedule import from_spec
from experiments.timing import back_to_back_us
T = "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=8"
CASES = [(T, 64, 16384, 8192), (T + ",split_k=2", 64, 8192, 16384), (T + ",split_k=4", 64, 4096, 32768),
         ("v7:block_n=64,stages=8", 128, 8192, 8192), ("v7:block_n=64,stages=8,split_k=2", 128, 4096, 16384),
         ("v7:block_n=64,stages=8,split_k=4", 128, 2048, 32768),
         ("v7:block_m=64,block_n=256,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=4", 64, 32768, 8192)]
for spec, m, n, k in CASES:
    sch = from_spec(spec)
    sets = []
    for seed in range(3):
        g = torch.Generator(device="cuda").manual_seed(seed)
        sets.append(((torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).half(),
                     (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).half().t()))
    a, b = sets[0]
    c = gemm.matmul(a, b, schedule=sch)
    ref = a.double() @ b.double()
    err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
    tt = sorted(back_to_back_us(lambda i: gemm.matmul(*sets[i % 3], schedule=sch), calls=30) for _ in range(5))[2]
    tc = sorted(back_to_back_us(lambda i: torch.matmul(*sets[i % 3]), calls=30) for _ in range(3))[1]
    nbytes = 2 * (m * k + n * k + m * n)
    print(f"{spec[:70]:70s} [{m}, {k}] x [{k}, {n}]  {tt:7.1f} us {nbytes / tt / 1e3:5.0f} GB/s  torch {tc:7.1f} us "
          f"{nbytes / tc / 1e3:5.0f} GB/s  err {err:.0e}", flush=True)
