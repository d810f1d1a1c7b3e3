"""Global memory for split-K and stream-K: a fence, counters and flags, fp32 partials.

Split-K: the CTAs that compute slices of one C tile each write their fp32 partial tile, fence,
count themselves in on the tile's counter and wait until every slice has; then each sums its
own share of the tile (`reduce_strip`: a contiguous run of 4-column chunks), reading every
slice's partial through L2 (ld.global.cg, never a stale L1 line) with 16-byte loads and
adding them in slice order, so the result is the same bits whichever CTA did which share.

Stream-K: a CTA that computed the later K iterations of a tile another CTA finishes writes
its accumulators as they lie in registers (`store_fragment_slot`), and the finishing CTA adds
them to its own in the same layout (`add_fragment_slot`), in CTA order.
"""
from functools import lru_cache

from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import F32, I16, I32, I64, asm_intrinsic, emit
from .fragment import CONVERT, add_loaded, convert_one, convert_pair

fence_gpu = asm_intrinsic(
    "fence_gpu", "fence.acq_rel.gpu;", "",
    doc="Order this thread's global memory accesses before and after it, GPU-wide (__threadfence).")

atomic_add_u32 = asm_intrinsic(
    "atomic_add_u32", "atom.global.add.u32 $0, [$1], $2;", "=r,l,r", (types.uint64, types.uint32),
    restype=types.uint32, doc="atomic_add_u32(addr, value): add to the word at addr; the old value.")

ld_acquire_u32 = asm_intrinsic(
    "ld_acquire_u32", "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l", (types.uint64,), restype=types.uint32,
    doc="A 4-byte load with GPU-scope acquire: what was written before a matching release is visible after it.")

st_global_u32 = asm_intrinsic("st_global_u32", "st.global.u32 [$0], $1;", "l,r", (types.uint64, types.uint32),
                              doc="A 4-byte store to a global address.")


LOAD_CHUNK = "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4];"
LOADS_IN_FLIGHT = 16   # 16-byte loads a thread issues before it adds them up


