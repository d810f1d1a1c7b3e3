"""The HBM and L2 bytes one 8192^3 launch of each kernel moves, for Nsight Compute:

  ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \\
      --kernel-name regex:"^(serial|ring|specialized|load_loop)_kernel" python3 -m experiments.research.hbm_bytes [--load-loop]

The model's HBM bytes (sim.engines.memory_traffic: every panel once per wave that uses it)
are checked against dram__bytes_read (python -m experiments.research.hbm_compare); the seed's Nsight
Compute profile had V2 moving 2.7x V1's DRAM bytes. The kernels: experiments.catalog.GEMMS. With
--load-loop: the WGMMA-free loops of experiments.calibrate_clock (catalog.LOAD_LOOPS, the
microbenchmark that set the model's L2 parameters) instead.
Each kernel runs once, in the order printed (Nsight Compute numbers them in that order)."""
import argparse

import gemm
from experiments import catalog
from experiments.reference import random_operands

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
    if args.k_sweep:
        for k in K_SWEEP:
            a, b = random_operands(8192, 8192, k, "float16", seed=k)
            b = b.t().contiguous().t()
            out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
            for name in K_SWEEP_KERNELS:
                gemm.matmul(a, b, schedule=catalog.schedule(name), out=out)
                torch.cuda.synchronize()
                print(name, k, flush=True)
        return
    a, b = random_operands(8192, 8192, 8192, "float16", seed=0)
    b = b.t().contiguous().t()   # the seed's layout: B stored [N, K]
    out = torch.empty((8192, 8192), dtype=torch.float16, device="cuda")
    if not args.load_loop:
        for name in catalog.GEMMS:
            gemm.matmul(a, b, schedule=catalog.schedule(name), out=out)
            torch.cuda.synchronize()
            print(name, flush=True)
        return
    from gemm.launch import launch_gemm, load_kernel
    for name in catalog.LOAD_LOOPS:
        loaded = load_kernel(catalog.entry(name).kernel_config())
        launch_gemm(loaded, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(1), out.data_ptr(), 8192,
                    8192, 8192, 8192, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        print(name, flush=True)


if __name__ == "__main__":
    main()
