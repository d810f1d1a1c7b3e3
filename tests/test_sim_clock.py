"""CPU tests of the clock a kernel earns from its activity (sim/clock.py; experiments/activity.py
on runs 47-49 under Nsight Compute; experiments/NOTES.md items 57-59)."""
import dataclasses
import statistics as st
from pathlib import Path

import numpy as np
import pytest

import sim
from experiments import activity, dram_reuse, fit_clock_form, fit_port
from gemm.schedule import ScheduleError, preset
from sim import clock
from sim.hardware import load_profile

LOGS = Path(__file__).resolve().parents[1] / "experiments" / "results" / "h200-sxm" / "logs"


@pytest.fixture(scope="module")
def run48():
    return activity.kernel_activities([LOGS / "run48"])


@pytest.fixture(scope="module")
def fits(run48):
    return fit_clock_form.clock_fits(run48)


def test_earned_clock_is_the_top_clock_under_the_limit_and_falls_with_activity():
    c = (0.01, 0.03, 0.1)
    assert clock.earned_clock(0.1, 0.0, 0.0, 1.5, c, 2.5, top=1.8) == 1.8
    busy = clock.earned_clock(0.9, 8.0, 1.0, 1.3, c, 2.5, top=1.8)
    busier = clock.earned_clock(0.9, 8.0, 3.0, 1.3, c, 2.5, top=1.8)
    assert busier < busy < 1.8
    f = busy  # at the solved clock the form sits on the limit
    assert clock.terms(0.9, 8.0, 1.0, 1.3, f, 2.5) @ np.array(c) == pytest.approx(1.0, abs=1e-6)


def test_fit_recovers_the_coefficients_of_synthetic_kernels():
    true = np.array([0.011, 0.025, 0.11])
    rows = []
    for u, l2, dram in ((0.9, 0.2, 0.1), (0.85, 8.5, 2.8), (0.7, 8.0, 0.95), (0.86, 8.2, 1.4), (0.5, 8.2, 3.4)):
        f = clock.earned_clock(u, l2, dram, 1.5, true, 2.5, top=5.0)  # each at its own limit
        s = f / 1.5
        rows.append((u, l2 * s, dram * s, f))
    assert np.allclose(clock.fit(rows, 2.5), true, rtol=1e-6)


def test_the_profiled_launches_are_early_launches():
    """Run 47: under Nsight Compute's replay, clock left alone, the ten kernels count the clocks
    they start at after a rest (runs 38-46): rank correlation > 0.95."""
    res = activity.summarize(LOGS / "run47")
    clk = "smsp__cycles_elapsed.avg.per_second"
    ks = list(res["early"])
    assert len(ks) == 10
    assert activity._spearman([res["rates"][k][clk] for k in ks], [res["early"][k] for k in ks]) > 0.95


def test_v3_s3_reads_more_dram_than_v3_s2_not_more_instructions():
    """Run 47: what separates V3 s3 (early clock 1.25) from V3 s2 (1.39) is DRAM (>= 1.4x the
    bytes per clock), not issued instructions (6.5% apart per clock, 2.9% per launch) nor tensor
    work per clock (< 5%)."""
    r = activity.summarize(LOGS / "run47")["rates"]
    ratio = lambda c: r["v3 s3"][c] / r["v3 s2"][c]  # noqa: E731
    assert ratio("dram__bytes_read.sum /sm/clk") > 1.4
    assert abs(ratio("smsp__inst_executed.sum /sm/clk") - 1) < 0.08
    assert abs(ratio("sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.avg.pct_of_peak_sustained_elapsed") - 1) < 0.05


def test_form_fitted_on_calibration_kernels_holds_out_the_seeds(fits):
    """Run 48: chosen on the 18 calibration kernels alone (WGMMA-only loops, V4, V5, other tiles
    and rasters), the form puts V1, V2, V2-local, V2 s3/s4, V3 s2/s3/s4 and three padded
    variants within 1% (median) and 2% (max) of their early clocks; every form tried within 6%."""
    best = fit_clock_form.best_fit(fits)
    assert len(best["calibration"]) == 18 and not set(best["calibration"]) & set(activity.HELD_OUT)
    assert best["held_out_median"] < 0.01 and best["held_out_max"] < 0.02
    assert all(f["held_out_max"] < 0.06 for f in fits)