@lru_cache(maxsize=None)
def reduce_strip(block_n, slices, per_thread, threads, out_dtype, transposed=False):
    """An intrinsic `f(first, end, tile_ws, ldw, plane, rows_left, cols_left, tile_c, ldc,
    quad_ok, tid)`: for the chunks first + tid + j * threads (j < per_thread) below `end` of a
    C tile, the sum of the `slices` fp32 partials, converted to `out_dtype` and stored into C.

    A chunk is 4 adjacent columns of one tile row: chunk i is row i // (block_n / 4), columns
    4 * (i % (block_n / 4)) on. tile_ws: byte address of slice 0's partial at the tile's
    corner, rows `ldw` floats apart (a multiple of 4: each chunk is one aligned 16-byte load),
    slice p's `plane` bytes further on. rows_left / cols_left: C's rows and columns from the
    corner on. tile_c: byte address of C at the corner; with `transposed` the tile is one of
    C^T (swap-AB) and tile_c is C[corner column, corner row]. ldc: C's row stride in elements.
    quad_ok: nonzero when C's address and row stride keep 4 elements 8-byte aligned.
    Loads go out LOADS_IN_FLIGHT at a time before any of their sums; a chunk outside C loads
    the corner's (always inside C) and stores nothing."""
    if out_dtype not in CONVERT:
        raise ValueError(f"split-K's C is 16-bit, got {out_dtype!r}")
    per_row = block_n // 4
    group = max(1, LOADS_IN_FLIGHT // slices)
    chunk_type = ir.LiteralStructType([F32] * 4)

    @intrinsic
    def reduce(typingctx, first, end, tile_ws, ldw, plane, rows_left, cols_left, tile_c, ldc, quad_ok, tid):
        def codegen(context, builder, sig, args):
            first_v, end_v, ws_v, ldw_v, plane_v, rows_v, cols_v, c_v, ldc_v, quad_v, tid_v = args
            i32 = lambda v: ir.Constant(I32, v)  # noqa: E731
            i64 = lambda v: ir.Constant(I64, v)  # noqa: E731
            wide = lambda v: builder.sext(v, I64)  # noqa: E731
            less = lambda a, b: builder.icmp_signed("<", a, b)  # noqa: E731
            c_row_bytes = builder.mul(ldc_v, i64(2))
            quad = builder.icmp_unsigned("!=", quad_v, i32(0))

            def store16(addr, value):
                builder.store(convert_one(builder, value, out_dtype),
                              builder.inttoptr(addr, ir.PointerType(I16, addrspace=1)), align=2)

            for g in range(0, per_thread, group):
                chunks = []
                for j in range(g, min(g + group, per_thread)):
                    i = builder.add(builder.add(first_v, tid_v), i32(j * threads))
                    row = builder.udiv(i, i32(per_row))
                    col = builder.mul(builder.sub(i, builder.mul(row, i32(per_row))), i32(4))
                    inside = builder.and_(less(i, end_v), builder.and_(less(row, rows_v), less(col, cols_v)))
                    offset = builder.mul(builder.add(builder.mul(wide(row), ldw_v), wide(col)), i64(4))
                    at = builder.add(ws_v, builder.select(inside, offset, i64(0)))
                    parts = [emit(builder, LOAD_CHUNK, "=f,=f,=f,=f,l",
                                  (builder.add(at, builder.mul(plane_v, i64(p))),), chunk_type)
                             for p in range(slices)]
                    chunks.append((row, col, inside, parts))
                for row, col, inside, parts in chunks:
                    sums = [builder.extract_value(parts[0], e) for e in range(4)]
                    for part in parts[1:]:      # slice order: the same bits whoever sums
                        sums = [builder.fadd(s, builder.extract_value(part, e)) for e, s in enumerate(sums)]
                    with builder.if_then(inside):
                        left = builder.sub(cols_v, col)
                        if transposed:          # column col + e of the tile is row col + e of C
                            at_c = builder.add(c_v, builder.mul(builder.add(builder.mul(wide(col), ldc_v), wide(row)),
                                                                i64(2)))
                            for e in range(4):
                                with builder.if_then(less(i32(e), left)):
                                    store16(builder.add(at_c, builder.mul(c_row_bytes, i64(e))), sums[e])
                            continue
                        at_c = builder.add(c_v, builder.mul(builder.add(builder.mul(wide(row), ldc_v), wide(col)),
                                                            i64(2)))
                        whole = builder.and_(quad, builder.icmp_signed(">=", left, i32(4)))
                        with builder.if_else(whole) as (as_quad, one_by_one):
                            with as_quad:
                                words = [convert_pair(builder, sums[e], sums[e + 1], out_dtype) for e in (0, 2)]
                                emit(builder, "st.global.v2.b32 [$0], {$1, $2};", "l,r,r", (at_c, *words))
                            with one_by_one:
                                for e in range(4):
                                    with builder.if_then(less(i32(e), left)):
                                        store16(builder.add(at_c, i64(2 * e)), sums[e])
            return context.get_dummy_value()
        return signature(types.void, types.int32, types.int32, types.uint64, types.int64, types.int64,
                         types.int32, types.int32, types.uint64, types.int64, types.uint32, types.int32), codegen
    return reduce


def _slot_chunk(builder, slot, tid, chunk, threads):
    """Byte address of 16-byte chunk `chunk` of thread `tid` in a partial slot: the threads'
    chunk j side by side, so a warp's access to it is 512 contiguous bytes."""
    index = builder.add(builder.sext(tid, I64), ir.Constant(I64, chunk * threads))
    return builder.add(slot, builder.mul(index, ir.Constant(I64, 16)))


@lru_cache(maxsize=None)
def store_fragment_slot(count, threads):
    """An intrinsic `f(acc, slot, tid)`: this thread's `count` fp32 accumulators into a CTA's
    partial slot at byte address `slot` as they are in registers (not as C), 16 bytes a store.
    Only `add_fragment_slot` with the same thread reads them back: stream-K's partial tiles,
    summed by the CTA that holds the rest of the same tile in the same fragment layout."""
    if count % 4:
        raise ValueError(f"a fragment of {count} registers is not whole 16-byte chunks")
    acc_type = types.UniTuple(types.float32, count)

    @intrinsic
    def store_slot(typingctx, acc, slot, tid):
        def codegen(context, builder, sig, args):
            acc_v, slot_v, tid_v = args
            for chunk in range(count // 4):
                values = [builder.extract_value(acc_v, 4 * chunk + e) for e in range(4)]
                emit(builder, "st.global.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f",
                     (_slot_chunk(builder, slot_v, tid_v, chunk, threads), *values))
            return context.get_dummy_value()
        return signature(types.void, acc_type, types.uint64, types.int32), codegen
    return store_slot


@lru_cache(maxsize=None)
def add_fragment_slot(count, threads):
    """An intrinsic `f(acc, slot, tid) -> acc + slot`: the partial `store_fragment_slot` wrote
    at `slot` added to this thread's accumulators, element by element, read through L2 with
    16-byte loads, LOADS_IN_FLIGHT // 2 of them issued before their adds."""
    acc_type = types.UniTuple(types.float32, count)
    chunk_type = ir.LiteralStructType([F32] * 4)
    group = LOADS_IN_FLIGHT // 2

    @intrinsic
    def add_slot(typingctx, acc, slot, tid):
        def codegen(context, builder, sig, args):
            acc_v, slot_v, tid_v = args
            chunks = count // 4
            for g in range(0, chunks, group):
                loaded = [(chunk, emit(builder, LOAD_CHUNK, "=f,=f,=f,=f,l",
                                       (_slot_chunk(builder, slot_v, tid_v, chunk, threads),), chunk_type))
                          for chunk in range(g, min(g + group, chunks))]
                for chunk, part in loaded:
                    acc_v = add_loaded(builder, acc_v, part, 4 * chunk, 4)
            return acc_v
        return signature(acc_type, acc_type, types.uint64, types.int32), codegen
    return add_slot
