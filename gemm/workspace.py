"""Split-K's global workspace: fp32 partial tiles and per-tile counters, one buffer per stream.

The counters must read zero when a kernel starts; the buffer is zeroed when it is made
and every split-K kernel leaves its counters at zero (the CTA that sums a tile resets
its counter). Kernels queued on one stream run one after another, so they may share its
buffer; another stream gets its own. A buffer only grows, and is kept for the process.
"""
from __future__ import annotations

_buffers: dict = {}   # stream handle -> cupy array (uint8)
_listeners: list = []  # called when a buffer moves (prepared launches hold its address)


def on_move(callback) -> None:
    """Call `callback()` whenever a stream's workspace is replaced by a larger one."""
    if callback not in _listeners:
        _listeners.append(callback)


def workspace_for(stream_handle: int, nbytes: int) -> int:
    """The device address of at least `nbytes` of this stream's workspace."""
    import cupy
    buf = _buffers.get(stream_handle)
    if buf is None or buf.nbytes < nbytes:
        with cupy.cuda.ExternalStream(stream_handle):
            # grown in steps, so that a sequence of slightly larger shapes does not reallocate each time
            size = max(nbytes, 2 * buf.nbytes if buf is not None else 0, 1 << 20)
            fresh = cupy.zeros(size, dtype=cupy.uint8)
        if buf is not None:
            cupy.cuda.ExternalStream(stream_handle).synchronize()  # the old buffer may still be in use
            for callback in _listeners:
                callback()
        _buffers[stream_handle] = buf = fresh
    return buf.data.ptr
