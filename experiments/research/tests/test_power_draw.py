"""CPU tests on the board power measured in runs 34-35 (experiments/research/power_draw.py) and the
power fits of experiments/research/fit_power.py --power (docs/research/notes.md item 38)."""
import pytest

from experiments.research import fit_power


@pytest.fixture(scope="module")
def rows():
    return fit_power._power_rows()


def test_l2_traffic_draws_as_much_power_as_tensor_work(rows):
    """With no tensor work, the load-only loops that move 8-12 TB/s from L2 draw 630-720 W, at
    or near the 700 W cap, as the WGMMA-only loops with no L2 traffic do (678-706 W); the idle
    GPU draws ~120 W, and the 128x128x16 load loop (3.8 TB/s) ~420-450 W."""
    idle = [r["P"] for r in rows if r["kind"] == "idle"]
    heavy = [r for r in rows if r["kind"] == "load" and r["L"] > 7.5]
    assert all(110 < p < 135 for p in idle)
    assert heavy and all(630 < r["P"] < 720 for r in heavy)
    assert all(670 < r["P"] < 710 for r in rows if r["kind"] == "mma")
    assert all(400 < r["P"] < 460 for r in rows if r["name"] == "load loop 128x128x16 s2")


def test_gemms_sit_at_the_cap_below_the_loops_clocks(rows):
    """The GEMMs draw what the loops draw (685-703 W) at 1.14-1.30 GHz, against 1.44-1.70 for
    the WGMMA-only loops: their L2 traffic takes the difference. V2 runs below V1 in both runs."""
    for run in fit_power.POWER_RUNS:
        g = {r["name"]: r for r in rows if r["run"] == run and r["kind"] == "gemm"}
        assert all(680 < r["P"] < 710 and 1.1 < r["f"] < 1.35 for r in g.values()), run
        assert g["v2"]["f"] < g["v1"]["f"], run
        assert min(r["f"] for r in rows if r["run"] == run and r["kind"] == "mma") > 1.4, run


def test_power_fits_run(capsys):
    fit_power.main(["--power"])
    out = capsys.readouterr().out
    assert out.count("GEMM clocks") == 8 and "held out" in out
