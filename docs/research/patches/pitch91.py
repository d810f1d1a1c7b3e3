"""The row pitch's cost, off the suite: the same operands read in place from buffers whose lines
are P elements apart, P = K (a power of two here), K + 8 (16-byte multiple: every box row
straddles two cache lines), K + 64 (128-byte multiple, not a power of two); kernels of several
tiles, with and without multicast, on whole-wave L2-resident shapes; and odd1000 (its own
2000-byte lines against 2048 and 2176). The call back to back, 5 rounds of 30, median,
schedules and pitches interleaved; every element checked first."""
import torch, gemm
from gemm.schedule import from_spec
from experiments.timing import back_to_back_us
ONE_WG = "consumer_warpgroups=1,producer_registers=0,consumer_registers=0"
CASES = [
    ((4096, 4224, 2048), ["v7:block_n=128,stages=4", "v7:block_n=128,stages=4,cluster_m=2"], (0, 8, 64)),
    ((5632, 3072, 2048), ["v7", "v7:cluster_m=2", "v7:block_m=256,block_n=128,cluster_n=2"], (0, 8, 64)),
    ((4096, 4224, 2048), [f"v7:block_m=64,block_n=256,{ONE_WG},stages=4"], (0, 8, 64)),
    ((1000, 1000, 1000), [f"v7:block_m=64,block_n=128,{ONE_WG},stages=8", "v7"], (0, 24, 88)),
]
for (m, n, k), specs, pads in CASES:
    g = torch.Generator(device="cuda").manual_seed(0)
    a0 = (torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).half()
    w0 = (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).half()
    ref = a0.double() @ w0.double().t()
    inputs = {}
    for pad in pads:
        a = torch.zeros(m, k + pad, device="cuda", dtype=torch.half); a[:, :k] = a0
        w = torch.zeros(n, k + pad, device="cuda", dtype=torch.half); w[:, :k] = w0
        inputs[k + pad] = (a[:, :k], w[:, :k].t())
    for s in specs:
        for p, (a, b) in inputs.items():
            c = gemm.matmul(a, b, schedule=from_spec(s))
            err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
            assert err < 1e-3, (s, p, err)
    times = {(s, p): [] for s in specs for p in inputs}
    for r in range(5):
        for s in specs:
            for p, (a, b) in (list(inputs.items()) if r % 2 == 0 else list(inputs.items())[::-1]):
                sch = from_spec(s)
                times[(s, p)].append(back_to_back_us(lambda i: gemm.matmul(a, b, schedule=sch), calls=30))
    for s in specs:
        row = "  ".join(f"pitch {p} ({2 * p} B) {sorted(times[(s, p)])[2]:7.1f} us" for p in inputs)
        print(f"{m}x{n}x{k} {s[:48]:48s} {row}", flush=True)
