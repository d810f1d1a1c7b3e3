"""CPU tests of sim/convoy.py: which schedules the miss holds in convoy, and the bytes of
free-running grids (docs/research/notes.md 72, 76; the measured facts are the Nsight Compute DRAM
bytes of runs 48 and 52-54, experiments/results/h200-sxm/dram_reuse.csv)."""
import dataclasses

import pytest

import sim
from gemm.schedule import ScheduleError, preset
from sim import convoy
from sim.engines import memory_traffic
from sim.hardware import load_profile

N = 8192
H200 = load_profile("h200-sxm")


@pytest.mark.parametrize("label, schedule, ctas, kept", [
    # measured: every profiled launch read its per-wave bytes (kept) or 1.3-3.6x them (lost)
    ("v1", preset("v1"), 3, True),
    ("v3 s2", preset("v3"), 2, True),
    ("v2 s2 @2", preset("v2"), 2, True),
    ("v3 s3 @1", preset("v3", stages=3), 1, True),
    ("v2", preset("v2"), 3, False),
    ("v3 s3", preset("v3", stages=3), 2, False),
    ("v2 s3 @1", preset("v2", stages=3), 1, False),
    ("v3 s6 @1", preset("v3", stages=6), 1, False),
])
def test_held_in_convoy_where_the_h200_kept_its_reuse(label, schedule, ctas, kept):
    assert convoy.held_in_convoy(schedule, H200, ctas) is kept, label


def test_deeper_rings_hide_more_latency():
    hidden = [convoy.hidden_latency_ns(preset("v3", stages=st), H200, 1) for st in (2, 3, 4, 6)]
    assert hidden == sorted(hidden) and hidden[0] < convoy.miss_extra_ns(H200) < hidden[-1]
    assert convoy.hidden_latency_ns(preset("v1"), H200, 3) < 100  # no prefetch: every miss is paid


def test_free_running_column_grid_loses_the_reuse_and_a_grouped_one_keeps_it():
    """V2's free-running CTAs in the column raster read >2.5x the per-wave bytes (measured 2.7-3.6x);
    in a grouped raster, whose sharers launch together, within 15% (measured 1.10-1.14x)."""
    v2 = preset("v2")
    per_wave = memory_traffic(v2, N, N, N, 3 * H200.sm_count)["hbm_read_bytes"]
    assert convoy.free_running_bytes(v2, N, N, N, H200, 3) > 2.5 * per_wave
    grouped = preset("v2", raster="grouped")
    per_wave = memory_traffic(grouped, N, N, N, 3 * H200.sm_count)["hbm_read_bytes"]
    assert convoy.free_running_bytes(grouped, N, N, N, H200, 3) < 1.15 * per_wave


def test_free_running_bytes_grow_with_the_spread():
    """No fast SM and no spread: the per-wave bytes. Each of the two alone loses part of the
    reuse, and more spread loses more."""
    v2 = preset("v2")
    even = dataclasses.replace(H200, free_running_fast_sms=0)
    per_wave = memory_traffic(v2, N, N, N, 3 * H200.sm_count)["hbm_read_bytes"]
    gb = [convoy.free_running_bytes(v2, N, N, N, even, 3, cv=cv) for cv in (0.0, 0.03, 0.07)]
    assert gb == sorted(gb) and gb[0] < 1.05 * per_wave < gb[1]
    fast_only = convoy.free_running_bytes(v2, N, N, N, H200, 3, cv=0.0)
    assert 1.2 * per_wave < fast_only < convoy.free_running_bytes(v2, N, N, N, H200, 3)


def test_fast_sms_spread_over_the_dispatch_order():
    factor = convoy.free_running_sm_factor(H200)
    assert (factor < 1).sum() == H200.free_running_fast_sms == 12
    assert set(factor) == {1.0, H200.free_running_fast_sm_factor}


def test_predict_with_convoy_reuse():
    held = sim.predict(preset("v1"), N, N, N, gpu="h200-sxm", reuse="convoy")
    assert held.bytes["hbm_read_bytes"] == sim.predict(preset("v1"), N, N, N, gpu="h200-sxm").bytes["hbm_read_bytes"]
    assert any("held in convoy" in note for note in held.notes)
    free = sim.predict(preset("v2"), N, N, N, gpu="h200-sxm", reuse="convoy")
    per_wave = sim.predict(preset("v2"), N, N, N, gpu="h200-sxm", reuse="per-wave")
    assert free.bytes["hbm_read_bytes"] > 2.5 * per_wave.bytes["hbm_read_bytes"]
    assert free.bytes["hbm_read_bytes"] == sim.predict(preset("v2"), N, N, N, gpu="h200-sxm").bytes["hbm_read_bytes"]
    assert free.tflops < per_wave.tflops and any("free-running" in note for note in free.notes)
    earned = sim.predict(preset("v2"), N, N, N, gpu="h200-sxm", reuse="convoy", clock="earned")
    assert earned.bytes["hbm_read_bytes"] == free.bytes["hbm_read_bytes"]  # decided once, at the profile clock
    with pytest.raises(ScheduleError, match="reuse must be"):
        sim.predict(preset("v2"), N, N, N, reuse="lost")


def test_seed_order_with_convoy_reuse():
    """With the convoy's bytes the H100 profile orders the seed's kernels as the seed measured
    them: V2 (local phases) < V1 < V3. Its V2 figure is not the seed's 518 (docs/research/notes.md 72)."""
    p = {v: sim.predict(s, N, N, N, gpu="h100-sxm", reuse="convoy") for v, s in
         (("v1", preset("v1")), ("v2", preset("v2", phase_storage="local")), ("v3", preset("v3")))}
    assert p["v2"].tflops < p["v1"].tflops < p["v3"].tflops
