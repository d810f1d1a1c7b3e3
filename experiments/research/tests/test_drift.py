"""experiments/research/drift.py's tests on the stamped launches of runs 22, 29 and 57
(docs/research/notes.md 70-71). No GPU."""
import numpy as np
import pytest

from experiments.research import drift


def test_measured_durations_scheduled_give_the_measured_sharer_gaps():
    """NOTES 70 (a): placement is not what the model lacks; each CTA's duration is."""
    for name in ("v1#0", "v2#0", "v2-local#0", "v3 s2#0", "v3 s3#0"):
        ln = drift.launch("run57", name)
        gap = drift.sharer_gap_us(ln["starts"])
        scheduled = drift.sharer_gap_us(drift.rescheduled(ln, ln["durations"]))
        assert abs(scheduled - gap) <= max(1.6, 0.2 * gap), (name, gap, scheduled)


def test_v1_is_held_together_not_merely_tight():
    """NOTES 70 (b): V1's measured timeline keeps every byte; its durations dealt at random lose
    reuse (a restoring force keeps its convoy, not a small spread)."""
    ln = drift.launch("run57", "v1#0")
    per_wave = 1.633
    assert drift.replayed_gb(ln, ln["starts"], ln["durations"]) == pytest.approx(per_wave, rel=0.02)
    shuffled = np.random.default_rng(0).permutation(ln["durations"])
    assert drift.replayed_gb(ln, drift.rescheduled(ln, shuffled), shuffled) > 1.5 * per_wave


def test_the_sides_split_where_nothing_holds_the_ctas_together():
    """NOTES 71 (run 57): in the column raster V1 and V3 s2 keep their convoy (split < 2% in every
    wave); in the grouped raster V3 s2 and V3 s3 split by side by >= 4% and still read their
    per-wave bytes: the split is not an effect of lost reuse."""
    for name in ("v1#0", "v1#1", "v1#2", "v3 s2#0", "v3 s2#1", "v3 s2#2"):
        assert drift.max_side_split(drift.launch("run57", name)) < 0.02, name
    for name in ("v3 s2 grouped#0", "v3 s2 grouped#1", "v3 s2 grouped#2",
                 "v3 s3 grouped#0", "v3 s3 grouped#1", "v3 s3 grouped#2"):
        ln = drift.launch("run57", name)
        assert drift.max_side_split(ln) >= 0.04, name
        assert ln["ncu_gb"] < 1.1 * 1.46, name   # per-wave bytes 1.46 GB at 2 CTAs per SM, grouped


def test_the_profiles_free_running_spread_is_run_57s():
    """sim/hardware.py's free_running_* fields are what `python -m experiments.research.drift --free-cv`
    takes from run 57's rings in a grouped raster: 12 fast SMs (the same ones in every launch)
    at 0.816 x the others, 3.35% per CTA; the held kernels (V1, V3 s2) show no fast SM
    (docs/research/notes.md 76)."""
    from sim.hardware import load_profile
    r = drift.free_running_spread()
    prof = load_profile("h200-sxm")
    assert r["free_running_fast_sms"] == prof.free_running_fast_sms == 12
    assert r["free_running_fast_sm_factor"] == pytest.approx(prof.free_running_fast_sm_factor, abs=0.001)
    assert r["free_running_cta_cv"] == pytest.approx(prof.free_running_cta_cv, abs=0.0005)
    assert r["between_launches"] > 0.9 and len(r["fast_sm_ids"]) == 12
    held = [p for nm, p in r["by_launch"].items() if nm.split("#")[0] in ("v1", "v3 s2", "v1 grouped", "v3 s2 grouped")]
    assert len(held) == 12 and all(p["fast_sms"] == 0 for p in held)
