"""Thread block clusters: a CTA's rank in its cluster, the cluster-wide barrier, arriving
on another CTA's mbarrier, and a TMA load (a box, or contiguous bytes) multicast into every
CTA of a mask.

A cluster's CTAs run at once on SMs of one GPC and can address each other's shared
memory (the shared::cluster window). A kernel built for clusters declares its shape in
the PTX (`.reqnctapercluster`, added by gemm.compile) and a plain launch forms them.
"""
from numba.cuda.types import int32, uint16, uint32, uint64

from ._asm import asm_intrinsic

cluster_ctarank = asm_intrinsic("cluster_ctarank", "mov.u32 $0, %cluster_ctarank;", "=r", restype=uint32,
                                doc="This CTA's rank in its cluster (0 .. cluster size - 1).")

cluster_sync = asm_intrinsic(
    "cluster_sync", "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;", "",
    doc="Every thread of every CTA of the cluster meets here: after it, mbarrier inits are "
        "visible cluster-wide, and no CTA leaves while a partner may still write to it.")

cluster_arrive = asm_intrinsic(
    "cluster_arrive", "barrier.cluster.arrive.release.aligned;", "",
    doc="cluster_sync's first half: this thread has arrived (what it wrote before, the mbarrier "
        "inits among it, is released at cluster scope); it goes on without waiting.")

cluster_wait = asm_intrinsic(
    "cluster_wait", "barrier.cluster.wait.acquire.aligned;", "",
    doc="cluster_sync's second half: wait until every thread of the cluster has arrived (once "
        "after each cluster_arrive, before the next). Held until a CTA's first remote access, "
        "the wait is off the path of the loads before it.")

mbarrier_arrive_cluster = asm_intrinsic(
    "mbarrier_arrive_cluster",
    "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, $0, $1;\n"
    " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
    "r,r", (uint32, uint32),
    doc="mbarrier_arrive_cluster(addr, rank): one arrival on the mbarrier at shared address "
        "`addr` of the cluster's CTA `rank` (this CTA's own when rank is its own). The default "
        "semantics (release at CTA scope), as CUTLASS's ClusterBarrier: the stage it frees was "
        "read by WGMMA, which wgmma.wait_group has already seen complete, so nothing needs to "
        "be made visible cluster-wide. `.release.cluster` would cost a MEMBAR.ALL.GPU before "
        "every arrival (ptxas emits one), which halved the clustered kernel's throughput.")

tma_load_2d_multicast = asm_intrinsic(
    "tma_load_2d_multicast",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
    " [$0], [$1, {$2, $3}], [$4], $5;",
    "r,l,r,r,r,h", (uint32, uint64, int32, int32, uint32, uint16),
    doc="tma_load_2d_multicast(dst, tensormap, inner, outer, mbar, cta_mask): copy the box into "
        "shared address `dst` of every CTA whose bit is set in `cta_mask`; each copy completes "
        "its bytes on the mbarrier at the same address `mbar` of its CTA.")

bulk_load_multicast = asm_intrinsic(
    "bulk_load_multicast",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
    " [$0], [$1], $2, [$3], $4;",
    "r,l,r,r,h", (uint32, uint64, uint32, uint32, uint16),
    doc="bulk_load_multicast(dst, src, size, mbar, cta_mask): copy `size` contiguous bytes into "
        "shared address `dst` of every CTA whose bit is set in `cta_mask`; each copy completes its "
        "bytes on the mbarrier at the same address `mbar` of its CTA.")

mbarrier_arrive_release_cluster = asm_intrinsic(
    "mbarrier_arrive_release_cluster",
    "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, $0, $1;\n"
    " mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}",
    "r,r", (uint32, uint32),
    doc="mbarrier_arrive_release_cluster(addr, rank): one arrival on the mbarrier at `addr` of the "
        "cluster's CTA `rank`, releasing at cluster scope: what this thread wrote (and what it has "
        "synchronized with: the named barrier before it) is visible to a thread of that CTA once "
        "its acquiring wait sees the phase complete. Split-K's exchange through distributed "
        "shared memory signals with it, once a tile per CTA.")

mbarrier_wait_cluster = asm_intrinsic(
    "mbarrier_wait_cluster",
    "{\n .reg .pred done;\n WAIT:\n"
    " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [$0], $1;\n"
    " @!done bra WAIT;\n}",
    "r,r", (uint32, uint32),
    doc="Spin until the phase with parity `phase` of this CTA's mbarrier at `addr` has completed, "
        "acquiring at cluster scope: the writes the arriving CTAs released are visible after it.")
