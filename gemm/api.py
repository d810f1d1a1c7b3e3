"""gemm.matmul: `a @ b` on the project's own Hopper kernels.

Inputs may be CuPy arrays, PyTorch CUDA tensors (through their pointers, so
bf16 works although CuPy has no bf16) or NumPy arrays (copied to the GPU and
back); the result is of the same kind. Operands may be transposed views: a
matrix whose columns are contiguous is handed to WGMMA as MN-major instead of
being copied. Everything is checked before anything is launched or written.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .schedule import KernelGapError, Schedule, kernel_gaps, preset

DTYPES = ("float16", "bfloat16")
# Until the autotuner exists: the fastest schedule measured on the H200 at 8192^3
# (experiments/results/h200-sxm/measured.csv): V2 with a 128x192x64 tile, 2 stages.
DEFAULT_SCHEDULE = preset("v2", block_n=192, stages=2, name="default")


@dataclass
class _Matrix:
    """A 2-D operand as the kernels see it: a device address and strides in elements."""
    kind: str            # "numpy", "cupy" or "torch"
    array: object
    shape: tuple
    strides: tuple       # elements
    dtype: str
    address: int = 0     # device address (numpy: filled in after the copy)
    device_id: int = -1  # -1: host


_DTYPE_NAMES: dict = {}


def _dtype_name(dt) -> str:
    # str(numpy dtype) costs microseconds; this runs on every call
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt).replace("torch.", "")
    return name


def _describe(x, name):
    mod = type(x).__module__.split(".")[0]
    if mod == "numpy" or isinstance(x, np.ndarray):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name} must be an array, got {type(x).__name__}")
        itemsize = x.dtype.itemsize
        return _Matrix("numpy", x, x.shape, tuple(s // itemsize for s in x.strides), _dtype_name(x.dtype))
    if mod == "cupy":
        itemsize = x.dtype.itemsize
        return _Matrix("cupy", x, x.shape, tuple(s // itemsize for s in x.strides), _dtype_name(x.dtype),
                       x.data.ptr, x.device.id)
    if mod == "torch":
        if not x.is_cuda:
            raise ValueError(f"{name} is a PyTorch tensor on {x.device}; pass CUDA tensors "
                             "(tensor.cuda()) or NumPy arrays")
        return _Matrix("torch", x, tuple(x.shape), tuple(x.stride()), _dtype_name(x.dtype),
                       x.data_ptr(), x.device.index)
    raise TypeError(f"{name} must be a NumPy array, a CuPy array or a PyTorch CUDA tensor, "
                    f"got {type(x).__module__}.{type(x).__name__}")


def _majorness(mat: _Matrix):
    """('row' | 'col' | None, leading stride): which dimension is contiguous."""
    rows, cols = mat.shape
    if mat.strides[1] == 1 or cols == 1:
        return "row", mat.strides[0] if rows > 1 else cols
    if mat.strides[0] == 1 or rows == 1:
        return "col", mat.strides[1] if cols > 1 else rows
    return None, 0


def _pick_schedule(stages, version, schedule) -> Schedule:
    if schedule is None:
        return _preset_schedule(stages, version)
    return _checked(schedule, stages, version)


@lru_cache(maxsize=64)
def _preset_schedule(stages, version) -> Schedule:
    return _checked(None, stages, version)


def _checked(schedule, stages, version) -> Schedule:
    if schedule is not None:
        if version is not None or stages is not None:
            raise ValueError("give either schedule= or version=/stages=, not both")
        if not isinstance(schedule, Schedule):
            raise TypeError(f"schedule must be a gemm.Schedule, got {type(schedule).__name__}")
        s = schedule.validated()
    elif version is not None:
        s = preset(version) if stages is None else preset(version, stages=stages)
    elif stages is not None:
        s = preset("v2", stages=stages)
    else:
        s = DEFAULT_SCHEDULE
    gaps = kernel_gaps(s)
    if gaps:
        raise KernelGapError(f"schedule {s.name!r} has no kernel yet: {'; '.join(gaps)}; "
                                  "python -m sim.run predicts it")
    return s


@lru_cache(maxsize=None)
def _kernel(schedule: Schedule, dtype: str, a_major: str, b_major: str):
    from .kernels import KernelConfig
    from .launch import load_kernel
    return load_kernel(KernelConfig(schedule, dtype, a_major, b_major))




def _stream_handle(kind, device_id):
    if kind == "torch":
        import torch
        return torch.cuda.current_stream(device_id).cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr


def matmul(a, b, stages=None, *, version=None, schedule=None, out=None):
    """`a @ b` for 2-D fp16/bf16 matrices, with fp32 accumulation, on our kernels.

    stages   ring depth of the V2 kernel (stages=2 is the tutorial's V2)
    version  a preset: "v1" (serial), "v2" (ring), "v3".."v5" (warp-specialized); stages=
             then overrides its depth ("v6" asks for a TMA-store epilogue: not built yet)
    schedule a full gemm.Schedule
    out      an array of shape (M, N), a's dtype and kind, columns contiguous, to write into

    Any M, N, K >= 1 (K = 0 gives zeros). Raises ValueError/TypeError for bad
    input before anything is written, gemm.launch.DeviceError without a Hopper GPU.
    """
    sched = _pick_schedule(stages, version, schedule)
    A, B = _describe(a, "a"), _describe(b, "b")
    for mat, name in ((A, "a"), (B, "b")):
        if len(mat.shape) != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {len(mat.shape)}-D shape {mat.shape}; "
                             "batched or vector products are not supported")
    if A.kind != B.kind:
        raise TypeError(f"a is a {A.kind} array and b a {B.kind} array: pass both from the same "
                        "library (the result is returned as that kind)")
    if A.dtype != B.dtype:
        raise TypeError(f"a is {A.dtype} and b is {B.dtype}: both must have the same dtype, "
                        f"one of {DTYPES}")
    if A.dtype not in DTYPES:
        raise TypeError(f"dtype {A.dtype} is not supported: the kernels take {' or '.join(DTYPES)}")
    (m, k), (k2, n) = A.shape, B.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: a is {A.shape} and b is {B.shape} "
                         f"(a's columns must equal b's rows)")
    if A.kind != "numpy" and A.device_id != B.device_id:
        raise ValueError(f"a is on GPU {A.device_id} and b on GPU {B.device_id}: both must be on one GPU")
    O = None
    if out is not None:
        O = _describe(out, "out")
        if O.kind != A.kind:
            raise TypeError(f"out is a {O.kind} array but the inputs are {A.kind}")
        if O.shape != (m, n):
            raise ValueError(f"out has shape {O.shape}; the product needs ({m}, {n})")
        if O.dtype != A.dtype:
            raise TypeError(f"out is {O.dtype}; the product is {A.dtype}")
        if O.kind != "numpy" and O.device_id != A.device_id:
            raise ValueError(f"out is on GPU {O.device_id}, the inputs on GPU {A.device_id}")
        if n > 1 and O.strides[1] != 1:
            raise ValueError(f"out must have contiguous columns (stride 1), got strides {O.strides} elements")

    from .launch import device, launch_gemm
    dev = device()
    if A.kind != "numpy" and A.device_id != dev.device_id:
        raise ValueError(f"the inputs are on GPU {A.device_id}, the current device is {dev.device_id}")
    return _run(sched, A, B, O, m, n, k, dev, launch_gemm)


def _run(sched, A, B, O, m, n, k, dev, launch_gemm):
    import cupy
    # Copies made below must live until the launch is queued (this function's end):
    # freed earlier, CuPy's pool would hand their memory to the next allocation (the
    # other operand's copy, or C) before the kernel reads them. After the launch,
    # stream order makes reuse safe.
    copies = []

    def on_device(mat: _Matrix):
        """(address, 'row'|'col', leading stride) of a TMA-addressable device copy."""
        major, ld = _majorness(mat)
        aligned = major is not None and mat.address % 16 == 0 and (ld * 2) % 16 == 0
        if mat.kind == "numpy" or not aligned:
            # Copy to a row-major device buffer whose rows are 16-byte aligned.
            rows, cols = mat.shape
            padded = -(-cols // 8) * 8
            if mat.kind == "numpy":
                host = np.zeros((rows, padded), dtype=np.uint16)
                host[:, :cols] = mat.array.view(np.uint16)
                buf = cupy.asarray(host)
            else:
                buf = cupy.empty((rows, padded), dtype=cupy.uint16)
            if mat.kind == "torch":
                buf[:, :cols] = cupy.from_dlpack(mat.array.view(_torch_u16()))
            elif mat.kind == "cupy":
                buf[:, :cols] = mat.array.view(cupy.uint16)
            copies.append(buf)
            return buf.data.ptr, "row", padded
        return mat.address, major, ld

    a_addr, a_order, lda = on_device(A)
    b_addr, b_order, ldb = on_device(B)
    # A row-major [M, K] is K-major; B row-major [K, N] is N-major (MN).
    a_major = "k" if a_order == "row" else "mn"
    b_major = "mn" if b_order == "row" else "k"
    loaded = _kernel(sched, A.dtype, a_major, b_major)

    # result buffer
    if O is not None and O.kind != "numpy":
        result, c_addr, ldc = O.array, O.address, (O.strides[0] if m > 1 else n)
    elif A.kind == "torch":
        import torch
        result = torch.empty((m, n), dtype=A.array.dtype, device=A.array.device)
        c_addr, ldc = result.data_ptr(), n
    else:
        dev_c = cupy.empty((m, n), dtype=cupy.float16 if A.dtype == "float16" else cupy.uint16)
        result, c_addr, ldc = dev_c, dev_c.data.ptr, n

    if k == 0 or m == 0 or n == 0:
        _zero(result, A.kind)
    else:
        launch_gemm(loaded, a_addr, lda, b_addr, ldb, c_addr, ldc, m, n, k,
                    _stream_handle(A.kind, dev.device_id))

    if A.kind == "numpy":
        host = result.get().view(A.array.dtype)
        if O is not None:
            O.array[...] = host
            return O.array
        return host
    return result


def _zero(result, kind):
    if kind == "torch":
        result.zero_()
    else:
        result.fill(0)


def _torch_u16():
    import torch
    return torch.uint16 if hasattr(torch, "uint16") else torch.int16
