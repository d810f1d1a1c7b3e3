"""experiments.timing.time_blocks' bookkeeping, on a stand-in for torch's CUDA events (no GPU):
the order of the runs and the host's time per run it reports."""
import sys
import time
import types

import pytest

from experiments.timing import time_blocks


@pytest.fixture
def fake_torch(monkeypatch):
    """torch.cuda with events that time what the calls between them say they took."""
    clock = {"ms": 0.0}

    class Event:
        def __init__(self, enable_timing=True):
            self.at = None

        def record(self):
            self.at = clock["ms"]

        def elapsed_time(self, end):
            return end.at - self.at

    def sleep(cycles):   # the GPU's spin: holds the stream, recorded as asked
        clock.setdefault("holds", []).append(cycles)

    cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None, _sleep=sleep)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    return clock


def test_medians_order_and_the_host_pace(fake_torch):
    order = []

    def contender(name, ms, host_s):
        def run(x):
            order.append(name)
            fake_torch["ms"] += ms
            time.sleep(host_s)
        return run

    paces = {}
    ms = time_blocks({"a": contender("a", 2.0, 0.004), "b": contender("b", 3.0, 0.0)}, [(0,)],
                     blocks=4, per_block=3, warmup=1, host_us=paces)
    assert ms == {"a": 2.0, "b": 3.0}
    timed = order[2:]                                   # after one warm-up run each
    assert timed[:6] == ["a"] * 3 + ["b"] * 3 and timed[6:12] == ["b"] * 3 + ["a"] * 3
    assert set(paces) == {"a", "b"}
    assert 4000 <= paces["a"] < 20000 and paces["b"] < paces["a"]


def test_trace_gives_each_run_its_host_and_gpu_times(fake_torch):
    """The trace's GPU times are the events' since the anchor (here the stand-in's clock), its
    host times increase run by run, and the call returns between the two records."""
    def run(x):
        fake_torch["ms"] += 0.05
        time.sleep(0.001)

    trace = {}
    time_blocks({"a": run, "b": run}, [(0,)], blocks=2, per_block=3, warmup=1, trace=trace)
    assert set(trace) == {"a", "b"} and len(trace["a"]) == len(trace["b"]) == 6
    for r in trace["a"] + trace["b"]:
        assert r["host_start"] < r["host_called"] <= r["host_end"]
        assert r["host_called"] - r["host_start"] >= 1000             # the 1 ms call, in us
        assert r["gpu_end"] - r["gpu_start"] == pytest.approx(50.0)   # 0.05 ms on the stand-in's clock
    starts = [r["host_start"] for r in trace["a"]]
    assert starts == sorted(starts)


def test_back_to_back_rounds_take_turns_and_report_each_ones_median(fake_torch):
    """Each contender's calls back to back, in rounds whose order turns (a b, b a, a b), the
    median over the rounds in microseconds per call: `a` slows down round by round (10, 20, 30
    us a call, a sagging clock) and reports its middle round."""
    from experiments.timing import back_to_back_rounds
    order = []

    def a(x):
        order.append("a")
        fake_torch["ms"] += 0.010 * (1 + (order.count("a") - 1) // 5)   # 5 calls a round: 1 warm-up + 4

    def b(x):
        order.append("b")
        fake_torch["ms"] += 0.020

    us = back_to_back_rounds({"a": a, "b": b}, [(0,)], rounds=3, calls=4, warmup=1)
    assert [order[i] for i in range(0, len(order), 5)] == ["a", "b", "b", "a", "a", "b"]
    assert us == {"a": pytest.approx(20.0), "b": pytest.approx(20.0)}


def test_back_to_back_holds_the_gpu_while_the_host_queues_the_calls(fake_torch):
    """The GPU spins ahead of the start event for twice the host's time to queue the timed calls
    (a call that takes the host 2 ms: 10 calls, at least 40 ms of ~2 GHz clocks), so that a call
    shorter than the host's time to make it is timed at the device's pace; with no warm-up to
    measure the host by, no hold."""
    from experiments.timing import HOLD_CYCLES_PER_US, back_to_back_us

    def call(i):
        fake_torch["ms"] += 0.005
        time.sleep(0.002)

    assert back_to_back_us(call, calls=10, warmup=3) == pytest.approx(5.0)
    (cycles,) = fake_torch["holds"]
    assert 2 * 10 * 2000 * HOLD_CYCLES_PER_US <= cycles < 2 * 10 * 6000 * HOLD_CYCLES_PER_US
    back_to_back_us(call, calls=10, warmup=0)
    assert len(fake_torch["holds"]) == 1
