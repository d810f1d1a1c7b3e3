"""The Hopper (compute capability 9.0) limits a GEMM schedule must respect, in one place.

Every number here is a property of the chip or of the instructions the kernels use,
from the CUDA programming guide ("Compute capability 9.0") and the PTX ISA. The
schedule validates against them, the kernels size themselves by them and the
simulator's profiles take them as defaults. Pure Python.
"""
import math

# Shared memory: 228 KB per SM, of which 1 KB is reserved per resident block; a block
# may opt into at most 227 KB of dynamic shared memory.
SHARED_BYTES_PER_SM = 228 * 1024
MAX_SHARED_BYTES_PER_BLOCK = 227 * 1024
RESERVED_SHARED_BYTES_PER_BLOCK = 1024

# Registers: 64K 32-bit registers per SM, at most 255 per thread. The register file is split
# among the SM's four warp schedulers (16K each); a warp's registers are allocated in units
# of 256 and a block's warps are dealt round robin.
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255
SCHEDULERS_PER_SM = 4
REGISTER_ALLOCATION_UNIT = 256

# setmaxnreg (sm_90a): a warpgroup's new register count is a multiple of 8 in 24..256.
SETMAXNREG_MIN, SETMAXNREG_MAX, SETMAXNREG_STEP = 24, 256, 8

MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
SM_COUNT_H100_H200 = 132  # SXM parts; the kernels read the real count off the device

# Thread block clusters: up to 8 CTAs portably (16 with a non-portable opt-in).
MAX_CLUSTER_SIZE = 8

# WGMMA: a warpgroup (4 consecutive warps, the first at a warp index divisible by 4)
# computes m64 x nN x k16 per instruction for fp16/bf16 inputs, N a multiple of 8 up to 256.
WGMMA_M = 64
WGMMA_K = 16
WGMMA_N_STEP = 8
WGMMA_MAX_N = 256
WARPGROUP_THREADS = 128

# fp32 accumulator registers one consumer thread may hold beside its addresses, descriptors,
# loop state and epilogue, when no setmaxnreg raises its count: above this ptxas spills
# (a 128x256 fp32 tile in one warpgroup needs 256 per thread and does not fit).
MAX_ACCUMULATOR_REGISTERS = 192
# Registers a consumer keeps for everything but its accumulators (setmaxnreg budgets).
CONSUMER_OVERHEAD_REGISTERS = 40

# TMA: a box is at most 256 elements along each dimension; a swizzled box's inner extent
# is at most the swizzle width; global addresses and row strides are 16-byte aligned.
TMA_MAX_BOX = 256
TMA_ALIGNMENT_BYTES = 16

INPUT_BYTES = 2  # fp16 / bf16 operands and C


def staging_swizzle(cols: int) -> int:
    """The swizzle (bytes) of a C tile `cols` 16-bit columns wide staged in shared memory for a
    TMA store: the widest that divides its columns, which keeps stmatrix free of bank
    conflicts; the staged tile is stored in boxes of one swizzle row each."""
    for width in (128, 64, 32):
        if cols % (width // INPUT_BYTES) == 0:
            return width
    raise ValueError(f"a staged C tile needs a multiple of 16 columns, got {cols}")


def tma_row_aligned(elements: int) -> bool:
    """Whether a contiguous row of `elements` 16-bit values is a whole number of TMA's 16-byte
    strides: where it is not, a call copies the rows into a padded buffer (gemm/padding.py)."""
    return (elements * INPUT_BYTES) % TMA_ALIGNMENT_BYTES == 0


def tma_addressable(address: int, *strides: int) -> bool:
    """Whether TMA can address a matrix at `address` whose strides (in 16-bit elements: its
    rows', and a batch's matrices') are given: a 16-byte aligned base and every stride a whole
    number of 16 bytes."""
    return address % TMA_ALIGNMENT_BYTES == 0 and all(tma_row_aligned(s) for s in strides)


# The L2 serves 128-byte lines in 32-byte sectors. A 128-byte box row of an operand whose lines
# start on a line is one request of four sectors; one whose lines start on a sector inside a line
# touches four sectors of two lines; one whose lines start inside a sector, five of two lines.
# The last costs the L2 several clocks a row, the second fewer (sim: l2_misaligned_row_clk,
# l2_line_straddle_row_clk).
L2_LINE_BYTES = 128
L2_SECTOR_BYTES = 32
LINE_STARTS = ("line", "sector", "inside a sector")


def line_start(*offsets: int) -> str:
    """Where lines start (LINE_STARTS) whose first bytes lie at `offsets` and at any sums of
    them (a base address and a line pitch, in bytes)."""
    grain = math.gcd(L2_LINE_BYTES, *offsets)
    if grain == L2_LINE_BYTES:
        return "line"
    return "sector" if grain % L2_SECTOR_BYTES == 0 else "inside a sector"


# A programmatic dependent launch lets the next kernel be scheduled once its producers have issued
# their last loads (gemm.kernels.config FLAG_EARLY_TRIGGER) only where its grid leaves at most this
# many SMs idle: the next kernel's CTAs take whatever SMs are idle and wait there until this one
# completes, so a grid that leaves many idle crowds the next one onto them and slows it.
EARLY_TRIGGER_IDLE_SMS = 4


def fills_the_gpu(ctas: int, sms: int) -> bool:
    """Whether a grid of `ctas` leaves at most EARLY_TRIGGER_IDLE_SMS of `sms` SMs idle."""
    return ctas >= sms - EARLY_TRIGGER_IDLE_SMS
