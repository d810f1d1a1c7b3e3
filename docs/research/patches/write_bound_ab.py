"""Write-bound products (notes item 162, runs 143-146): each (shape, spec) beside its own torch
and cupy, one call and back to back; then torch's fill of the same C bytes, back to back.

  python docs/research/patches/write_bound_ab.py RUN OUT.csv [reverse]     (on the GPU)

RUN picks the run's rows: 143, 144, 145 (its specs need the temporary `map_fence` Schedule field
the note describes: "tile", "none" or "start"; not in the code) or 146. `reverse`: each row's
specs in the opposite order (run 145's second pass)."""
import csv
import sys

import numpy as np
import torch

from experiments.bench import measure_shape
from gemm.schedule import from_spec

ATTN, WR8 = ("attn-b32", 2048, 2048, 128, 32), ("wr-b8-8k-k128", 8192, 8192, 128, 8)
B16, B64, K64 = ("b16-1024", 1024, 1024, 1024, 16), ("b64-256", 256, 256, 4096, 64), ("b32-k64", 2048, 2048, 64, 32)
CLUSTER = "v7:block_m=256,block_n=128,cluster_n=2"


def fences(spec):
    sep = "," if ":" in spec else ":"
    return [spec, f"{spec}{sep}map_fence=none", f"{spec}{sep}map_fence=start"]


RUNS = {
    "143": [(ATTN, ["v7", "v7:epilogue=direct", CLUSTER, CLUSTER + ",epilogue=direct", "v7:stages=2", "v7:cluster_m=2",
                    "v7:block_n=192,stages=4,cluster_m=2,epilogue=direct"]),
            (("wr-16k-k64", 16384, 16384, 64, 1), ["v7", "v7:epilogue=direct", CLUSTER, "v7:stages=2"]),
            (WR8, ["v7", "v7:epilogue=direct"])],
    "144": [(K64, ["v7"]),
            (ATTN, ["v7", "v7:block_n=128,stages=4", "v7:block_n=128,stages=6", "v7:block_k=32,stages=6"]),
            (("b32-k192", 2048, 2048, 192, 32), ["v7"]), (("b32-k256", 2048, 2048, 256, 32), ["v7"]),
            (("wr-16k-k128", 16384, 16384, 128, 1), ["v7", "v7:block_n=128,stages=6"])],
    "145": [(ATTN, fences("v7") + fences(CLUSTER)), (B16, fences("v7")), (B64, fences("v7")), (WR8, fences("v7")),
            (K64, fences("v7"))],
    "146": [(ATTN, ["v7", CLUSTER]), (B16, ["v7"]), (B64, ["v7"]), (WR8, ["v7"]), (K64, ["v7"])],
}


def fill_us(nbytes):
    """torch's fill of `nbytes`, back to back: the median of 5 blocks of 10."""
    y = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda")
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(5):
        for _ in range(3):
            y.fill_(1.0)
        s.record()
        for _ in range(10):
            y.fill_(1.0)
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 100)
    return float(np.median(ts))


def main():
    run, out = sys.argv[1], sys.argv[2]
    rows = []
    for (name, m, n, k, batch), specs in RUNS[run]:
        shape = dict(suite="write", name=name, m=m, n=n, k=k, batch=batch, dtype="float16")
        c_bytes = batch * m * n * 2
        for spec in (specs[::-1] if len(sys.argv) > 3 else specs):
            r = measure_shape(shape, [from_spec(spec)], baselines_each=True, back_to_back=True)[0]
            r["spec"] = spec
            rows.append(r)
            ours, cublas = float(r.get("ours_b2b_us") or 1), float(r.get("cublas_b2b_us") or 1)
            print(f"{name:14s} {spec:60s} ok={r.get('correct')} ratio {r.get('ratio')} ours {r.get('ours_tflops')} TF "
                  f"b2b {ours} us (C at {c_bytes / ours / 1e3:.0f} GB/s) cublas {cublas} us "
                  f"({c_bytes / cublas / 1e3:.0f})", flush=True)
            with open(out, "w", newline="") as f:
                w = csv.DictWriter(f, sorted({key for x in rows for key in x}))
                w.writeheader()
                w.writerows(rows)
        t = fill_us(c_bytes)
        print(f"{name:14s} torch fill of C: {t:.1f} us ({c_bytes / t / 1e3:.0f} GB/s)", flush=True)


if __name__ == "__main__":
    main()