def test_the_load_only_loops_earn_the_top_clock(fits):
    best = fit_clock_form.best_fit(fits)
    assert all(best["clock"][k] == activity.TOP_GHZ for k in activity.TOP_CLOCK)


def test_profile_carries_the_form_chosen_on_the_calibration_set(fits):
    best = fit_clock_form.best_fit(fits)
    for name in ("h200-sxm", "h100-sxm"):
        g = load_profile(name)
        assert g.clock_form_g == best["g"] and not best["l2_on_voltage"]
        assert np.allclose(g.clock_form_coef, best["coef"], rtol=1e-4)


def test_form_against_launches_along_a_sequence():
    """Run 49: launches 0, 30, 120 and 240 of 250 back to back after a rest, each profiled (which
    leaves a gap, so the 700 W controller never settles): V1, V3 s2 and V2-local within 4% of the
    form at every launch. One V2 launch (#30) read only its per-wave bytes (1.68 GB, against 4.7-5.2
    in the others) at 1.165 GHz, 16% under its form: the slow controller had started its fall."""
    rows = {r["launch"]: r for r in activity.check([LOGS / "run49"])}
    assert len(rows) == 20
    for name in ("v1", "v3 s2", "v2-local"):
        for i in activity.PROFILED_AT:
            r = rows[f"{name} #{i}"]
            assert abs(r["form_ghz"] / r["f"] - 1) < 0.04, r
    odd = rows["v2 #30"]
    assert odd["dram_read_gb"] < 1.8 and odd["form_ghz"] / odd["f"] > 1.15


def test_predict_at_the_earned_clock():
    """With the model's own activity V1 earns 1.57 GHz (1.55 measured under the profiler, run 48)."""
    p = sim.predict(preset("v1"), gpu="h200-sxm", clock="earned")
    assert p.clock_ghz == pytest.approx(1.552, rel=0.03)
    assert any("earned" in n for n in p.notes)


def test_predict_at_the_earned_clock_for_v2():
    """With its own activity V2 earns 1.27 GHz against 1.25 counted (run 48). Was 1.54 while the
    model counted its DRAM bytes per wave (0.93 TB/s against 2.78 under the profiler): the
    convoy model's free-running bytes (4.46 GB) supply the DRAM term (NOTES 59, 77)."""
    p = sim.predict(preset("v2"), gpu="h200-sxm", clock="earned")
    assert p.clock_ghz == pytest.approx(1.246, rel=0.05)
    assert any("free-running" in n for n in p.notes)


def test_earned_clock_needs_a_form():
    g = dataclasses.replace(load_profile("h200-sxm"), clock_form_coef=None)
    with pytest.raises(ScheduleError, match="no clock form"):
        sim.predict(preset("v1"), gpu=g, clock="earned")
    with pytest.raises(ScheduleError, match="clock must be"):
        sim.predict(preset("v1"), gpu="h200-sxm", clock="boost")


# ---- the L2 -> SM port from the load-only loops with their measured misses (runs 48 and 51) ----
@pytest.fixture(scope="module")
def port():
    return fit_port.port_fits(LOGS)


def test_port_from_the_loops_alone(port):
    """Hit rate from the L2-resident loops (3, 2, 1 CTAs per SM; run 51), a miss's cost from the
    DRAM-heavy 8192^3 loops (run 48): 195 B/ns (83 GB/s per SM for 128-B rows) and 1.0, every loop
    within 5%. The profile's port (160 B/ns and a miss charge of 0.4, fitted with the misses the
    model gives the loops) is -2..+5% on the DRAM-heavy loops given their measured misses, and
    4-14% slow on the L2-resident ones (it was 5-16% slow on all seven with 1.1)."""
    assert port["fitted"] == {"l2_sm_bytes_per_ns": 195.0, "l2_miss_port_factor": 1.0}
    loops = [r for r in port["rows"].values() if "loops" in r["set"]]
    assert len(loops) == 7 and all(abs(r["fitted"]) < 0.05 for r in loops)
    assert all(-0.03 < r["profile"] < 0.06 for r in loops if r["set"] == "DRAM-heavy loops")
    assert all(0.03 < r["profile"] < 0.15 for r in loops if r["set"] == "L2-resident loops")


