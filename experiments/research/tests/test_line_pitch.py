"""CPU tests of experiments/research/line_pitch.py's records: run 93 (lines 16 bytes off 128,
docs/research/notes.md 121) and run 152 (16 to 96 bytes off, and odd3000's own lines, 165)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import line_pitch
from sim.hardware import load_profile

PITCHES = logs_dir() / "bench" / "run93-line-pitch.npz"
SECTORS = logs_dir() / "bench" / "run152-line-pitch.npz"


@pytest.fixture(scope="module")
def pitches():
    return line_pitch.summarize(PITCHES)


@pytest.fixture(scope="module")
def sectors():
    return line_pitch.summarize(SECTORS)


def _offs(summary, start):
    return [(kk, o) for kk in summary["kernels"] if not kk["host_paced"] for o in kk["off"] if o["start"] == start]


def test_every_kernel_was_right_at_every_pitch(pitches, sectors):
    assert len(pitches["kernels"]) == sum(len(specs) for _, specs, _ in line_pitch.CASES)
    assert len(sectors["kernels"]) == sum(len(specs) for _, specs, _ in line_pitch.SECTOR_CASES)
    assert all(kk["max_rel_err"] < 1e-3 for s in (pitches, sectors) for kk in s["kernels"])


def test_lines_that_start_inside_a_sector_cost_the_rows_each_sm_requests(pitches):
    """Unclustered tiles slow by 1.4-1.8x; a cluster that multicasts one operand halves the rows
    each SM requests of it and slows by under 10%; another 128-byte pitch costs nothing."""
    big = {kk["schedule"]: kk for kk in pitches["kernels"] if not kk["host_paced"]}
    ratio = {spec: kk["off"][0]["measured_ratio"] for spec, kk in big.items()}
    for spec in ("v7", "v7:block_n=128,stages=4"):
        assert ratio[spec] > 1.4
    for spec in ("v7:cluster_m=2", "v7:block_m=256,block_n=128,cluster_n=2"):
        assert ratio[spec] < 1.1
    for kk in big.values():
        other = next(p for p in kk["us_by_pitch"] if p != kk["aligned_pitch"] and p != kk["off"][0]["pitch"])
        assert kk["us_by_pitch"][other] == pytest.approx(kk["us_by_pitch"][kk["aligned_pitch"]], rel=0.03)


def test_lines_that_start_on_a_sector_cost_far_less(sectors):
    """32, 64 and 96 bytes off 128 (and odd3000's own 4000-byte lines): 1-14% slower; 16 and 48
    bytes off, inside a sector: 1.3-1.8x unclustered, as run 93 had it."""
    on = _offs(sectors, "sector")
    assert len(on) == 14 and all(1.0 < o["measured_ratio"] < 1.14 for _, o in on)
    inside = {kk["schedule"]: o["measured_ratio"] for kk, o in _offs(sectors, "inside a sector")
              if "cluster" not in kk["schedule"]}
    assert inside and all(r > 1.4 for r in inside.values())


def test_the_model_follows_at_the_calibrated_costs(pitches, sectors):
    for summary in (pitches, sectors):
        for start, name in line_pitch.ROW_COST.items():
            for _, o in _offs(summary, start):
                assert o["model_ratio"][0.0] == pytest.approx(1.0, abs=0.01)
                # the worst, v7 unclustered at 16 bytes off (1.452 measured), comes to 1.628 (12.1%)
                # since the staged epilogue's fixed clocks moved the fit a step (4.7 -> 4.8)
                assert o["model_ratio"][summary[name]] == pytest.approx(o["measured_ratio"], rel=0.13)


def test_the_profile_carries_the_calibrated_figures(pitches, sectors):
    profile = load_profile("h200-sxm")
    assert profile.l2_misaligned_row_clk == pytest.approx(pitches["l2_misaligned_row_clk"])
    # held out: run 152's lines 16 and 48 bytes off refit it within one step of the fit's grid
    assert abs(profile.l2_misaligned_row_clk - sectors["l2_misaligned_row_clk"]) <= 0.1 + 1e-9
    assert profile.l2_line_straddle_row_clk == pytest.approx(sectors["l2_line_straddle_row_clk"])
