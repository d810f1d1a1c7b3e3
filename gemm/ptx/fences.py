"""Proxy fences and thread election."""
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import I32, emit


@intrinsic
def fence_proxy_async_shared(typingctx):
    """Order this thread's ordinary shared-memory writes before later reads by
    the async proxy (a TMA store or WGMMA reading what st.shared wrote)."""
    def codegen(context, builder, sig, args):
        emit(builder, "fence.proxy.async.shared::cta;", "")
    return signature(types.void), codegen


@intrinsic
def fence_tensormap_acquire(typingctx, tensormap):
    """Acquire a CUtensorMap that lives in global memory (written from the host)
    before the TMA unit reads it through the tensormap proxy."""
    def codegen(context, builder, sig, args):
        emit(builder, "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l", args)
    return signature(types.void, types.uint64), codegen


@intrinsic
def elect_one(typingctx):
    """1 in exactly one active lane of the warp, 0 in the others (elect.sync)."""
    def codegen(context, builder, sig, args):
        return emit(builder,
                    "{\n .reg .pred e;\n elect.sync _|e, 0xffffffff;\n selp.u32 $0, 1, 0, e;\n}",
                    "=r", (), I32)
    return signature(types.uint32), codegen
