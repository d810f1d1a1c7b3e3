"""Global memory for split-K: a fence, a counter, and a WGMMA fragment's fp32 partials.

The CTAs that compute slices of one C tile each write their fp32 partial tile, fence,
and count themselves in on a per-tile counter; the one that counts last reads every
partial back (through L2: ld.global.cg, never a stale L1 line) and sums them in slice
order, so the result is the same bits whichever CTA finishes last.
"""
from functools import lru_cache

from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import F32, I64, asm_intrinsic, emit
from .fragment import fragment_coords

fence_gpu = asm_intrinsic(
    "fence_gpu", "fence.acq_rel.gpu;", "",
    doc="Order this thread's global memory accesses before and after it, GPU-wide (__threadfence).")

atomic_add_u32 = asm_intrinsic(
    "atomic_add_u32", "atom.global.add.u32 $0, [$1], $2;", "=r,l,r", (types.uint64, types.uint32),
    restype=types.uint32, doc="atomic_add_u32(addr, value): add to the word at addr; the old value.")

st_global_u32 = asm_intrinsic("st_global_u32", "st.global.u32 [$0], $1;", "l,r", (types.uint64, types.uint32),
                              doc="A 4-byte store to a global address.")


@lru_cache(maxsize=None)
def add_partial(m_blocks, n):
    """An intrinsic `f(total, corner, ld, rows_left, cols_left) -> total + partial`: a thread's
    fp32 fragment (the layout of gemm.ptx.fragment) of a row-major fp32 matrix at byte address
    `corner` (its (g, 2q) element), `ld` elements a row, read through L2 and added element by
    element (so no second fragment is held); elements at or past rows_left / cols_left add 0."""
    total_regs = m_blocks * n // 2
    acc_type = types.UniTuple(types.float32, total_regs)
    coords = tuple(fragment_coords(m_blocks, n))

    @intrinsic
    def add_fragment(typingctx, total, corner, ld, rows_left, cols_left):
        def codegen(context, builder, sig, args):
            total_v, corner_v, ld_v, rows_v, cols_v = args
            i32 = ir.IntType(32)
            row_bytes = builder.mul(ld_v, ir.Constant(I64, 4))
            result = total_v
            for index, row, col in coords:
                row_in = builder.icmp_signed("<", ir.Constant(i32, row), rows_v)
                addr = builder.add(corner_v, builder.add(builder.mul(row_bytes, ir.Constant(I64, row)),
                                                         ir.Constant(I64, col * 4)))
                for half in range(2):
                    inside = builder.and_(row_in, builder.icmp_signed("<", ir.Constant(i32, col + half), cols_v))
                    before = builder.extract_value(result, index + half)
                    with builder.if_else(inside) as (then, otherwise):
                        with then:
                            loaded = emit(builder, "ld.global.cg.f32 $0, [$1];", "=f,l",
                                          (builder.add(addr, ir.Constant(I64, 4 * half)),), F32)
                            summed = builder.fadd(before, loaded)
                            block_then = builder.block
                        with otherwise:
                            block_else = builder.block
                    value = builder.phi(F32)
                    value.add_incoming(summed, block_then)
                    value.add_incoming(before, block_else)
                    result = builder.insert_value(result, value, index + half)
            return result
        return signature(acc_type, acc_type, types.uint64, types.int64, types.int32, types.int32), codegen
    return add_fragment
