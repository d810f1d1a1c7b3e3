"""CPU test of experiments/research/l2_loaded_latency.py: its kernel assembles without spills,
the one-queue fit gives back the form it was made from, and the summary reads a record as the
dump writes it (clocks to ns by each probe's own clock, bytes a ns over each CTA's span)."""
import json

import numpy as np
import pytest

from experiments.research import l2_loaded_latency as ll


def test_the_kernel_assembles_without_spills():
    pytest.importorskip("numba.cuda")
    from gemm.compile import assemble
    ptx = ll.kernel_ptx()
    # the probe's one load, the streamer's one (with its L2 policy), each after its expect_tx
    assert ptx.count("cp.async.bulk.tensor.2d") == 2 and ptx.count("expect_tx") == 2
    assert ptx.count(".L2::cache_hint") == 1
    assert f".b64 bars[{ll.STAGES}]" in ptx
    cubin, log = assemble(ptx)
    assert cubin[:4] == b"\x7fELF" and "0 bytes spill" in log


def test_every_condition_fits_the_grid_and_the_ring():
    names = [c[0] for c in ll.CONDITIONS]
    assert len(set(names)) == len(names)
    for _, streamers, kind, depth, period in ll.CONDITIONS:
        assert ll.PROBES + streamers <= ll.SMS and 1 <= depth <= ll.STAGES and period >= 0
        assert kind in ("hit", "miss")
    assert (ll.POLL & (ll.POLL - 1)) == 0
    # the probes' panels and the hit streamers' stay in L2 (34.6 MiB as two readers see it)
    assert ll.SMS * ll.BOX_ROWS * ll.HIT_BOXES * ll.BOX_COLS * 2 < 30 * 2**20


def test_the_one_queue_fit_gives_back_its_form():
    rates = [0.0, 2000.0, 5000.0, 8000.0, 11000.0]       # bytes a ns
    lat = [ll.one_queue_ns(300.0, 14000.0, r) for r in rates]
    l0, capacity = ll.fit_one_queue(rates, lat)
    assert l0 == pytest.approx(300.0) and capacity == pytest.approx(14000.0)
    assert ll.one_queue_ns(300.0, 14000.0, 14000.0) == float("inf")


def _run(ghz: float, lat_ns: list[float], streamers: int, streamer_boxes: int, span_ns: int) -> dict:
    """A launch as the kernel stamps it: PROBES probes of len(lat_ns) boxes each at `ghz`."""
    stamps = []
    for c in range(ll.PROBES):
        stamps.append([c, 1, 1000, 1000 + span_ns, 5000, 5000 + int(ghz * span_ns), len(lat_ns)])
    for c in range(streamers):
        stamps.append([ll.PROBES + c, 0, 1000, 1000 + span_ns, 7000, 7000 + int(ghz * span_ns), streamer_boxes])
    lat = [int(round(x * ghz)) for x in lat_ns] * ll.PROBES
    return {"lat": lat, "stamps": stamps}


def test_the_summary_reads_the_dump(tmp_path):
    span = 100_000                                       # ns
    launches = {"alone": [_run(1.5, [300.0] * 8, 0, 0, span)] * 3,
                "loaded": [_run(1.9, [600.0] * 8, 128, 400, span)] * 3,
                "miss": [_run(1.9, [500.0] * 8, 128, 200, span)] * 3}
    conditions = {"alone": {"streamers": 0, "kind": "hit", "depth": 1, "period": 0},
                  "loaded": {"streamers": 128, "kind": "hit", "depth": 8, "period": 0},
                  "miss": {"streamers": 128, "kind": "miss", "depth": 8, "period": 0}}
    path = tmp_path / "rec.npz"
    np.savez_compressed(path, record=json.dumps({"provenance": {"gpu": "test"}, "conditions": conditions,
                                                 "launches": launches}))
    s = ll.summarize(path)
    rows = {r["condition"]: r for r in s["rows"]}
    assert rows["alone"]["probe_ns"] == pytest.approx(300.0, rel=1e-3)
    assert rows["loaded"]["probe_ns"] == pytest.approx(600.0, rel=1e-3)
    # the probes' 8 boxes and 128 streamers' 400 boxes of 16 KB over 100 us
    moved = (ll.PROBES * 8 + 128 * 400) * ll.BOX / span / 1e3
    assert rows["loaded"]["tbs"] == pytest.approx(moved, rel=1e-6)
    assert all(r["distinct_sms"] for r in rows.values())
    # two hit conditions: the fit goes through both, and the miss row is judged, not fitted
    assert rows["loaded"]["one_queue_ns"] == pytest.approx(600.0, rel=1e-6)
    assert s["l0_ns"] == pytest.approx(300.0, rel=1e-2)


def test_a_capacity_past_the_hits_reach_is_said_to_be_no_ceiling():
    """The fit's R is the form's extrapolation when the hits' latency stayed flat over the loads
    reached; the summary's line says so, and says nothing where R lies within reach."""
    flat = {"l0_ns": 227.0, "capacity_tbs": 43.9, "reach_tbs": 8.47}
    assert "not a measured ceiling" in ll.fit_line(flat)
    near = {"l0_ns": 300.0, "capacity_tbs": 12.0, "reach_tbs": 10.0}
    assert "not a measured ceiling" not in ll.fit_line(near) and "R 12.00 TB/s" in ll.fit_line(near)
