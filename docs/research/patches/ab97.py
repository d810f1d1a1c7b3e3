"""A/B of kernel builds and schedules in one process, each case's variants in interleaved rounds of
packed launches back to back (gemm.launch.Launch), CUDA events, median us per launch; every
variant's output (NaN-poisoned) checked against a float32 product first.
Variants: (label, schedule spec, source digest of the build: the committed one or a patched one's)."""
import statistics
import torch
import gemm.compile as gc
from gemm.kernels import KernelConfig
from gemm.launch import launch_gemm, load_kernel
from gemm.schedule import from_spec
OLD, DEFER = "f63ef67c6a63888e", "27737dc3dd59e6a3"
V7, C256 = "v7", "v7:block_m=256,block_n=128,cluster_n=2"
S2 = "v7:block_n=128,stages=4,split_k=2"
CASES = [  # name, m, n, k, batch, variants
    ("sq2048", 2048, 2048, 2048, 1, [("v7", V7, OLD), ("v7 deferred", V7, DEFER)]),
    ("b16-1024", 1024, 1024, 1024, 16, [("v7", V7, OLD), ("v7 deferred", V7, DEFER)]),
    ("sq4096", 4096, 4096, 4096, 1, [("256x128 cn2", C256, OLD), ("256x128 cn2 deferred", C256, DEFER),
                                     ("v7", V7, OLD), ("v7 deferred", V7, DEFER)]),
    ("llama7b-qkv", 4096, 12288, 4096, 1, [("v7", V7, OLD), ("v7 deferred", V7, DEFER)]),
    ("k16k-2048", 2048, 2048, 16384, 1, [("v7", V7, OLD), ("v7 deferred", V7, DEFER)]),
    ("k16k-1024", 1024, 1024, 16384, 1, [("s4 split2", S2, OLD), ("s6 split2", "v7:block_n=128,stages=6,split_k=2", OLD),
                                         ("s4 split2 cm2", S2 + ",cluster_m=2", OLD), ("s4 split2 cn2", S2 + ",cluster_n=2", OLD),
                                         ("s6 split2 cm2", "v7:block_n=128,stages=6,split_k=2,cluster_m=2", OLD)]),
]
def load(cfg, digest):
    real = gc._source_digest
    gc._source_digest = lambda: digest
    gc.compile_kernel.cache_clear()
    try:
        return load_kernel(cfg)
    finally:
        gc._source_digest = real
        gc.compile_kernel.cache_clear()
stream = torch.cuda.current_stream().cuda_stream
for name, m, n, k, batch, variants in CASES:
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(batch, m, k, generator=g, device="cuda").half(); w = torch.randn(batch, n, k, generator=g, device="cuda").half()
    ref = torch.bmm(a.float(), w.float().transpose(1, 2))
    launches, errs = {}, {}
    for label, spec, digest in variants:
        lk = load(KernelConfig(from_spec(spec), "float16", "k", "k"), digest)
        out = torch.full((batch, m, n), float("nan"), device="cuda", dtype=torch.float16)
        launches[label] = launch_gemm(lk, a.data_ptr(), k, w.data_ptr(), k, out.data_ptr(), n, m, n, k, stream,
                                      batch=batch, a_step=m * k if batch > 1 else 0, b_step=n * k if batch > 1 else 0)
        torch.cuda.synchronize()
        errs[label] = (((out.float() - ref).norm() / ref.norm()).item(), bool(torch.isnan(out).any()))
    times = {label: [] for label in launches}
    reps = 20 if m * n * k * batch < 2**34 else 5
    labels = list(launches)
    for rnd in range(12):
        order = labels[rnd % len(labels):] + labels[:rnd % len(labels)]
        for v in (order if rnd % 2 == 0 else order[::-1]):
            for _ in range(3):
                launches[v]()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(reps):
                launches[v]()
            e.record(); torch.cuda.synchronize()
            if rnd >= 2:
                times[v].append(s.elapsed_time(e) * 1e3 / reps)
    base = statistics.median(times[labels[0]])
    for v in labels:
        t = statistics.median(times[v])
        print(f"{name:12s} {v:22s} {t:9.2f} us  {t / base - 1:+.2%}  err {errs[v][0]:.1e} nan {errs[v][1]}", flush=True)
