"""The same warm call's host time in one process, as its state changes: fresh, after the
host probe's loop, with the garbage collector off, after a pause."""
import gc, time, statistics
import torch, gemm
from experiments.host import per_call_us
from experiments.bench import suite_host_probe

a = torch.randn(256, 256, device="cuda").half(); b = torch.randn(256, 256, device="cuda").half().t()
fn = lambda: gemm.matmul(a, b)
fn()
def med(label):
    t = statistics.median(per_call_us(fn, 1000, torch.cuda.synchronize) for _ in range(5))
    print(f"{label:40s} {t:6.2f} us", flush=True)
med("fresh")
med("fresh again")
gc.disable(); med("gc disabled"); gc.enable()
gc.freeze(); med("gc frozen"); gc.unfreeze()
print("probe:", suite_host_probe(), flush=True)
med("after the host probe")
t0 = time.time()
while time.time() - t0 < 3:
    pass
med("after 3 s of spinning")
time.sleep(3); med("after 3 s of sleep")
x = [torch.empty(1, device="cuda") for _ in range(2000)]; med("with 2000 more tensors alive")
del x
import cupy; c = cupy.zeros(10); med("after cupy used")