def test_port_from_the_loops_holds_out_the_gemms(port):
    """Run 48's 18 GEMMs at their counted clocks with their measured DRAM bytes: median 3.4% with
    the loops' port, 4.7% with the profile's (8.2% while its miss charge was 1.1, fitted with
    the per-wave misses; experiments/NOTES.md 62, 77)."""
    gemms = [r for r in port["rows"].values() if r["set"] == "GEMMs (held out)"]
    assert len(gemms) == 18
    assert st.median(abs(r["fitted"]) for r in gemms) < 0.04
    assert st.median(abs(r["profile"]) for r in gemms) < 0.055


def test_the_profiles_miss_charge_is_fitted_with_the_models_own_misses():
    """l2_miss_port_factor is what `python -m experiments.fit_port --model-misses` gives: the
    three calibration loops with the HBM bytes predict() gives them, minimax (0.2-0.5 tie at
    2.2%), ties by their rms (experiments/NOTES.md 77)."""
    r = fit_port.miss_factor_with_model_misses()
    assert r["l2_miss_port_factor"] == load_profile("h200-sxm").l2_miss_port_factor == 0.4
    assert r["worst"][0.4] < 0.025 and r["worst"][1.1] > 0.08  # the old charge is 8.6% off with these misses


def test_the_chain_given_dram_bytes_orders_the_seeds_kernels(port):
    """Earned clock and the loops' port, given only each kernel's measured DRAM bytes: V2, V2-local,
    V2 s3, V3 s2, V3 s3 within 3% of the TFLOPS measured at the clock they start at, V1 within 6%;
    V3 s2 > V1 > V2 > V2-local, as measured."""
    ch = port["chain"]
    for name in ("v2", "v2-local", "v2 s3", "v3 s2", "v3 s3"):
        assert ch[name]["tflops"] == pytest.approx(ch[name]["measured_tflops"], rel=0.03), name
    assert ch["v1"]["tflops"] == pytest.approx(ch["v1"]["measured_tflops"], rel=0.06)
    order = lambda key: sorted(("v1", "v2", "v2-local", "v3 s2"), key=lambda k: -ch[k][key])  # noqa: E731
    assert order("tflops") == order("measured_tflops") == ["v3 s2", "v1", "v2", "v2-local"]


@pytest.mark.parametrize("version,stages", [("v1", 1), ("v2", 2), ("v3", 2), ("v2", 4)])
def test_earned_clock_predictions_keep_the_bounds(version, stages):
    """At the clock it earns a prediction still stays under the tensor peak at that clock, the
    datasheet peak, and what HBM can feed; the clock stays under the WGMMA ceiling."""
    g = load_profile("h100-sxm")
    p = sim.predict(preset(version, stages=stages) if version != "v1" else preset("v1"), gpu=g, clock="earned")
    peak_at_clock = g.sm_count * g.tensor_flops_per_clk * p.clock_ghz * 1e-3
    assert 0.5 < p.clock_ghz <= g.wgmma_clock_top_ghz
    assert p.tflops <= peak_at_clock and p.tflops <= g.datasheet_peak_tflops
    assert p.bytes["hbm_bytes"] / (p.ms * 1e-3) <= g.hbm_tbs * 1e12


def test_form_holds_the_rings_at_every_residency():
    """Run 52: V2 and V3 at 2-6 stages and 1-3 CTAs per SM (padded with unused shared memory),
    none of them used to fit the form: all 60 launches within 2.5% of their clocks."""
    rows = activity.check([LOGS / "run52"])
    assert len(rows) == 60 and all(abs(r["form_ghz"] / r["f"] - 1) < 0.025 for r in rows)


