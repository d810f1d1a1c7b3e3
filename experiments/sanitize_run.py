"""A small workload of every kernel family for compute-sanitizer (memcheck, racecheck, synccheck):

  compute-sanitizer --tool racecheck python3 -m experiments.sanitize_run [SUBSTRING ...]

With substrings, only the cases whose schedule contains one of them run (a sanitizer is
slow: a run can be split into several).

Edge tiles in M, N and K, every family, a ring deeper and shallower than K; the
producer-warpgroup kernels (V6, V7) with clusters, split-K (through a workspace and inside a
cluster), a batch and an odd count of tiles;
rows TMA cannot address, through gemm/padding.py's copies; a chain of dependent launches
whose grids fill the GPU, each letting the next kernel in once its loads are issued, and the
same chains loading each product's weights before waiting for the kernel ahead (preload); weights
packed for bulk copies (gemm.pack_weights), multicast in a cluster and in such a chain."""
import sys

import torch

import gemm
from experiments.reference import TOLERANCE, poisoned, random_operands, relative_error
from gemm.schedule import from_spec

CASES = [("v1", None, (200, 136, 100)), ("v2", 2, (200, 136, 333)), ("v2", 3, (130, 200, 70)),
         ("v2", 4, (64, 192, 256)), ("v3", 2, (200, 136, 333)), ("v3", 4, (130, 200, 70)),
         ("v4", 2, (300, 136, 333)), ("v5", 2, (200, 260, 520)), ("v5", 3, (130, 200, 70))]
# the producer-warpgroup kernels: (schedule spec, (m, n, k), batch)
WARPGROUP_CASES = [("v6", (300, 264, 200), 1), ("v7", (384, 264, 520), 1), ("v7:cluster_m=2", (384, 264, 520), 1),
                   # K and N not multiples of 8: both operands copied, C stored into a padded stand-in
                   ("v7", (300, 517, 259), 1),
                   ("v7", (200, 136, 96), 2), ("v7:cluster_n=2", (136, 520, 200), 1),
                   ("v7:block_n=128,stages=4,split_k=4", (200, 264, 1000), 1),
                   ("v7:block_n=128,stages=6,cluster_m=2,split_k=2", (384, 264, 1000), 1),
                   ("v7:block_n=64,stages=8,split_k=2", (200, 200, 1000), 1),
                   ("v7:block_m=64,block_n=128,consumer_warpgroups=1,producer_registers=0,"
                    "consumer_registers=0,stages=8,split_k=4", (64, 264, 2000), 2),
                   ("v7:block_n=16,stages=10,split_k=4,swap_ab=true,epilogue=direct,producer_registers=0,"
                    "consumer_registers=0", (13, 264, 1000), 1),
                   # three m64 WGMMAs a warpgroup; 500 rows of B' leave an edge tile of 116
                   ("v7:block_m=192,consumer_warpgroups=1,block_n=16,stages=8,swap_ab=true,epilogue=direct,"
                    "producer_registers=0,consumer_registers=0", (9, 500, 1000), 1),
                   # 64 rows of B' a CTA, two K boxes a stage; 600 rows leave an edge tile of 24
                   ("v7:block_m=64,consumer_warpgroups=1,block_n=32,block_k=128,stages=6,swap_ab=true,"
                    "epilogue=direct,producer_registers=0,consumer_registers=0", (29, 600, 1000), 1),
                   # split-K inside a cluster: partials through distributed shared memory; 2 slices on
                   # several tiles a cluster (the barriers' phases turn), 4 slices of a 64-row swap-AB tile
                   ("v7:block_n=128,stages=4,split_k=2,split_cluster=true", (1100, 1300, 1000), 1),
                   ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=4,swap_ab=true,"
                    "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true", (13, 264, 1000), 1),
                   # ... with a lead: the first slice's extra K tiles (more than K has, at 3 slices) and
                   # the others' whole partials summed by it alone; the cluster's wait held until the
                   # first remote store
                   ("v7:block_n=128,stages=3,split_k=3,split_cluster=true,split_lead=3,defer_cluster_wait=true",
                    (1100, 1300, 300), 1),
                   ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
                    "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true,split_lead=2",
                    (13, 264, 1000), 1),
                   ("v7:stream_k=true", (384, 264, 520), 1), ("v7:block_n=128,stages=4,stream_k=true", (520, 900, 1000), 1),
                   # 306 tiles on 132 CTAs: the last partial wave's 42 shared, two waves of whole tiles
                   ("v7:block_n=128,stages=4,stream_k=true,stream_k_waves=0", (2304, 2176, 256), 1),
                   # 216 tiles on 132 CTAs: a CTA's second unit loaded from its last K tile down
                   ("v7:block_n=192,stages=4,cluster_m=2,k_order=serpentine", (2304, 2176, 256), 1),
                   # many products of two tiles: each CTA acquires the maps of the products it reaches;
                   # stream-K's shared runs across the products of a batch
                   ("v7", (256, 512, 64), 40), ("v7:block_n=128,stages=4,stream_k=true", (520, 900, 200), 3),
                   # 128x160 in a cluster sharing B: five 32-column C boxes a share; 7 x 3 tiles, an odd
                   # count of tile rows leaves a partner without a tile
                   ("v7:block_n=160,stages=4,cluster_m=2", (900, 420, 520), 1),
                   # 128x320: two WGMMA column blocks a warpgroup, B in two 160-row slabs (or multicast
                   # halves), C staged in two passes; a last column of tiles 60 wide (its second pass
                   # wholly past N), and in the cluster an odd count of tile rows
                   ("v7:block_n=320", (900, 700, 520), 1),
                   ("v7:block_n=320,cluster_m=2,producer_registers=48,consumer_registers=224", (1100, 700, 520), 1),
                   # 128x256 with a fourth stage: C in two passes of 128 columns
                   ("v7:stages=4", (384, 264, 520), 1),
                   # tiles cut to the product's width (gemm.dispatch.candidates.WAVE_FIT_SPECS): 256 rows
                   # in a cluster sharing A, an odd count of tile columns (a partner without a tile);
                   # n=144 nine 16-column C boxes, n=160 two staging passes (the last tile's second
                   # wholly past N), n=192 two passes of 96; the lone 128x144 with 4 stages
                   ("v7:block_m=256,block_n=144,cluster_n=2", (600, 700, 520), 1),
                   ("v7:block_m=256,block_n=160,cluster_n=2", (600, 700, 520), 1),
                   ("v7:block_m=256,block_n=192,cluster_n=2", (600, 900, 520), 1),
                   ("v7:block_n=144,stages=4", (900, 700, 520), 1)]


