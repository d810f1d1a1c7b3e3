"""Host-side CUtensorMap encoding (cuda.bindings), kept in device memory and cached.

Numba kernels have no __grid_constant__ parameters, so the 128-byte tensor map
is copied to device memory once and the kernel gets its address; the kernel
acquires it with fence.proxy.tensormap (gemm.ptx.fence_tensormap_acquire).
The box and swizzle come from the same OperandLayout that gives the WGMMA
descriptor, so the two views of shared memory cannot disagree.
"""
from __future__ import annotations

import ctypes
from collections import OrderedDict

import numpy as np

from .smem_layout import ELEMENT_BYTES, TENSORMAP_SWIZZLE, OperandLayout

CACHE_ENTRIES = 512
# How much L2 fetches from DRAM on a TMA load's miss ("NONE", "L2_64B", "L2_128B", "L2_256B"):
# a box row is 128 bytes of one operand row, and its neighbour along K is the next K step's.
# None and 128 B measured the same as 256 B on the decode and the large products; a name here so
# that a microbenchmark can try the others.
L2_PROMOTION = "L2_256B"


class TensorMapError(ValueError):
    pass


def _check(result):
    err, *rest = result
    if int(err) != 0:
        from cuda.bindings import driver
        name = driver.cuGetErrorName(err)[1]
        raise TensorMapError(f"cuTensorMapEncodeTiled failed: {name.decode() if name else err}")
    return rest[0] if len(rest) == 1 else rest


def encode_2d(address: int, dtype: str, inner: int, outer: int, row_stride_bytes: int,
              box: tuple[int, int], swizzle: int) -> bytes:
    """The 128 bytes of a 2-D tiled CUtensorMap over a [outer, inner] matrix of
    16-bit elements whose rows are `row_stride_bytes` apart. Out-of-range
    elements of a box read as zeros."""
    from cuda.bindings import driver
    if address % 16:
        raise TensorMapError(f"TMA needs a 16-byte aligned base address, got {address:#x}")
    if row_stride_bytes % 16:
        raise TensorMapError(f"TMA needs a row stride that is a multiple of 16 bytes, got {row_stride_bytes}")
    data_type = {"float16": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                 "bfloat16": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16}[dtype]
    tmap = _check(driver.cuTensorMapEncodeTiled(
        data_type, 2, address,
        [driver.cuuint64_t(inner), driver.cuuint64_t(outer)],
        [driver.cuuint64_t(row_stride_bytes)],
        [driver.cuuint32_t(box[0]), driver.cuuint32_t(box[1])],
        [driver.cuuint32_t(1), driver.cuuint32_t(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle(TENSORMAP_SWIZZLE[swizzle]),
        getattr(driver.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{L2_PROMOTION}"),
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
    return ctypes.string_at(tmap.getPtr(), 128)


def operand_map_args(layout: OperandLayout, rows: int, cols: int, row_stride_elems: int):
    """encode_2d's (inner, outer, stride, box, swizzle) for an operand stored as a
    row-major [rows, cols] matrix (cols contiguous). A K-major A is [M, K]; an
    MN-major A is [K, M]; likewise for B with N."""
    return cols, rows, row_stride_elems * ELEMENT_BYTES, layout.box, layout.swizzle


class TensorMapCache:
    """Device-resident tensor maps, one per (address, shape, stride, dtype, box,
    swizzle), least recently used dropped first. The map depends on nothing else,
    so a hit is valid even if the buffer at that address was reallocated. A batch of
    `count` matrices `step` bytes apart gets `count` maps, 128 bytes apart."""

    def __init__(self, entries: int = CACHE_ENTRIES):
        self._maps: OrderedDict = OrderedDict()
        self._entries = entries

    def get(self, address, dtype, inner, outer, row_stride_bytes, box, swizzle, count=1, step=0) -> int:
        key = (address, dtype, inner, outer, row_stride_bytes, box, swizzle, count, step)
        hit = self._maps.get(key)
        if hit is not None:
            self._maps.move_to_end(key)
            return hit.data.ptr
        import cupy
        raw = b"".join(encode_2d(address + i * step, dtype, inner, outer, row_stride_bytes, box, swizzle)
                       for i in range(count))
        buf = cupy.asarray(np.frombuffer(raw, dtype=np.uint8))  # 128 B a map, the allocation 256-B aligned
        self._maps[key] = buf
        if len(self._maps) > self._entries:
            self._maps.popitem(last=False)
        return buf.data.ptr

    def clear(self):
        self._maps.clear()

    def __len__(self):
        return len(self._maps)


cache = TensorMapCache()
