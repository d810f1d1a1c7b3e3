"""The HBM and L2 bytes one 8192^3 launch of each kernel moves, for Nsight Compute:

  ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \\
      --kernel-name regex:"^(serial|ring|specialized|load_loop)_kernel" python3 -m experiments.hbm_bytes [--load-loop]

The model's HBM bytes (sim.engines.memory_traffic: every panel once per wave that uses it)
are checked against dram__bytes_read (python -m experiments.hbm_compare); the seed's Nsight
Compute profile had V2 moving 2.7x V1's DRAM bytes. With --load-loop: the WGMMA-free loops of
experiments.calibrate_clock (the microbenchmark that set the model's L2 parameters) instead.
Each kernel runs once, in the order printed (Nsight Compute numbers them in that order)."""
import argparse

import gemm

P = gemm.preset
SCHEDULES = {
    "v1": P("v1"), "v2": P("v2"), "v2-local": P("v2", phase_storage="local"),
    "v2 s3": P("v2", stages=3), "v2 s4": P("v2", stages=4),
    "v3 s2": P("v3", stages=2), "v3 s3": P("v3", stages=3), "v3 s4": P("v3", stages=4),
    "v4 s2": P("v4", stages=2), "v5 s3": P("v5", stages=3), "v5 s4": P("v5", stages=4),
    "v5 128x256 s4": P("v5", block_n=256, stages=4),
    "v5 128x256 s4 grouped": P("v5", block_n=256, stages=4, raster="grouped"),
    "v1 128x192": P("v1", block_n=192), "v2 128x192 s2": P("v2", block_n=192),
    "v1 64x256": P("v1", block_m=64, block_n=256),
    "v2 64x256 s2": P("v2", block_m=64, block_n=256),
    "v2 64x256 s2 row": P("v2", block_m=64, block_n=256, raster="row"),
}

# does the lost reuse grow with the time the sharers have to drift apart (the K loop's length)?
K_SWEEP = (1024, 2048, 4096, 8192)
K_SWEEP_KERNELS = ("v1", "v2", "v3 s3")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load-loop", action="store_true", help="the WGMMA-free loop microbenchmarks instead")
    ap.add_argument("--k-sweep", action="store_true",
                    help="instead: V1, V2 and V3 s3 at M = N = 8192 and K = 1024, 2048, 4096, 8192")
    args = ap.parse_args()
    import torch
    from experiments.reference import random_operands
    if args.k_sweep:
        for k in K_SWEEP:
            a, b = random_operands(8192, 8192, k, "float16", seed=k)
            b = b.t().contiguous().t()
            out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
            for name in K_SWEEP_KERNELS:
                gemm.matmul(a, b, schedule=SCHEDULES[name], out=out)
                torch.cuda.synchronize()
                print(name, k, flush=True)
        return
    a, b = random_operands(8192, 8192, 8192, "float16", seed=0)
    b = b.t().contiguous().t()   # the seed's layout: B stored [N, K]
    out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
    if not args.load_loop:
        for name, s in SCHEDULES.items():
            gemm.matmul(a, b, schedule=s, out=out)
            torch.cuda.synchronize()
            print(name, flush=True)
        return
    from gemm.kernels import KernelConfig
    from gemm.launch import launch_gemm, load_kernel
    from experiments.calibrate_clock import LOAD_LOOP_SCHEDULES
    for name, s in LOAD_LOOP_SCHEDULES.items():
        loaded = load_kernel(KernelConfig(s, "float16", "k", "k", load_loop_only=True))
        launch_gemm(loaded, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(1), out.data_ptr(), 8192,
                    8192, 8192, 8192, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        print(name, flush=True)


if __name__ == "__main__":
    main()