def check(label, c, a, b):
    torch.cuda.synchronize()
    err = relative_error(c, a, b)
    print(f"{label}: rel err {err:.2e}", "ok" if err < TOLERANCE["float16"] else "WRONG", flush=True)


WANTED = sys.argv[1:]


def wanted(name: str) -> bool:
    return not WANTED or any(w in name for w in WANTED)


for version, stages, (m, n, k) in CASES:
    if not wanted(f"{version} stages={stages}"):
        continue
    a, b = random_operands(m, n, k, "float16", seed=m + n + k)
    b = b.t().contiguous().t() if version == "v1" else b
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b, version=version, stages=stages, out=c)
    check(f"{version} stages={stages} {m}x{n}x{k}", c, a, b)

for spec, (m, n, k), batch in WARPGROUP_CASES:
    if not wanted(spec):
        continue
    pairs = [random_operands(m, n, k, "float16", seed=m + n + k + i) for i in range(batch)]
    a, b = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    c = torch.full((batch, m, n), float("nan"), dtype=torch.float16, device="cuda")
    gemm.matmul(a, b, schedule=from_spec(spec), out=c)
    for i in range(batch):
        check(f"{spec} {m}x{n}x{k} batch {i}/{batch}", c[i], a[i], b[i])

# dependent launches back to back, each reading the last one's output, on grids that fill the GPU
# (FLAG_EARLY_TRIGGER: the producer lets the next kernel in after its last load): (spec, m, widths)
CHAIN_CASES = [("v7", 2048, [256, 2048, 2048]),
               ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
                "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true", 16, [2048, 4096, 4096]),
               # each kernel's weights' first ring loaded before its wait for the kernel ahead
               ("v7:preload=b", 2048, [256, 2048, 2048]),
               ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
                "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true,split_lead=2,"
                "defer_cluster_wait=true,preload=b", 16, [2048, 4096, 4096])]


def run_chain(label, spec, m, widths, packed=False):
    """x_{i+1} = x_i @ W_i over `widths`, the calls queued with no synchronisation between them
    (each W_i packed by gemm.pack_weights if `packed`), then every link checked."""
    x, _ = random_operands(m, 8, widths[0], "float16", seed=m)
    ws = [random_operands(8, n, k, "float16", seed=k + n)[1] for k, n in zip(widths, widths[1:])]
    operands = [gemm.pack_weights(w) for w in ws] if packed else ws
    outs = [poisoned(m, w.shape[1], "float16") for w in ws]
    inputs = [x] + outs[:-1]
    for inp, w, out in zip(inputs, operands, outs):
        gemm.matmul(inp, w, schedule=from_spec(spec), out=out)
    for i, (inp, w, out) in enumerate(zip(inputs, ws, outs)):
        check(f"{label} {m}x{w.shape[1]}x{inp.shape[1]} link {i}", out, inp, w)


for spec, m, widths in CHAIN_CASES:
    if wanted(f"chain {spec}"):
        run_chain(f"chain {spec}", spec, m, widths)

# weights packed for bulk copies (gemm.pack_weights): the decode pair with a lead (its weights the
# kernel's A; 264 rows leave an edge tile of 8 and K an edge box), a pair multicasting the packed
# B in 64-row halves, and a chain of dependent launches each copying its packed weights before
# its wait for the kernel ahead: (spec, (m, n, k) or (m, widths))
PACKED_CASES = [("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
                 "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true,split_lead=2",
                 (13, 264, 1000)),
                ("v7:block_n=128,stages=4,cluster_m=2", (384, 264, 520))]
PACKED_CHAIN = ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
                "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true,split_lead=2,"
                "preload=b", 16, [2048, 4096, 4096])

for spec, (m, n, k) in PACKED_CASES:
    if not wanted(f"packed {spec}"):
        continue
    a, b = random_operands(m, n, k, "float16", seed=m + n + k)
    c = poisoned(m, n, "float16")
    gemm.matmul(a, gemm.pack_weights(b), schedule=from_spec(spec), out=c)
    check(f"packed {spec} {m}x{n}x{k}", c, a, b)

spec, m, widths = PACKED_CHAIN
if wanted(f"packed chain {spec}"):
    run_chain(f"packed chain {spec}", spec, m, widths, packed=True)
