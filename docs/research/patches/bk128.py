"""block_k=128 variants (two 64-wide boxes per operand per stage, the ring's bytes kept) beside
the table's picks: the model's prediction, and a local compile into $HOPPER_GEMM_CACHE."""
import sys
from gemm.schedule import from_spec, kernel_gaps
P0 = "producer_registers=0,consumer_registers=0"
SW16 = f"v7:block_n=16,stages=10,split_k=4,swap_ab=true,epilogue=direct,{P0}"
SW16K = f"v7:block_n=16,block_k=128,stages=5,split_k=4,swap_ab=true,epilogue=direct,{P0}"
T64 = f"v7:block_m=64,block_n=128,consumer_warpgroups=1,{P0},stages=8,split_k=4"
T64K = f"v7:block_m=64,block_n=128,block_k=128,consumer_warpgroups=1,{P0},stages=4,split_k=4"
T128 = "v7:block_n=64,stages=8,split_k=2"
T128K = "v7:block_n=64,block_k=128,stages=4,split_k=2"
UP192 = f"v7:block_m=192,consumer_warpgroups=1,block_n=16,stages=8,swap_ab=true,epilogue=direct,{P0}"
UP192K = f"v7:block_m=192,consumer_warpgroups=1,block_n=16,block_k=128,stages=4,swap_ab=true,epilogue=direct,{P0}"
UP64 = f"v7:block_m=64,block_n=256,consumer_warpgroups=1,{P0},stages=4"
UP64K = f"v7:block_m=64,block_n=256,block_k=128,consumer_warpgroups=1,{P0},stages=2"
UP176 = "v7:block_n=176"
UP176K = "v7:block_n=176,block_k=128,stages=2"
V7, V7K = "v7", "v7:block_k=128,stages=2"
C256, C256K = "v7:block_m=256,block_n=128,cluster_n=2", "v7:block_m=256,block_n=128,cluster_n=2,block_k=128,stages=2"
GROUPS = {  # shapes -> [(label, spec)]
    "dec1-down,dec16-down": [SW16, SW16K],
    "dec64-down": [T64, T64K, SW16K],
    "dec128-down": [T128, T128K],
    "dec1-up,dec16-up": [UP192, UP192K],
    "dec64-up": [UP64, UP64K],
    "dec128-up": [UP176, UP176K],

}
SHAPES = {"dec1-down": (1, 4096, 11008), "dec16-down": (16, 4096, 11008), "dec64-down": (64, 4096, 11008),
          "dec128-down": (128, 4096, 11008), "dec1-up": (1, 22016, 4096), "dec16-up": (16, 22016, 4096),
          "dec64-up": (64, 22016, 4096), "dec128-up": (128, 22016, 4096), "sq4096": (4096, 4096, 4096),
          "llama7b-qkv": (4096, 12288, 4096)}


def run(what: str, groups: dict, shapes: dict) -> None:
    """check | predict | compile each group's schedules (dn102.py runs its own groups through it)."""
    specs = sorted({s for v in groups.values() for s in v})
    if what == "check":
        for s in specs:
            sc = from_spec(s)   # raises ScheduleError where the schedule cannot be built
            print(s, "gaps:", kernel_gaps(sc), "ring", sc.ring_bytes)
    elif what == "predict":
        import sim
        for names, group in groups.items():
            for name in names.split(","):
                m, n, k = shapes[name]
                for s in group:
                    p = sim.predict(from_spec(s), m, n, k, gpu="h200-sxm", dtype="float16", clock="load")
                    print(f"{name:12s} {s[3:]:100s} ctas {p.launch['ctas']:4d} device {p.ms*1e3:8.2f} us", flush=True)
    elif what == "compile":
        from gemm.compile import compile_kernel
        from gemm.kernels import KernelConfig
        for s in specs:
            ck = compile_kernel(KernelConfig(from_spec(s), "float16", "k", "k"))
            print(s, ck.registers, "regs", ck.spill_bytes, "spill", flush=True)


if __name__ == "__main__":
    run(sys.argv[1], GROUPS, SHAPES)
