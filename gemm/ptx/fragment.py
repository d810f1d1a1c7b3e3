"""The WGMMA accumulator fragment: making it, and writing it to global memory.

Layout of m64nNk16 fp32 accumulators (PTX ISA, "wgmma register fragments"):
thread t of the warpgroup holds, for each 8-column group j, registers
4j..4j+3 = rows g and g+8, columns 8j + 2q and +1, where g = 16*(t/32) + (t%32)/4
and q = t%4. Several m64 blocks follow one another in the tuple.
fp16 accumulators hold the same pairs packed, one register a pair (index // 2).
The stores walk that layout at compile time, so every tuple index is a constant:
`store_accumulators` writes straight to global memory, `stage_accumulators` converts
and writes the fragment into a swizzled shared-memory tile with stmatrix, for a TMA store.
"""
from functools import lru_cache

from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import F32, I16, I32, I64, emit

CONVERT = {"float16": "cvt.rn.f16x2.f32", "bfloat16": "cvt.rn.bf16x2.f32"}
CONVERT_ONE = {"float16": "cvt.rn.f16.f32", "bfloat16": "cvt.rn.bf16.f32"}
OUT_DTYPES = ("float16", "bfloat16", "float32")


ACCUMULATOR_TYPES = {"float32": types.float32, "float16": types.uint32}  # fp16: packed pairs


def add_loaded(builder, acc, part, first, width):
    """The fp32 fragment `acc` (an LLVM aggregate) with the `width` floats of the loaded struct
    `part` added to its elements first .. first + width - 1."""
    for e in range(width):
        acc = builder.insert_value(acc, builder.fadd(builder.extract_value(acc, first + e),
                                                     builder.extract_value(part, e)), first + e)
    return acc


@lru_cache(maxsize=None)
def accumulator_zeros(count, accumulate="float32"):
    """An intrinsic `f() -> UniTuple(float32 | uint32, count)` of zeros."""
    element = ACCUMULATOR_TYPES[accumulate]
    acc_type = types.UniTuple(element, count)
    zero = 0.0 if accumulate == "float32" else 0

    @intrinsic
    def zeros(typingctx):
        def codegen(context, builder, sig, args):
            return context.get_constant_generic(builder, acc_type, (zero,) * count)
        return signature(acc_type), codegen
    return zeros


def convert_pair(builder, lo, hi, out_dtype):
    """Two fp32 values as one 32-bit word of two 16-bit `out_dtype` values, `lo` in the low half."""
    return emit(builder, f"{CONVERT[out_dtype]} $0, $2, $1;", "=r,f,f", (lo, hi), I32)


def convert_one(builder, value, out_dtype):
    """One fp32 value as a 16-bit `out_dtype` value."""
    return emit(builder, f"{CONVERT_ONE[out_dtype]} $0, $1;", "=h,f", (value,), I16)


