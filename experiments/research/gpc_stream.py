"""Whether a stream of weights from HBM ends sooner when its work is shared by GPC, not by CTA.
python -m experiments.research.gpc_stream --dump FILE.npz        (on the GPU)
python -m experiments.research.gpc_stream --summarize FILE.npz   (no GPU)

The decode down rows pay ~6 us a call beside their bytes, and 1.7 us of it is CTAs ending
apart: whole GPCs stream ~10% faster than the rest, the same SMs every launch (notes 161). A
static walk waits for its slowest GPC; dynamic units cost more in hand-offs than they save
(notes 166). If a GPC's share of the L2 -> HBM path is what sets its SMs' rate, work shared by
GPC rather than by CTA would end together with no hand-off at all. This asks the memory system
that alone, with no GEMM around it: one thread a CTA streams its share of a buffer through a
ring of STAGES bulk copies (cp.async.bulk, BOX bytes each) into shared memory, and stamps its SM,
its cluster and its start and end (%globaltimer).

1. **Where the GPCs are.** cuOccupancyMaxActiveClusters for clusters of 1-16 CTAs (one CTA an
   SM: the ring's shared memory keeps a second out) bounds how many SMs each GPC has. Launches in
   clusters of 8 and of the larger sizes the device holds put each cluster on one GPC: the SM
   ids that shared a cluster, merged over the launches, are the GPCs (an SM no such cluster
   reached is left out).
2. **How the work is shared.** The same bytes (the down rows' 90 MB and the up rows' 180 MB),
   back to back, (a) in equal shares over 132 CTAs, 128 CTAs, 64 clusters of 2; (b) in equal
   shares over one wave of clusters of 4-16 (fewer SMs, placed GPC by GPC); (c) over 132 CTAs,
   each CTA's share chosen by its SM (the kernel reads its %smid and takes that SM's slice):
   the shares in proportion to each SM's rate in (a), and, where the map holds every SM, in
   proportion to 1 / its GPC's SMs (each GPC the same bytes). (c) is valid only where every CTA
   ran on an SM of its own: the summary's distinct_sms says so.
3. **The decode tile's own loads.** The down rows' weights [4096, 11008] as the swap-AB decode
   tile's producer reads them: 64 rows a CTA, its K slice (split 2: 128 CTAs; 1: 64), 1-8 boxes of
   64 x 64 side by side a stage through a 128-byte-swizzled tensor map, the same 128 KB in flight.
   Against (a), what the 2-D box pattern costs the HBM beside contiguous 16 KB copies.
4. **The same loads from packed weights.** The weights laid out box by box, each 64 x 64 box's
   8 KB contiguous and a row tile's boxes in K order (as a prepacked weight would be), read by
   the same tile, 2 or 4 boxes a stage: whether the box pattern's cost is the rows' scatter over
   the HBM (packed: as fast as the contiguous copies) or the tensor path itself (packed: no faster).
"""
from __future__ import annotations

import ctypes
import json
import statistics
from pathlib import Path

import numpy as np

from experiments.research import cli

STAGES = 8
BOX = 16384                      # bytes a bulk copy: a 64 x 128 fp16 box, as the decode tiles load
THREADS = 32
SHARED = STAGES * BOX            # 128 KB: one CTA an SM
SMS = 132
TABLE = 256                      # per-SM share table: slots for SM ids 0..255
BYTES = {"down": 4096 * 11008 * 2, "up": 22016 * 4096 * 2}
DOWN_WEIGHT = (4096, 11008)     # the down rows' W [N, K]
TILED_SPLITS = (2, 1)
TILED_KERNELS = ((1, 1), (1, 2), (2, 2), (1, 4), (1, 8))   # (cluster, 64-wide boxes a stage)
PACKED_KERNELS = ((1, 2), (1, 4))   # the same loads from the weights packed box by box
CLUSTER_SIZES = tuple(range(1, 17))
MAP_SIZES = (8,)                 # clusters whose SM ids are merged into GPCs
MAP_LAUNCHES = 24
CALLS = 20
ROUNDS = 5


