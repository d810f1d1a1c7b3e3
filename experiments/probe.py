"""Launch a clock-probe build of a kernel (KernelConfig(.., clock_probe=True)) straight through
gemm.launch, so that every launch leaves each CTA's clock64, globaltimer and SM id in one
array: the per-CTA stamps experiments.calibrate_clock and the research studies read."""
from __future__ import annotations


def probed_launcher(config, m: int, n: int, k: int, launches: int = 1, extra_shared_bytes: int = 0):
    """(run(a, b, slot=0), probe, loaded): run launches `config` for an [M, K] x [K, N] product
    (b a K-major [K, N] view of an [N, K] buffer, the seed's layout) into a scratch C; `probe`
    (cupy, launches x CTAs rows of PROBE_WORDS) holds each launch's CTAs' words in rows
    slot x CTAs onward, so that launches back to back keep their stamps apart.
    `extra_shared_bytes`: launch with that much more dynamic shared memory than the kernel uses
    (unused: a footprint experiment; it may lower the CTAs per SM)."""
    import cupy
    import torch

    from gemm.kernels.tiles import PROBE_WORDS
    from gemm.launch import launch_gemm, load_kernel
    loaded = load_kernel(config)
    if extra_shared_bytes:
        import dataclasses

        from cuda.bindings import driver
        nbytes = loaded.shared_bytes + extra_shared_bytes
        err, = driver.cuFuncSetAttribute(
            loaded.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        if int(err) != 0:
            raise RuntimeError(f"could not allow {nbytes} bytes of dynamic shared memory: {err}")
        loaded = dataclasses.replace(loaded, shared_bytes=nbytes)
    gx, gy, _ = loaded.config.grid(m, n, loaded.resident_clusters)   # (a persistent grid is as many as fit)
    ctas = gx * gy
    probe = cupy.zeros((launches * ctas, PROBE_WORDS), dtype=cupy.uint64)
    out = torch.empty((m, n), dtype=getattr(torch, config.dtype), device="cuda")

    def run(a, b, slot: int = 0):
        if not 0 <= slot < launches:
            raise IndexError(f"probe slot {slot} outside 0..{launches - 1}")
        launch_gemm(loaded, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(1), out.data_ptr(), n,
                    m, n, k, torch.cuda.current_stream().cuda_stream,
                    probe.data.ptr + slot * ctas * PROBE_WORDS * probe.itemsize)
    return run, probe, loaded
