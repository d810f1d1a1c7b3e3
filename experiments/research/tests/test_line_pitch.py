"""CPU test of experiments/research/line_pitch.py's record, run 93 (docs/research/notes.md 121)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import line_pitch
from sim.hardware import load_profile

DUMP = logs_dir() / "bench" / "run93-line-pitch.npz"


@pytest.fixture(scope="module")
def summary():
    return line_pitch.summarize(DUMP)


def test_every_kernel_was_right_at_every_pitch(summary):
    assert len(summary["kernels"]) == sum(len(specs) for _, specs, _ in line_pitch.CASES)
    assert all(kk["max_rel_err"] < 1e-3 for kk in summary["kernels"])


def test_a_pitch_off_128_bytes_costs_the_rows_each_sm_requests(summary):
    """Unclustered tiles slow by 1.4-1.8x; a cluster that multicasts one operand halves the rows
    each SM requests of it and slows by under 10%; another 128-byte pitch costs nothing."""
    big = {kk["schedule"]: kk for kk in summary["kernels"] if not kk["host_paced"]}
    for spec in ("v7", "v7:block_n=128,stages=4"):
        assert big[spec]["measured_ratio"] > 1.4
    for spec in ("v7:cluster_m=2", "v7:block_m=256,block_n=128,cluster_n=2"):
        assert big[spec]["measured_ratio"] < 1.1
    for kk in big.values():
        other = next(p for p in kk["us_by_pitch"] if p not in (kk["misaligned_pitch"], kk["aligned_pitch"]))
        assert kk["us_by_pitch"][other] == pytest.approx(kk["us_by_pitch"][kk["aligned_pitch"]], rel=0.03)


def test_the_model_follows_at_the_calibrated_cost(summary):
    c = summary["l2_misaligned_row_clk"]
    for kk in summary["kernels"]:
        if not kk["host_paced"]:
            assert kk["model_ratio"][0.0] == pytest.approx(1.0, abs=0.01)
            assert kk["model_ratio"][c] == pytest.approx(kk["measured_ratio"], rel=0.12)


def test_the_profile_carries_the_calibrated_figure(summary):
    assert load_profile("h200-sxm").l2_misaligned_row_clk == pytest.approx(summary["l2_misaligned_row_clk"])
