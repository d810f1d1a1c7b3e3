"""Split-K's global workspace: fp32 partial tiles and per-tile counters, one buffer per stream.

A kernel finds its partial planes at [ws, ws + planes) and its tile counters right after
them, at [ws + planes, ...): where the counters fall therefore moves with the shape. The
counters must read zero when a kernel starts, and the partials of an earlier product of
another shape must never lie under them. So each stream's buffer keeps two regions, one
for planes and one, above it, only ever holding counters:

    [ .......... planes region .......... | counters region ]
                      ws = the planes region's end - this kernel's planes

Every kernel's counters then start at the same address, the counters region's start, in
memory nothing but counters has touched. The buffer is zeroed when it is made and every
split-K kernel leaves its counters at zero (the CTA that sums a tile resets its counter).
Kernels queued on one stream run one after another, so they may share its buffer; another
stream gets its own. A buffer only grows (and its listeners hear of it: prepared launches
hold its address), and is kept for the process.
"""
from __future__ import annotations

_buffers: dict = {}   # stream handle -> (cupy array, planes region bytes, counters region bytes)
_listeners: list = []  # called when a buffer moves


def on_move(callback) -> None:
    """Call `callback()` whenever a stream's workspace is replaced by a larger one."""
    if callback not in _listeners:
        _listeners.append(callback)


class _RawStream:
    """A raw CUstream handle, presented through the CUDA stream protocol."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def cupy_stream(stream_handle: int):
    """CuPy's view of a stream it did not create (torch's, or the driver's): it neither owns nor
    destroys it."""
    import cupy
    return cupy.cuda.Stream.from_external(_RawStream(stream_handle))


def workspace_for(stream_handle: int, planes: int, counters: int) -> int:
    """The workspace address for a kernel whose partial planes take `planes` bytes (a
    multiple of 256) and whose tile counters take `counters` bytes right after them."""
    import cupy
    held = _buffers.get(stream_handle)
    if held is None or held[1] < planes or held[2] < counters:
        # grown in steps, so that a sequence of slightly larger shapes does not reallocate each time
        old_planes, old_counters = (held[1], held[2]) if held else (0, 0)
        planes_region = max(planes, 2 * old_planes, 1 << 20)
        counters_region = max(-(-counters // 256) * 256, 2 * old_counters, 1 << 16)
        with cupy_stream(stream_handle):
            fresh = cupy.zeros(planes_region + counters_region, dtype=cupy.uint8)
        if held is not None:
            cupy_stream(stream_handle).synchronize()  # the old buffer may still be in use
            for callback in _listeners:
                callback()
        _buffers[stream_handle] = held = (fresh, planes_region, counters_region)
    buf, planes_region, _ = held
    return buf.data.ptr + planes_region - planes
