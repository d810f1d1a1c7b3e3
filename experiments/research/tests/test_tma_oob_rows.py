"""CPU test of experiments/research/tma_oob_rows.py's record, run 79 (docs/research/notes.md 115)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import tma_oob_rows
from sim.hardware import load_profile

DUMP = logs_dir() / "bench" / "run79-tma-oob-rows.npz"


@pytest.fixture(scope="module")
def summary():
    return tma_oob_rows.summarize(DUMP)


def test_every_point_was_right_and_timed(summary):
    for r in summary["schedules"]:
        assert r["max_rel_err"] < 1e-3
        assert [p["m"] for p in r["points"]] == [m for m in tma_oob_rows.MS if m <= r["box_rows"]]


def test_a_tall_tile_slows_as_m_falls_below_it(summary):
    tall = next(r for r in summary["schedules"] if r["schedule"] == tma_oob_rows.CALIBRATE)
    us = {p["m"]: p["us"] for p in tall["points"]}
    assert us[1] > 1.5 * us[128] and us[64] > 1.3 * us[128]
    # with the rows outside free the model is flat where the kernel is not; charged, it follows
    free = {p["m"]: p["free_us"] for p in tall["points"]}
    for p in tall["points"]:
        if p["m"] < 64:
            assert abs(p["free_us"] / free[128] - 1) < 0.03 and p["us"] > 1.5 * us[128]
            assert abs(p["charged_us"] / p["us"] - 1) < 0.2


def test_the_fill_is_hidden_where_the_kernel_waits_on_something_else(summary):
    """The 64-row tile (63 rows out at M = 1) and the 16-row swap-AB tile measure flat in M: the
    fill runs beside the transfers, so the model charges them nothing for it (what moves their
    prediction with M is their bytes and how far the HBM paces them, not the fill)."""
    for r in summary["schedules"]:
        if r["box_rows"] <= 64:
            pts = r["points"]
            assert max(p["us"] for p in pts) < 1.06 * min(p["us"] for p in pts)
            assert all(p["charged_us"] == pytest.approx(p["free_us"], rel=0.01) for p in pts)


def test_the_profile_carries_the_calibrated_figure(summary):
    assert load_profile("h200-sxm").tma_oob_row_ns == pytest.approx(summary["tma_oob_row_ns"])
