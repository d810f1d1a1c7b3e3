"""Each SM's L2 -> SM rate on grids of 8-132 CTAs (one an SM, L2-resident operands, K = 8192 unless --k):
the specialized kernel's load-only loop (and, with --whole, the whole loop) of each catalog tile.
Per CTA: (block_m + block_n) x K x 2 bytes over its own globaltimer span; median over CTAs of 5
runs; also the box rows' L2 requests a ns, per SM and for the grid.

  python docs/research/patches/port170.py --whole "v3 64x64x64 s8" "v4 128x64x128 s4"       # run 170
  python docs/research/patches/port170.py --k 4096 --ctas 8,16,33,66,99,132 "v3 128x128x16 s8" ...   # run 171
  (run 174: .devrun_min-style, the 1-4 stage rings; docs/research/notes.md item 178)
(from the repository root, on the GPU; docs/research/notes.md items 173-174; names are
experiments.catalog's)."""
import argparse

import numpy as np
import torch

from experiments import catalog
from experiments.probe import probed_launcher
from experiments.reference import random_operands

GRIDS = {8: (4, 2), 16: (4, 4), 33: (11, 3), 64: (8, 8), 66: (11, 6), 99: (11, 9), 110: (11, 10), 132: (12, 11)}

ap = argparse.ArgumentParser()
ap.add_argument("names", nargs="+")
ap.add_argument("--ctas", default="16,64,132")
ap.add_argument("--k", type=int, default=8192, help="K (the operands should fit in L2)")
ap.add_argument("--whole", action="store_true", help="also the whole loop (loads and WGMMAs)")
args = ap.parse_args()
K = args.k
for name in args.names:
    for kind in ("load", "gemm") if args.whole else ("load",):
        e = catalog.entry(("load loop " if kind == "load" else "") + name)
        s = e.schedule
        for count in map(int, args.ctas.split(",")):
            tm, tn = GRIDS[count]
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
                spans.append(rec[:, 3] - rec[:, 1])
                clks.append(rec[:, 2] - rec[:, 0])
            ns = float(np.median(np.concatenate(spans)))
            clk = float(np.median(np.concatenate(clks)))
            per_cta = (s.block_m + s.block_n) * K * 2
            requests = (s.block_m + s.block_n) * K * 2 / min(128, s.block_k * 2)   # a box row of <= 128 B each
            kt = K // s.block_k
            print(f"{kind:4s} {name:22s} ctas {tm * tn:3d} span {ns / 1e3:7.2f} us  {per_cta / ns:6.1f} GB/s/SM  "
                  f"{clk / kt:6.1f} clk/Ktile {ns / kt:6.1f} ns/Ktile  {clk / ns:.3f} GHz  "
                  f"{requests / ns:5.2f} req/ns/SM {requests / ns * tm * tn:6.1f} req/ns", flush=True)
