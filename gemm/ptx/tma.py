"""TMA (the bulk copy engine): 2-D tile loads and stores through a CUtensorMap, and plain
bulk copies of contiguous bytes.

The tensor map is a 128-byte CUtensorMap in global memory (gemm/tensormap.py),
passed to the kernel as its 64-bit address. Coordinates are in elements,
innermost first. Out-of-range elements of a load are filled with zeros. A plain
bulk copy takes no map: one contiguous run of global memory (16-byte aligned, a
multiple of 16 bytes) lands as it is, one request where a tensor box is one a row.
"""
from numba.cuda import types

from ._asm import asm_count_intrinsic, asm_intrinsic

tma_load_2d = asm_intrinsic(
    "tma_load_2d",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    " [$0], [$1, {$2, $3}], [$4];",
    "r,l,r,r,r", (types.uint32, types.uint64, types.int32, types.int32, types.uint32),
    doc="tma_load_2d(dst, tensormap, inner, outer, mbar): copy the box at (inner, outer) "
        "into shared memory at `dst`; the bytes complete as transactions on the mbarrier at `mbar`.")

bulk_load = asm_intrinsic(
    "bulk_load",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
    "r,l,r,r", (types.uint32, types.uint64, types.uint32, types.uint32),
    doc="bulk_load(dst, src, size, mbar): copy `size` contiguous bytes from global address `src` "
        "into shared memory at `dst`; the bytes complete as transactions on the mbarrier at `mbar`.")

tma_store_2d = asm_intrinsic(
    "tma_store_2d", "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];",
    "l,r,r,r", (types.uint64, types.int32, types.int32, types.uint32),
    doc="tma_store_2d(tensormap, inner, outer, src): copy the box in shared memory at `src` to "
        "(inner, outer) of the tensor; elements outside the tensor are not written.")

bulk_commit_group = asm_intrinsic(
    "bulk_commit_group", "cp.async.bulk.commit_group;", "",
    doc="Close the bulk copies issued so far into one group.")


bulk_wait_group_read = asm_count_intrinsic(
    "bulk_wait_group_read", "cp.async.bulk.wait_group.read {n};",
    doc="bulk_wait_group_read(n): wait until at most n bulk groups still read their shared source.")

bulk_wait_group = asm_count_intrinsic(
    "bulk_wait_group", "cp.async.bulk.wait_group {n};",
    doc="bulk_wait_group(n): wait until at most n bulk groups are still in flight (writes done).")
