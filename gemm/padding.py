"""Copies of operands (and results) whose lines TMA cannot address.

TMA reads and writes a matrix only when its base address and the distance between its lines
(the rows of a row-major matrix, the columns of a column-major one) are multiples of 16 bytes.
An operand whose lines are not (K x 2 bytes with K not a multiple of 8, an offset view) is
copied first into lines `pitch` elements apart, keeping its majorness: pitch a multiple of 64
(128 bytes), not merely of 8, since a line that starts inside a 128-byte cache line makes every
128-byte row of a TMA box straddle two, which slows large unclustered tiles by up to 1.8x;
the GEMM's tensor map says the lines are `width` elements long, so what lies past them is never
read. A result whose rows are not (N not a multiple of 8) is stored by TMA into such a padded
buffer, and copied from it into C after the GEMM: both are this module's `copy_lines`.

The copy is a kernel of our own rather than the driver's pitched copy (cudaMemcpy2DAsync),
which moves lines of unaligned 2-byte elements at about half the rate
(`python -m experiments.research.pad_copy`). Each thread reads 2-byte elements, whose loads a
warp coalesces (consecutive lanes, consecutive elements), and writes them as 4-byte pairs;
every thread issues all its loads before its first store, so it keeps `PAIRS` x 2 loads in
flight. The grid walks each matrix's destination as one flat list of element pairs (32-bit
indices), so a short line costs no idle threads and a pair may span two lines (an odd
destination line); the matrices of a batch are the grid's second dimension.

Compiled like the GEMM kernels (numba-cuda -> PTX -> ptxas) and cached on disk under a key of
this file's own source, so a change here rebuilds only this kernel.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

THREADS = 256
PAIRS = 4                 # 4-byte pairs a thread writes per pass: 8 loads in flight
MAX_GRID = 65535          # a grid dimension's limit (y)
SIGNATURE = "void(int64, int64, int64, int64, int32, int32, int32)"


def _intrinsics():
    """(load_u16(address) -> uint32, store_u16(address, value), store_u32(address, value)):
    plain global loads and stores through a 64-bit address, left to the compiler to schedule."""
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic
    from numba.cuda.typing import signature

    def pointer(builder, address, bits):
        return builder.inttoptr(address, ir.PointerType(ir.IntType(bits), addrspace=1))

    @intrinsic
    def load_u16(typingctx, address):
        def codegen(context, builder, sig, args):
            value = builder.load(pointer(builder, args[0], 16), align=2)
            return builder.zext(value, ir.IntType(32))
        return signature(types.uint32, types.int64), codegen

    def store(bits):
        @intrinsic
        def store_word(typingctx, address, value):
            def codegen(context, builder, sig, args):
                word = builder.trunc(args[1], ir.IntType(bits)) if bits < 32 else args[1]
                builder.store(word, pointer(builder, args[0], bits), align=bits // 8)
                return context.get_dummy_value()
            return signature(types.void, types.int64, types.uint32), codegen
        return store_word

    return load_u16, store(16), store(32)


def build_copy_kernel():
    """The kernel `copy_lines(src, src_ld, src_step, dst, dst_ld, lines, width)`: for matrix
    blockIdx.y, `lines` lines of `width` 2-byte elements, src_ld elements apart from byte
    address src + matrix x src_step x 2, into lines dst_ld (>= width) elements apart from
    dst + matrix x lines x dst_ld x 2 (4-byte aligned); a line's elements past `width` are
    written as zeros."""
    from numba import cuda, uint32
    load_u16, store_u16, store_u32 = _intrinsics()

    def copy_lines(src, src_ld, src_step, dst, dst_ld, lines, width):
        total = uint32(lines) * uint32(dst_ld)            # destination elements of this matrix
        pairs = (total + uint32(1)) // uint32(2)
        matrix = cuda.blockIdx.y
        source = src + matrix * src_step * 2
        target = dst + matrix * lines * dst_ld * 2
        first = uint32(cuda.blockIdx.x * (THREADS * PAIRS) + cuda.threadIdx.x)
        stride = uint32(cuda.gridDim.x * (THREADS * PAIRS))
        words = cuda.local.array(PAIRS, uint32)
        while first < pairs:
            for j in range(PAIRS):                        # every load first ...
                pair = first + uint32(j * THREADS)
                element = pair * uint32(2)
                line = element // uint32(dst_ld)
                column = element - line * uint32(dst_ld)
                at = source + (line * src_ld + column) * 2
                low = load_u16(at) if pair < pairs and column < width else uint32(0)
                # the pair's second element: the next column, or the next line's first
                wraps = column + uint32(1) == uint32(dst_ld)
                at_high = source + (line + uint32(1)) * src_ld * 2 if wraps else at + 2
                high_column = uint32(0) if wraps else column + uint32(1)
                inside = pair < pairs and element + uint32(1) < total and high_column < width
                high = load_u16(at_high) if inside else uint32(0)
                words[j] = low | (high << uint32(16))
            for j in range(PAIRS):                        # ... then the stores
                pair = first + uint32(j * THREADS)
                element = pair * uint32(2)
                if pair < pairs:
                    if element + uint32(1) < total:
                        store_u32(target + element * 2, words[j])
                    else:                                 # an odd count's last element
                        store_u16(target + element * 2, words[j])
            first += stride

    return copy_lines


def _source_digest() -> str:
    import numba_cuda
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(getattr(numba_cuda, "__version__", "?").encode())
    return h.hexdigest()[:16]


@lru_cache(maxsize=1)
def compiled():
    """(ptx, entry name, cubin, ptxas log) of the copy kernel, from the disk cache of gemm.compile
    when there, else compiled (no GPU needed) and cached there."""
    from numba import cuda

    from .compile import ARCH, _cache_dir, _device_functions_without_gpu, _write_entry, assemble
    path = _cache_dir() / f"copy-lines-{_source_digest()}"
    if (path / "kernel.cubin").exists():
        return ((path / "kernel.ptx").read_text(), (path / "kernel.entry").read_text(),
                (path / "kernel.cubin").read_bytes(), (path / "ptxas.log").read_text())
    with _device_functions_without_gpu():
        ptx, _ = cuda.compile_ptx(build_copy_kernel(), SIGNATURE, cc=ARCH, launch_bounds=(THREADS, 1))
    name = re.search(r"\.entry\s+([\w$]+)\s*\(", ptx).group(1)
    cubin, log = assemble(ptx)
    try:
        _write_entry(path, ptx, name, log, cubin)
    except OSError:
        pass  # a read-only cache still compiles, just not cached
    return ptx, name, cubin, log


@dataclass(frozen=True)
class LineCopy:
    """One copy: `matrices` matrices of `lines` lines of `width` elements, from lines src_ld
    apart (matrices src_step apart) into lines dst_ld apart (matrices lines x dst_ld apart).
    Addresses in bytes, strides in elements."""
    src: int
    src_ld: int
    src_step: int
    dst: int
    dst_ld: int
    lines: int
    width: int
    matrices: int = 1

    def grid(self, sms: int) -> tuple[int, int, int]:
        pairs = -(-self.lines * self.dst_ld // 2)
        blocks = -(-pairs // (THREADS * PAIRS))
        return max(1, min(blocks, 16 * sms)), self.matrices, 1


def pitch_for(width: int) -> int:
    """The line pitch (elements) of a padded copy: `width` rounded up to 128 bytes (TMA needs 16;
    128 keeps each line's start on a cache line, see the module docstring)."""
    return -(-width // 64) * 64


def check(copy: LineCopy) -> None:
    """What the kernel can do: 32-bit element indices (with room for a pass past the end), a
    batch within the grid's second dimension, 4-byte pair stores (an aligned destination whose
    matrices stay aligned), destination lines at least as long as the copied ones."""
    if copy.lines * copy.dst_ld >= 1 << 31:
        raise ValueError(f"a matrix of {copy.lines} lines of {copy.dst_ld} elements is too large to copy "
                         f"into aligned lines (at most 2^31 elements a matrix)")
    if copy.matrices > MAX_GRID:
        raise ValueError(f"a batch of {copy.matrices} unaligned matrices is too large to copy "
                         f"(at most {MAX_GRID})")
    if copy.dst_ld < copy.width:
        raise ValueError(f"destination lines of {copy.dst_ld} elements cannot hold {copy.width}")
    if copy.dst % 4 or (copy.matrices > 1 and (copy.lines * copy.dst_ld) % 2):
        raise ValueError(f"the copy's destination must keep every matrix 4-byte aligned "
                         f"(address {copy.dst:#x}, {copy.lines} x {copy.dst_ld} elements a matrix)")


def launch_copy(copy: LineCopy, stream_handle: int):
    """Queue the copy on the stream; returns the prepared launch, to run again (with another
    destination: its argument 3), or None for an empty matrix, where there is nothing to copy."""
    import ctypes

    from .launch import Launch, sm_count
    check(copy)
    if not (copy.lines and copy.width and copy.matrices):
        return None
    sms = sm_count()
    prepared = Launch(_loaded(), copy.grid(sms), stream_handle,
                      (copy.src, copy.src_ld, copy.src_step, copy.dst, copy.dst_ld, copy.lines, copy.width),
                      (ctypes.c_int64,) * 4 + (ctypes.c_int32,) * 3)
    prepared()
    return prepared


@lru_cache(maxsize=1)
def _loaded():
    from .launch import load_function
    _, name, cubin, _ = compiled()
    return load_function(cubin, name, THREADS)
