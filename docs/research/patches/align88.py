"""Does a 128-byte row pitch speed up the large kernels on an odd shape? odd4095's operands
([4095, 4099] and the weight [4097, 4099]) as views into buffers whose rows are 4104 elements
apart (8208 B: the 16-byte pitch gemm/padding.py pads to) or 4160 (8320 B = 65 x 128 B), so the
kernel reads them in place; the same values, every element checked against float64, the call
back to back (5 rounds of 30, median), schedules and pitches interleaved. Also the contiguous
call (which copies both operands into 16-byte-pitch buffers first, and C out of one)."""
import torch, gemm
from gemm.schedule import from_spec
from experiments.timing import back_to_back_us
M, N, K = 4095, 4097, 4099
SPECS = ["v7", "v7:block_m=256,block_n=128,cluster_n=2", "v7:block_n=176", "v7:block_n=128,stages=4,cluster_m=2",
         "v7:cluster_m=2"]
g = torch.Generator(device="cuda").manual_seed(0)
a0 = (torch.randn(M, K, generator=g, device="cuda") * K ** -0.25).half()
w0 = (torch.randn(N, K, generator=g, device="cuda") * K ** -0.25).half()
ref = a0.double() @ w0.double().t()
def views(pitch):
    a = torch.zeros(M, pitch, device="cuda", dtype=torch.half); a[:, :K] = a0
    w = torch.zeros(N, pitch, device="cuda", dtype=torch.half); w[:, :K] = w0
    return a[:, :K], w[:, :K].t()
inputs = {"contig": (a0, w0.t()), "p4104": views(4104), "p4160": views(4160)}
times = {(s, p): [] for s in SPECS for p in inputs}
for s in SPECS:
    for p, (a, b) in inputs.items():
        c = gemm.matmul(a, b, schedule=from_spec(s))
        err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
        assert err < 1e-3, (s, p, err)
for r in range(5):
    for s in SPECS:
        for p, (a, b) in (list(inputs.items()) if r % 2 == 0 else list(inputs.items())[::-1]):
            sch = from_spec(s)
            times[(s, p)].append(back_to_back_us(lambda i: gemm.matmul(a, b, schedule=sch), calls=30))
tc = sorted(back_to_back_us(lambda i: torch.matmul(a0, w0.t()), calls=30) for _ in range(3))[1]
print(f"torch contiguous {tc:.1f} us ({2 * M * N * K / tc / 1e6:.0f} TFLOPS)")
for s in SPECS:
    row = "  ".join(f"{p} {sorted(times[(s, p)])[2]:7.1f} us" for p in inputs)
    print(f"{s[:45]:45s} {row}", flush=True)
