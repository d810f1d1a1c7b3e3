"""CPU test of experiments/research/event_protocol.py's record, run 41 (docs/research/notes.md 101)."""
from experiments.paths import logs_dir
from experiments.research import event_protocol

DUMP = logs_dir() / "bench" / "run41-event-protocol.npz"


def test_run41_has_the_three_regimes():
    rows = event_protocol.summarize(DUMP)["rows"]
    assert [r["k"] for r in rows] == list(event_protocol.KS)
    for r in rows:
        assert r["api_event_us"] > r["kernel_us"] and r["api_event_us"] > r["noop_event_us"]
    short = [r for r in rows if r["kernel_us"] < 10]
    long = [r for r in rows if r["kernel_us"] > 40]
    assert short and long
    # a short kernel is timed at the host's floor, a long one at itself plus about a microsecond
    assert all(r["api_event_us"] > 2 * r["kernel_us"] for r in short)
    assert all(r["api_event_us"] - r["kernel_us"] < 2.0 for r in long)
