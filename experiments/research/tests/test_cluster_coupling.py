"""CPU test of experiments/research/cluster_coupling.py: its shapes, its ping-pong kernel and
run 200's record (docs/research/notes.md 206)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import cluster_coupling as cc
from sim.hardware import load_profile

DUMP = logs_dir() / "bench" / "run200-cluster-coupling.npz"


@pytest.mark.parametrize("walk", cc.WALKS)
def test_each_shape_gives_every_cta_the_same_whole_tiles(walk):
    for _, _, bm, bn in cc.PAIRS:
        m, n, _ = cc.walk_shape(bm, bn, walk, 1024)
        rows, cols = m // bm, n // bn
        assert m % bm == 0 and n % bn == 0 and rows % 2 == 0
        assert rows * cols == cc.SMS * walk


@pytest.mark.parametrize("side", cc.SIDES)
def test_the_pingpong_kernel_assembles_as_a_cluster_of_two(side):
    pytest.importorskip("numba.cuda")
    from gemm.compile import assemble
    ptx = cc.pingpong_ptx(side)
    assert ".reqnctapercluster 2, 1, 1" in ptx
    loop = ptx.split("LOOP:")[1].split("DONE:")[0]
    # side 0 arrives before its wait, side 1 after: one arrive and one wait a round each
    assert loop.count("mbarrier.arrive.shared::cluster") == 2 and loop.count("try_wait") == 1
    assert ("%cluster_ctarank" in ptx) and (("xor.b32 other, rank, 1" in ptx) == (side == "remote"))
    cubin, _ = assemble(ptx)
    assert cubin[:4] == b"\x7fELF"


@pytest.fixture(scope="module")
def summary():
    return cc.summarize(DUMP)


def test_every_kernel_was_right_and_timed(summary):
    assert summary["max_rel_err"] < 1e-3
    assert len(summary["rows"]) == len(cc.PAIRS) * len(cc.WALKS) * len(cc.KS)
    assert all(r["plain_us"] > 0 and r["clustered_us"] > 0 for r in summary["rows"])


def test_a_remote_arrive_is_slower_than_a_local_one(summary):
    ping = summary["pingpong_clk"]
    assert ping["remote/66"] > ping["local/66"] + 50


def test_the_pair_costs_a_launch_whatever_its_walk(summary):
    """At K 1024 the clustered call is longer by about the same whatever the walk (1 to 8 tiles
    a CTA): a cost a launch, not a tile."""
    extra = [r["clustered_us"] - r["plain_us"] for r in summary["rows"] if r["k"] == 1024]
    assert min(extra) > 0.8 and max(extra) < 2.8


def test_the_profile_carries_the_calibrated_figures(summary):
    prof = load_profile("h200-sxm")
    assert prof.cluster_arrive_clk == summary["calibrated"]["cluster_arrive_clk"]
    assert prof.cluster_launch_us == pytest.approx(summary["calibrated"]["cluster_launch_us"])
