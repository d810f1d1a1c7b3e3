"""Inputs and checks shared by the GPU tests and the measurement script.

Inputs: fresh random normal values scaled so that C = A @ B has unit variance.
Reference: the product in float64 on the GPU. Check: every element finite (the
output was poisoned with NaN before the run) and the relative Frobenius error
under the dtype's tolerance.
"""
import numpy as np

# fp32 accumulation, one rounding of C to 16 bits (fp16: 2^-11, bf16: 2^-8 relative)
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.2e-2}


def random_operands(m, n, k, dtype, seed, device="cuda"):
    """torch tensors a [m, k] and b [k, n] (dtype 'float16' or 'bfloat16')."""
    import torch
    g = torch.Generator(device=device).manual_seed(seed)
    scale = float(max(k, 1)) ** -0.25
    dt = getattr(torch, dtype)
    a = (torch.randn((m, k), generator=g, device=device) * scale).to(dt)
    b = (torch.randn((k, n), generator=g, device=device) * scale).to(dt)
    return a, b


def relative_error(c, a, b) -> float:
    """||c - a@b|| / ||a@b|| with the reference in float64; inf if any element of c is not finite."""
    import torch
    ref = a.double() @ b.double()
    c64 = c.double()
    if not torch.isfinite(c64).all():
        return float("inf")
    return float(torch.linalg.norm(c64 - ref) / torch.linalg.norm(ref))


def poisoned(m, n, dtype, device="cuda"):
    import torch
    return torch.full((m, n), float("nan"), dtype=getattr(torch, dtype), device=device)


def swizzle_offsets(nbytes: int, swizzle: int) -> np.ndarray:
    """Where TMA puts byte o of a box in shared memory: the 16-byte chunk index
    (address bits 4..) is XORed with bits 7.. (Swizzle<B,4,3>, B = log2(swizzle/16))."""
    o = np.arange(nbytes)
    if swizzle == 0:
        return o
    bits = {32: 1, 64: 2, 128: 3}[swizzle]
    mask = (1 << bits) - 1
    return o ^ (((o >> 7) & mask) << 4)
