"""Launch a clock-probe build of a kernel (KernelConfig(.., clock_probe=True)) straight through
gemm.launch, so that every launch leaves each CTA's clock64, globaltimer and SM id in one
array: the per-CTA stamps experiments.calibrate_clock and experiments.l2_same_launch read."""
from __future__ import annotations


def probed_launcher(config, m: int, n: int, k: int):
    """(run(a, b), probe, loaded): run launches `config` for an [M, K] x [K, N] product (b a
    K-major [K, N] view of an [N, K] buffer, the seed's layout) into a scratch C; after each
    launch `probe` (cupy, CTAs x PROBE_WORDS) holds its CTAs' words."""
    import cupy
    import torch

    from gemm.kernels.tiles import PROBE_WORDS
    from gemm.launch import launch_gemm, load_kernel
    loaded = load_kernel(config)
    gx, gy, _ = loaded.config.grid(m, n)
    probe = cupy.zeros((gx * gy, PROBE_WORDS), dtype=cupy.uint64)
    out = torch.empty((m, n), dtype=torch.float16, device="cuda")

    def run(a, b):
        launch_gemm(loaded, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(1), out.data_ptr(), n,
                    m, n, k, torch.cuda.current_stream().cuda_stream, probe.data.ptr)
    return run, probe, loaded
