"""Run 102: tile shapes for the decode down rows that fill all 132 SMs (split 6 of 22 tiles),
deeper splits, 64-row swapped tiles; each beside the table's pick."""
import sys
P0 = "producer_registers=0,consumer_registers=0"
SW = "swap_ab=true,epilogue=direct," + P0
GROUPS = {
    "dec1-down,dec16-down": [
        f"v7:block_n=16,stages=10,split_k=4,{SW}",
        f"v7:block_n=16,block_k=128,stages=5,split_k=4,{SW}",
        f"v7:block_m=192,consumer_warpgroups=1,block_n=16,stages=8,split_k=6,{SW}",
        f"v7:block_m=192,consumer_warpgroups=1,block_n=16,block_k=128,stages=4,split_k=6,{SW}",
        f"v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=6,split_k=4,{SW}",
        f"v7:block_n=16,block_k=128,stages=2,split_k=8,{SW}",
    ],
    "dec64-down": [
        f"v7:block_m=64,block_n=128,consumer_warpgroups=1,{P0},stages=8,split_k=4",
        f"v7:block_m=192,consumer_warpgroups=1,block_n=64,stages=6,split_k=6,{SW}",
        f"v7:block_m=64,block_n=192,consumer_warpgroups=1,{P0},stages=6,split_k=6",
    ],
    "dec128-down": [
        "v7:block_n=64,stages=8,split_k=2",
        "v7:block_n=192,stages=5,split_k=6",

    ],
}
SHAPES = {"dec1-down": (1, 4096, 11008), "dec16-down": (16, 4096, 11008), "dec64-down": (64, 4096, 11008),
          "dec128-down": (128, 4096, 11008)}
if __name__ == "__main__":
    from bk128 import run   # the same check / predict / compile, on these groups
    run(sys.argv[1], GROUPS, SHAPES)
