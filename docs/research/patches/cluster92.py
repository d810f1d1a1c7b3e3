"""Where the clustered kernels' 2-4% goes (run 87): the pair runs its ring in lockstep (a stage
is refilled only once both CTAs' consumers released it), so deeper rings should close the gap if
the coupling is the cost. The same tile plain and with cluster_m=2 at 4 and 6 stages (128x128)
and 4 stages (128x192), whole waves, L2-resident operands, the call back to back from a rested
GPU, 5 rounds of 30, median; every element checked first."""
import time, torch, gemm
from gemm.schedule import from_spec
from experiments.timing import back_to_back_us
CASES = [((4096, 4224, 2048), ["v7:block_n=128,stages=4", "v7:block_n=128,stages=4,cluster_m=2",
                               "v7:block_n=128,stages=6", "v7:block_n=128,stages=6,cluster_m=2"]),
         ((4096, 6336, 2048), ["v7:block_n=192,stages=4", "v7:block_n=192,stages=4,cluster_m=2"])]
for (m, n, k), specs in CASES:
    g = torch.Generator(device="cuda").manual_seed(0)
    sets = [((torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).half(),
             (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).half().t()) for _ in range(3)]
    a, b = sets[0]
    ref = a.double() @ b.double()
    for s in specs:
        c = gemm.matmul(a, b, schedule=from_spec(s))
        err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
        assert err < 1e-3, (s, err)
    times = {s: [] for s in specs}
    for r in range(5):
        for s in (specs if r % 2 == 0 else specs[::-1]):
            sch = from_spec(s)
            time.sleep(0.5)
            times[s].append(back_to_back_us(lambda i: gemm.matmul(*sets[i % 3], schedule=sch), calls=30))
    for s in specs:
        print(f"{m}x{n}x{k} {s:40s} {sorted(times[s])[2]:7.1f} us  (rounds: {' '.join(f'{t:.1f}' for t in times[s])})", flush=True)
