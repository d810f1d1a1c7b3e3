"""CPU tests of the GPU-wide K-step timeline (sim/timeline.py): which kernels keep their
L2 sharing and which drift apart, from the per-SM feed map the load-only loops measured."""
import csv
import dataclasses

import numpy as np
import pytest

from experiments import catalog
from experiments.paths import results_dir
from gemm.schedule import preset
from sim import timeline
from sim.engines import memory_traffic
from sim.hardware import load_profile
from sim.l2cache import wave_start_spreads

N = 8192
RESULTS = results_dir()


def _per_wave(s, k, ctas_per_sm):
    return memory_traffic(s, N, N, k, 132 * ctas_per_sm)["hbm_read_bytes"]


@pytest.mark.parametrize("s,depth", [(preset("v1"), 1), (preset("v2"), 2), (preset("v2", stages=4), 4),
                                     (preset("v3", stages=3), 3), (preset("v5", stages=3), 2)])
def test_prefetch_depth(s, depth):
    """Loads of step j + depth go out when step j's group retires; wait_group(1) holds one
    more slot."""
    assert timeline.prefetch_depth(s) == depth


def test_the_h200_profile_carries_a_measured_feed_map():
    p = load_profile("h200-sxm")
    feed = np.array(p.l2_feed_by_sm)
    assert feed.shape == (132,) and abs(feed.mean() - 1) < 1e-3
    assert sorted(p.sm_dispatch_order) == list(range(132))
    assert 0.05 < feed.std() < 0.2 and feed.min() < 0.85  # run 23: ~10%, a fifth ~25% faster


def test_sms_alike_keep_the_per_wave_sharing():
    """With every SM alike nothing spreads the CTAs: the per-wave figure, ring or not."""
    flat = np.ones(132)
    for s in (preset("v1"), preset("v2"), preset("v3", stages=3)):
        got = timeline.run(s, N, N, 4096, "h200-sxm", feed_by_sm=flat)
        assert got["hbm_read_bytes"] == pytest.approx(_per_wave(s, 4096, got["ctas_per_sm"]), rel=0.01), s.name


def test_deterministic():
    s = preset("v2")
    a = timeline.run(s, 2048, 2048, 2048, "h200-sxm")
    b = timeline.run(s, 2048, 2048, 2048, "h200-sxm")
    assert a["hbm_read_bytes"] == b["hbm_read_bytes"] and np.array_equal(a["ends_ns"], b["ends_ns"])


def test_exposed_miss_latency_keeps_sharers_together_and_a_hiding_ring_loses_them():
    """The split Nsight Compute measures at K = 4096 (run 20: V1 1.00x the per-wave figure,
    V2 1.75x, V3 s3 1.49x; run 18 at K = 8192: V3 s2 1.00x), from the measured feed map:
    V1 (no prefetch) and V3 s2 (one K tile ahead at 2 CTAs/SM) pay a miss's latency, so the
    CTA that reads a slice first is slowed and its sharers catch up; V2 s2 and V3 s3 hide it."""
    ratio = {}
    for name, s in (("v1", preset("v1")), ("v3 s2", preset("v3", stages=2)),
                    ("v2", preset("v2")), ("v3 s3", preset("v3", stages=3))):
        got = timeline.run(s, N, N, 4096, "h200-sxm")
        ratio[name] = got["hbm_read_bytes"] / _per_wave(s, 4096, got["ctas_per_sm"])
    assert ratio["v1"] < 1.02 and ratio["v3 s2"] < 1.02, ratio
    assert ratio["v2"] > 1.15 and ratio["v3 s3"] > 1.05, ratio


def test_the_ring_spreads_wave_after_wave():
    """Run 22: the last wave's starts spread over 165 us in V2, 11 us in V1."""
    def last_wave_spread(s):
        got = timeline.run(s, N, N, 4096, "h200-sxm")
        return wave_start_spreads(got["starts_ns"] / 1e3, 132 * got["ctas_per_sm"])[-1]
    assert last_wave_spread(preset("v2")) > 5 * max(1.0, last_wave_spread(preset("v1")))


def _load_loop_ms(name):
    rows = csv.DictReader(ln for ln in (RESULTS / "load_loop.csv").read_text().splitlines()
                          if not ln.startswith("#"))
    return {r["schedule"]: float(r["ms"]) for r in rows}[name]


@pytest.mark.parametrize("stages,ctas", [(2, 3), (4, 1)])
def test_load_only_loop_times_held_in(stages, ctas):
    """timeline_miss_port_factor was chosen on these loops' times (load_loop.csv, 1.98 GHz):
    the timeline stays within 3% of them."""
    got = timeline.run(preset("v2", stages=stages), N, N, N, "h200-sxm", ctas_per_sm=ctas, mmas=False)
    assert got["span_ns"] / 1e6 == pytest.approx(_load_loop_ms(f"load loop 128x128x64 s{stages}"), rel=0.03)


def test_bad_map_is_refused():
    s = preset("v2")
    with pytest.raises(ValueError, match="feed_by_sm"):
        timeline.run(s, 1024, 1024, 1024, "h200-sxm", feed_by_sm=np.ones(131))
    with pytest.raises(ValueError, match="permutation"):
        timeline.run(s, 1024, 1024, 1024, "h200-sxm", dispatch_order=[0] * 132)