def test_which_rings_lose_their_l2_reuse():
    """Run 52, DRAM bytes against the per-wave estimate (1.63 / 2.31 / 4.36 GB at 3 / 2 / 1 CTAs
    per SM): two stages keep it at 1-2 CTAs per SM, V3 s3 alone on an SM keeps it, in every
    launch; V2 s2 at three CTAs loses it 3x in every launch, V2 s3 alone on an SM 1.2x."""
    dram = {}
    for r in activity.check([LOGS / "run52"]):
        dram.setdefault(r["launch"], []).append(r["dram_read_gb"])
    per_wave = {1: 4.36, 2: 2.31, 3: 1.63}
    for label in ("v2 s2 @2", "v2 s2 @1", "v3 s2 @2", "v3 s2 @1", "v3 s3 @1"):
        ctas = int(label[-1])
        assert all(abs(x / per_wave[ctas] - 1) < 0.01 for x in dram[label]), label
    assert all(x > 2.9 * per_wave[3] for x in dram["v2 s2 @3"])
    for label in ("v2 s3 @1", "v2 s4 @1", "v2 s6 @1", "v3 s6 @1"):
        assert all(x > 1.2 * per_wave[1] for x in dram[label]), label


def test_dram_scoreboard_for_a_model_of_lost_reuse():
    """The 62 GEMMs of runs 48, 52-54, 58, 61 and 62 (experiments/results/h200-sxm/dram_reuse.csv):
    the per-wave estimate lands in the measured range (+-3%) for 25, the GPU-wide timeline for 27,
    the convoy model (sim/convoy.py, predict's default) for 34; on the 37 that lost reuse its
    median |ln(model / measured median)| is 0.27 (per-wave 0.50, timeline 0.28). It says which
    keep their reuse and which lose it for 27 of the 29 column- and row-raster GEMMs it was drawn
    from and 16 of the 26 of runs 58, 61 and 62, chosen and predicted after it (runs 61-62 off
    8192^3: held kernels leak at long K, and not in the order of the latency they hide;
    experiments/NOTES.md 72-73, 76-79). A ratchet: the counts may only grow, the error only fall."""
    rows = dram_reuse.dram_against_models(LOGS)
    assert len(rows) == 62
    assert sum(dram_reuse.within(r, "per_wave_gb") for r in rows) >= 25
    assert sum(dram_reuse.within(r, "timeline_gb") for r in rows) >= 27
    assert sum(dram_reuse.within(r, "convoy_gb") for r in rows) >= 34
    lost = [r for r in rows if not r["measured_kept"]]
    assert len(lost) == 37 and dram_reuse.median_log_error(lost, "convoy_gb") < 0.28
    drawn_from = [r for r in rows if "grouped" not in r["kernel"] and not r["convoy_held_out"]]
    held_out = [r for r in rows if r["convoy_held_out"]]
    assert len(drawn_from) == 29 and dram_reuse.classified(drawn_from) >= 27
    assert len(held_out) == 26 and dram_reuse.classified(held_out) >= 16


def test_padded_rows_cut_part_of_the_rings_lost_reuse():
    """Run 53: rows 128 B longer (off the 16 KB power-of-two stride) take 25-30% off V2's and
    V3 s3's DRAM bytes, but they still read 1.5-2.4x their per-wave estimate (1.63 / 2.31 GB);
    V1 and V3 s2 read their per-wave bytes both ways. The form holds every launch within 3%."""
    rows = activity.check([LOGS / "run53"])
    dram = {}
    for r in rows:
        dram.setdefault(r["launch"], []).append(r["dram_read_gb"])
    med = {k: st.median(v) for k, v in dram.items()}
    for name, per_wave in (("v2", 1.63), ("v3 s3", 2.31)):
        assert med[f"{name} ld+64"] < 0.8 * med[name] and med[f"{name} ld+64"] > 1.5 * per_wave, name
    for name, per_wave in (("v1", 1.63), ("v3 s2", 2.31)):
        assert abs(med[name] / per_wave - 1) < 0.01 and abs(med[f"{name} ld+64"] / per_wave - 1) < 0.01, name
    assert all(abs(r["form_ghz"] / r["f"] - 1) < 0.03 for r in rows)


