"""Each SM's L2 -> SM rate on small grids: the specialized kernel's load-only loop (and the
whole loop) at 16, 64 and ~132 CTAs, one CTA an SM, K = 8192 (L2-resident operands).
Per CTA: (block_m + block_n) x K x 2 bytes over its own globaltimer span; median over CTAs of 5 runs.

  python docs/research/patches/port170.py "v3 64x64x64 s8" "v4 128x64x128 s4"   # from the repository root, on the GPU
(run 170, docs/research/notes.md item 173; the names are experiments.catalog's)."""
import sys
import numpy as np
import torch
from experiments import catalog
from experiments.probe import probed_launcher
from experiments.reference import random_operands

K = 8192
rows = []
for name in sys.argv[1:]:
    for kind in ("load", "gemm"):
        e = catalog.entry(("load loop " if kind == "load" else "") + name)
        s = e.schedule
        for tiles in (16, 64, 132):
            tm = {16: 4, 64: 8, 132: 12}[tiles]
            tn = {16: 4, 64: 8, 132: 11}[tiles]
            m, n = tm * s.block_m, tn * s.block_n
            a, b = random_operands(m, n, K, "float16", seed=1)
            b = b.t().contiguous().t()
            run, probe, loaded = probed_launcher(e.kernel_config(clock_probe=True), m, n, K)
            for _ in range(5):
                run(a, b)
            torch.cuda.synchronize()
            spans, clks = [], []
            for _ in range(5):
                run(a, b)
                torch.cuda.synchronize()
                rec = probe.get().astype(np.int64)
                spans.append(rec[:, 3] - rec[:, 1]); clks.append(rec[:, 2] - rec[:, 0])
            ns = float(np.median(np.concatenate(spans))); clk = float(np.median(np.concatenate(clks)))
            per_cta = (s.block_m + s.block_n) * K * 2
            kt = K // s.block_k
            print(f"{kind:4s} {name:22s} ctas {tm*tn:3d} span {ns/1e3:7.2f} us  {per_cta/ns:6.1f} GB/s/SM  "
                  f"{clk/kt:6.1f} clk/Ktile {ns/kt:6.1f} ns/Ktile  {clk/ns:.3f} GHz", flush=True)
