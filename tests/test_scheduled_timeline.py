"""The block scheduler's timeline (sim.l2cache.scheduled_timeline) on synthetic durations. No GPU."""
import numpy as np

from sim.l2cache import scheduled_timeline


def test_equal_durations_run_in_waves():
    starts, dur, sm = scheduled_timeline(np.full(10, 5.0), ctas_per_sm=2, sm_count=2)
    assert starts.tolist() == [0, 0, 0, 0, 5, 5, 5, 5, 10, 10]
    assert sm[:4].tolist() == [0, 1, 0, 1] and dur.tolist() == [5.0] * 10


def test_next_cta_takes_the_slot_that_frees_first():
    starts, _, sm = scheduled_timeline([3.0, 1.0, 2.0, 4.0, 1.0], ctas_per_sm=1, sm_count=2, dispatch_order=[1, 0])
    # CTA 0 on SM 1, CTA 1 on SM 0; CTA 1 ends first (t=1): CTA 2 goes to SM 0 and ends at 3,
    # tied with CTA 0 (ties go in launch order): CTA 3 to SM 1 at 3, CTA 4 to SM 0 at 3
    assert starts.tolist() == [0, 0, 1, 3, 3]
    assert sm.tolist() == [1, 0, 0, 1, 0]


def test_sm_factor_scales_the_durations():
    _, dur, sm = scheduled_timeline(np.ones(4), ctas_per_sm=1, sm_count=2, sm_factor=[1.0, 1.5])
    assert dur.tolist() == [1.0, 1.5, 1.0, 1.5] and sm.tolist() == [0, 1, 0, 1]
