"""Does the weights' row stride set the decode rows' HBM rate? The down- and up-projection
shapes with W [N, K] a view of a wider buffer (row stride K + pad elements), back to back."""
import torch, gemm
from gemm.schedule import from_spec
from experiments.timing import back_to_back_us
CASES = [  # (label, M, N, K, spec)
    ("dec1-down swap16 s4", 1, 4096, 11008, "v7:block_n=16,stages=10,split_k=4,swap_ab=true,epilogue=direct,producer_registers=0,consumer_registers=0"),
    ("dec128-down 128x64 s2", 128, 4096, 11008, "v7:block_n=64,stages=8,split_k=2"),
    ("dec64-down 64x128 s4", 64, 4096, 11008, "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=8,split_k=4"),
    ("dec16-up 64x256", 16, 22016, 4096, "v7:block_m=64,block_n=256,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=4"),
    ("dec1-up swap192x16", 1, 22016, 4096, "v7:block_m=192,consumer_warpgroups=1,block_n=16,stages=8,swap_ab=true,epilogue=direct,producer_registers=0,consumer_registers=0"),
]
PADS = (0, 64, 512, 1024, 4096)
for label, m, n, k, spec in CASES:
    sch = from_spec(spec)
    out = []
    for pad in PADS:
        sets = []
        for seed in range(3):
            g = torch.Generator(device="cuda").manual_seed(seed)
            a = (torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).half()
            buf = (torch.randn(n, k + pad, generator=g, device="cuda") * k ** -0.25).half()
            sets.append((a, buf[:, :k].t()))
        a, b = sets[0]
        c = gemm.matmul(a, b, schedule=sch)
        ref = a.double() @ b.double()
        err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
        fn = lambda i: gemm.matmul(*sets[i % 3], schedule=sch)
        tt = sorted(back_to_back_us(fn, calls=40) for _ in range(5))[2]
        tc = sorted(back_to_back_us(lambda i: torch.matmul(*sets[i % 3]), calls=40) for _ in range(3))[1]
        gbs = 2 * (m * k + n * k + m * n) / tt / 1e3
        out.append(f"pad {pad:5d}: {tt:6.1f} us {gbs:5.0f} GB/s (torch {tc:6.1f}) err {err:.0e}")
    print(f"{label:24s} " + " | ".join(out), flush=True)