def test_a_grouped_raster_keeps_the_rings_reuse():
    """Run 54: in a grouped raster V2, V2-local, V2 s3 and V3 s3 read within 20% of their per-wave
    bytes (1.39 / 1.46 GB; 2.4-4x that in the column raster), V1 and V3 s2 exactly; the rings'
    clocks rise to 1.47-1.54 GHz (1.23-1.25 in the column raster) and the form holds each launch."""
    rows = activity.check([LOGS / "run54"])
    assert len(rows) == 24 and all(abs(r["form_ghz"] / r["f"] - 1) < 0.015 for r in rows)
    per_wave = {"v1": 1.39, "v2": 1.39, "v2-local": 1.39, "v2 s3": 1.46, "v3 s2": 1.46, "v3 s3": 1.46}
    for r in rows:
        name = r["launch"].removesuffix(" grouped")
        assert 0.99 < r["dram_read_gb"] / per_wave[name] < 1.20, r
        if name in ("v2", "v2-local", "v2 s3", "v3 s3"):
            assert 1.46 < r["f"] < 1.56, r


def test_model_alone_on_the_grouped_kernels():
    """Where the per-wave bytes are right (run 54's grouped raster), the model with no measured
    input (clock="earned", the profile's port) is within 3% of V1, V2 and V2-local's TFLOPS at the
    clock they start at, and their clocks within 2.5%."""
    import statistics as st_
    got = {}
    for r in activity.check([LOGS / "run54"]):
        got.setdefault(r["launch"], []).append(r)
    for label in ("v1 grouped", "v2 grouped", "v2-local grouped"):
        (s, _, _), m, n, k = activity.GROUPED[label]
        f = st_.median(r["f"] for r in got[label])
        measured = 2 * m * n * k / (st_.median(r["ms"] for r in got[label]) * 1e9)
        g = load_profile("h200-sxm")
        p = sim.predict(s, m, n, k, gpu=g, clock="earned")
        assert p.clock_ghz == pytest.approx(f, rel=0.025), label
        assert 2 * m * n * k / ((p.ms - g.launch_us * 1e-3) * 1e9) == pytest.approx(measured, rel=0.03), label


def test_the_rings_that_lose_reuse_vary_in_ctas_time():
    """Run 39's stamped launches (unprofiled, launches 25, 150, 290, both passes): V2 and V2-local,
    which lose their reuse, vary 2-5x more in CTA duration than V1 and V3 s2, which keep it, and
    CTAs 64 launches apart (an A panel's sharers) start 3-11 us apart against ~1 us; the GPU-wide
    timeline gives V2 a similar spread in duration but 1.4 us between those starts (NOTES 67)."""
    import numpy as np_

    from experiments.wave_profile import sharer_gaps
    z = np_.load(LOGS / "run39" / "transient.npz")
    for key in (k for k in z.files if k.startswith("stamps")):
        g = sharer_gaps(z[key])
        if key.split()[1] in ("v2", "v2-local"):
            assert g["duration_cv"] > 0.035 and g["gap_median_us"] > 3.0, (key, g)
        else:
            assert g["duration_cv"] < 0.025 and g["gap_median_us"] < 1.5, (key, g)


def test_tma_feed_from_l2_does_not_depend_on_the_row_stride():
    """Run 56: the L2-resident load-only loops (all hits) take the same time within 8% on 16 KB
    rows and on rows 128 B longer, at 1, 2, 3 and 6 CTAs per SM (NOTES 69)."""
    rows = activity.check([LOGS / "run56"])
    ms = {}
    for r in rows:
        ms.setdefault(r["launch"], []).append(r["ms"])
    for label in activity.L2_RESIDENT:
        plain, padded = st.median(ms[label]), st.median(ms[f"{label} ld+{activity.LD_PAD}"])
        assert abs(padded / plain - 1) < 0.08, (label, plain, padded)
