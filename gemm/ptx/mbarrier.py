"""mbarrier: the shared-memory barrier that TMA completes and warps wait on.

Addresses are 32-bit shared-window addresses (see `shared.shared_base`). A "full"
barrier is initialised with count 1 (the single arrive.expect_tx of the thread
that issues the loads) and flips phase once the expected bytes have landed.
"""
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import emit


@intrinsic
def mbarrier_init(typingctx, addr, count):
    """mbarrier.init: `count` arrivals complete one phase."""
    def codegen(context, builder, sig, args):
        emit(builder, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", args)
    return signature(types.void, types.uint32, types.uint32), codegen


@intrinsic
def fence_mbarrier_init(typingctx):
    """Make mbarrier.init visible to other threads and to the async proxy (TMA)."""
    def codegen(context, builder, sig, args):
        emit(builder, "fence.mbarrier_init.release.cluster;", "")
    return signature(types.void), codegen


@intrinsic
def mbarrier_arrive(typingctx, addr):
    """One arrival (a consumer releasing a stage)."""
    def codegen(context, builder, sig, args):
        emit(builder, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", args)
    return signature(types.void, types.uint32), codegen


@intrinsic
def mbarrier_arrive_expect_tx(typingctx, addr, nbytes):
    """Arrive and announce `nbytes` of TMA transactions this phase must still see."""
    def codegen(context, builder, sig, args):
        emit(builder, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", args)
    return signature(types.void, types.uint32, types.uint32), codegen


@intrinsic
def mbarrier_wait(typingctx, addr, phase):
    """Spin until the barrier's phase with parity `phase` has completed.
    The labels sit inside { } so that every inlined copy has its own."""
    def codegen(context, builder, sig, args):
        emit(builder,
             "{\n .reg .pred done;\n WAIT:\n"
             " mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
             " @!done bra WAIT;\n}",
             "r,r", args)
    return signature(types.void, types.uint32, types.uint32), codegen
