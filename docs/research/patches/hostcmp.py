"""Why host.py's warm call (14 us) differs from the host probe's (10 us): the same tight loop on
operands made both ways, and a profile of each."""
import cProfile, pstats, io, time, statistics
import torch, gemm
from experiments.reference import random_operands
from experiments.host import per_call_us

def loop(fn, calls=1000, rounds=5):
    return statistics.median(per_call_us(fn, calls, torch.cuda.synchronize) for _ in range(rounds))

for size in (64, 256):
    a = torch.randn(size, size, device="cuda").half(); w = torch.randn(size, size, device="cuda").half()
    bt = w.t(); br = w.t().contiguous()
    pa, pb = random_operands(size, size, size, "float16", seed=0)
    cases = {"host.py (b = w.t())": (a, bt), "b row-major": (a, br), "probe operands": (pa, pb)}
    for label, (x, y) in cases.items():
        fn = lambda x=x, y=y: gemm.matmul(x, y)
        fn()
        print(f"{size}^3 {label:22s} {loop(fn):6.2f} us  schedule {gemm.plan(x, y).schedule.name}", flush=True)
    for label, (x, y) in cases.items():
        pr = cProfile.Profile(); fn = lambda x=x, y=y: gemm.matmul(x, y)
        pr.enable()
        for _ in range(2000): fn()
        pr.disable(); torch.cuda.synchronize()
        s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
        print(f"--- {size}^3 {label}\n" + "\n".join(s.getvalue().splitlines()[:30]), flush=True)
