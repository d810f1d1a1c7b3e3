"""CPU test of experiments/research/tma_latency.py's summary, on run 60's committed stamps
(docs/research/notes.md 75)."""
from experiments.paths import logs_dir
from experiments.research import tma_latency

DUMP = logs_dir() / "run60" / "tma_latency.npz"


def test_summary_of_run60():
    rows = tma_latency.summarize(DUMP)
    assert [(r["blocks_per_sm"], r["depth"]) for r in rows] == list(tma_latency.CONDITIONS)
    for r in rows:
        # every box of every block was stamped, and a miss waits longer than a hit at every load
        assert r["miss_n"] == tma_latency.SMS * tma_latency.BOXES_PER_SM * 4
        assert r["miss_ns"] > r["own_ns"] > 0 and r["miss_ns"] > r["other_ns"] > 0
    extra = [r["miss_extra_over_other_ns"] for r in rows]
    assert extra == sorted(extra)            # more in flight, longer DRAM queue
    assert 250 < extra[0] < 350              # the lone box: 293 ns (the profile assumes 550)
