"""Each kernel timed as the seed times them: alone, 20 warm-ups, ten launches, every CTA stamped
(run 31, experiments/results/h200-sxm/launch_spread.csv; the study:
experiments/research/launch_spread.py), and the model given each launch's clock and bytes."""
import dataclasses
from collections import defaultdict

import numpy as np
import pytest

from experiments import catalog
from experiments.paths import read_rows, results_dir
from sim import predict
from sim.hardware import load_profile

GPU = "h200-sxm"


@pytest.fixture(scope="module")
def spread():
    by = defaultdict(list)
    for row in read_rows(results_dir() / "launch_spread.csv"):
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
    prof = load_profile(GPU)
    return {name: (predict(catalog.schedule(name), 8192, 8192, 8192,
                           gpu=dataclasses.replace(prof, clock_ghz=_median(rows, "clock_ghz_settled")),
                           hbm_read_bytes=int(_median(rows, "replayed_dram_gb") * 1e9)).tflops,
                   _median(rows, "tflops"))
            for name, rows in spread.items()}


def test_given_each_launchs_clock_and_bytes_the_model_is_within_12_percent(spread):
    """Given each kernel's settled clock and replayed DRAM bytes: every kernel +3.7..+11.3% of its
    median measured TFLOPS (V2-local the most), V2-local below V2 and V1 as measured. Was
    +0.8..+3.4% with the miss charge 1.1 fitted on the loops' per-wave misses (docs/research/notes.md 77): per
    CTA, clock taken out, the model now sits at -8..+3% (test above), so what the whole launch
    adds beyond its CTAs' cycles is not in the port."""
    got = _at_launch_clock_and_bytes(spread)
    for name, (model, measured) in got.items():
        assert 1.0 < model / measured < 1.12, name
    assert got["v2-local"][0] < min(got["v2"][0], got["v1"][0])


@pytest.mark.xfail(strict=True, reason="given run 31's settled clocks and replayed bytes the model has V2 589 above V1 "
                   "583 (measured 548 < 562): V2 reads 3.0 GB there, and at a miss charge of 0.4 (fitted on the "
                   "load-only loops with the model's own misses, docs/research/notes.md 77) its 1.4 GB more than V1 cost it less "
                   "than its ring gains; with the old 1.1 the order was right (+0.8..+3.4%)")
def test_given_each_launchs_clock_and_bytes_the_model_orders_the_seeds_kernels(spread):
    got = _at_launch_clock_and_bytes(spread)
    assert got["v2-local"][0] < got["v2"][0] < got["v1"][0]


def test_with_per_wave_bytes_v2_comes_out_above_v1():
    prof = load_profile(GPU)
    assert (predict(catalog.schedule("v2"), 8192, 8192, 8192, gpu=prof, reuse="per-wave").tflops
            > predict(catalog.schedule("v1"), 8192, 8192, 8192, gpu=prof).tflops)
