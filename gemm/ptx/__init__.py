"""The PTX this project writes itself, once, as Numba intrinsics.

  mbarrier   init / arrive / arrive.expect_tx / try_wait.parity loop / init fence
  fences     fence.proxy.async, tensormap acquire, named barriers, elect.sync
  shared     shared-window address of a shared array
  tma        2-D tensor loads (completing on an mbarrier) and stores (bulk groups), plain
             bulk loads of contiguous bytes
  cluster    cluster rank and barrier, remote mbarrier arrive (and its cluster-scope release
             and acquiring wait), multicast TMA and bulk loads
  exchange   split-K inside a cluster: partials sent through distributed shared memory, summed
  registers  setmaxnreg (a warpgroup gives registers back or takes them)
  grid       programmatic dependent launch: wait for the kernel before, let the next one start
  wgmma      fence / mma_async over a K tile (fp32 or fp16 accumulators) / commit / wait
  fragment   accumulator zeros, the bounded store of a WGMMA fragment, and its stmatrix
             into a swizzled shared-memory C tile
  memory     split-K's and stream-K's global fence, counters and flags, and their fp32 partials
  timers     %clock64, %globaltimer, %smid (clock probes)
  integer    32-bit division (a 64-bit one is a call, which serializes WGMMA)
Kernels and microbenchmarks import from here; no other module writes PTX.
"""
from .cluster import (bulk_load_multicast, cluster_arrive, cluster_ctarank, cluster_sync, cluster_wait,
                      mbarrier_arrive_cluster, mbarrier_arrive_release_cluster, mbarrier_wait_cluster,
                      tma_load_2d_multicast)
from .exchange import add_partials, send_partials, sum_partials
from .fences import elect_one, fence_proxy_async_shared, fence_tensormap_acquire, named_barrier_sync
from .integer import div_u32, rem_u32
from .grid import grid_dependency_wait, launch_dependents
from .fragment import accumulator_zeros, fragment_coords, stage_accumulators, store_accumulators
from .registers import setmaxnreg_dec, setmaxnreg_inc
from .memory import (add_fragment_slot, atomic_add_u32, fence_gpu, ld_acquire_u32, reduce_strip, st_global_u32,
                     store_fragment_slot)
from .mbarrier import (fence_mbarrier_init, mbarrier_arrive, mbarrier_arrive_expect_tx,
                       mbarrier_init, mbarrier_wait)
from .shared import ld_shared_u32, shared_base, st_shared_u32
from .timers import clock64, globaltimer, smid, st_global_u64
from .tma import bulk_commit_group, bulk_load, bulk_wait_group, bulk_wait_group_read, tma_load_2d, tma_store_2d
from .wgmma import (accumulator_count, smem_descriptor, wgmma_commit_group, wgmma_fence, wgmma_k_tile,
                    wgmma_wait_group)

__all__ = [
    "bulk_load_multicast", "cluster_arrive", "cluster_ctarank", "cluster_sync", "cluster_wait",
    "mbarrier_arrive_cluster", "mbarrier_arrive_release_cluster", "mbarrier_wait_cluster", "tma_load_2d_multicast",
    "send_partials", "sum_partials", "add_partials",
    "elect_one", "fence_proxy_async_shared", "fence_tensormap_acquire", "named_barrier_sync",
    "div_u32", "rem_u32", "grid_dependency_wait", "launch_dependents",
    "accumulator_zeros", "fragment_coords", "stage_accumulators", "store_accumulators",
    "setmaxnreg_dec", "setmaxnreg_inc",
    "add_fragment_slot", "atomic_add_u32", "fence_gpu", "ld_acquire_u32", "reduce_strip", "st_global_u32",
    "store_fragment_slot",
    "fence_mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_init",
    "mbarrier_wait", "shared_base", "ld_shared_u32", "st_shared_u32",
    "clock64", "globaltimer", "smid", "st_global_u64",
    "bulk_load", "bulk_commit_group", "bulk_wait_group", "bulk_wait_group_read", "tma_load_2d", "tma_store_2d",
    "accumulator_count", "smem_descriptor", "wgmma_commit_group", "wgmma_fence", "wgmma_k_tile", "wgmma_wait_group",
]
