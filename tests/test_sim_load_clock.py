"""The clock under a timing's load (sim/load_clock.py) and the host as the events see it, set
in a run's own host (experiments.score)."""
import dataclasses

import pytest

import sim
from gemm.schedule import preset
from sim.load_clock import calls_before_runs, warpgroup_producer


@pytest.fixture(scope="module")
def g():
    return sim.load_profile("h200-sxm")


def test_the_protocols_runs_sit_where_time_blocks_puts_them():
    runs = calls_before_runs(3, blocks=3, per_block=10)   # rounds ABC, BCA, CAB: A first, last, second
    assert len(runs) == 30 and runs[0] == 15 and runs[9] == 24 and runs[10] == 65 and runs[20] == 85
    assert runs[-1] == 94
    two = calls_before_runs(2, blocks=3, per_block=10)      # AB, BA, AB
    assert two[0] == 10 and two[10] == 40 and two[20] == 50
    default = calls_before_runs(3)                          # the bench's: 10 rounds of 3
    assert len(default) == 30 and default[:4] == (15, 16, 17, 30) and default[-1] < 15 + 90
    assert 55 <= sorted(default)[15] <= 66                  # the median run: half-way through the 105 calls


def test_short_rows_run_at_the_early_clock_long_rows_at_the_settled(g):
    entry = g.load_clock["float16"]
    short = sim.fast_predict(preset("v7"), 4096, 4096, 4096, gpu=g, clock="load")
    long = sim.fast_predict(preset("v7"), 8192, 8192, 8192, gpu=g, clock="load")
    assert short.clock_ghz == entry["early_ghz"] and long.clock_ghz == entry["settled_ghz"]
    assert entry["early_ghz"] > entry["settled_ghz"]
    # a timing with fewer calls before its runs keeps the long row early too
    quick = sim.fast_predict(preset("v7"), 8192, 8192, 8192, gpu=g, clock="load", load_calls=range(10))
    assert quick.clock_ghz == entry["early_ghz"] and quick.ms < long.ms
    assert any("power limit" in n for n in long.notes)


def test_a_row_near_the_fall_is_predicted_between_its_two_outcomes(g):
    """The fall's time differs between the microbenchmark's passes: a row whose median run starts
    inside that spread gets the clock expected over it, between the early and the settled one,
    the later its median run starts the nearer the settled."""
    from sim.load_clock import early_share
    entry = g.load_clock["float16"]
    lo, hi = sorted(entry["down_ms_passes"])
    assert lo < entry["down_ms"] < hi
    assert early_share(lo - 1, entry) == 1.0 and early_share(hi + 1, entry) == 0.0
    assert early_share((lo + hi) / 2, entry) == pytest.approx(0.5)
    assert early_share(50.0, {k: v for k, v in entry.items() if k != "down_ms_passes"}) is None
    clocks = [sim.fast_predict(preset("v7"), 4096, n, 4096, gpu=g, clock="load").clock_ghz
              for n in (12288, 16384, 22016, 28672)]      # calls of ~0.55-1.3 ms
    assert clocks == sorted(clocks, reverse=True)
    assert clocks[0] == entry["early_ghz"] and clocks[-1] == entry["settled_ghz"]
    assert entry["settled_ghz"] < clocks[2] < entry["early_ghz"]


def test_a_kernel_too_light_for_the_limit_runs_at_the_clock_it_earns(g):
    """v7 on 8 CTAs (512^2, K = 8192) draws too little for the power limit to bind at the early
    clock: under load it runs at the clock its own activity earns (run 177 measured its 64-deep K
    tile at 0.58 us, 0.70 at the early clock), above the early clock and no higher than the top
    WGMMA clock; the full grid at 4096^3 is pulled down to the early clock as before."""
    entry = g.load_clock["float16"]
    light = sim.fast_predict(preset("v7"), 512, 512, 8192, gpu=g, clock="load")
    assert entry["early_ghz"] < light.clock_ghz <= g.wgmma_clock_top_ghz
    assert any("does not bind" in n for n in light.notes)
    early = sim.fast_predict(preset("v7"), 512, 512, 8192, gpu=dataclasses.replace(g, clock_ghz=entry["early_ghz"]))
    assert light.ms < 0.9 * early.ms
    heavy = sim.fast_predict(preset("v7"), 4096, 4096, 4096, gpu=g, clock="load")
    assert heavy.clock_ghz == entry["early_ghz"]