def stream_ptx(cluster: int) -> str:
    """`gpc_stream(src, shares, out, by_sm)`: CTA c (or, with by_sm, the CTA on SM s) streams boxes
    shares[key] .. shares[key + 1] - 1 of src, BOX contiguous bytes each; out[4 c ..] = SM id,
    start ns, end ns, cluster id."""
    setup = """
    ld.param.u64 src, [src_param];
    ld.param.u64 shares, [shares_param];
    ld.param.u32 by_sm, [by_sm_param];
    setp.ne.u32 bysm, by_sm, 0;
    selp.b32 key, smid, cta, bysm;
    mul.wide.u32 tmp, key, 8;
    add.s64 address, shares, tmp;
    ld.global.u64 start, [address];
    ld.global.u64 end, [address+8];"""
    issue = f"""
    mul.lo.u64 off, w, {BOX};
    add.s64 gaddr, src, off;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {BOX};
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [gaddr], {BOX}, [bar];"""
    params = ".param .u64 src_param, .param .u64 shares_param, .param .u64 out_param, .param .u32 by_sm_param"
    return _ring_ptx("gpc_stream", params, setup, issue, cluster)


def tiled_ptx(cluster: int, boxes: int = 2, packed: bool = False) -> str:
    """`gpc_tiled(tmap, out, split, kboxes)`: the decode tile's loads alone. CTA c reads weight rows
    64 (c / split) .. + 63 over its slice c % split of the K boxes (kboxes of 64 columns in all),
    `boxes` 64 x 64 boxes side by side a stage (block_k = 64 boxes; the swap-AB decode tile's
    producer loads two) through the tensor map, in SHARED // (boxes x BOX / 2) stages (the same
    bytes in flight whatever the stage's width); out as gpc_stream's. `packed`: the weights laid
    out box by box (each 64 x 64 box's 8 KB contiguous, a row tile's boxes in K order; the tensor
    map over that buffer as [rows x kboxes, 64]), so a CTA's stage is one contiguous run of bytes:
    box (tile, kb) is rows 64 (tile x kboxes + kb) .. + 63 of that map."""
    box = BOX // 2
    stages = SHARED // (boxes * box)
    setup = f"""
    ld.param.u64 tmap, [tmap_param];
    ld.param.u32 split, [split_param];
    ld.param.u32 kboxes, [kboxes_param];
    div.u32 tile, cta, split;
    rem.u32 slice, cta, split;
    shl.b32 row, tile, 6;
    mul.lo.u32 kb0, slice, kboxes;
    div.u32 kb0, kb0, split;
    add.u32 kb1, slice, 1;
    mul.lo.u32 kb1, kb1, kboxes;
    div.u32 kb1, kb1, split;
    sub.u32 nb, kb1, kb0;
    add.u32 nb, nb, {boxes - 1};
    div.u32 nb, nb, {boxes};
    mov.u64 start, 0;
    cvt.u64.u32 end, nb;"""
    # a stage's boxes kb .. kb + boxes - 1, those past the slice's end left out
    # where a box's corner is: (its columns, the tile's rows), or in the packed buffer (0, its rows)
    corner = ("""
    @two mad.lo.u32 prow, tile, kboxes, kb2;
    @two shl.b32 prow, prow, 6;
    @two mov.u32 kc, 0;""" if packed else """
    @two shl.b32 kc, kb2, 6;
    @two mov.u32 prow, row;""")
    each = "".join(f"""
    add.u32 kb2, kb, {b};
    setp.lt.u32 two, kb2, kb1;{corner}
    @two add.u32 buf2, buf, {b * box};
    @two cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [buf2], [tmap, {{kc, prow}}], [bar];"""
                   for b in range(boxes))
    count = "".join(f"""
    add.u32 kb2, kb, {b};
    setp.lt.u32 two, kb2, kb1;
    @two add.u32 txb, txb, {box};""" for b in range(boxes))
    issue = f"""
    cvt.u32.u64 kb, w;
    mul.lo.u32 kb, kb, {boxes};
    add.u32 kb, kb, kb0;
    mov.u32 txb, 0;{count}
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], txb;{each}"""
    params = ".param .u64 tmap_param, .param .u64 out_param, .param .u32 split_param, .param .u32 kboxes_param"
    return _ring_ptx("gpc_tiled", params, setup, issue, cluster, stages, boxes * box)


