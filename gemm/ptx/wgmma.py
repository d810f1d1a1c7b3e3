"""WGMMA: warpgroup matrix multiply-accumulate on the tensor cores (sm_90a).

`wgmma_k_tile(...)` makes the intrinsic that multiplies one K tile held in shared
memory: for each k16 step, each 64-row block and each column block of N it issues
  wgmma.mma_async.sync.aligned.m64n{N}k16.{acc}.{t}.{t} {d...}, descA, descB, p, 1, 1, tA, tB;
with the descriptors advanced by compile-time offsets. fp32 accumulators are one
`UniTuple(float32, m_blocks * W / 2)` (W/2 registers per m64 block and thread, W = N x column
blocks); fp16 accumulators (fp16 inputs only) pack two to a register. Within an m64 block the
column blocks' registers follow one another, which is the order one m64nW instruction would
hold them in (a thread's registers walk the columns in groups of 8), so the epilogues see one
fragment W wide. Either type is tied in and out of the asm so that it never leaves registers.
A single instruction is the case k_steps = m_blocks = column blocks = 1.
"""
from functools import lru_cache

from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import F32, I32, I64, asm_count_intrinsic, asm_intrinsic, emit

WGMMA_N = tuple(range(8, 257, 8))
PTX_TYPE = {"float16": "f16", "bfloat16": "bf16"}


wgmma_fence = asm_intrinsic(
    "wgmma_fence", "wgmma.fence.sync.aligned;", "",
    doc="Order register accesses to the accumulators before the next wgmma.mma_async.")

wgmma_commit_group = asm_intrinsic(
    "wgmma_commit_group", "wgmma.commit_group.sync.aligned;", "",
    doc="Close the wgmma.mma_async issued so far into one group.")


wgmma_wait_group = asm_count_intrinsic(
    "wgmma_wait_group", "wgmma.wait_group.sync.aligned {n};",
    doc="wgmma_wait_group(n): wait until at most n WGMMA groups are in flight.")


ACCUMULATORS = {"float32": ("f32", "=f", types.float32, 2),   # PTX type, constraint, numba type,
                "float16": ("f16", "=r", types.uint32, 4)}    # columns of N per register


def accumulator_count(m_blocks, n, accumulate="float32"):
    """Accumulator registers per thread for m_blocks m64 blocks of width n."""
    return m_blocks * n // ACCUMULATORS[accumulate][3]


def mma_ptx(n, dtype, regs, desc_a, desc_b, scale_d, trans_a, trans_b, accumulate="float32"):
    """The text of one wgmma.mma_async (registers and descriptors by name)."""
    t = PTX_TYPE[dtype]
    acc = ACCUMULATORS[accumulate][0]
    return (f"wgmma.mma_async.sync.aligned.m64n{n}k16.{acc}.{t}.{t} "
            f"{{{', '.join(regs)}}}, {desc_a}, {desc_b}, {scale_d}, 1, 1, {trans_a}, {trans_b};")


def k_tile_ptx(n, dtype, trans_a, trans_b, a_offsets, b_offsets, accumulate="float32"):
    """The asm body for one K tile. a_offsets[k][m] and b_offsets[k][j] are byte offsets
    from the descriptors' start addresses (k16 step k, m64 block m, column block j of n).
    Operands: $0.. the accumulators (outputs, tied to the next as many inputs), then descA,
    descB, scale_d."""
    k_steps, m_blocks, n_blocks = len(a_offsets), len(a_offsets[0]), len(b_offsets[0])
    per_mma = accumulator_count(1, n, accumulate)
    total = m_blocks * n_blocks * per_mma
    da, db, sd = f"${2 * total}", f"${2 * total + 1}", f"${2 * total + 2}"
    lines = ["{", ".reg .pred first, always;", ".reg .b64 adesc, bdesc;",
             f"setp.ne.b32 first, {sd}, 0;", f"setp.eq.b32 always, {sd}, {sd};"]
    for k in range(k_steps):
        for j in range(n_blocks):
            lines.append(f"add.s64 bdesc, {db}, {b_offsets[k][j] >> 4};")
            for m in range(m_blocks):
                lines.append(f"add.s64 adesc, {da}, {a_offsets[k][m] >> 4};")
                first = (m * n_blocks + j) * per_mma      # the m64 block's row of registers, block j's part
                regs = [f"${first + r}" for r in range(per_mma)]
                lines.append(mma_ptx(n, dtype, regs, "adesc", "bdesc", "first" if k == 0 else "always",
                                     trans_a, trans_b, accumulate))
    lines.append("}")
    return "\n".join(lines), total


@lru_cache(maxsize=None)
def wgmma_k_tile(n, dtype, trans_a, trans_b, a_offsets, b_offsets, accumulate="float32"):
    """An intrinsic `f(acc, desc_a, desc_b, scale_d) -> acc` that issues the
    WGMMAs of one K tile, each n wide (b_offsets[k] has one offset per column block).
    scale_d = 0 makes the first k16 step overwrite the accumulators (no zero fill
    needed), 1 accumulates."""
    if n not in WGMMA_N:
        raise ValueError(f"WGMMA N must be a multiple of 8 in 8..256, got {n}")
    if dtype not in PTX_TYPE:
        raise ValueError(f"WGMMA inputs must be one of {tuple(PTX_TYPE)}, got {dtype!r}")
    if accumulate not in ACCUMULATORS or (accumulate == "float16" and dtype != "float16"):
        raise ValueError(f"accumulate={accumulate!r} with {dtype} inputs: WGMMA accumulates fp16 "
                         "inputs in float32 or float16, bf16 inputs in float32")
    body, total = k_tile_ptx(n, dtype, trans_a, trans_b, a_offsets, b_offsets, accumulate)
    _, out_constraint, element, _ = ACCUMULATORS[accumulate]
    acc_type = types.UniTuple(element, total)
    constraints = ",".join([out_constraint] * total + [str(i) for i in range(total)] + ["l", "l", "r"])

    @intrinsic
    def mma_k_tile(typingctx, acc, desc_a, desc_b, scale_d):
        def codegen(context, builder, sig, args):
            acc_in, a, b, s = args
            regs = [builder.extract_value(acc_in, i) for i in range(total)]
            out = emit(builder, body, constraints, regs + [a, b, s],
                       ir.LiteralStructType([F32 if accumulate == "float32" else I32] * total))
            result = context.get_constant_undef(acc_type)
            for i in range(total):
                result = builder.insert_value(result, builder.extract_value(out, i), i)
            return result
        return signature(acc_type, acc_type, types.uint64, types.uint64, types.uint32), codegen

    return mma_k_tile


@intrinsic
def smem_descriptor(typingctx, address, layout_bits):
    """The 64-bit shared-memory matrix descriptor: `layout_bits` (LBO, SBO and
    swizzle, from gemm.smem_layout) with the start address in bits 0-13 (>> 4)."""
    def codegen(context, builder, sig, args):
        addr, bits = args
        start = builder.and_(builder.lshr(builder.zext(addr, I64), ir.Constant(I64, 4)),
                             ir.Constant(I64, 0x3FFF))
        return builder.or_(bits, start)
    return signature(types.uint64, types.uint32, types.uint64), codegen
