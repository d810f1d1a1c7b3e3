"""The model on the busy-SM sweeps of the WGMMA-only and load-only loops (runs 36-37, published
in experiments/results/h200-sxm/power_sweep.csv; the study: experiments/research/power_sweep.py):
at each point's counted clock, none of the points used to set a parameter."""
import dataclasses

import pytest

import sim
from experiments import catalog
from experiments.paths import read_rows, results_dir
from sim.hardware import load_profile

K = 131072  # the sweeps' K (power_sweep.csv's header)
LOOPS = {"mma": "mma loop 128x128x64 s2", "load": "load loop 128x128x64 s2"}


@pytest.fixture(scope="module")
def sweeps():
    """(the WGMMA-only loop's sweep, run 36; the load-only loop's, run 37): every point but idle."""
    rows = read_rows(results_dir() / "power_sweep.csv")
    return tuple([r for r in rows if r["run"] == run and r["loop"] == loop and r["pass"] != "idle"]
                 for run, loop in (("run36", "mma"), ("run37", "load")))


def _f(r, key):
    return float(r[key] or 0)


def _model_over_measured(rows, kind, measured_misses: bool = False):
    """The model (at each point's counted clock; the load-only loop at its CTAs per SM) over the
    measured time per launch, for each point of the up pass of a sweep; `measured_misses`: with
    the point's DRAM bytes (its counted DRAM TB/s x its time) instead of the model's."""
    s = catalog.schedule(LOOPS[kind])
    base = load_profile("h200-sxm")
    out = {}
    for r in rows:
        if r["pass"] != "up":
            continue
        ctas = int(r["ctas"])
        rows_, cols = (int(x) for x in r["grid"].split("x"))
        gpu = dataclasses.replace(base, clock_ghz=_f(r, "probe_clock_ghz"))
        dram = _f(r, "dram_tbs") * _f(r, "ms") * 1e9 if measured_misses else None
        p = sim.predict(s, rows_ * s.block_m, cols * s.block_n, K, gpu=gpu, mmas=kind == "mma",
                        loads=kind == "load", ctas_per_sm=max(1, ctas // 132) if kind == "load" else None,
                        hbm_read_bytes=dram, hbm_read_source="the sweep's DRAM counter")
        out[ctas] = p.ms / _f(r, "ms")
    return out


def test_model_on_the_wgmma_sweep_out_of_sample(sweeps):
    """The WGMMA-only loop on 12 to 396 CTAs (1-3 per SM, 1.51-1.81 GHz counted), none of them
    used to set the model: within 3% at every point."""
    ratios = _model_over_measured(sweeps[0], "mma")
    assert len(ratios) == 9 and all(0.97 < x < 1.03 for x in ratios.values()), ratios


def test_model_on_the_load_sweep_with_every_sm_busy(sweeps):
    """Every SM busy (the GEMMs' regime), one to three CTAs per SM, given each point's DRAM
    bytes: within 7% (-5.7..+5.9%)."""
    ratios = _model_over_measured(sweeps[1], "load", measured_misses=True)
    assert len(ratios) == 9 and all(0.93 < ratios[g] < 1.07 for g in (132, 264, 396)), ratios


@pytest.mark.xfail(strict=True, reason="a box that misses L2 in part waits for its last line: run 174's 2-stage "
                   "loop on 16-66 SMs turns a stage round in ~790 ns with misses against ~470 with hits "
                   "(docs/research/notes.md 178), where the model blends the box's latency by the miss rate; "
                   "with a lone SM's port as measured (160 B/ns) this ring on 12-110 busy SMs comes out 19-30% "
                   "fast. The full grid's fitted port, scaled to the SMs that pull, once stood in for that latency "
                   "(-5.6..+6.0% here)")
def test_model_on_the_load_sweep_with_few_sms_busy(sweeps):
    """The load-only loop on 12 to 110 CTAs at 1.98 GHz, given each point's DRAM bytes: within
    7%. On few busy SMs it pulls at the rate of a ring of two stages waiting on misses, though
    only 9-29% of its bytes miss."""
    ratios = _model_over_measured(sweeps[1], "load", measured_misses=True)
    assert all(0.93 < ratios[g] < 1.07 for g in (12, 24, 44, 66, 88, 110)), ratios


@pytest.mark.xfail(strict=True, reason="sim/convoy.py's free-running replay loses every shared panel on these "
                   "one-wave grids with K = 131072 (2048 K steps to drift over): 8.9 and 14.4 GB where the loop "
                   "read 2.8 and 8.0 at two and three CTAs per SM, so the model is 22-25% slow on them with its own "
                   "bytes; the leaders' port cost, which pulls real CTAs back together, is not in the replay")
def test_model_on_the_load_sweep_with_its_own_bytes(sweeps):
    ratios = _model_over_measured(sweeps[1], "load")
    assert all(0.93 < ratios[g] < 1.07 for g in (264, 396)), ratios