def _ring_ptx(name: str, params: str, setup: str, issue: str, cluster: int, stages: int = STAGES,
              stage_bytes: int = BOX) -> str:
    """One thread a CTA keeps `stages` loads of `stage_bytes` in flight: stage units start .. end - 1
    (`setup` sets them), each issued by `issue` (w: the unit, bar and buf: its stage's mbarrier and
    buffer)."""
    cluster_line = f".reqnctapercluster {cluster}, 1, 1" if cluster > 1 else ""
    log2 = stages.bit_length() - 1
    assert 1 << log2 == stages
    init = "\n".join(f"    mbarrier.init.shared::cta.b64 [bars+{8 * s}], 1;" for s in range(stages))
    return f""".version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 ring[];

.visible .entry {name}({params})
.reqntid {THREADS}, 1, 1
{cluster_line}
{{
    .shared .align 8 .b64 bars[{stages}];
    .reg .pred p, leader, done, bysm, two;
    .reg .b32 tid, smid, cta, key, j, s, parity, bar, buf, buf2, by_sm, cid;
    .reg .b32 split, kboxes, tile, slice, row, kb0, kb1, nb, kb, kb2, kc, prow, txb;
    .reg .b64 src, shares, tmap, out, start, end, i, next, d, t0, t1, tmp, address, off, gaddr, w;

    mov.u32 tid, %tid.x;
    setp.eq.u32 leader, tid, 0;
    @!leader bra END;
    mov.u64 t0, %globaltimer;
    ld.param.u64 out, [out_param];
    mov.u32 smid, %smid;
    mov.u32 cta, %ctaid.x;{setup}
{init}
    fence.mbarrier_init.release.cluster;
    fence.proxy.async.shared::cta;
    mov.u64 next, start;
FILL:
    sub.s64 d, next, start;
    setp.ge.s64 p, d, {stages};
    @p bra MAIN;
    setp.ge.s64 p, next, end;
    @p bra MAIN;
    cvt.u32.u64 s, d;
    mov.u64 w, next;
    mov.u32 bar, bars;
    mad.lo.u32 bar, s, 8, bar;
    mov.u32 buf, ring;
    mad.lo.u32 buf, s, {stage_bytes}, buf;{issue}
    add.s64 next, next, 1;
    bra FILL;
MAIN:
    mov.u64 i, start;
LOOP:
    setp.ge.s64 p, i, end;
    @p bra FIN;
    sub.s64 d, i, start;
    cvt.u32.u64 j, d;
    and.b32 s, j, {stages - 1};
    shr.u32 parity, j, {log2};
    and.b32 parity, parity, 1;
    mov.u32 bar, bars;
    mad.lo.u32 bar, s, 8, bar;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 done, [bar], parity;
    @!done bra WAIT;
    add.s64 w, i, {stages};
    setp.ge.s64 p, w, end;
    @p bra NEXT;
    mov.u32 buf, ring;
    mad.lo.u32 buf, s, {stage_bytes}, buf;{issue}
NEXT:
    add.s64 i, i, 1;
    bra LOOP;
FIN:
    mov.u64 t1, %globaltimer;
    mov.u32 cid, %clusterid.x;
    mul.wide.u32 tmp, cta, 32;
    add.s64 address, out, tmp;
    cvt.u64.u32 d, smid;
    st.global.u64 [address], d;
    st.global.u64 [address+8], t0;
    st.global.u64 [address+16], t1;
    cvt.u64.u32 d, cid;
    st.global.u64 [address+24], d;
END:
    ret;
}}
"""