def test_bf16_has_its_own_clocks(g):
    p = sim.fast_predict(preset("v7"), 4096, 4096, 4096, gpu=g, dtype="bfloat16", clock="load")
    assert p.clock_ghz == g.load_clock["bfloat16"]["early_ghz"] != g.load_clock["float16"]["early_ghz"]


def test_other_kernels_and_profiles_without_it_keep_the_profile_clock(g):
    assert warpgroup_producer(preset("v7")) and warpgroup_producer(preset("v6"))
    assert not warpgroup_producer(preset("v5")) and not warpgroup_producer(preset("v2"))
    ring = sim.fast_predict(preset("v3"), 4096, 4096, 4096, gpu=g, clock="load")
    assert ring.clock_ghz == g.clock_ghz
    bare = dataclasses.replace(g, load_clock=None)
    assert sim.fast_predict(preset("v7"), 4096, 4096, 4096, gpu=bare, clock="load").clock_ghz == g.clock_ghz
    full = sim.predict(preset("v7"), 4096, 4096, 4096, gpu=g, clock="load")
    assert full.clock_ghz == g.load_clock["float16"]["early_ghz"]


def test_a_runs_host_probe_is_read_and_applied(tmp_path, g):
    from experiments.bench import read_host_probe
    from experiments.score import at_run_host
    f = tmp_path / "shapes.csv"
    f.write_text("# gpu: NVIDIA H200\n# host_probe: call_us=17.0 floor_us=34.0 pace_us=53.0 (probe)\n"
                 "# host_probe_after: call_us=1 floor_us=2 pace_us=3 (the same, after)\nsuite,name\n")
    probe = read_host_probe(f)
    assert probe == {"call_us": 17.0, "floor_us": 34.0, "pace_us": 53.0}
    pred = {"gpu": "h200-sxm", "kernels": "1"}
    assert at_run_host({**pred, "predicted_device_ms": "0.005"}, probe) == pytest.approx(0.034)   # the floor
    assert at_run_host({**pred, "predicted_device_ms": "0.028"}, probe) == pytest.approx(0.045)   # call + device
    assert at_run_host({**pred, "predicted_device_ms": "0.045"}, probe) == pytest.approx(0.053)   # the pace
    assert at_run_host({**pred, "predicted_device_ms": "0.100"}, probe) == pytest.approx(0.100 + g.event_tail_us * 1e-3)
    no = tmp_path / "old.csv"
    no.write_text("# gpu: NVIDIA H200\nsuite,name\n")
    assert read_host_probe(no) is None


def test_a_probe_with_the_loops_call_starts_the_kernel_within_it(g):
    """Where the probe measured the host's call as the row's loop runs it (called_us), the kernel
    starts at the profile's kernel_start_share of it, in place of the tight loop's call."""
    from experiments.score import at_run_host
    probe = {"call_us": 17.0, "floor_us": 34.0, "pace_us": 70.0}
    pred = {"gpu": "h200-sxm", "kernels": "1", "predicted_device_ms": "0.028"}
    assert at_run_host(pred, probe) == pytest.approx(0.045)                       # call + device
    start = g.kernel_start_share * 40.0
    assert at_run_host(pred, {**probe, "called_us": 40.0}) == pytest.approx((start + 28.0) * 1e-3)
    assert 0.4 < g.kernel_start_share < 0.7          # within the call, as the trace measured it
    # a kernel shorter than the floor less its start is still timed at the floor
    assert at_run_host({**pred, "predicted_device_ms": "0.005"}, {**probe, "called_us": 40.0}) == pytest.approx(0.034)


def test_a_rows_own_probe_is_read():
    from experiments.bench import row_host_probe
    row = {"host_call_us": "12.5", "host_floor_us": "25.0", "host_pace_us": "31.0"}
    assert row_host_probe(row) == {"call_us": 12.5, "floor_us": 25.0, "pace_us": 31.0}
    assert row_host_probe({**row, "host_pace_us": ""}) is None and row_host_probe({}) is None
    assert row_host_probe({**row, "host_called_us": "40.0"})["called_us"] == 40.0
