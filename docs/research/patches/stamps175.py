"""Run 175 (python docs/research/patches/stamps175.py on the GPU, with consumer-stamps-release.patch applied): where a consumer's K tile goes, by clock64 stamps of thread 0 (the consumers' first
warp): the full barrier's wait, the WGMMAs' issue to wait_group, the release; for each tile's
whole loop, its load-free loop and its load-only loop, one CTA an SM, L2-resident operands.
Needs the stamp build (PROBE_WORDS 8: words 5-7 are the three sums)."""
import sys
import numpy as np
import torch
from experiments import catalog
from experiments.probe import probed_launcher
from experiments.reference import random_operands

GRIDS = {16: (4, 4), 132: (12, 11)}
K = 4096
TILES = ["v3 64x64x64 s8", "v3 64x64x128 s4", "v5 64x64x64 s8 wg1", "v4 128x64x64 s8", "v3 128x128x64 s4",
         "v3 128x128x64 s2"]
for tile in TILES:
    for prefix in ("", "mma loop ", "load loop "):
        name = prefix + tile
        try:
            e = catalog.entry(name)
        except Exception as ex:
            print("skip", name, ex, flush=True)
            continue
        s = e.schedule
        for count in (16, 132):
            tm, tn = GRIDS[count]
            m, n = tm * s.block_m, tn * s.block_n
            a, b = random_operands(m, n, K, "float16", seed=1)
            b = b.t().contiguous().t()
            run, probe, loaded = probed_launcher(e.kernel_config(clock_probe=True), m, n, K)
            for _ in range(5):
                run(a, b)
            torch.cuda.synchronize()
            recs = []
            for _ in range(5):
                run(a, b)
                torch.cuda.synchronize()
                recs.append(probe.get().astype(np.int64))
            rec = np.concatenate(recs)
            kt = K // s.block_k
            clk = np.median(rec[:, 2] - rec[:, 0]) / kt
            ns = np.median(rec[:, 3] - rec[:, 1]) / kt
            wait, mma, rel = (np.median(rec[:, i]) / kt for i in (5, 6, 7))
            print(f"{name:30s} ctas {count:3d} clk/Ktile {clk:7.1f} ns/Ktile {ns:6.1f} GHz {clk / ns:.3f} | "
                  f"wait {wait:6.1f} mma {mma:6.1f} release {rel:5.1f} rest {clk - wait - mma - rel:6.1f}", flush=True)
