"""The producer-warpgroup kernels (V6, V7 and variants) on the GPU: against a float64
reference over the edge-tile grid (M, N, K not multiples of the tile, fewer tiles than
SMs, one tile, odd tile counts under clusters), both dtypes, every majorness, outputs
poisoned with NaN; and exactly, on small integers, where every product and sum is exact."""
import pytest

pytestmark = pytest.mark.gpu

from experiments.reference import TOLERANCE, poisoned, random_operands, relative_error  # noqa: E402
from gemm.schedule import preset  # noqa: E402

SCHEDULES = {
    "v7": preset("v7"),
    "v7-cluster-m": preset("v7", cluster_m=2),
    "v7-cluster-n": preset("v7", cluster_n=2),
    "v7-cluster-direct": preset("v7", cluster_m=2, epilogue="direct"),
    "v7-192-s4-inflight": preset("v7", block_n=192, stages=4, wgmma_in_flight=1),
    "v7-256x128": preset("v7", block_m=256, block_n=128, cluster_n=2),
    # a WGMMA group in flight across K tiles while a cluster of 2 shares B (multicast)
    "v7-192-cluster-inflight": preset("v7", block_n=192, stages=4, cluster_m=2, wgmma_in_flight=1),
    "v7-176": preset("v7", block_n=176),        # N not a power of two: WGMMA n=176, TMA-stored C boxes
    # 128x160 in a cluster sharing B: five 32-column C boxes (64-byte swizzle) a warpgroup's share
    "v7-160-cluster-m": preset("v7", block_n=160, stages=4, cluster_m=2),
    # 128x320: two m64n160 WGMMA column blocks a warpgroup, B loaded in two 160-row slabs (a TMA
    # box is at most 256 rows) or multicast in halves, C staged in two passes of 160 columns
    "v7-320": preset("v7", block_n=320),
    "v7-320-cluster-m": preset("v7", block_n=320, cluster_m=2, producer_registers=48, consumer_registers=224),
    "v7-320-direct": preset("v7", block_n=320, stages=4, epilogue="direct"),
    # 256-row tiles cut to the product's width (gemm.dispatch.candidates.WAVE_FIT_SPECS), a
    # cluster sharing A: WGMMA n=144 and C in nine 16-column boxes (32-byte swizzle), n=160 in
    # five 32-column ones, n=192 in three 64-column ones
    "v7-256x144-cluster-n": preset("v7", block_m=256, block_n=144, cluster_n=2),
    "v7-256x160-cluster-n": preset("v7", block_m=256, block_n=160, cluster_n=2),
    "v7-256x192-cluster-n": preset("v7", block_m=256, block_n=192, cluster_n=2),
    "v7-128x144-s4": preset("v7", block_n=144, stages=4),   # ... and 128 rows alone, cuBLASLt's 1536^3 tile
    # 128x256 with a fourth stage: its C fits only in two passes of 128 columns
    "v7-s4-two-passes": preset("v7", stages=4),
    "v7-160-one-tile-per-cta": preset("v7", block_n=160, persistent=False, producer_registers=0,
                                      consumer_registers=0),
    "v6": preset("v6"),
    "v7-128-splitk3": preset("v7", block_n=128, stages=4, split_k=3),
    # split-K stages no C tile: a 6-stage 128x128 ring, and a cluster sharing A
    "v7-128-s6-splitk2": preset("v7", block_n=128, stages=6, split_k=2),
    # two consumer warpgroups of 64x64 (WGMMA n=64), an 8-stage ring, split-K 2
    "v7-128x64-s8-splitk2": preset("v7", block_n=64, stages=8, split_k=2),
    "v7-256x128-cluster-splitk4": preset("v7", block_m=256, block_n=128, cluster_n=2, stages=4, split_k=4),
    "v7-128-cluster-splitk2": preset("v7", block_n=128, stages=6, cluster_m=2, split_k=2),
    "v7-64x128-splitk4": preset("v7", block_m=64, block_n=128, consumer_warpgroups=1, stages=6,
                                producer_registers=0, consumer_registers=0, split_k=4),
    # swap-AB: the kernel computes C^T = B^T A^T and writes it into C transposed
    "v7-swap-ab": preset("v7", block_n=16, stages=10, swap_ab=True, epilogue="direct",
                         producer_registers=0, consumer_registers=0),
    # 192 rows of B' in one consumer warpgroup (three m64 WGMMAs a K step), cuBLAS's decode tile
    "v7-swap-ab-192": preset("v7", block_m=192, consumer_warpgroups=1, block_n=16, stages=8, swap_ab=True,
                             epilogue="direct", producer_registers=0, consumer_registers=0),
    "v7-swap-ab-splitk4": preset("v7", block_n=64, stages=8, split_k=4, swap_ab=True, epilogue="direct",
                                 producer_registers=0, consumer_registers=0),
    # 64 rows of B' in one consumer warpgroup, two 64-wide K boxes a stage (the small decodes' tile)
    "v7-swap-ab-64": preset("v7", block_m=64, consumer_warpgroups=1, block_n=32, block_k=128, stages=6,
                            swap_ab=True, epilogue="direct", producer_registers=0, consumer_registers=0),
    # split-K inside a cluster: a tile's slices add their partials through distributed shared
    # memory (2, 3 and 8 slices: shares of unequal length, a cluster of the portable maximum)
    "v7-128-dsmem-splitk2": preset("v7", block_n=128, stages=4, split_k=2, split_cluster=True),
    "v7-128-dsmem-splitk3": preset("v7", block_n=128, stages=4, split_k=3, split_cluster=True),
    "v7-128-dsmem-splitk8": preset("v7", block_n=128, stages=3, split_k=8, split_cluster=True),
    "v7-128x64-dsmem-splitk2": preset("v7", block_n=64, stages=8, split_k=2, split_cluster=True),
    "v7-64x128-dsmem-splitk4": preset("v7", block_m=64, block_n=128, consumer_warpgroups=1, stages=6,
                                      producer_registers=0, consumer_registers=0, split_k=4, split_cluster=True),
    # ... with a lead: the first slice takes more K tiles and adds the others' whole partials
    # alone (3 slices, a lead longer than short K; the decode down rows' tiles), each CTA's
    # loads started before the cluster barrier's wait
    "v7-128-dsmem-splitk3-lead": preset("v7", block_n=128, stages=3, split_k=3, split_cluster=True, split_lead=3,
                                        defer_cluster_wait=True),
    "v7-128x64-dsmem-splitk2-lead": preset("v7", block_n=64, stages=8, split_k=2, split_cluster=True, split_lead=4,
                                           defer_cluster_wait=True),
    "v7-swap-ab-16-dsmem-lead": preset("v7", block_m=64, consumer_warpgroups=1, block_n=16, block_k=128, stages=8,
                                       split_k=2, swap_ab=True, epilogue="direct", producer_registers=0,
                                       consumer_registers=0, split_cluster=True, split_lead=2),
    "v7-swap-ab-16-dsmem-late-wait": preset("v7", block_m=64, consumer_warpgroups=1, block_n=16, block_k=128,
                                            stages=8, split_k=2, swap_ab=True, epilogue="direct",
                                            producer_registers=0, consumer_registers=0, split_cluster=True,
                                            defer_cluster_wait=True),
    # the small-grid tiles (gemm.dispatch.candidates.SMALL_GRID_SPECS): 64x64 in one warpgroup
    # (a TMA-stored C box of 64), 64x128 with a WGMMA group in flight, 128x64 sharing A in a cluster
    "v7-64x64-s8": preset("v7", block_m=64, block_n=64, consumer_warpgroups=1, stages=8,
                          producer_registers=0, consumer_registers=0),
    "v7-64x128-s8-inflight": preset("v7", block_m=64, block_n=128, consumer_warpgroups=1, stages=8,
                                    producer_registers=0, consumer_registers=0, wgmma_in_flight=1),
    "v7-128x64-s8-cluster-n": preset("v7", block_n=64, stages=8, cluster_n=2),
    # ... and each 128 deep (two 64-wide K boxes a stage), with 128x128 split in two for K-heavy ones
    "v7-64x64-bk128": preset("v7", block_m=64, block_n=64, consumer_warpgroups=1, block_k=128, stages=4,
                             producer_registers=0, consumer_registers=0),
    "v7-64x128-bk128-inflight": preset("v7", block_m=64, block_n=128, consumer_warpgroups=1, block_k=128,
                                       stages=4, producer_registers=0, consumer_registers=0, wgmma_in_flight=1),
    "v7-128x64-bk128-cluster-n": preset("v7", block_n=64, block_k=128, stages=4, cluster_n=2),
    "v7-128-bk128-splitk2": preset("v7", block_n=128, block_k=128, stages=3, split_k=2),
    "v7-swap-ab-dsmem-splitk4": preset("v7", block_n=16, block_k=128, stages=5, split_k=4, swap_ab=True,
                                       epilogue="direct", producer_registers=0, consumer_registers=0,
                                       split_cluster=True),
    # stream-K: the last partial wave's tiles and one wave before them shared out by K iteration
    "v7-stream-k": preset("v7", stream_k=True),
    # ... or the last partial wave's alone (every tile when there are fewer than CTAs)
    "v7-stream-k-partial-wave": preset("v7", stream_k=True, stream_k_waves=0),
    "v7-128-stream-k-direct": preset("v7", block_n=128, stages=4, stream_k=True, epilogue="direct"),
    "v7-swap-ab-stream-k": preset("v7", block_n=64, stages=8, swap_ab=True, epilogue="direct",
                                  producer_registers=0, consumer_registers=0, stream_k=True),
    # each CTA's odd units walk K from the last tile down: the L2 still holds the panels the
    # wave before shared with this one (whole tiles, a cluster sharing B, split-K's slices)
    "v7-serpentine": preset("v7", raster_group=16, k_order="serpentine"),
    "v7-192-cluster-serpentine": preset("v7", block_n=192, stages=4, cluster_m=2, k_order="serpentine"),
    "v7-128-splitk3-serpentine": preset("v7", block_n=128, stages=4, split_k=3, k_order="serpentine"),
}
# edge tiles in M, N and K (rows stay 16-byte aligned, so TMA reads the operands in place),
# fewer tiles than SMs, one tile, an odd count of M tiles (a cluster partner without a tile)
EDGES = [(336, 520, 264), (1, 8, 8), (136, 72, 24), (776, 1000, 96), (384, 256, 1000),
         (128, 256, 64), (1000, 8, 4000), (2304, 2560, 512)]
