"""CPU test of experiments/research/multicast_port.py's record, run 87 (docs/research/notes.md 117)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import multicast_port
from sim.hardware import load_profile

DUMP = logs_dir() / "bench" / "run87-multicast-port.npz"


@pytest.fixture(scope="module")
def summary():
    return multicast_port.summarize(DUMP)


def test_every_kernel_was_right_and_timed(summary):
    assert len(summary["pairs"]) == len(multicast_port.PAIRS)
    for p in summary["pairs"]:
        assert p["max_rel_err"] < 1e-3 and p["plain_us"] > 0 and p["clustered_us"] > 0


def test_multicast_saves_a_port_bound_tile_nothing(summary):
    """The 128x128 tile is port-bound alone: were the multicast box half as dear to each port,
    the pair would run ~16% faster (the model at cost 0); it measures no faster."""
    tile = next(p for p in summary["pairs"] if p["plain"] == "v7:block_n=128,stages=4")
    assert tile["model_ratio"][0.0] < 0.9 and tile["measured_ratio"] > 0.98
    assert abs(tile["model_ratio"][1.0] / tile["measured_ratio"] - 1) < 0.06


def test_the_profile_carries_the_calibrated_figure(summary):
    assert summary["multicast_receive_cost"] == 1.0
    assert load_profile("h200-sxm").multicast_receive_cost == pytest.approx(summary["multicast_receive_cost"])
