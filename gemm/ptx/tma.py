"""TMA (the bulk tensor copy engine): 2-D tile loads and stores through a CUtensorMap.

The tensor map is a 128-byte CUtensorMap in global memory (gemm/tensormap.py),
passed to the kernel as its 64-bit address. Coordinates are in elements,
innermost first. Out-of-range elements of a load are filled with zeros.
"""
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import emit, literal_int


@intrinsic
def tma_load_2d(typingctx, dst, tensormap, inner, outer, mbar):
    """Copy the box at (inner, outer) into shared memory at `dst`; the bytes
    complete as transactions on the mbarrier at `mbar`."""
    def codegen(context, builder, sig, args):
        emit(builder,
             "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
             " [$0], [$1, {$2, $3}], [$4];",
             "r,l,r,r,r", args)
    return signature(types.void, types.uint32, types.uint64, types.int32, types.int32,
                     types.uint32), codegen


@intrinsic
def tma_store_2d(typingctx, tensormap, inner, outer, src):
    """Copy the box in shared memory at `src` to (inner, outer) of the tensor;
    elements outside the tensor are not written."""
    def codegen(context, builder, sig, args):
        emit(builder,
             "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];",
             "l,r,r,r", args)
    return signature(types.void, types.uint64, types.int32, types.int32, types.uint32), codegen


@intrinsic
def bulk_commit_group(typingctx):
    """Close the bulk copies issued so far into one group."""
    def codegen(context, builder, sig, args):
        emit(builder, "cp.async.bulk.commit_group;", "")
    return signature(types.void), codegen


@intrinsic
def bulk_wait_group_read(typingctx, pending):
    """Wait until at most `pending` bulk groups still read their shared source."""
    n = literal_int(pending, "pending")

    def codegen(context, builder, sig, args):
        emit(builder, f"cp.async.bulk.wait_group.read {n};", "")
    return signature(types.void, pending), codegen
