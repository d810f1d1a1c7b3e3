"""mbarrier: the shared-memory barrier that TMA completes and warps wait on.

Addresses are 32-bit shared-window addresses (see `shared.shared_base`). A "full"
barrier is initialised with count 1 (the single arrive.expect_tx of the thread
that issues the loads) and flips phase once the expected bytes have landed.
"""
from numba.cuda.types import uint32

from ._asm import asm_intrinsic

mbarrier_init = asm_intrinsic(
    "mbarrier_init", "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", (uint32, uint32),
    doc="mbarrier.init(addr, count): `count` arrivals complete one phase.")

fence_mbarrier_init = asm_intrinsic(
    "fence_mbarrier_init", "fence.mbarrier_init.release.cluster;", "",
    doc="Make mbarrier.init visible to other threads and to the async proxy (TMA).")

mbarrier_arrive = asm_intrinsic(
    "mbarrier_arrive", "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", (uint32,),
    doc="One arrival (a consumer releasing a stage).")

mbarrier_arrive_expect_tx = asm_intrinsic(
    "mbarrier_arrive_expect_tx", "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
    (uint32, uint32),
    doc="Arrive and announce `nbytes` of TMA transactions this phase must still see.")

mbarrier_wait = asm_intrinsic(
    "mbarrier_wait",
    "{\n .reg .pred done;\n WAIT:\n"
    " mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
    " @!done bra WAIT;\n}",
    "r,r", (uint32, uint32),
    doc="Spin until the barrier's phase with parity `phase` has completed. The labels "
        "sit inside { } so that every inlined copy has its own.")