def equal_shares(boxes: int, ctas: int) -> list[int]:
    """Prefix offsets (ctas + 1 of them) of `boxes` boxes cut as evenly as whole boxes allow."""
    return [boxes * c // ctas for c in range(ctas + 1)]


def weighted_shares(boxes: int, weight_by_sm: dict[int, float]) -> list[int]:
    """Prefix offsets over SM ids 0..TABLE-1: each listed SM's share of `boxes` in proportion to
    its weight (an SM not listed takes none)."""
    total = sum(weight_by_sm.values())
    acc, cuts = 0.0, [0]
    for sm in range(TABLE):
        acc += weight_by_sm.get(sm, 0.0)
        cuts.append(round(boxes * acc / total))
    cuts[-1] = boxes
    return cuts


def gpcs_from_clusters(launches: list[list[tuple[int, int]]]) -> list[list[int]]:
    """The GPCs as sorted lists of SM ids: the SMs whose CTAs shared a cluster in any launch
    (each launch a list of (SM id, cluster id)), merged (union-find)."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for launch in launches:
        first: dict[int, int] = {}
        for sm, cid in launch:
            root(sm)
            if cid in first:
                parent[root(sm)] = root(first[cid])
            else:
                first[cid] = sm
    groups: dict[int, list[int]] = {}
    for sm in parent:
        groups.setdefault(root(sm), []).append(sm)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


class _Kernel:
    """One cluster size's kernel, loaded, with what the device holds of it at once."""

    def __init__(self, cluster: int, tiled: int = 0, packed: bool = False):
        from cuda.bindings import driver

        from gemm.compile import assemble
        from gemm.launch import LoadedFunction, _load
        cubin, _ = assemble(tiled_ptx(cluster, tiled, packed) if tiled else stream_ptx(cluster))
        _, handle = _load(cubin, "gpc_tiled" if tiled else "gpc_stream", SHARED)
        if cluster > 8:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
            err, = driver.cuFuncSetAttribute(handle, attr, 1)
            if int(err) != 0:
                raise RuntimeError(f"clusters of {cluster}: non-portable sizes refused ({err})")
        self.cluster = cluster
        self.loaded = LoadedFunction(handle, THREADS, SHARED)
        self.resident = self._resident()

    def _resident(self) -> int:
        """Clusters (CTAs without clusters) of this kernel the device holds at once."""
        from cuda.bindings import driver
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = self.cluster * 64, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = THREADS, 1, 1
        config.sharedMemBytes = SHARED
        config.hStream = driver.CUstream(0)
        config.numAttrs = 0
        if self.cluster == 1:
            err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.loaded.function, THREADS, SHARED)
            return int(n) * SMS if int(err) == 0 else -1
        err, n = driver.cuOccupancyMaxActiveClusters(self.loaded.function, config)
        return int(n) if int(err) == 0 else -1

    def launch(self, ctas: int, src: int, shares: int, out: int, by_sm: bool, stream: int):
        from gemm.launch import Launch
        return Launch(self.loaded, (ctas, 1, 1), stream, (src, shares, out, int(by_sm)),
                      arg_types=(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint32))

    def launch_tiled(self, ctas: int, tmap: int, out: int, split: int, kboxes: int, stream: int):
        from gemm.launch import Launch
        return Launch(self.loaded, (ctas, 1, 1), stream, (tmap, out, split, kboxes),
                      arg_types=(ctypes.c_int64, ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint32))


def _stamps(out) -> list[list[int]]:
    return out.view(-1, 4).cpu().tolist()


