"""One small module per kernel family, each reading like the tutorial page that explains it.

  serial  V1: load one K tile, wait, sync, WGMMA, wait, sync.
  ring    V2: a `stages`-deep shared-memory ring buffer with block-wide syncs.
  specialized  V3-V5: a producer warp and consumer warpgroups, full/empty mbarriers.
  persistent   V6-V7: a producer warpgroup (setmaxnreg), a persistent tile loop, clusters
               with TMA multicast, a TMA-store epilogue.
  Two microbenchmarks are switches of the ring and the specialized kernels (KernelConfig's
  mma_loop_only: the syncs and WGMMAs with no TMA; load_loop_only: the loads, waits and syncs
  with no WGMMA); V1's loop is the one-stage ring's.

`build(config)` returns the Python kernel function for a KernelConfig; gemm.launch
compiles it.
"""
from .config import FLAG_A_STEPS, FLAG_B_STEPS, FLAG_EARLY_TRIGGER, KernelConfig


def build(config: KernelConfig):
    """The kernel function (not yet compiled) for this configuration."""
    if config.warpgroup_producer:
        if config.mma_loop_only or config.load_loop_only or config.prefetch_limit:
            raise ValueError("the persistent kernel has no microbenchmark modes")
        from .persistent import build_persistent_kernel
        return build_persistent_kernel(config)
    if config.family == "specialized":   # its microbenchmark modes are switches of its own
        from .specialized import build_specialized_kernel
        return build_specialized_kernel(config)
    if config.mma_loop_only or config.load_loop_only:   # V1's loop is the one-stage ring's
        from .ring import build_ring_kernel
        return build_ring_kernel(config)
    if config.family == "serial":
        from .serial import build_serial_kernel
        return build_serial_kernel(config)
    if config.family == "ring":
        from .ring import build_ring_kernel
        return build_ring_kernel(config)
    raise NotImplementedError(f"no Numba kernel for the {config.family!r} family")


__all__ = ["FLAG_A_STEPS", "FLAG_B_STEPS", "FLAG_EARLY_TRIGGER", "KernelConfig", "build"]