# rows TMA cannot address: the operands are copied, and C is stored from registers
UNALIGNED = [(333, 517, 259), (4095, 4097, 4099)]
MAJORS = [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col")]
# every majorness where an operand is multicast (its part boxes differ by majorness); the
# seed's layout (B stored [N, K]) elsewhere
# swap-AB: the operands trade roles; 128x64 split-K: a narrow N box in every majorness
ALL_MAJORS = ("v7-cluster-m", "v7-cluster-n", "v7-128x64-s8-splitk2", "v7-swap-ab", "v7-swap-ab-192", "v7-swap-ab-64",
              "v7-swap-ab-splitk4", "v7-swap-ab-stream-k", "v7-128x64-dsmem-splitk2", "v7-swap-ab-dsmem-splitk4",
              "v7-128x64-dsmem-splitk2-lead", "v7-swap-ab-16-dsmem-lead",
              "v7-192-cluster-serpentine", "v7-192-cluster-inflight", "v7-64x64-s8", "v7-128x64-s8-cluster-n",
              "v7-64x64-bk128", "v7-128x64-bk128-cluster-n", "v7-320", "v7-320-cluster-m", "v7-256x144-cluster-n")


def _dtypes(name):
    return ["float16"] if SCHEDULES[name].accumulate == "float16" else ["float16", "bfloat16"]


def _majors(name):
    return MAJORS if name in ALL_MAJORS else [("row", "col")]


def _laid_out(x, order):
    """The same matrix stored row-major ('row') or as a transposed view of a column-major copy."""
    return x.contiguous() if order == "row" else x.t().contiguous().t()


def _tolerance(name, dtype, k):
    # fp16 accumulation rounds every partial sum to 11 bits: error grows like sqrt(K) ulps
    if SCHEDULES[name].accumulate == "float16":
        return 2e-3 * max(1.0, (k / 256) ** 0.5)
    return TOLERANCE[dtype]


@pytest.mark.parametrize("shape", EDGES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_edge_grid(name, shape):
    import gemm
    m, n, k = shape
    for dtype in _dtypes(name):
        for a_order, b_order in _majors(name):
            a, b = random_operands(m, n, k, dtype, seed=hash((name, shape, a_order, b_order)) % 9973)
            c = poisoned(m, n, dtype)
            gemm.matmul(_laid_out(a, a_order), _laid_out(b, b_order), schedule=SCHEDULES[name], out=c)
            err = relative_error(c, a, b)
            assert err < _tolerance(name, dtype, k), (dtype, a_order, b_order, err)


@pytest.mark.parametrize("shape", UNALIGNED, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_unaligned_rows_fall_back(shape, dtype):
    import gemm
    m, n, k = shape
    a, b = random_operands(m, n, k, dtype, seed=m)
    c = poisoned(m, n, dtype)
    gemm.matmul(a, b.t().contiguous().t(), schedule=SCHEDULES["v7-cluster-m"], out=c)
    assert relative_error(c, a, b) < TOLERANCE[dtype]


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_large(name):
    import gemm
    m, n, k = 4096, 4096, 4096
    dtype = _dtypes(name)[-1]
    a, b = random_operands(m, n, k, dtype, seed=11)
    b = b.t().contiguous().t()           # the seed's layout: B stored [N, K]
    c = poisoned(m, n, dtype)
    gemm.matmul(a, b, schedule=SCHEDULES[name], out=c)
    assert relative_error(c, a, b) < _tolerance(name, dtype, k)


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_exact_on_small_integers(name):
    """Integers in [-3, 3] with K = 96: every product and partial sum is exact in fp16 (and in
    the fp32 accumulators), so any misplaced element (a wrong swizzle, a stmatrix address, a
    multicast half) shows as a mismatch, not as rounding."""
    import torch

    import gemm
    m, n, k = 600, 700, 96
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randint(-3, 4, (m, k), generator=g, device="cuda").half()
    b = torch.randint(-3, 4, (k, n), generator=g, device="cuda").half()
    c = poisoned(m, n, "float16")
    gemm.matmul(a, b.t().contiguous().t(), schedule=SCHEDULES[name], out=c)
    assert torch.equal(c.double(), a.double() @ b.double())


@pytest.mark.parametrize("name", ["v7", "v7-128-splitk3", "v7-64x128-splitk4", "v7-128x64-s8-splitk2",
                                  "v7-swap-ab-splitk4", "v7-128-dsmem-splitk3", "v7-128-dsmem-splitk8",
                                  "v7-swap-ab-dsmem-splitk4", "v7-128-dsmem-splitk3-lead",
                                  "v7-128x64-dsmem-splitk2-lead", "v7-swap-ab-16-dsmem-lead", "v7-stream-k",
                                  "v7-stream-k-partial-wave", "v7-128-stream-k-direct", "v7-serpentine",
                                  "v7-128-splitk3-serpentine"])
def test_repeated_calls_are_bitwise_equal(name):
    """The same inputs give the same bits launch after launch: no race between the producer's
    refills, the partner's multicast and the consumers' reads or the staged stores; split-K
    sums its slices (through a workspace or a cluster's shared memory), and stream-K a tile's
    shares, in one order whoever finishes first."""
    import torch

    import gemm
    a, b = random_operands(1000, 3000, 6000, "float16", seed=3)
    first = gemm.matmul(a, b, schedule=SCHEDULES[name])
    assert relative_error(first, a, b) < TOLERANCE["float16"]
    for _ in range(5):
        assert torch.equal(gemm.matmul(a, b, schedule=SCHEDULES[name]), first)


@pytest.mark.parametrize("name", ["v7", "v7-cluster-m", "v7-stream-k", "v7-stream-k-partial-wave", "v7-128-splitk3",
                                  "v7-128-dsmem-splitk2", "v7-128-dsmem-splitk3-lead"])
@pytest.mark.parametrize("shape", [(5, 256, 512, 64), (40, 128, 256, 200), (3, 1100, 2300, 300)],
                         ids=lambda s: "x".join(map(str, s)))
def test_batch_reaches_every_products_maps(name, shape):
    """Each CTA acquires, once, the tensor maps of the products its walk reaches: products of
    fewer tiles than CTAs (each CTA in one product, most in none), of one tile (40 products),
    and of many (a CTA's walk across several), through stream-K's shared runs and split-K's
    slices too; every product's C against its own reference."""
    import torch

    import gemm
    batch, m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(batch + k)
    a = torch.randn(batch, m, k, generator=g, device="cuda").half()
    b = torch.randn(batch, k, n, generator=g, device="cuda").half()
    c = poisoned(batch * m, n, "float16").view(batch, m, n)
    gemm.matmul(a, b, schedule=SCHEDULES[name], out=c)
    for i in range(batch):
        assert relative_error(c[i], a[i], b[i]) < TOLERANCE["float16"], i


def test_swap_ab_refuses_a_batch_before_writing():
    """A swap-AB kernel runs one product: a batch of pairs is refused with the reason, and
    the output is left as it was. (A batch of A against one B folds into rows and runs.)"""
    import torch

    import gemm
    from gemm.schedule import KernelGapError
    a = torch.randn(3, 16, 64, device="cuda").half()
    b = torch.randn(3, 64, 80, device="cuda").half()
    c = poisoned(48, 80, "float16").view(3, 16, 80)
    with pytest.raises(KernelGapError, match="one product at a time"):
        gemm.matmul(a, b, schedule=SCHEDULES["v7-swap-ab"], out=c)
    assert torch.isnan(c).all()
    folded = gemm.matmul(a, b[0], schedule=SCHEDULES["v7-swap-ab"])
    assert relative_error(folded.reshape(48, 80), a.reshape(48, 64), b[0]) < TOLERANCE["float16"]
