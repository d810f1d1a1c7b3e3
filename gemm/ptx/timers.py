"""Clocks, for probes that measure the SM clock a kernel actually runs at."""
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import I32, I64, emit


@intrinsic
def clock64(typingctx):
    """This SM's cycle counter."""
    def codegen(context, builder, sig, args):
        return emit(builder, "mov.u64 $0, %clock64;", "=l", (), I64)
    return signature(types.uint64), codegen


@intrinsic
def globaltimer(typingctx):
    """The GPU's nanosecond timer (shared by all SMs)."""
    def codegen(context, builder, sig, args):
        return emit(builder, "mov.u64 $0, %globaltimer;", "=l", (), I64)
    return signature(types.uint64), codegen


@intrinsic
def smid(typingctx):
    """The index of the SM this thread runs on."""
    def codegen(context, builder, sig, args):
        return emit(builder, "mov.u32 $0, %smid;", "=r", (), I32)
    return signature(types.uint32), codegen


@intrinsic
def st_global_u64(typingctx, addr, value):
    """An 8-byte store to a global address."""
    def codegen(context, builder, sig, args):
        emit(builder, "st.global.u64 [$0], $1;", "l,l", args)
    return signature(types.void, types.uint64, types.uint64), codegen
