"""CPU test of experiments/research/last_round.py's record, run 203 (docs/research/notes.md 209),
and of the model's term it calibrates (sim.engines.last_round_ctas, last_round_share)."""
import dataclasses

import pytest

from experiments.paths import logs_dir
from experiments.research import last_round
from gemm.schedule import from_spec
from sim.engines import last_round_ctas, last_round_share, launch_grid
from sim.hardware import load_profile

DUMP = logs_dir() / "bench" / "run203-last-round.npz"
LONG_K = logs_dir() / "bench" / "run206-last-round.npz"   # K 4096 again and K 16384


@pytest.fixture(scope="module")
def summary():
    return last_round.summarize(DUMP)


def test_every_kernel_was_right_and_the_model_holds_whole_rounds(summary):
    assert summary["max_rel_err"] < 1e-3
    whole = [r for r in summary["rows"] if r["last_round_ctas"] in (0, last_round.SMS)]
    assert len(whole) == 2 * len(last_round.TILES)
    assert all(abs(r["model_us"] / r["measured_us"] - 1) < 0.01 for r in whole)


def test_a_thin_last_round_costs_less_than_a_whole_one(summary):
    for r in summary["rows"]:
        if 0 < r["last_round_ctas"] <= 72:
            assert 0.75 < r["last_round_share"] < 0.85
        elif 72 < r["last_round_ctas"] < last_round.SMS:
            assert 0.85 < r["last_round_share"] < 0.95


def test_the_profile_carries_the_calibrated_figures(summary):
    prof = load_profile("h200-sxm")
    assert prof.last_round_floor == pytest.approx(summary["calibrated"]["last_round_floor"])
    assert prof.last_round_slope == pytest.approx(summary["calibrated"]["last_round_slope"])
    # with them the model gives each partial round within 2 points of what was measured
    assert all(abs(r["model_last_round_share"] - r["last_round_share"]) < 0.02 for r in summary["rows"])


def test_the_share_does_not_depend_on_k():
    rows = last_round.summarize(LONG_K)["rows"]
    assert {r["k"] for r in rows} == {4096, 16384}
    for r in rows:
        if 0 < r["last_round_ctas"] < last_round.SMS:
            twin = next(o for o in rows if o["k"] != r["k"] and o["tile"] == r["tile"] and o["tiles"] == r["tiles"])
            assert abs(r["last_round_share"] - twin["last_round_share"]) < 0.05
            assert abs(r["last_round_share"] - r["model_last_round_share"]) < 0.05


def test_the_last_round_counts_the_ctas_with_one_more_tile():
    v7 = from_spec("v7")
    assert last_round_ctas(launch_grid(v7, 1536, 6400, 4096, slots=132)) == 36     # 300 tiles
    assert last_round_ctas(launch_grid(v7, 1536, 8448, 4096, slots=132)) == 0      # 396: three whole
    assert last_round_ctas(launch_grid(v7, 1024, 1024, 4096, slots=132)) == 0      # 32: one each
    assert last_round_ctas(launch_grid(from_spec("v7:stream_k=true"), 1536, 6400, 4096, slots=132)) == 0


def test_the_share_floors_and_reaches_a_whole_round():
    prof = load_profile("h200-sxm")
    assert last_round_share(prof, 10, 132) == prof.last_round_floor
    assert last_round_share(prof, 132, 132) == 1.0
    assert prof.last_round_floor < last_round_share(prof, 108, 132) < 1.0
    bare = dataclasses.replace(prof, last_round_floor=1.0, last_round_slope=0.0)   # the fields' defaults
    assert last_round_share(bare, 10, 132) == 1.0
