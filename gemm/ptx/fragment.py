"""The WGMMA accumulator fragment: making it, and writing it to global memory.

Layout of m64nNk16 fp32 accumulators (PTX ISA, "wgmma register fragments"):
thread t of the warpgroup holds, for each 8-column group j, registers
4j..4j+3 = rows g and g+8, columns 8j + 2q and +1, where g = 16*(t/32) + (t%32)/4
and q = t%4. Several m64 blocks follow one another in the tuple.
The store walks that layout at compile time, so every tuple index is a constant.
"""
from functools import lru_cache

from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import F32, I16, I32, I64, emit

CONVERT = {"float16": "cvt.rn.f16x2.f32", "bfloat16": "cvt.rn.bf16x2.f32"}
OUT_DTYPES = ("float16", "bfloat16", "float32")


@lru_cache(maxsize=None)
def accumulator_zeros(count):
    """An intrinsic `f() -> UniTuple(float32, count)` of zeros."""
    acc_type = types.UniTuple(types.float32, count)

    @intrinsic
    def zeros(typingctx):
        def codegen(context, builder, sig, args):
            return context.get_constant_generic(builder, acc_type, (0.0,) * count)
        return signature(acc_type), codegen
    return zeros


def fragment_coords(m_blocks, n):
    """(tuple index, row offset, column offset) of each column pair a thread holds,
    relative to its (g, 2q) corner; the pair's second element is at index + 1."""
    per_block = n // 2
    for m in range(m_blocks):
        for j in range(n // 8):
            for half in range(2):
                yield m * per_block + 4 * j + 2 * half, 64 * m + 8 * half, 8 * j


@lru_cache(maxsize=None)
def store_accumulators(m_blocks, n, out_dtype):
    """An intrinsic `f(acc, corner, ld, rows_left, cols_left, pair_ok)` that
    converts the fragment to `out_dtype` and stores it to global memory.

    corner: byte address of C[row g, column 2q] of this thread's tile corner;
    ld: C's row stride in elements; rows_left / cols_left: rows and columns of C
    from that element on (stores at or past them are skipped); pair_ok: nonzero
    when a column pair may be written as one 4-byte (16-bit C) word, i.e. C's
    address and row stride keep pairs 4-byte aligned."""
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"output dtype must be one of {OUT_DTYPES}, got {out_dtype!r}")
    total = m_blocks * n // 2
    acc_type = types.UniTuple(types.float32, total)
    elem_bytes = 4 if out_dtype == "float32" else 2
    coords = tuple(fragment_coords(m_blocks, n))

    def store(builder, addr, value, ty):
        builder.store(value, builder.inttoptr(addr, ir.PointerType(ty, addrspace=1)), align=ty.width // 8)

    @intrinsic
    def store_fragment(typingctx, acc, corner, ld, rows_left, cols_left, pair_ok):
        def codegen(context, builder, sig, args):
            acc_v, corner_v, ld_v, rows_v, cols_v, pair_v = args
            row_bytes = builder.mul(ld_v, ir.Constant(I64, elem_bytes))
            pair_flag = builder.icmp_unsigned("!=", pair_v, ir.Constant(I32, 0))
            for index, row, col in coords:
                row_in = builder.icmp_signed("<", ir.Constant(I32, row), rows_v)
                first_in = builder.and_(row_in, builder.icmp_signed("<", ir.Constant(I32, col), cols_v))
                second_in = builder.and_(row_in, builder.icmp_signed("<", ir.Constant(I32, col + 1), cols_v))
                addr = builder.add(corner_v, builder.add(builder.mul(row_bytes, ir.Constant(I64, row)),
                                                         ir.Constant(I64, col * elem_bytes)))
                lo = builder.extract_value(acc_v, index)
                hi = builder.extract_value(acc_v, index + 1)
                if out_dtype == "float32":
                    with builder.if_then(first_in):
                        store(builder, addr, lo, F32)
                    with builder.if_then(second_in):
                        store(builder, builder.add(addr, ir.Constant(I64, 4)), hi, F32)
                    continue
                packed = emit(builder, f"{CONVERT[out_dtype]} $0, $2, $1;", "=r,f,f", (lo, hi), I32)
                whole = builder.and_(second_in, pair_flag)
                with builder.if_else(whole) as (as_word, as_halves):
                    with as_word:
                        store(builder, addr, packed, I32)
                    with as_halves:
                        with builder.if_then(first_in):
                            store(builder, addr, builder.trunc(packed, I16), I16)
                        with builder.if_then(second_in):
                            store(builder, builder.add(addr, ir.Constant(I64, 2)),
                                  builder.trunc(builder.lshr(packed, ir.Constant(I32, 16)), I16), I16)
            return context.get_dummy_value()
        return signature(types.void, acc_type, types.uint64, types.int64, types.int32, types.int32,
                         types.uint32), codegen
    return store_fragment
