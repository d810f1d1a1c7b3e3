"""CPU tests on the board power against busy SMs (runs 36-41, experiments/research/power_sweep.py) and
the fits of experiments/research/fit_power.py --sweep (docs/research/notes.md items 39-41). The
model on these sweeps: tests/test_regression_power_sweep.py."""
from pathlib import Path

import pytest

from experiments.paths import logs_dir
from experiments.research import fit_power, power_sweep
from experiments.research.power_draw import memory_power_w

LOGS = logs_dir()


@pytest.fixture(scope="module")
def sweeps():
    return fit_power.sweep_rows()


@pytest.fixture(scope="module")
def fits():
    return fit_power.sweep_fits()


def _f(r, key):
    return float(r[key] or 0)


def test_summaries_reproduce_the_committed_csvs():
    """--summarize on the committed records gives the committed rows (replay included)."""
    for run in ("run36", "run37"):
        rows = power_sweep.summarize(LOGS / run / "sweep.npz")
        committed = fit_power._rows(Path("logs") / run / "power_sweep.csv")
        assert len(rows) == len(committed) == {"run36": 36, "run37": 18}[run]
        for got, row in zip(rows, committed):
            for key, value in got.items():
                assert str(value) == row[key], (run, key, got, row)


def test_below_the_cap_power_grows_linearly_with_the_busy_sms(sweeps):
    """The WGMMA-only loop at one CTA per SM: 12 to 88 busy SMs at 1.98 GHz reported, each SM
    ~7 W at u 0.75; a line through them leaves under 8 W. At 110 SMs and more the cap binds."""
    mma = sweeps[0]
    free = [r for r in mma if _f(r, "smi_clock_ghz") >= 1.975]
    assert sorted({int(r["ctas"]) for r in free}) == [12, 24, 44, 66, 88]
    import numpy as np
    x = np.array([[1.0, _f(r, "busy_sms")] for r in free])
    y = np.array([_f(r, "power_w") for r in free])
    (p0, per_sm), *_ = np.linalg.lstsq(x, y, rcond=None)
    assert 4.5 < per_sm < 6.5 and np.sqrt(np.mean((y - x @ [p0, per_sm]) ** 2)) < 8
    capped = [r for r in mma if int(r["ctas"]) >= 132]
    assert all(_f(r, "smi_clock_ghz") < 1.9 and 650 < _f(r, "power_w") < 710 for r in capped)


def test_one_exponent_for_every_capped_point(fits):
    """g on the counted clock from each point where the cap lowered the clock: 2.9-3.1, one
    value for 1, 2 and 3 CTAs per SM, up and down."""
    gs = [g for _, g in fits["g_points"]]
    assert len(gs) == 5 and all(2.8 < g < 3.2 for g in gs)


def test_wgmma_counts_nine_tenths_of_the_reported_clock_capped_or_not(sweeps):
    """Whenever the SMs do WGMMA the clock they count is ~0.91 of the one nvidia-smi reports,
    on 12 busy SMs at 180 W as at the cap; the load-only loop counts the reported clock."""
    mma, load = sweeps[0], sweeps[1]
    assert all(0.88 < _f(r, "probe_clock_ghz") / _f(r, "smi_clock_ghz") < 0.93 for r in mma)
    assert all(abs(_f(r, "probe_clock_ghz") / _f(r, "smi_clock_ghz") - 1) < 0.01 for r in load)


def test_a_second_cta_per_sm_costs_the_load_loop_200_watts(sweeps):
    """The load-only loop: 132 CTAs (one per SM) ~410-420 W at 9.2 TB/s from L2; 264 CTAs (two
    per SM) ~620-630 W at 10.2-10.6 TB/s: 13% more L2 bytes, half again the power above idle.
    A third CTA adds little. The memory's own power takes a third of the step."""
    load = {(int(r["ctas"]), r["pass"]): r for r in sweeps[1]}
    one, two, three = load[132, "up"], load[264, "up"], load[396, "up"]
    assert 400 < _f(one, "power_w") < 425 and 610 < _f(two, "power_w") < 640
    assert abs(_f(three, "power_w") - _f(two, "power_w")) < 30
    assert _f(two, "l2_to_sm_tbs") < 1.2 * _f(one, "l2_to_sm_tbs")
    step_memory = _f(two, "memory_power_w") - _f(one, "memory_power_w")
    assert 40 < step_memory < 90


def test_memory_power_parse():
    text = (LOGS / "run36" / "smi_after.txt").read_text().splitlines()
    assert memory_power_w(text) == pytest.approx(46.4)
    assert memory_power_w(["    GPU Power Readings", "        Average Power Draw  : 120.0 W"]) is None


def test_gemm_clocks_from_the_sweeps_are_near_the_measured_ones(fits):
    """With g = 3 and a form fitted on the sweeps alone, the GEMMs measured after them (held
    out) come within 4.2% (median) of their counted clocks."""
    err = [abs(v) for v in fits["fits"][3.0]["err"].values()]
    assert len(err) == 11 and sorted(err)[len(err) // 2] < 0.05


@pytest.mark.xfail(strict=True, reason="the form fitted on the sweeps puts V2 16-17% below V1 in clock against "
                   "5-7% measured: the load-only loop's step from one to two CTAs per SM (200 W at the same L2 bytes) "
                   "lands on its DRAM term, and V2 moves 0.9 TB/s more DRAM than V1 (NOTES 41)")
def test_the_sweeps_predict_v2_below_v1_by_what_was_measured(fits):
    for run, ratio in fits["fits"][3.0]["v2_over_v1"].items():
        measured = {"run36": 1.217 / 1.305, "run37": 1.231 / 1.299}[run]
        assert ratio == pytest.approx(measured, abs=0.03)


def test_dram_costs_less_power_at_two_ctas_per_sm():
    """Run 41, the load-only loop: at one CTA per SM, 1x132 / 132x1 tiles (DRAM 3.6-3.7 TB/s)
    draw 170-210 W more than 11x12 (0.8 TB/s); at two per SM, 1x264 / 264x1 (4.0-4.1 TB/s)
    only 50-75 W more than 12x22 (1.65 TB/s). The memory's own power rises by ~100 and ~50 W."""
    rows = {(r["grid"], r["pass"]): r for r in fit_power._rows(Path("logs") / "run41" / "power_sweep.csv")
            if r["pass"] != "idle"}
    for p in ("up", "down"):
        for low, highs, lo_w, hi_w in (("11x12", ("1x132", "132x1"), 170, 210), ("12x22", ("1x264", "264x1"), 50, 75)):
            for high in highs:
                if (high, p) not in rows:  # the last grid runs once, at the turn
                    continue
                step = _f(rows[high, p], "power_w") - _f(rows[low, p], "power_w")
                more_dram = _f(rows[high, p], "dram_tbs") - _f(rows[low, p], "dram_tbs")
                assert lo_w < step < hi_w and more_dram > 2.0, (low, high, p, step, more_dram)


@pytest.mark.xfail(strict=True, reason="fitted on the loops at the GEMMs' residency, every form (g 2.5-3.5, L2 flat or "
                   "on the voltage) puts V2 / V1 in clock 3-9% below the measured at 8192^3, where V2 moves ~0.9 TB/s "
                   "more DRAM than V1; at K = 131072 (little DRAM) 0.96-1.02 (NOTES 50)")
def test_residency_matched_form_gets_v2_over_v1_at_8192(fits):
    for (g, volt), fit in fits["residency_matched"].items():
        assert all(abs(fit["v2_over_v1_vs_measured"][run] - 1) < 0.03 for run in ("36", "37")), (g, volt)