def dump(path: Path) -> None:
    import torch

    from experiments.measure import provenance
    from experiments.timing import back_to_back_us
    stream = torch.cuda.current_stream().cuda_stream
    total = max(BYTES.values())
    src = torch.randint(-2**15, 2**15 - 1, (total // 2,), dtype=torch.int16, device="cuda")
    kernels, resident = {}, {}
    for c in CLUSTER_SIZES:
        try:
            kernels[c] = _Kernel(c)
            resident[c] = kernels[c].resident
        except Exception as exc:   # a size the device refuses is a finding, not a failure
            resident[c] = f"{exc.__class__.__name__}: {exc}"
    print("resident clusters by size:", resident, flush=True)

    def holds(c: int) -> bool:
        return isinstance(resident.get(c), int) and resident[c] > 0

    def run_once(kernel, ctas, cuts, by_sm):
        shares = torch.tensor(cuts, dtype=torch.int64, device="cuda")
        out = torch.full((ctas * 4,), -1, dtype=torch.int64, device="cuda")
        kernel.launch(ctas, src.data_ptr(), shares.data_ptr(), out.data_ptr(), by_sm, stream)()
        torch.cuda.synchronize()
        return _stamps(out)

    # 1. the GPCs: clusters of MAP_SIZES and of the larger sizes the device holds
    map_launches = {}
    for c in dict.fromkeys(MAP_SIZES + (16, 14, 12, 10)):
        if not holds(c):
            continue
        ctas = resident[c] * c
        boxes = BYTES["down"] // BOX
        map_launches[c] = [[(r[0], r[3]) for r in run_once(kernels[c], ctas, equal_shares(boxes, ctas), False)]
                           for _ in range(MAP_LAUNCHES)]
    gpcs = gpcs_from_clusters([launch for launches in map_launches.values() for launch in launches])
    print("GPCs (SMs each):", [len(g) for g in gpcs], flush=True)

    # 2. the cases: (name, kernel cluster size, CTAs, shares builder(boxes), by_sm)
    rate_by_sm: dict[str, dict[int, float]] = {}
    cases: dict[str, dict] = {}
    stamps: dict[str, list] = {}

    def timed(key, size, cluster, ctas, by_sm, launch, out):
        """Time a prepared launch back to back, ROUNDS rounds; keep its last launch's stamps."""
        us = [back_to_back_us(lambda i: launch(), calls=CALLS) for _ in range(ROUNDS)]
        cases[key] = {"size": size, "cluster": cluster, "ctas": ctas, "by_sm": by_sm,
                      "us_rounds": us, "us": statistics.median(us)}
        stamps[key] = _stamps(out)
        print(f"{key:40s} {statistics.median(us):8.2f} us  rounds {[round(u, 2) for u in us]}", flush=True)
        return stamps[key]

    def case(name, size, cluster, ctas, cuts, by_sm):
        shares = torch.tensor(cuts, dtype=torch.int64, device="cuda")
        out = torch.full((ctas * 4,), -1, dtype=torch.int64, device="cuda")
        launch = kernels[cluster].launch(ctas, src.data_ptr(), shares.data_ptr(), out.data_ptr(), by_sm, stream)
        return timed(f"{size}/{name}", size, cluster, ctas, by_sm, launch, out)

    for size, nbytes in BYTES.items():
        boxes = nbytes // BOX
        last = case("equal-132", size, 1, SMS, equal_shares(boxes, SMS), False)
        case("equal-128", size, 1, 128, equal_shares(boxes, 128), False)
        if holds(2) and resident[2] >= 64:
            case("equal-128-clusters-of-2", size, 2, 128, equal_shares(boxes, 128), False)
        for c in (4, 8, 12, 14, 16):
            if holds(c):
                ctas = resident[c] * c
                case(f"equal-{ctas}-clusters-of-{c}", size, c, ctas, equal_shares(boxes, ctas), False)
        # per-SM rates from the equal split over 132: bytes over its span
        rate = {r[0]: (boxes // SMS) / max(1, r[2] - r[1]) for r in last}
        rate_by_sm[size] = rate
        case("by-sm-rate", size, 1, SMS, weighted_shares(boxes, rate), True)
        gpc_of = {sm: g for g in gpcs for sm in g}
        if len(gpc_of) == SMS:
            case("by-gpc-equal", size, 1, SMS, weighted_shares(boxes, {sm: 1 / len(gpc_of[sm]) for sm in gpc_of}), True)
        case("equal-132-again", size, 1, SMS, equal_shares(boxes, SMS), False)

    # 3. the down rows' weights as the swap-AB decode tile loads them: 64 rows x 128 columns a stage
    from gemm.tensormap import encode_2d
    rows, cols = DOWN_WEIGHT
    def tensor_map(inner, outer):
        encoded = encode_2d(src.data_ptr(), "float16", inner, outer, inner * 2, (64, 64), 128)
        return torch.frombuffer(bytearray(encoded), dtype=torch.uint8).cuda()

    maps = {"tiled": tensor_map(cols, rows), "packed": tensor_map(64, rows * cols // 64)}
    for layout, kinds in (("tiled", TILED_KERNELS), ("packed", PACKED_KERNELS)):
        for cluster, boxes in kinds:
            kernel = _Kernel(cluster, tiled=boxes, packed=layout == "packed")
            for split in TILED_SPLITS:
                ctas = rows // 64 * split
                name = (f"down/{layout}-64x{64 * boxes}-split-{split}"
                        + (f"-clusters-of-{cluster}" if cluster > 1 else ""))
                out = torch.full((ctas * 4,), -1, dtype=torch.int64, device="cuda")
                launch = kernel.launch_tiled(ctas, maps[layout].data_ptr(), out.data_ptr(), split, cols // 64, stream)
                timed(name, "down", cluster, ctas, False, launch, out)
    case("equal-128-clusters-of-2-again", "down", 2, 128, equal_shares(BYTES["down"] // BOX, 128), False)
    np.savez_compressed(path, record=json.dumps({
        "provenance": provenance(), "stages": STAGES, "box": BOX, "resident": resident,
        "gpcs": gpcs, "map_launches": {str(k): v for k, v in map_launches.items()},
        "cases": cases, "stamps": stamps,
        "rate_by_sm": {k: {str(s): r for s, r in v.items()} for k, v in rate_by_sm.items()}}))


def summarize(path: Path) -> dict:
    rec = json.loads(str(np.load(path)["record"]))
    rows = []
    for key, c in rec["cases"].items():
        st = rec["stamps"][key]
        sms = [r[0] for r in st]
        starts, ends = [r[1] for r in st], [r[2] for r in st]
        t0 = statistics.median(starts)
        rows.append({"case": key, "ctas": c["ctas"], "us": round(c["us"], 2),
                     "us_min": round(min(c["us_rounds"]), 2), "us_max": round(max(c["us_rounds"]), 2),
                     "distinct_sms": len(set(sms)) == len(sms),
                     "end_spread_us": round((max(ends) - sorted(ends)[len(ends) // 10]) / 1e3, 2),
                     "span_us": round((max(ends) - t0) / 1e3, 2)})
    return {"provenance": rec["provenance"], "resident": rec["resident"],
            "gpc_sizes": [len(g) for g in rec["gpcs"]], "gpcs": rec["gpcs"], "rows": rows}


def report(s: dict) -> None:
    print("resident clusters by size:", s["resident"])
    print(f"GPCs seen through the clusters (SMs each; {sum(s['gpc_sizes'])} of {SMS} SMs were in one):",
          s["gpc_sizes"])
    print(f"{'case':42s} {'CTAs':>4s} {'us':>8s} {'min':>8s} {'max':>8s} {'end spread':>10s} {'span':>8s} distinct SMs")
    for r in s["rows"]:
        print(f"{r['case']:42s} {r['ctas']:4d} {r['us']:8.2f} {r['us_min']:8.2f} {r['us_max']:8.2f} "
              f"{r['end_spread_us']:10.2f} {r['span_us']:8.2f} {r['distinct_sms']}")


def csv_rows(s: dict, record: Path) -> tuple[list[dict], str]:
    return cli.rounded(s["rows"]), f"python -m experiments.research.gpc_stream --summarize {record}"


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, report, csv_rows, argv)


if __name__ == "__main__":
    main()
