"""experiments.research.small_grids without a GPU: run 177's small grids over K against the model
(docs/research/notes.md item 181)."""
import pytest

from experiments.research import small_grids
from sim.hardware import load_profile


@pytest.fixture(scope="module")
def rows():
    return small_grids.compare()


def test_the_record_holds_six_lines_of_seven_points():
    series = small_grids.series()
    assert len(series) == 6 and all(len(pts) == 7 for pts in series.values())


def test_the_profile_carries_the_calibrated_figures():
    c = small_grids.calibrate()
    profile = load_profile("h200-sxm")
    assert profile.consumer_k_tile_clk == c["consumer_k_tile_clk"]
    assert profile.kernel_fixed_us == pytest.approx(c["kernel_fixed_us"], abs=0.01)


def test_the_intercepts_within_four_tenths_of_a_microsecond(rows):
    """What a call costs whatever its K: every series within 0.4 us (the kernel_fixed_us fitted is
    their median gap; the two one-warpgroup tiles on partial grids within 0.06: 0.03-0.05 with
    the staged epilogue's fixed clocks, 0.00-0.01 before it)."""
    assert all(abs(r["model_intercept_us"] - r["measured_intercept_us"]) < 0.4 for r in rows)
    few = [r for r in rows if r["warpgroups"] == 1 and r["ctas"] <= 66]
    assert len(few) == 2 and all(abs(r["model_intercept_us"] - r["measured_intercept_us"]) < 0.06 for r in few)


def test_the_slopes_on_grids_of_few_sms(rows):
    """A K tile's cost where each SM's own work sets it: the one-warpgroup tiles on 32-64 CTAs
    (calibrated) and v7 on 8 and 32 (held out: its two warpgroups hide the consumer term, and its
    clock is the earned one, sim/load_clock.py) within 5%."""
    few = [r for r in rows if r["ctas"] <= 66]
    assert len(few) == 4
    assert all(abs(r["model_slope_us"] / r["measured_slope_us"] - 1) < 0.05 for r in few)


@pytest.mark.xfail(strict=True, reason="the full grid's L2 -> SM share is fitted on loops whose operands miss "
                   "(9.9 TB/s); these operands are L2-resident and stream at 13-14 TB/s, as run 171's load-only "
                   "loops did (notes item 177: the share refitted with misses charged apart is the next pass)")
def test_the_slopes_on_the_full_grid(rows):
    """Run 177's two full grids and run 181's (full_grids.csv, K <= 8192: the operands in L2)."""
    full = [r for r in rows if r["ctas"] > 66]
    full += [r for r in small_grids.compare(csv=small_grids.FULL_GRIDS_CSV, k_range=(0, 8192)) if r["ctas"] > 66]
    assert len(full) == 5 and all(abs(r["model_slope_us"] / r["measured_slope_us"] - 1) < 0.15 for r in full)


def test_misses_steepen_a_full_grids_k_tile_by_a_quarter_at_most():
    """Run 181's record alone: past K = 8192 (operands beyond L2) each series' slope rises 6-23%."""
    def slopes(k_range):
        return {(r["schedule"], r["m"]): r["measured_slope_us"]
                for r in small_grids.compare(csv=small_grids.FULL_GRIDS_CSV, k_range=k_range)}
    hits, misses = slopes((0, 8192)), slopes((8192, 1 << 30))
    assert len(hits) == 4 and all(1.0 < misses[key] / hits[key] < 1.25 for key in hits)
