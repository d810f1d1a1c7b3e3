"""Per-CTA start/end (globaltimer) of the split-K decode kernels: where does a call's time go
beyond the bytes -- the CTAs' starts, the spread of their ends (the tail), the sum?"""
import numpy as np, torch, cupy
from gemm.kernels import KernelConfig
from gemm.kernels.tiles import PROBE_WORDS
from gemm.launch import launch_gemm, load_kernel
from gemm.schedule import from_spec
S4 = "v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=8,split_k=4"
CASES = [("dec64-down", 64, 4096, 11008, S4),
         ("dec128-down", 128, 4096, 11008, "v7:block_n=64,stages=8,split_k=2"),
         ("dec128-down", 128, 4096, 11008, "v7:block_n=128,stages=4,split_k=4"),
         ("micro128", 128, 3840, 8192, "v7:block_n=128,stages=4,split_k=4"),
         ("micro128", 128, 3840, 8192, "v7:block_n=64,stages=8,split_k=2"),
         ("micro64", 64, 3840, 8192, S4),
         ("dec64-up", 64, 22016, 4096, "v7:block_m=64,block_n=256,consumer_warpgroups=1,producer_registers=0,consumer_registers=0,stages=4")]
for name, m, n, k, spec in CASES:
    s = from_spec(spec)
    loaded = load_kernel(KernelConfig(s, "float16", "k", "k", clock_probe=True))
    sets = []
    for seed in range(3):
        g = torch.Generator(device="cuda").manual_seed(seed)
        sets.append((torch.randn(m, k, generator=g, device="cuda").half(), torch.randn(n, k, generator=g, device="cuda").half()))
    out = torch.empty((m, n), device="cuda", dtype=torch.float16)
    ctas = loaded.config.grid(m, n, loaded.resident_clusters)[0]
    probe = cupy.zeros((ctas, PROBE_WORDS), dtype=cupy.uint64)
    stream = torch.cuda.current_stream().cuda_stream
    def launch(i):
        a, w = sets[i % 3]
        return launch_gemm(loaded, a.data_ptr(), k, w.data_ptr(), k, out.data_ptr(), n, m, n, k, stream, probe.data.ptr)
    for i in range(5):
        launch(i)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(30):
        launch(i)
    e1.record(); torch.cuda.synchronize()
    b2b = e0.elapsed_time(e1) * 1e3 / 30
    rows = []
    for rep in range(8):
        launch(rep)
        torch.cuda.synchronize()
        st = probe.get().astype(np.int64)
        t0 = st[:, 1].min()
        starts, ends = (st[:, 1] - t0) / 1e3, (st[:, 3] - t0) / 1e3
        rows.append((ends.max(), starts.max(), np.percentile(ends, 10), np.median(ends), np.percentile(ends, 90)))
    r = np.median(np.array(rows), axis=0)
    print(f"{name:12s} {spec[:60]:60s} CTAs {ctas:4d} b2b {b2b:6.1f} us | one launch: span {r[0]:6.1f} starts within {r[1]:5.1f} "
          f"ends p10 {r[2]:6.1f} median {r[3]:6.1f} p90 {r[4]:6.1f} last {r[0]:6.1f}", flush=True)