def _packed_pair(builder, acc, index, out_dtype, accumulate):
    """The 32-bit word holding the column pair at fp32-layout index `index` in C's dtype."""
    if accumulate == "float16":
        return builder.extract_value(acc, index // 2)  # already fp16x2
    return convert_pair(builder, builder.extract_value(acc, index), builder.extract_value(acc, index + 1), out_dtype)


def fragment_coords(m_blocks, n):
    """(tuple index, row offset, column offset) of each column pair a thread holds,
    relative to its (g, 2q) corner; the pair's second element is at index + 1."""
    per_block = n // 2
    for m in range(m_blocks):
        for j in range(n // 8):
            for half in range(2):
                yield m * per_block + 4 * j + 2 * half, 64 * m + 8 * half, 8 * j


def _store(builder, addr, value, ty):
    align = 4 if ty is F32 else ty.width // 8
    builder.store(value, builder.inttoptr(addr, ir.PointerType(ty, addrspace=1)), align=align)


class PairStore:
    """Code that writes one column pair of a fragment (fp32 values, or a packed fp16 pair) to
    global memory at (g + row, 2q + col) of the thread's corner, bounds-checked: the body of
    `store_accumulators`, and of any other epilogue that ends with the fragment's pairs
    (gemm.ptx.exchange's split-K sum). Made once per kernel body from its run-time values."""

    def __init__(self, builder, corner, ld, rows_left, cols_left, pair_ok, out_dtype, transposed=False):
        self.builder, self.corner, self.rows, self.cols = builder, corner, rows_left, cols_left
        self.out_dtype, self.transposed = out_dtype, transposed
        self.elem_bytes = 4 if out_dtype == "float32" else 2
        self.row_bytes = builder.mul(ld, ir.Constant(I64, self.elem_bytes))
        self.pair_flag = builder.icmp_unsigned("!=", pair_ok, ir.Constant(I32, 0))

    def __call__(self, row, col, values, packed=None):
        """Store the pair at its place. `values()` gives its two fp32 values; `packed()`, when given,
        the pair as one 32-bit word of C's dtype (fp16 accumulators). They are called where the
        store needs them, after the address: the order the kernels' PTX was tuned with."""
        builder, out_dtype, elem_bytes = self.builder, self.out_dtype, self.elem_bytes
        row_in = builder.icmp_signed("<", ir.Constant(I32, row), self.rows)
        first_in = builder.and_(row_in, builder.icmp_signed("<", ir.Constant(I32, col), self.cols))
        second_in = builder.and_(row_in, builder.icmp_signed("<", ir.Constant(I32, col + 1), self.cols))
        if self.transposed:   # C[col, row] and C[col + 1, row]: one row of C apart
            addr = builder.add(self.corner, builder.add(builder.mul(self.row_bytes, ir.Constant(I64, col)),
                                                        ir.Constant(I64, row * elem_bytes)))
            lo, hi = values()
            for value, inside, at in ((lo, first_in, addr), (hi, second_in, builder.add(addr, self.row_bytes))):
                with builder.if_then(inside):
                    if out_dtype == "float32":
                        _store(builder, at, value, F32)
                    else:
                        _store(builder, at, convert_one(builder, value, out_dtype), I16)
            return
        addr = builder.add(self.corner, builder.add(builder.mul(self.row_bytes, ir.Constant(I64, row)),
                                                    ir.Constant(I64, col * elem_bytes)))
        if out_dtype == "float32":
            lo, hi = values()
            with builder.if_else(builder.and_(second_in, self.pair_flag)) as (as_pair, as_singles):
                with as_pair:
                    emit(builder, "st.global.v2.f32 [$0], {$1, $2};", "l,f,f", (addr, lo, hi))
                with as_singles:
                    with builder.if_then(first_in):
                        _store(builder, addr, lo, F32)
                    with builder.if_then(second_in):
                        _store(builder, builder.add(addr, ir.Constant(I64, 4)), hi, F32)
            return
        packed = packed() if packed is not None else convert_pair(builder, *values(), out_dtype)
        whole = builder.and_(second_in, self.pair_flag)
        with builder.if_else(whole) as (as_word, as_halves):
            with as_word:
                _store(builder, addr, packed, I32)
            with as_halves:
                with builder.if_then(first_in):
                    _store(builder, addr, builder.trunc(packed, I16), I16)
                with builder.if_then(second_in):
                    _store(builder, builder.add(addr, ir.Constant(I64, 2)),
                           builder.trunc(builder.lshr(packed, ir.Constant(I32, 16)), I16), I16)


@lru_cache(maxsize=None)
def store_accumulators(m_blocks, n, out_dtype, accumulate="float32", transposed=False):
    """An intrinsic `f(acc, corner, ld, rows_left, cols_left, pair_ok)` that
    converts the fragment to `out_dtype` and stores it to global memory.

    corner: byte address of C[row g, column 2q] of this thread's tile corner;
    ld: C's row stride in elements; rows_left / cols_left: rows and columns of C
    from that element on (stores at or past them are skipped); pair_ok: nonzero
    when a column pair may be written as one word (4 bytes of 16-bit C, 8 of fp32), i.e.
    C's address and row stride keep pairs that aligned.

    transposed: the fragment is a tile of C^T (swap-AB computes C^T = B^T A^T), written
    into C: fragment element (row, col) goes to C[col, row], so `corner` is the byte
    address of C[2q, g], `ld` is C's row stride, and rows_left / cols_left count rows and
    columns of C^T. A column pair of C^T lies in two rows of C: every element is stored
    on its own."""
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"output dtype must be one of {OUT_DTYPES}, got {out_dtype!r}")
    if accumulate == "float16" and out_dtype != "float16":
        raise ValueError("fp16 accumulators are stored as fp16")
    if transposed and accumulate != "float32":
        raise ValueError("a transposed store takes fp32 accumulators")
    total = m_blocks * n // (2 if accumulate == "float32" else 4)
    acc_type = types.UniTuple(ACCUMULATOR_TYPES[accumulate], total)
    coords = tuple(fragment_coords(m_blocks, n))

    @intrinsic
    def store_fragment(typingctx, acc, corner, ld, rows_left, cols_left, pair_ok):
        def codegen(context, builder, sig, args):
            acc_v, corner_v, ld_v, rows_v, cols_v, pair_v = args
            store_pair = PairStore(builder, corner_v, ld_v, rows_v, cols_v, pair_v, out_dtype, transposed)
            for index, row, col in coords:
                store_pair(row, col, lambda i=index: (builder.extract_value(acc_v, i), builder.extract_value(acc_v, i + 1)),
                           (lambda i=index: builder.extract_value(acc_v, i // 2)) if accumulate == "float16" else None)
            return context.get_dummy_value()
        return signature(types.void, acc_type, types.uint64, types.int64, types.int32, types.int32,
                         types.uint32), codegen
    return store_fragment


@lru_cache(maxsize=None)
def stage_accumulators(m_blocks, n, out_dtype, accumulate, swizzle, box_bytes, columns=None):
    """An intrinsic `f(acc, region, lane_row, lane_half)` that converts the fragment (n
    columns wide) to `out_dtype` and writes it, or its `columns` = (first, count) only, with
    stmatrix into a warpgroup's C tile in shared memory at `region`: boxes of swizzle/2
    columns by all rows, `box_bytes` apart, each row `swizzle` bytes, its 16-byte chunks
    XOR-swizzled as TMA expects (so a TMA store of each box writes C). One stmatrix.x4 writes a 16x16 block of a warp's 16 rows: its four 8x8
    matrices are (rows 0-7 | 8-15) x (columns 0-7 | 8-15), matrix i taking lane i*8+r's
    address of row r. lane_row = 16 * warp + 8 * (i % 2) + r and lane_half = i // 2 give
    that row and 8-column half for this lane."""
    if out_dtype not in CONVERT:
        raise ValueError(f"a staged C tile is 16-bit, got {out_dtype!r}")
    per_block = n // 2          # fp32-layout registers per m64 block
    total = m_blocks * per_block // (1 if accumulate == "float32" else 2)
    acc_type = types.UniTuple(ACCUMULATOR_TYPES[accumulate], total)
    cols_per_box = swizzle // 2
    chunks = swizzle // 16
    first, count = columns or (0, n)
    if first % 16 or count % 16 or first + count > n:
        raise ValueError(f"columns {first}..{first + count} of {n}: stmatrix stages 16-column blocks")
    STMATRIX = "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};"

    @intrinsic
    def stage_fragment(typingctx, acc, region, lane_row, lane_half):
        def codegen(context, builder, sig, args):
            acc_v, region_v, row_v, half_v = args
            const = lambda v: ir.Constant(I32, v)  # noqa: E731
            # the row's swizzle: 16-byte chunk c of row r sits at chunk c ^ ((r * swizzle >> 7) % chunks)
            xor = builder.and_(builder.lshr(builder.mul(row_v, const(swizzle)), const(7)), const(chunks - 1))
            for mb in range(m_blocks):
                row_addr = builder.add(region_v, builder.mul(builder.add(row_v, const(64 * mb)), const(swizzle)))
                for jj in range(first // 16, (first + count) // 16):
                    box, col = divmod(16 * jj - first, cols_per_box)
                    chunk = builder.xor(builder.or_(const(col // 8), half_v), xor)
                    addr = builder.add(builder.add(row_addr, const(box * box_bytes)),
                                       builder.mul(chunk, const(16)))
                    base = mb * per_block + 8 * jj
                    words = [_packed_pair(builder, acc_v, base + 2 * i, out_dtype, accumulate) for i in range(4)]
                    emit(builder, STMATRIX, "r,r,r,r,r", [addr] + words)
            return context.get_dummy_value()
        return signature(types.void, acc_type, types.uint32, types.uint32, types.uint32), codegen
    return stage_fragment
