"""Split-K's workspace layout, without a GPU (a stand-in for cupy's allocation): every kernel's
tile counters start at one address, in a region no partial plane ever reaches."""
import sys
import types

import pytest


class _FakeArray:
    next_ptr = 1 << 20

    def __init__(self, nbytes):
        self.nbytes = nbytes
        self.data = types.SimpleNamespace(ptr=_FakeArray.next_ptr)
        _FakeArray.next_ptr += nbytes + (1 << 20)


@pytest.fixture
def workspace(monkeypatch):
    class _Stream:
        @classmethod
        def from_external(cls, obj):
            assert obj.__cuda_stream__()[0] == 0   # the CUDA stream protocol's version
            return cls()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def synchronize(self):
            pass

    fake = types.SimpleNamespace(zeros=lambda n, dtype=None: _FakeArray(n), uint8="uint8",
                                 cuda=types.SimpleNamespace(Stream=_Stream))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    from gemm import workspace as ws
    monkeypatch.setattr(ws, "_buffers", {})
    monkeypatch.setattr(ws, "_listeners", [])
    return ws


def test_counters_stay_put_and_planes_never_reach_them(workspace):
    moved = []
    workspace.on_move(lambda: moved.append(1))
    shapes = [(4 << 20, 4096), (1 << 16, 64), (3 << 19, 1024)]   # (planes bytes, counters bytes)
    starts = []
    for planes, counters in shapes:
        ws = workspace.workspace_for(7, planes, counters)
        starts.append(ws + planes)            # where this kernel's counters begin
    assert len(set(starts)) == 1              # the same counters region for every shape
    buf, planes_region, counters_region = workspace._buffers[7]
    assert starts[0] == buf.data.ptr + planes_region and counters_region >= 4096
    assert not moved                          # the first buffer was large enough for all three
    bigger = workspace.workspace_for(7, 64 << 20, 16)
    assert moved == [1] and bigger + (64 << 20) == workspace._buffers[7][0].data.ptr + workspace._buffers[7][1]
    assert workspace.workspace_for(8, 256, 16) != bigger   # another stream, another buffer