def test_h100_profile_runs_on_the_transferred_map():
    p = load_profile("h100-sxm")
    assert p.l2_feed_by_sm == load_profile("h200-sxm").l2_feed_by_sm
    flat = dataclasses.replace(p, l2_feed_by_sm=None, sm_dispatch_order=None)
    assert timeline.run(preset("v1"), 2048, 2048, 1024, flat)["hbm_read_bytes"] > 0


@pytest.mark.xfail(strict=True, reason="the timeline finds the ring's lost reuse but not its size: V2 s2 2.55 GB "
                   "against 6.10 (run 29; 3.22-4.88 in runs 17, 18, 22, 28), V3 s3 3.41 vs 4.22, while the "
                   "spread of the last wave's starts matches (V2 179 vs 172 us) and the same LRU replays the "
                   "measured timeline to 6.27 GB: the model's CTAs spread as far but not in the same pattern "
                   "(its drift comes only from the per-SM feed map; the H200 splits the SMs by L2 partition); "
                   "experiments/research/timeline_bytes.py. Outside the profiler V2 reads 1.98-3.70 GB and the timeline's "
                   "2.55 is within its range (test_timeline_bytes_against_unprofiled_launches)")
def test_ring_lost_reuse_magnitude():
    got = timeline.run(preset("v2"), N, N, N, "h200-sxm")
    assert got["hbm_read_bytes"] / 1e9 == pytest.approx(6.097, rel=0.25)


@pytest.mark.xfail(strict=True, reason="V5 s3 (two consumer warpgroups, wait_group(1)) reads 1.9x the per-wave "
                   "bytes on the H200 (runs 18, 22, 28, 29) and its last wave spreads over 67-104 us; the timeline "
                   "keeps it together (prefetch depth 2 at 2 CTAs/SM, like V3 s2, which does keep together)")
def test_v5_s3_loses_reuse():
    s = preset("v5", stages=3)
    got = timeline.run(s, N, N, 4096, "h200-sxm")
    assert got["hbm_read_bytes"] > 1.15 * _per_wave(s, 4096, got["ctas_per_sm"])


def test_partitioned_l2_option():
    """partitions=True: the physical L2 as two partitions with the measured SM sides (run 26);
    on a grid whose operands fit it reads them once, like the single LRU."""
    s = preset("v2")
    one = timeline.run(s, 4096, 4096, 1024, "h200-sxm")
    two = timeline.run(s, 4096, 4096, 1024, "h200-sxm", partitions=True)
    assert two["hbm_read_bytes"] == one["hbm_read_bytes"] == 2 * 4096 * 1024 * 2


def test_partitions_need_the_measured_sides():
    with pytest.raises(ValueError, match="l2_side_by_sm"):
        timeline.run(preset("v2"), 1024, 1024, 1024, "h100-sxm", partitions=True)


def _unprofiled_gb(kernel):
    """DRAM read GB of the launches timed without a profiler, each replayed from its own CTA
    stamps through the LRU: run 31 (launch_spread.csv, ten per kernel after 20 warm-ups) and
    run 39 (clock_transient.csv: launches 25, 150 and 290 after a rest, two passes)."""
    def rows(path):
        return list(csv.DictReader(ln for ln in path.read_text().splitlines() if not ln.startswith("#")))
    got = [float(r["replayed_dram_gb"]) for r in rows(RESULTS / "launch_spread.csv") if r["kernel"] == kernel]
    got += [float(r[f"replayed_dram_gb #{i}"]) for r in rows(RESULTS / "clock_transient.csv")
            if r["run"] == "run39" and r["kernel"] == kernel for i in (25, 150, 290)]
    return got


@pytest.mark.parametrize("kernel", ["v1", "v2", "v3 s2"])
def test_timeline_bytes_against_unprofiled_launches(kernel):
    """Outside the profiler the ring's loss is smaller than Nsight Compute counted (V2 1.98-3.70
    GB in 16 launches, against 3.2-6.1 under the profiler): the timeline's bytes lie within the
    launches' range and within 15% of their median; V1 and V3 s2 keep the per-wave bytes."""
    got = timeline.run(catalog.schedule(kernel), N, N, N, "h200-sxm")["hbm_read_bytes"] / 1e9
    measured = _unprofiled_gb(kernel)
    assert len(measured) >= 10
    assert min(measured) * 0.99 <= got <= max(measured) * 1.01
    assert got == pytest.approx(float(np.median(measured)), rel=0.15)


@pytest.mark.xfail(strict=True, reason="outside the profiler V2-local reads 3.38-4.84 GB (median 4.2-4.5), the "
                   "timeline 2.55, as for V2: it has no cause for the local phase array's greater loss; V2 s3 and V3 s3 "
                   "read 2.31-3.21 GB (medians 2.40, 2.31) and the timeline gives both 3.41, a loss they mostly do not show")
@pytest.mark.parametrize("kernel", ["v2-local", "v2 s3", "v3 s3"])
def test_timeline_bytes_against_unprofiled_launches_deeper_or_local(kernel):
    got = timeline.run(catalog.schedule(kernel), N, N, N, "h200-sxm")["hbm_read_bytes"] / 1e9
    assert got == pytest.approx(float(np.median(_unprofiled_gb(kernel))), rel=0.15)
