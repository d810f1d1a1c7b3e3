"""Split-K inside a cluster: a C tile's K slices are the CTAs of one cluster, and they add
their fp32 partials through distributed shared memory instead of a global workspace.

Each consumer thread holds its fragment as column pairs (gemm.ptx.fragment). The pairs are
cut into `split` shares, one per slice: share q (pairs [q P / S, (q + 1) P / S) of each
thread's P) is added up by the cluster's CTA of rank q. `send_partials` writes this slice's
pairs of every share into the owning CTA's slot for this slice (st.shared::cluster, the
threads' pair j side by side, so a warp writes 256 contiguous bytes); `sum_partials` adds the
slots of a CTA's own share in slice order (the same bits whichever CTA holds which slice) and
stores the sums into C. Slots: `split` of them, each `slot_bytes(...)` long, in every CTA.

With a lead (Schedule.split_lead) the first CTA adds the whole tile: the others send it every
pair (`send_partials` with split 1, into its slot rank - 1), and `add_partials` adds those
slots to its own accumulators in slice order, which it then stores as an unsplit tile.
"""
from functools import lru_cache

from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import F32, I32, emit
from .fragment import PairStore, add_loaded, fragment_coords

PAIR_TYPE = ir.LiteralStructType([F32, F32])


def share_bounds(pairs: int, split: int, share: int) -> tuple[int, int]:
    """[first, end) of the pairs of each thread that share `share` of `split` covers."""
    return share * pairs // split, (share + 1) * pairs // split


def slot_bytes(pairs: int, split: int, threads: int) -> int:
    """Bytes of one slice's slot: the largest share's pairs of every consumer thread."""
    return -(-pairs // split) * threads * 8


@lru_cache(maxsize=None)
def send_partials(count, threads, split):
    """An intrinsic `f(acc, exchange, rank, tid)`: this slice's (`rank`'s) fp32 accumulators,
    each share into its owner's slot `rank` at shared address `exchange` (the same offset in
    every CTA of the cluster), 8 bytes a store. No fence or signal: the caller's."""
    pairs = count // 2
    slot = slot_bytes(pairs, split, threads)
    acc_type = types.UniTuple(types.float32, count)

    @intrinsic
    def send(typingctx, acc, exchange, rank, tid):
        def codegen(context, builder, sig, args):
            acc_v, exchange_v, rank_v, tid_v = args
            i32 = lambda v: ir.Constant(I32, v)  # noqa: E731
            mine = builder.add(builder.add(exchange_v, builder.mul(rank_v, i32(slot))), builder.mul(tid_v, i32(8)))
            for share in range(split):
                first, end = share_bounds(pairs, split, share)
                owner = emit(builder, "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", (mine, i32(share)), I32)
                for p in range(first, end):
                    at = builder.add(owner, i32((p - first) * threads * 8))
                    emit(builder, "st.shared::cluster.v2.f32 [$0], {$1, $2};", "r,f,f",
                         (at, builder.extract_value(acc_v, 2 * p), builder.extract_value(acc_v, 2 * p + 1)))
            return context.get_dummy_value()
        return signature(types.void, acc_type, types.uint32, types.uint32, types.uint32), codegen
    return send


@lru_cache(maxsize=None)
def sum_partials(m_blocks, n, threads, split, out_dtype, transposed=False):
    """An intrinsic `f(exchange, rank, tid, corner, ld, rows_left, cols_left, pair_ok)`: the
    pairs of share `rank`, each the sum of the `split` slots at shared address `exchange` in
    slot order, converted to `out_dtype` and stored into C as `store_accumulators` stores a
    fragment (corner, ld, rows_left, cols_left, pair_ok and `transposed` as there)."""
    coords = tuple(fragment_coords(m_blocks, n))
    pairs = len(coords)
    slot = slot_bytes(pairs, split, threads)

    @intrinsic
    def add_up(typingctx, exchange, rank, tid, corner, ld, rows_left, cols_left, pair_ok):
        def codegen(context, builder, sig, args):
            exchange_v, rank_v, tid_v, corner_v, ld_v, rows_v, cols_v, pair_v = args
            i32 = lambda v: ir.Constant(I32, v)  # noqa: E731
            mine = builder.add(exchange_v, builder.mul(tid_v, i32(8)))
            store_pair = PairStore(builder, corner_v, ld_v, rows_v, cols_v, pair_v, out_dtype, transposed)
            for share in range(split):     # the rank is known at run time: one branch per share
                first, end = share_bounds(pairs, split, share)
                with builder.if_then(builder.icmp_unsigned("==", rank_v, i32(share))):
                    for p in range(first, end):
                        at = builder.add(mine, i32((p - first) * threads * 8))
                        parts = [emit(builder, "ld.shared.v2.f32 {$0, $1}, [$2];", "=f,=f,r",
                                      (builder.add(at, i32(s * slot)),), PAIR_TYPE) for s in range(split)]
                        lo, hi = (builder.extract_value(parts[0], e) for e in range(2))
                        for part in parts[1:]:          # slot (slice) order
                            lo = builder.fadd(lo, builder.extract_value(part, 0))
                            hi = builder.fadd(hi, builder.extract_value(part, 1))
                        _, row, col = coords[p]
                        store_pair(row, col, lambda lo=lo, hi=hi: (lo, hi))
            return context.get_dummy_value()
        return signature(types.void, types.uint32, types.uint32, types.uint32, types.uint64, types.int64,
                         types.int32, types.int32, types.uint32), codegen
    return add_up


@lru_cache(maxsize=None)
def add_partials(count, threads, slots):
    """An intrinsic `f(acc, exchange, tid) -> acc`: this thread's fp32 accumulators plus its
    pairs in each of `slots` whole-partial slots at shared address `exchange` (as
    `send_partials(count, threads, 1)` wrote them), slot after slot (slice order)."""
    pairs = count // 2
    slot = slot_bytes(pairs, 1, threads)
    acc_type = types.UniTuple(types.float32, count)

    @intrinsic
    def add(typingctx, acc, exchange, tid):
        def codegen(context, builder, sig, args):
            acc_v, exchange_v, tid_v = args
            i32 = lambda v: ir.Constant(I32, v)  # noqa: E731
            mine = builder.add(exchange_v, builder.mul(tid_v, i32(8)))
            for s in range(slots):
                for p in range(pairs):
                    part = emit(builder, "ld.shared.v2.f32 {$0, $1}, [$2];", "=f,=f,r",
                                (builder.add(mine, i32(s * slot + p * threads * 8)),), PAIR_TYPE)
                    acc_v = add_loaded(builder, acc_v, part, 2 * p, 2)
            return acc_v
        return signature(acc_type, acc_type, types.uint32, types.uint32), codegen
    return add
