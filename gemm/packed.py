"""Weights packed for the kernels' bulk copies: `gemm.pack_weights(b)` once, then
`gemm.matmul(a, packed)` = `a @ b` as often as needed.

A decode GEMM (a few rows of activations against a large weight) is bound by the HBM: its
time is the weight's bytes over the rate they stream at. A tile's K slice read through a
tensor map costs the TMA unit one request per row of each box (64 rows of 128 bytes); stored
as gemm.smem_layout's packed image (each box already swizzled as TMA would write it, the boxes
in the order a CTA reads them), the same bytes arrive by one plain bulk copy per K tile (one
per 64-row box of a wider tile side). Whether that is faster depends on the GPU and the tile:
docs/kernels.md has what was measured. The packing is a one-time copy, as a framework converts
a checkpoint's weights for its kernels.
"""
from __future__ import annotations

from dataclasses import dataclass

from .kernels import KernelConfig
from .kernels.config import DTYPES
from .schedule import ScheduleError
from .smem_layout import (PACKED_BOX_ELEMS, PACKED_BOX_ROWS, PACKED_SWIZZLE, packed_k, packed_rows)

_CHUNK_ELEMS = 16 // 2                                  # a 16-byte chunk of 16-bit elements
_CHUNKS = PACKED_SWIZZLE // 16                          # chunks in a swizzle row


@dataclass(frozen=True, eq=False)
class PackedWeights:
    """`b` of `a @ b` (a [K, N] matrix: a weight W [N, K] passed as W.T) packed by
    `pack_weights`; gemm.matmul takes it in b's place. `buffer` holds the packed image
    (packed_rows(n) x packed_k(k) 16-bit elements) and keeps it alive."""
    buffer: object
    k: int
    n: int
    dtype: str
    kind: str            # "cupy" or "torch": what gemm.matmul's other operand must be
    device_id: int

    @property
    def shape(self) -> tuple[int, int]:
        """The shape of the matrix it stands for (b's)."""
        return (self.k, self.n)

    @property
    def address(self) -> int:
        return self.buffer.data_ptr() if self.kind == "torch" else self.buffer.data.ptr

    @property
    def nbytes(self) -> int:
        return packed_rows(self.n) * packed_k(self.k) * 2

    def __repr__(self) -> str:
        return f"PackedWeights(shape={self.shape}, dtype={self.dtype}, kind={self.kind}, device={self.device_id})"


def pack_image(w, xp):
    """The packed image of a weight `w` [N, K] of 16-bit integers (the elements' bits), with
    array module `xp` (numpy or cupy): [packed_rows(N) / 64, packed_k(K) / 64, 64, 64], each
    [64, 64] box holding chunk c of row r at chunk c ^ (r % 8), zeros past N and K."""
    n, k = w.shape
    rows, depth = packed_rows(n), packed_k(k)
    padded = xp.zeros((rows, depth), dtype=xp.uint16)
    padded[:n, :k] = w
    boxes = padded.reshape(rows // PACKED_BOX_ROWS, PACKED_BOX_ROWS, depth // PACKED_BOX_ELEMS,
                           _CHUNKS, _CHUNK_ELEMS).transpose(0, 2, 1, 3, 4)
    r = xp.arange(PACKED_BOX_ROWS)[:, None]
    c = xp.arange(_CHUNKS)[None, :]
    # the chunk stored at c came from chunk c ^ (r % 8) (the XOR is its own inverse)
    swizzled = boxes[:, :, r, c ^ (r % 8), :]
    return xp.ascontiguousarray(swizzled).reshape(rows // PACKED_BOX_ROWS, depth // PACKED_BOX_ELEMS,
                                                  PACKED_BOX_ROWS, PACKED_BOX_ELEMS)


def pack_weights(b) -> PackedWeights:
    """Pack `b` (a 2-D [K, N] CuPy array or PyTorch CUDA tensor, fp16 or bf16, any strides:
    typically a weight W [N, K] passed as W.T) for gemm.matmul's bulk-copy loader. The result
    stands for b: `gemm.matmul(a, pack_weights(b))` equals `gemm.matmul(a, b)`. It holds
    packed_rows(N) x packed_k(K) elements (N rounded up to 64 plus 192 rows, K to 128), and
    synchronizes the device once it is written. Pack once, multiply many times: the packing
    is a copy of the whole weight."""
    mod = type(b).__module__.split(".")[0]
    if mod == "torch":
        if not b.is_cuda:
            raise ValueError(f"b is a PyTorch tensor on {b.device}; pack CUDA tensors")
        kind, dtype, device_id = "torch", str(b.dtype).replace("torch.", ""), b.device.index
    elif mod == "cupy":
        kind, dtype, device_id = "cupy", str(b.dtype), b.device.id
    else:
        raise TypeError(f"b must be a CuPy array or a PyTorch CUDA tensor, got {type(b).__module__}."
                        f"{type(b).__name__}")
    if len(b.shape) != 2:
        raise ValueError(f"b must be a 2-D [K, N] matrix, got shape {tuple(b.shape)}")
    if dtype not in DTYPES:
        raise TypeError(f"dtype {dtype} is not supported: packed weights are {' or '.join(DTYPES)}")
    k, n = (int(x) for x in b.shape)
    if k == 0 or n == 0:
        raise ValueError(f"b has shape {(k, n)}: nothing to pack")
    import cupy
    with cupy.cuda.Device(device_id):
        if kind == "torch":
            import torch
            torch.cuda.current_stream(device_id).synchronize()     # b's writers are done
            bits = cupy.from_dlpack(b.view(torch.int16).detach()).view(cupy.uint16)
        else:
            bits = b.view(cupy.uint16)
        image = pack_image(bits.T, cupy)
        cupy.cuda.get_current_stream().synchronize()    # written before any stream reads it
        if kind == "torch":
            import torch
            buffer = torch.from_dlpack(image.view(cupy.int16))
        else:
            buffer = image
    return PackedWeights(buffer, k, n, dtype, kind, device_id)


def packed_operand(schedule) -> str:
    """The kernel operand ("a" or "b") that holds a packed `b` under `schedule`: with swap_ab the
    kernel computes C^T = B^T A^T, so the weights are its A."""
    return "a" if schedule.swap_ab else "b"


def packed_gaps_of(schedule, dtype: str = "float16") -> list[str]:
    """Why `schedule` cannot read packed weights (empty if it can)."""
    try:
        KernelConfig(schedule, dtype, "k", "k", packed=packed_operand(schedule))
    except (ScheduleError, NotImplementedError, ValueError) as exc:
        return [str(exc)]
    return []
