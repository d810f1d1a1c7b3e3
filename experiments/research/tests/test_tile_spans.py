"""CPU tests of experiments/research/tile_spans.py: the static order it attributes units by, its
greedy replay, and the summary of run 49's committed record (docs/research/notes.md 103; taken
on the next-unit lookahead build of docs/research/patches/, ~1% faster per unit than 4d8c3a2's)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import tile_spans
from gemm.schedule import from_spec

RECORD = logs_dir() / "bench" / "run49-tile-spans.npz"


def test_units_follow_the_persistent_kernels_round_robin():
    # 512 tiles of 128x256 on 132 CTAs: 116 walk four, 16 walk three
    per = tile_spans.units_per_cta(from_spec("v7"), 4096, 4096, 132)
    assert sum(per) == 512 and per.count(4) == 116 and per.count(3) == 16 and per[:116] == [4] * 116
    # a cluster's two CTAs walk the same units: 256 cluster units on 66 slots
    pair = tile_spans.units_per_cta(from_spec("v7:block_m=256,block_n=128,cluster_n=2"), 4096, 4096, 132)
    assert pair[0::2] == pair[1::2] and sum(pair) == 2 * 256


def test_greedy_replay_gives_units_to_the_first_free_slot():
    # two slots, one twice as fast: of three units the fast slot takes two
    assert tile_spans.greedy_end([0.0, 0.0], [1.0, 2.0], 3) == pytest.approx(2.0)
    # equal slots: the replay is the static round robin's
    assert tile_spans.greedy_end([0.0] * 4, [1.0] * 4, 10) == pytest.approx(3.0)


@pytest.mark.skipif(not RECORD.exists(), reason="run 49's record is not in this checkout")
def test_run49_large_tiles_are_tensor_bound_and_evenly_spread():
    rows = tile_spans.summarize(RECORD)
    assert [r["name"] for r in rows] == [c[0] for c in tile_spans.CASES]
    for r in rows:
        assert 1.2 < r["clock_ghz"] < 1.99
        # the K loops run the tensor cores at 92-99% of their peak per clock
        assert 0.90 < r["tensor_share"] <= 1.0
        # handing units out dynamically would have saved under 2%: the CTAs run alike
        assert 0.98 * r["span_us"] < r["greedy_us"] <= r["span_us"] + 0.5
