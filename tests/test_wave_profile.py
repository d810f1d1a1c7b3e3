"""CPU tests of experiments/wave_profile.py: its fits, and what it finds in the committed
stamps (runs 18, 23 and 29), as experiments/NOTES.md item 33 states it."""
import numpy as np
import pytest

from experiments import wave_profile
from sim.hardware import load_profile

# the 128x128x64 GEMMs of run 29 (one profiler pass) and of run 18 (after 20 warm-up
# launches), and the load-only loops of run 23
GEMMS = [("run29", name) for name in ("v1", "v2", "v2 s3", "v3 s2", "v3 s3", "v5 s3")] + [
    ("run18", name) for name in ("v1 128x128x64", "v2 128x128x64 s2", "v2 128x128x64 s2 local",
                                 "v2 128x128x64 s3", "v3 128x128x64 s2", "v3 128x128x64 s3")]
LOAD_LOOPS = [("run23", name) for name in ("load loop 128x128x64 s2", "load loop v3 128x128x64 s2",
                                           "load loop v3 128x128x64 s3")]


def test_fit_recovers_slopes_per_unit_of_the_intercept():
    rng = np.random.default_rng(1)
    own, wide = rng.uniform(0, 0.5, 500), rng.uniform(0, 0.5, 500)
    (hit, b_own, b_wide), r2 = wave_profile.fit(200.0 * (1 + 0.1 * own + 1.5 * wide), own, wide)
    assert (hit, b_own, b_wide, r2) == pytest.approx((200.0, 0.1, 1.5, 1.0))


def test_resident_ctas_are_those_started_before_the_first_end():
    starts = np.r_[np.zeros(264), np.full(264, 50.0)]
    assert wave_profile.resident_per_sm(starts, np.full(528, 40.0), 132) == 2


def test_gpu_wide_share_averages_the_ctas_running_at_the_midpoint():
    starts, durations = np.array([0.0, 0.0, 100.0]), np.array([10.0, 10.0, 10.0])
    got = wave_profile.gpu_wide_share(starts, durations, np.array([0.0, 1.0, 0.5]))
    assert got.tolist() == [0.5, 0.5, 0.5]


@pytest.fixture(scope="module")
def launches():
    prof = load_profile(wave_profile.GPU)
    wanted = set(GEMMS + LOAD_LOOPS)
    out = {}
    for job in wave_profile.runs():
        if (job["run"], job["kernel"]) in wanted:
            waves, launch = wave_profile.profile_run(job, prof)
            out[job["run"], job["kernel"]] = (waves, launch)
    assert len(out) == len(wanted)
    return out


def test_load_loops_slow_with_the_gpu_wide_misses_not_their_own(launches):
    """At a clock that holds still (1.92-1.98 GHz), a load-only CTA's cycles follow the miss
    share of the whole GPU while it runs (R^2 0.58-0.67), hardly its own (own slope <= 0.11
    with both in the fit; own alone R^2 <= 0.27)."""
    for name in LOAD_LOOPS:
        ln = launches[name][1]
        assert ln["both_r2"] > ln["own_r2"] + 0.3, name
        assert ln["both_own_slope"] < 0.15 < 0.9 < ln["both_gpu_wide_slope"], name
        waves = launches[name][0]
        assert waves[-1]["cta_kclk"] > 1.25 * waves[0]["cta_kclk"], name  # the later waves lose the reuse


def test_v2_takes_fewer_cycles_than_v1_at_a_lower_clock(launches):
    """In both launches V2's CTAs take >10% fewer cycles than V1's (run 29: 224k against 264k;
    run 18: 208k against 251k) at a clock >10% lower (1.17 against 1.55 GHz; 1.22 against
    1.41). In run 29 that makes V2 the slower kernel in time, the seed's order."""
    for run, v1, v2 in (("run29", "v1", "v2"), ("run18", "v1 128x128x64", "v2 128x128x64 s2")):
        v1, v2 = launches[run, v1][1], launches[run, v2][1]
        assert v2["clock_ghz_settled"] < 0.9 * v1["clock_ghz_settled"], run
        assert v2["measured_kclk_settled"] < 0.9 * v1["measured_kclk_settled"], run
    v1, v2 = launches["run29", "v1"][1], launches["run29", "v2"][1]
    assert v2["measured_kclk_settled"] / v2["clock_ghz_settled"] > v1["measured_kclk_settled"] / v1["clock_ghz_settled"]


