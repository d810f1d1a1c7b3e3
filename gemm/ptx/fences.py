"""Proxy fences, named barriers and thread election."""
from numba.cuda.types import uint32, uint64

from ._asm import asm_intrinsic

fence_proxy_async_shared = asm_intrinsic(
    "fence_proxy_async_shared", "fence.proxy.async.shared::cta;", "",
    doc="Order this thread's ordinary shared-memory writes before later reads by the "
        "async proxy (a TMA store or WGMMA reading what st.shared wrote).")

fence_tensormap_acquire = asm_intrinsic(
    "fence_tensormap_acquire", "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l", (uint64,),
    doc="Acquire a CUtensorMap that lives in global memory (written from the host) before "
        "the TMA unit reads it through the tensormap proxy.")

elect_one = asm_intrinsic(
    "elect_one", "{\n .reg .pred e;\n elect.sync _|e, 0xffffffff;\n selp.u32 $0, 1, 0, e;\n}", "=r",
    restype=uint32, doc="1 in exactly one active lane of the warp, 0 in the others (elect.sync).")

named_barrier_sync = asm_intrinsic(
    "named_barrier_sync", "bar.sync $0, $1;", "r,r", (uint32, uint32),
    doc="named_barrier_sync(id, threads): the `threads` threads (a multiple of 32) that name "
        "barrier `id` (1..15; 0 is __syncthreads) meet here, the rest of the block runs on.")
