"""CPU test of experiments/research/gpc_stream.py: its kernel assembles for every cluster size it
launches, its shares cover the buffer once, and the GPCs come out of the clusters' SM ids."""
import pytest

from experiments.research import gpc_stream as gs


@pytest.mark.parametrize("cluster", (1, 2, 8, 16))
def test_the_stream_kernel_assembles_for_each_cluster_size(cluster):
    pytest.importorskip("numba.cuda")
    from gemm.compile import assemble
    ptx = gs.stream_ptx(cluster)
    assert (f".reqnctapercluster {cluster}, 1, 1" in ptx) == (cluster > 1)
    # one bulk copy issued in the ring's fill and one in its loop, each after its expect_tx
    assert ptx.count("cp.async.bulk.shared::cluster.global") == 2 and ptx.count("expect_tx") == 2
    cubin, log = assemble(ptx)
    assert cubin[:4] == b"\x7fELF" and "0 bytes spill" in log


@pytest.mark.parametrize("cluster,boxes", ((1, 1), (2, 2), (1, 4), (1, 8)))
def test_the_tiled_kernel_loads_its_boxes_side_by_side_a_stage(cluster, boxes):
    pytest.importorskip("numba.cuda")
    from gemm.compile import assemble
    ptx = gs.tiled_ptx(cluster, boxes)
    # the fill and the loop each issue a stage's boxes, each only where the slice still has it,
    # and expect the bytes of those it issues; the ring's bytes stay SHARED however wide a stage
    assert ptx.count("@two cp.async.bulk.tensor.2d") == ptx.count("cp.async.bulk.tensor.2d") == 2 * boxes
    assert ptx.count(f"@two add.u32 txb, txb, {gs.BOX // 2}") == 2 * boxes
    stages = gs.SHARED // (boxes * gs.BOX // 2)
    assert f".b64 bars[{stages}]" in ptx and f"and.b32 s, j, {stages - 1}" in ptx
    cubin, log = assemble(ptx)
    assert cubin[:4] == b"\x7fELF" and "0 bytes spill" in log


@pytest.mark.parametrize("boxes", (2, 4))
def test_the_packed_kernel_reads_each_stage_from_one_run_of_rows(boxes):
    """Packed, box (tile, kb) is rows 64 (tile x kboxes + kb) of a 64-column map: the corner's
    column is 0 and its row follows the box; unpacked, the column follows the box and the row is
    the tile's."""
    pytest.importorskip("numba.cuda")
    from gemm.compile import assemble
    packed, plain = gs.tiled_ptx(1, boxes, packed=True), gs.tiled_ptx(1, boxes)
    assert packed.count("@two mad.lo.u32 prow, tile, kboxes, kb2;") == 2 * boxes
    assert packed.count("@two mov.u32 kc, 0;") == 2 * boxes and "shl.b32 kc" not in packed
    assert plain.count("@two mov.u32 prow, row;") == 2 * boxes and "mad.lo.u32 prow" not in plain
    assert packed.count("[tmap, {kc, prow}]") == plain.count("[tmap, {kc, prow}]") == 2 * boxes
    cubin, log = assemble(packed)
    assert cubin[:4] == b"\x7fELF" and "0 bytes spill" in log


def test_equal_shares_cover_every_box_once():
    cuts = gs.equal_shares(5504, 132)
    assert cuts[0] == 0 and cuts[-1] == 5504 and len(cuts) == 133
    sizes = [b - a for a, b in zip(cuts, cuts[1:])]
    assert max(sizes) - min(sizes) <= 1


def test_weighted_shares_follow_the_weights_and_skip_absent_sms():
    cuts = gs.weighted_shares(300, {3: 1.0, 7: 2.0})
    assert len(cuts) == gs.TABLE + 1 and cuts[-1] == 300
    share = {sm: cuts[sm + 1] - cuts[sm] for sm in range(gs.TABLE)}
    assert share[3] == 100 and share[7] == 200 and sum(share.values()) == 300
    assert all(v == 0 for sm, v in share.items() if sm not in (3, 7))


def test_gpcs_merge_the_sms_that_shared_a_cluster_in_any_launch():
    launches = [[(0, 0), (1, 0), (2, 1), (3, 1)], [(1, 5), (2, 5), (4, 6)]]
    assert gs.gpcs_from_clusters(launches) == [[0, 1, 2, 3], [4]]


def test_run_222s_record():
    """Run 222 (docs/research/notes.md item 227): the stream's time is the HBM's, not the slowest
    GPC's; the decode tile's box pattern costs over a second beside contiguous copies."""
    from experiments.paths import logs_dir
    rows = {r["case"]: r for r in gs.summarize(logs_dir() / "bench" / "run222-gpc-stream.npz")["rows"]}
    assert all(r["distinct_sms"] for r in rows.values())
    equal, by_rate = rows["down/equal-132"], rows["down/by-sm-rate"]
    # shares by each SM's rate end the CTAs together, and the call is no shorter
    assert by_rate["end_spread_us"] < 0.5 * equal["end_spread_us"]
    assert abs(by_rate["us"] - equal["us"]) < 0.02 * equal["us"]
    # fewer SMs in large clusters: slower
    assert rows["down/equal-112-clusters-of-16"]["us"] > 1.05 * equal["us"]
    tiled = [r["us"] for k, r in rows.items() if k.startswith("down/tiled-")]
    assert len(tiled) == 10 and min(tiled) > equal["us"] + 0.8