def test_one_sm_model_per_cycle_at_the_launch_clock(launches):
    """With the clock taken out (the model run at the clock the settled waves ran at, with
    their replayed misses), the one-SM model's cycles per CTA are within -10..+5% of the
    measured for the 128x128x64 GEMMs (run 29 -2.2..+2.7%, run 18 -7.9..+2.3%; with the miss
    charge of 1.1 it was +1.0..+11.3% and -0.8..+8.8%), and it orders V2 below V1 in cycles as
    the H200 does."""
    for key in GEMMS:
        assert 0.90 < launches[key][1]["model_over_measured"] < 1.05, key
    for run, v1, v2 in (("run29", "v1", "v2"), ("run18", "v1 128x128x64", "v2 128x128x64 s2")):
        assert launches[run, v2][1]["model_kclk_replayed_misses"] < launches[run, v1][1]["model_kclk_replayed_misses"]


# ---- run 31: each kernel alone, 20 warm-ups, 10 launches (experiments/launch_spread.py) ----

@pytest.fixture(scope="module")
def spread():
    import csv
    from collections import defaultdict
    path = wave_profile.RESULTS / "launch_spread.csv"
    by = defaultdict(list)
    for row in csv.DictReader(ln for ln in path.read_text().splitlines() if not ln.startswith("#")):
        by[row["kernel"]].append({k: float(v) for k, v in row.items() if k != "kernel"})
    return by


def _median(rows, key):
    return float(np.median([r[key] for r in rows]))


def test_at_the_seeds_conditions_v2_is_behind_v1(spread):
    """Timed like the seed (each alone, warm, back to back): V1 keeps its reuse in 10 of 10
    launches, V2 and V2-local lose it in 10 of 10; V2's median time is 2.6% over V1's and
    V2-local's 7.9% (V2-local 521 TFLOPS, the seed's 518), at a clock 16% lower (1.24 against
    1.48 GHz) with 13-18% fewer cycles per CTA."""
    v1, v2, local = spread["v1"], spread["v2"], spread["v2-local"]
    assert all(r["replayed_dram_gb"] < 1.01 * r["per_wave_dram_gb"] for r in v1)
    assert all(r["replayed_dram_gb"] > 1.1 * r["per_wave_dram_gb"] for r in v2 + local)
    assert _median(v1, "event_ms") < _median(v2, "event_ms") < _median(local, "event_ms")
    assert _median(v2, "clock_ghz_settled") < 0.9 * _median(v1, "clock_ghz_settled")
    assert _median(v2, "kclk_per_cta_settled") < 0.9 * _median(v1, "kclk_per_cta_settled")


def _at_launch_clock_and_bytes(spread) -> dict:
    """sim.predict of each run-31 kernel at the median settled clock of its ten launches and
    with their replayed DRAM bytes, beside the median measured TFLOPS."""
    import dataclasses

    from experiments.hbm_bytes import SCHEDULES
    from sim import predict
    prof = load_profile(wave_profile.GPU)
    return {name: (predict(SCHEDULES[name], 8192, 8192, 8192,
                           gpu=dataclasses.replace(prof, clock_ghz=_median(rows, "clock_ghz_settled")),
                           hbm_read_bytes=int(_median(rows, "replayed_dram_gb") * 1e9)).tflops,
                   _median(rows, "tflops"))
            for name, rows in spread.items()}


def test_given_each_launchs_clock_and_bytes_the_model_is_within_12_percent(spread):
    """Given each kernel's settled clock and replayed DRAM bytes: every kernel +3.7..+11.3% of its
    median measured TFLOPS (V2-local the most), V2-local below V2 and V1 as measured. Was
    +0.8..+3.4% with the miss charge 1.1 fitted on the loops' per-wave misses (NOTES 77): per
    CTA, clock taken out, the model now sits at -8..+3% (test above), so what the whole launch
    adds beyond its CTAs' cycles is not in the port."""
    got = _at_launch_clock_and_bytes(spread)
    for name, (model, measured) in got.items():
        assert 1.0 < model / measured < 1.12, name
    assert got["v2-local"][0] < min(got["v2"][0], got["v1"][0])


@pytest.mark.xfail(strict=True, reason="given run 31's settled clocks and replayed bytes the model has V2 589 above V1 "
                   "583 (measured 548 < 562): V2 reads 3.0 GB there, and at a miss charge of 0.4 (fitted on the "
                   "load-only loops with the model's own misses, NOTES 77) its 1.4 GB more than V1 cost it less "
                   "than its ring gains; with the old 1.1 the order was right (+0.8..+3.4%)")
def test_given_each_launchs_clock_and_bytes_the_model_orders_the_seeds_kernels(spread):
    got = _at_launch_clock_and_bytes(spread)
    assert got["v2-local"][0] < got["v2"][0] < got["v1"][0]


def test_with_per_wave_bytes_v2_comes_out_above_v1():
    from experiments.hbm_bytes import SCHEDULES
    from sim import predict
    prof = load_profile(wave_profile.GPU)
    assert (predict(SCHEDULES["v2"], 8192, 8192, 8192, gpu=prof, reuse="per-wave").tflops
            > predict(SCHEDULES["v1"], 8192, 8192, 8192, gpu=prof).tflops)
