"""CPU tests of the pipeline model (sim/): bounds, invariants, the seed's figures."""
import pytest

import sim
from experiments import catalog
from experiments.calibrate_clock import LOAD_LOOP_CALIBRATION
from gemm.schedule import PRESETS, ScheduleError, preset
from sim.engines import memory_traffic, residency, waves
from sim.hardware import load_profile

N = 8192
GPUS = ("h100-sxm", "h200-sxm")


@pytest.fixture(scope="module")
def seed():
    """V1, V2, V3 on the H100 profile at the seed's 8192^3, 128x128x64. The seed's V2 is the
    tutorial's: its per-stage phase array is runtime-indexed and lives in local memory."""
    return {"v1": sim.predict(preset("v1"), N, N, N, gpu="h100-sxm"),
            "v2": sim.predict(preset("v2", phase_storage="local"), N, N, N, gpu="h100-sxm"),
            "v3": sim.predict(preset("v3"), N, N, N, gpu="h100-sxm")}


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("version", sorted(PRESETS))
def test_never_above_the_tensor_peak_or_the_memory_feed(version, gpu):
    p = sim.predict(preset(version), N, N, N, gpu=gpu)
    g = load_profile(gpu)
    t = p.ms * 1e-3
    assert p.tflops <= g.peak_tflops * (1 + 1e-9)
    assert p.bytes["l2_to_sm_bytes"] / t <= g.l2_feed_bytes_per_clk() * g.clock_ghz * 1e9 * (1 + 1e-9)
    assert g.l2_feed_bytes_per_clk() <= g.l2_sm_bytes_per_clk * g.sm_count
    assert p.bytes["hbm_bytes"] / t <= g.hbm_read_bytes_per_s() * (1 + 1e-9)
    assert all(0 <= u <= 1 for u in p.utilization.values())


def test_deterministic():
    a = sim.predict(preset("v2"), 4096, 4096, 4096, gpu="h200-sxm").to_dict()
    b = sim.predict(preset("v2"), 4096, 4096, 4096, gpu="h200-sxm").to_dict()
    assert a == b


def test_more_stages_never_slower_without_block_sync_at_equal_residency():
    """An invariant the issue asks of the pipeline: with the HBM bytes held (each panel once per
    wave), a deeper ring at the same CTAs/SM is never slower. The H200 breaks it at one CTA/SM:
    V3 at 4, 5 and 6 stages runs 0.585, 0.578 and 0.499 of the peak per clock (run 15,
    clock_depth.csv), for a reason the model does not have (docs/research/notes.md item 15)."""
    g = load_profile("h100-sxm")
    by_ctas: dict[int, list[tuple[int, float]]] = {}
    for st in range(2, 8):
        s = preset("v3", stages=st)
        p = sim.predict(s, 4096, 4096, 4096, gpu=g, reuse="per-wave")
        by_ctas.setdefault(p.ctas_per_sm, []).append((st, p.tflops))
    for runs in by_ctas.values():
        tf = [t for _, t in sorted(runs)]
        assert all(b >= a * (1 - 1e-9) for a, b in zip(tf, tf[1:])), runs


def test_a_deeper_ring_can_lose_the_reuse_its_convoy_kept():
    """With the model's own bytes (sim/convoy.py) the invariant above has one exception, the
    H200's: V3 at 2 stages (2 CTAs/SM) is held in convoy, at 3 stages (still 2 CTAs/SM) its ring
    hides a miss and its CTAs run free, reading 2.5x the HBM bytes; measured 636 against 583
    TFLOPS at the clocks they start at (run 48), 2.31 against 3.6-6.8 GB (dram_reuse.csv)."""
    g = load_profile("h200-sxm")
    s2, s3 = (sim.predict(preset("v3", stages=st), N, N, N, gpu=g) for st in (2, 3))
    assert s2.ctas_per_sm == s3.ctas_per_sm == 2
    assert s3.bytes["hbm_read_bytes"] > 2 * s2.bytes["hbm_read_bytes"] and s3.tflops < s2.tflops


def test_bytes_moved_equal_the_tiles_bytes():
    s = preset("v2")
    tr = memory_traffic(s, N, N, N, per_wave=132 * 3)
    assert tr["l2_to_sm_bytes"] == 2 * N * N * N * (1 / s.block_m + 1 / s.block_n)
    assert abs(tr["l2_to_sm_bytes"] / 1e9 - 17.18) < 0.01
    assert tr["hbm_read_bytes"] <= tr["l2_to_sm_bytes"]
    assert tr["hbm_read_bytes"] >= 2 * N * N * 2  # A and B at least once


def test_wave_quantization_just_over_a_wave():
    s = preset("v3", stages=4)  # one CTA per SM: a wave is 132 tiles
    assert residency(s, load_profile("h100-sxm"))["ctas_per_sm"] == 1
    one = sim.predict(s, 128 * 132, 128, 2048, gpu="h100-sxm")
    over = sim.predict(s, 128 * 133, 128, 2048, gpu="h100-sxm")
    assert one.wave_info["waves"] == 1 and over.wave_info["waves"] == 2
    assert over.ms > 1.8 * (one.ms - load_profile("h100-sxm").launch_us * 1e-3)
    assert waves(133, 132, 1)["tail_ctas"] == 1


def test_residency_trade_of_the_ring():
    """Each 128x128x64 stage costs 32 KB: deeper rings leave fewer CTAs per SM."""
    g = load_profile("h100-sxm")
    ctas = [residency(preset("v2", stages=st), g)["ctas_per_sm"] for st in range(2, 8)]
    assert ctas == sorted(ctas, reverse=True) and ctas[0] > ctas[-1] == 1
    assert residency(preset("v1"), g)["limited_by"] == "registers"


def test_impossible_schedules_are_refused():
    with pytest.raises(ScheduleError):
        preset("v2", block_n=256)  # 256 accumulator registers per thread: would spill
    with pytest.raises(ScheduleError):
        preset("v2", stages=8)     # 8 x 32 KB > 227 KB
    with pytest.raises(ScheduleError):
        sim.predict(preset("v2"), N, N, N, dtype="float64")


def test_l2_share_is_the_port_or_an_even_share_of_the_aggregate():
    g = load_profile("h100-sxm")
    assert g.l2_share_bytes_per_clk(g.sm_count) == pytest.approx(
        min(g.l2_sm_bytes_per_clk, g.l2_read_bytes_per_clk / g.sm_count))
    assert g.l2_share_bytes_per_clk(4) == g.l2_sm_bytes_per_clk  # a few SMs alone: their ports
    assert g.l2_feed_bytes_per_clk() <= g.l2_sm_bytes_per_clk * g.sm_count


@pytest.mark.xfail(strict=True, reason="the L2->SM port is calibrated in ns on the 128x128x64 load-only loop "
                   "(9.2-9.6 TB/s, the same in either raster order) and carries 9.9 TB/s of 128-B-row hits; "
                   "the 64x256x64 V2 GEMM moves 11.3-12.0 TB/s in column order with the same 128-B rows; the load-only "
                   "loops that set the port had 2.7-3.7x more DRAM misses than the model assumed for them (run 19), "
                   "so the port's rate is fitted against wrong miss costs (docs/research/model-passes.md, ninth pass); in row order "
                   "the same GEMM reads 4.8x the DRAM bytes (lost L2 reuse, run 18) and its load-only loop moves 6.4 TB/s")
def test_l2_feed_is_not_below_what_the_h200_measured():
    """64x256x64 V2 moved 21.5 GB L2->SM in <= 1.87 ms on the H200 (>= 11.5 TB/s): the
    profile may not cap the L2 feed of 128-B box rows (K-major, block_k=64) that hit L2 below
    that. Sixth pass: counted in TB/s at the profile clock (the path is in ns), requests included."""
    g = load_profile("h200-sxm")
    hz = g.clock_ghz * 1e9
    row_clk = (g.l2_request_clk + 128 / g.l2_sm_bytes_per_clk if g.l2_request_additive
               else max(g.l2_request_clk, 128 / g.l2_sm_bytes_per_clk))
    feed = min(g.sm_count * 128 / row_clk, g.l2_feed_bytes_per_clk()) * hz
    assert feed >= 11.5e12


def test_short_box_rows_cost_a_request_each():
    """block_k=16 boxes have 32-B rows: one L2 request each, 2 clk apiece, so a V2 ring
    cannot outrun V1 by more than a little when both wait on the request rate."""
    g = load_profile("h200-sxm")
    v1 = sim.predict(preset("v1", block_k=16), N, N, N, gpu=g)
    v2 = sim.predict(preset("v2", block_k=16, stages=3), N, N, N, gpu=g)
    assert v2.tflops < 1.15 * v1.tflops
    assert v2.utilization["tma"] > 0.8  # the request rate, not bytes, is what binds
    t = v2.ms * 1e-3
    requests = 64 * 64 * (N // 16) * 256
    assert requests * g.l2_request_clk / g.sm_count / (g.clock_ghz * 1e9) <= t * (1 + 1e-9)


def test_tma_writes_do_not_share_wgmma_smem_port():
    """Sharing the 128 B/clk port caps a 128x128x64 K tile at 80% of the tensor peak per
    clock; the H200 measured V2 s3 at 89.5% (clock.csv, in-kernel clock): refuted, off."""
    import dataclasses
    g = load_profile("h200-sxm")
    assert not g.tma_writes_share_smem
    on = dataclasses.replace(g, tma_writes_share_smem=True)
    s3 = preset("v2", stages=3)
    assert sim.predict(s3, N, N, N, gpu=on).pct_of_peak <= 80.0 + 1e-6 < 89.5
    assert sim.predict(s3, N, N, N, gpu=g).pct_of_peak > 80.0


def test_profiles_take_the_measured_sustained_clock():
    """sim/profiles/*.json: the H200's in-kernel clock under dense GEMMs; the H100 (same die,
    same 700 W) assumed the same; both well below the datasheet peak's 1.83 GHz."""
    import json
    from sim.hardware import PROFILES_DIR
    h200, h100 = load_profile("h200-sxm"), load_profile("h100-sxm")
    data = json.loads((PROFILES_DIR / "h200-sxm.json").read_text())
    assert h200.clock_ghz == data["parameters"]["clock_ghz"] == h100.clock_ghz
    assert "clock.csv" in data["provenance"]["clock_ghz"]
    assert 1.149 <= h200.clock_ghz <= 1.50  # inside the measured dense-GEMM range


def test_local_phase_array_costs_more_than_register_phases():
    g = load_profile("h200-sxm")
    assert g.phase_local_clk > 0 and g.runtime_index_clk < g.runtime_index_clk + g.phase_local_clk
    reg = sim.predict(preset("v2", stages=4), 4096, 4096, 4096, gpu=g)  # 1 CTA/SM: latency exposed
    loc = sim.predict(preset("v2", stages=4, phase_storage="local"), 4096, 4096, 4096, gpu=g)
    assert loc.tflops < reg.tflops
    assert loc.breakdown["index"] > reg.breakdown["index"]


def test_ring_without_syncs_is_a_model_only_schedule():
    s, notes = sim.model_schedule(preset("v2"), syncs_per_iter=0)
    assert s.syncs_per_iter == 0 and notes
    p = sim.predict(s, 4096, 4096, 4096, gpu="h100-sxm")
    assert p.tflops > 0


def test_profile_override_file(tmp_path):
    (tmp_path / "h200-sxm.json").write_text('{"parameters": {"clock_ghz": 1.7}}')
    assert load_profile("h200-sxm", tmp_path).clock_ghz == 1.7
    assert load_profile("h100-sxm", tmp_path).clock_ghz == 1.83  # no file: built-in
    (tmp_path / "h100-sxm.json").write_text('{"nope": 1}')
    with pytest.raises(ValueError):
        load_profile("h100-sxm", tmp_path)


# ---- the seed's figures (H100 SXM, 8192^3 fp16, 128x128x64) ----
# The model's parameters are not fitted to these. Where it misses, the marker says by
# how much; strict=True turns a later pass (after calibration) into a prompt to drop it.
def test_seed_v3_above_v1(seed):
    """V3 at its preset depth, 2 stages (the fastest V3 measured at this tile on the H200; 4
    stages, one CTA/SM, measured 28% slower), 2 CTAs/SM: 589 against V1's 579, a 1.7% margin.
    The H200 puts it above V1 too: 550-557 against 478-483 taking turns (seed pair, run 14),
    558 against 554 each alone."""
    assert seed["v3"].tflops > seed["v1"].tflops


def test_seed_v1_540(seed):
    """At the H200's measured sustained clock (1.30 GHz, not fitted to 540): 579 (+7.2%), held in
    convoy (its per-wave 1.77 GB from HBM), the L2->SM port calibrated in ns on the load-only
    loops (load_loop.csv) with the misses the model gives them (docs/research/notes.md 77)."""
    assert seed["v1"].tflops == pytest.approx(540, rel=0.10)


def test_seed_v2_518(seed):
    """565 (+9.1%): V2's ring hides a miss's extra latency, so nothing holds a panel's sharers
    together; its free-running CTAs (12 fast SMs and a 3.35% spread, measured on the H200's
    rings in a grouped raster, transferred) read 5.3 GB from HBM where a convoy reads 1.77: the
    seed's Nsight line, DRAM 25% -> 68% (~4.8 GB). Nothing fitted to 518 (docs/research/notes.md 76-77)."""
    assert seed["v2"].tflops == pytest.approx(518, rel=0.10)


def test_seed_v2_below_v1_and_v3_above_both(seed):
    """565 < 579 < 589: V2 pays for the reuse it loses (its misses' port time and HBM); V1 and V3
    (2 stages) are held in convoy and read their per-wave bytes."""
    assert seed["v2"].tflops < seed["v1"].tflops < seed["v3"].tflops
    assert seed["v2"].bytes["hbm_read_bytes"] > 2.5 * seed["v1"].bytes["hbm_read_bytes"]


@pytest.mark.xfail(strict=True, reason="the seed's own note: under Nsight Compute's fixed replay clock V2 profiled "
                   "slightly faster than V1 (2.12 ms against 2.15, +1.4%), only CUDA-event timing at full boost put "
                   "it 4% slower. The model counts V2's lost reuse at any clock (its misses' port time and HBM), so at "
                   "its one clock V2 is 2.4% below V1 (565 / 579); the H200 per clock has V2 ahead (V2 local 84.4%, "
                   "V1 78.3% of the peak per clock, clock.csv), the lost reuse costing it mostly its clock. Until "
                   "the per-miss cost is split between time and clock, the model has the boost-clock order only")
def test_seed_order_at_one_clock(seed):
    assert 1.0 < seed["v2"].tflops / seed["v1"].tflops < 1.06


@pytest.mark.xfail(strict=True, reason="V1's reason names the block-wide syncs, but its bound reads 'L2->SM bandwidth', "
                   "not 'latency': its 3 CTAs/SM pull 93% (>= the 90% label threshold) of the L2->SM port "
                   "calibrated on load_loop.csv")
def test_seed_v1_reason_is_visible(seed):
    p = seed["v1"]
    assert p.bound == "latency" and "block-wide sync" in p.reason


def test_seed_v2_reason_is_visible(seed):
    """V2: the tensor cores idle at the block-wide syncs while the L2 share is saturated."""
    p = seed["v2"]
    assert "tensor cores" in p.reason and p.utilization["tensor"] < 0.9


# ---- the load-free loop microbenchmark (gemm/kernels/ring.py, mma_loop_only; experiments/results/h200-sxm/mma_loop.csv) ----
MMA_LOOP_CALIBRATION = ("mma loop 128x128x64 s2", "mma loop 128x128x64 s4")   # 3 and 1 CTAs/SM: set the WGMMA fill and tail


def _v2_of_row(r):
    return preset("v2", block_m=int(r["block_m"]), block_n=int(r["block_n"]), block_k=int(r["block_k"]),
                  stages=int(r["stages"]))


def _microbench_rows(csv_name, measured_column, schedule_of=_v2_of_row, **predict_options):
    """{schedule: (prediction at the row's in-kernel clock, measured value)} for a microbenchmark
    CSV in experiments/results/h200-sxm/, each row's schedule `schedule_of(row)` (the V1/V2 ring
    of the row's tile unless said); an option given as a function is read off the row."""
    import csv
    import dataclasses
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "experiments" / "results" / "h200-sxm" / csv_name
    rows = list(csv.DictReader(ln for ln in path.read_text().splitlines() if not ln.startswith("#")))
    g = load_profile("h200-sxm")
    out = {}
    for r in rows:
        s = schedule_of(r)
        options = {k: (v(r) if callable(v) else v) for k, v in predict_options.items()}
        p = sim.predict(s, N, N, N, gpu=dataclasses.replace(g, clock_ghz=float(r["clock_ghz"])), **options)
        out[r["schedule"]] = (p, float(r[measured_column]))
    return out


def _mma_loop_rows():
    return _microbench_rows("mma_loop.csv", "tensor_util_per_clock", loads=False)


def test_load_free_loop_matches_the_mma_loop_microbenchmark():
    """Per SM clock, at each row's in-kernel clock. Calibration rows (128x128x64 at 3 and 1 CTAs/SM)
    within 2%. Held out (128x128x64 at 2 CTAs/SM, 128x192x64, 64x128x64; today +5.0%, +2.8%,
    -2.4%) within 8%: the spread of the five rows' clocks (1.57-1.71 GHz) and the assumed CTA
    launch / epilogue costs (~2% of a 1-CTA wave) leave a few percent, and 8% still rejects the
    parameters before this calibration (3 CTAs/SM +4.2%, 2 CTAs/SM +9.4%, 1 CTA/SM -15.9%)."""
    rows = _mma_loop_rows()
    assert len(rows) == 5
    ctas = {k: p.ctas_per_sm for k, (p, _) in rows.items()}
    assert ctas == {"mma loop 128x128x64 s2": 3, "mma loop 128x128x64 s3": 2, "mma loop 128x128x64 s4": 1,
                    "mma loop 128x192x64 s2": 2, "mma loop 64x128x64 s2": 4}
    for name, (p, measured) in rows.items():
        err = p.pct_of_peak / 100 / measured - 1
        bound = 0.02 if name in MMA_LOOP_CALIBRATION else 0.08
        assert abs(err) <= bound, (name, p.pct_of_peak, measured)
    # the order of the three residencies is the measured one: 3 > 2 > 1 CTAs/SM
    util = [rows[f"mma loop 128x128x64 s{st}"][0].pct_of_peak for st in (2, 3, 4)]
    assert util[0] > util[1] > util[2]


def _mma_loop_small_tile_rows():
    """The load-free warp-specialized loop on the small grids' tiles (mma_loop_small_tiles.csv),
    each row the catalog's kernel of its name."""
    from experiments import catalog
    return _microbench_rows("mma_loop_small_tiles.csv", "tensor_util_per_clock",
                            schedule_of=lambda r: catalog.entry(r["schedule"]).schedule, loads=False)


def test_load_free_loop_matches_the_small_tiles_microbenchmark():
    """One warpgroup's 64x64 K tiles, 64 and 128 deep, set WGMMA's operand-read rate (the
    profile's wgmma_smem_bytes_per_clk: a K tile's 4 more m64n64k16 cost 162-166 clocks, 41 each);
    the other tiles are held out. Per SM clock, each row at its own clock: median error within 6%,
    every row within 20% (today 4.9% and -19.6%, 128x64x128 over two warpgroups, whose groups
    overlap better than the model's one tensor pipe lets them; before this rate and the group in
    flight, 4.9% and 23.6%, five rows beyond 10%). A group kept in flight (V5) runs the 64x128
    tile faster than V3's wait for each, as measured (294 against 414 clocks a K tile); the model
    once ran them alike."""
    import statistics
    rows = _mma_loop_small_tile_rows()
    assert len(rows) == 14 and {p.ctas_per_sm for p, _ in rows.values()} == {1}
    errors = {name: p.pct_of_peak / 100 / measured - 1 for name, (p, measured) in rows.items()}
    assert statistics.median(abs(e) for e in errors.values()) <= 0.06, errors
    assert max(abs(e) for e in errors.values()) <= 0.20, errors
    for bk in (64, 128):
        v3 = rows[f"mma loop v3 64x128x{bk} s{8 if bk == 64 else 4}"][0].pct_of_peak
        v5 = rows[f"mma loop v5 64x128x{bk} s{8 if bk == 64 else 4} wg1"][0].pct_of_peak
        assert v5 > 1.1 * v3


def test_loads_off_is_model_only_and_never_slower():
    g = load_profile("h200-sxm")
    for st in (2, 4):
        s = preset("v2", stages=st)
        off = sim.predict(s, 4096, 4096, 4096, gpu=g, loads=False)
        on = sim.predict(s, 4096, 4096, 4096, gpu=g)
        assert off.tflops >= on.tflops and off.utilization["hbm"] == 0 and off.notes
        assert "tma_wait" not in off.breakdown or off.breakdown["tma_wait"] < 0.05   # only the first fill
    for v in ("v3", "v5"):   # the specialized kernel's mma_loop_only mode
        off = sim.predict(preset(v), 4096, 4096, 4096, gpu=g, loads=False)
        on = sim.predict(preset(v), 4096, 4096, 4096, gpu=g)
        assert off.tflops >= on.tflops and off.utilization["hbm"] == 0 and off.notes


# ---- the load-only loop microbenchmark (gemm/kernels/ring.py, load_loop_only; experiments/results/h200-sxm/load_loop.csv) ----
# 128x128x64 at 3 and 1 CTAs/SM and 128x128x16 (request-bound) set l2_sm_bytes_per_ns, l2_miss_port_factor
# and l2_request_ns (sim/hardware.py), experiments.calibrate_clock.LOAD_LOOP_CALIBRATION; the others are held out


def _load_loop_rows():
    return _microbench_rows("load_loop.csv", "ms", mmas=False, ctas_per_sm=lambda r: int(r["ctas_per_sm"]))


def test_load_only_loop_matches_the_load_loop_microbenchmark():
    """Kernel time at each row's in-kernel clock (1.97-1.98 GHz) and its measured CTAs/SM, with
    the HBM bytes the model gives each loop (sim/convoy.py: all free-running). Calibration rows
    within 6%: fitted at +0.5%, -2.2%, -0.5% when the HBM rate and the launch were assumed (0.85,
    4 us); with both measured (run 31) the same port gives +0.4%, -4.4%, -0.6%
    (experiments.research.fit_port --model-misses), and with a lone SM's port under the share
    (GpuProfile.port_clk: the last wave's 4 CTAs of 128x128x64 s4 pull at 160 B/ns) -5.7%.
    Refitted, l2_miss_port_factor 0.6 would bring them within 2.8% but the seed's chain was fitted
    with 0.4: the port's next pass (docs/research/notes.md items 177-178). Held out (6
    and 2 CTAs/SM, 128x192x64, 64x128x64; today +3.3%, -3.5%, +2.5%, +5.7%) within 8%: the
    model's HBM bytes (which set the miss cost) are an estimate, and 8% still rejects the fifth
    pass's per-clock port (64 B/clk, one request per 2 clk: -39..-46% on these rows)."""
    rows = _load_loop_rows()
    assert len(rows) == 7
    for name, (p, measured) in rows.items():
        err = p.ms / measured - 1
        bound = 0.06 if name in LOAD_LOOP_CALIBRATION else 0.08
        assert abs(err) <= bound, (name, p.ms, measured)
        assert p.utilization["tensor"] == 0 and p.notes
    # the measured order of the 128x128x64 residencies: fewer CTAs/SM (more waves, more misses) is slower
    ms = [rows[f"load loop 128x128x64 s{st}"][0].ms for st in (1, 2, 3, 4)]
    assert ms == sorted(ms)


def test_l2_path_in_ns_does_not_follow_the_sm_clock():
    import dataclasses
    g = load_profile("h200-sxm")
    assert g.l2_in_ns
    lo, hi = dataclasses.replace(g, clock_ghz=1.0), dataclasses.replace(g, clock_ghz=2.0)
    assert lo.l2_sm_bytes_per_clk == pytest.approx(2 * hi.l2_sm_bytes_per_clk)
    assert hi.l2_request_clk == pytest.approx(2 * lo.l2_request_clk)
    s = preset("v2")
    a = sim.predict(s, 4096, 4096, 4096, gpu=lo, mmas=False, ctas_per_sm=3)
    b = sim.predict(s, 4096, 4096, 4096, gpu=hi, mmas=False, ctas_per_sm=3)
    assert b.ms < a.ms < 1.25 * b.ms   # only the SM-side costs (syncs, issue) follow the clock


def test_mmas_off_and_residency_override_are_model_only():
    g = load_profile("h200-sxm")
    with pytest.raises(ScheduleError):
        sim.predict(preset("v2", stages=2), 4096, 4096, 4096, gpu=g, ctas_per_sm=4)   # > 3 by shared memory (2 x 32 KB stages)
    spec = sim.predict(preset("v3"), 4096, 4096, 4096, gpu=g, mmas=False)   # load_loop_only mode
    assert spec.utilization["tensor"] == 0 and "wgmma" not in spec.breakdown
    with pytest.raises(ScheduleError):
        sim.predict(preset("v2"), 4096, 4096, 4096, gpu=g, mmas=False, loads=False)
    off = sim.predict(preset("v2"), 4096, 4096, 4096, gpu=g, mmas=False)
    on = sim.predict(preset("v2"), 4096, 4096, 4096, gpu=g)
    assert off.ms <= on.ms and "wgmma" not in off.breakdown


# ---- HBM bytes against Nsight Compute (experiments/results/h200-sxm/hbm_bytes.csv, runs 17-18) ----
def _hbm_rows():
    import csv
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "experiments" / "results" / "h200-sxm" / "hbm_bytes.csv"
    return list(csv.DictReader(ln for ln in path.read_text().splitlines() if not ln.startswith("#")))


def _measured_gb(kernel):
    return [float(r["dram_read_gb"]) for r in _hbm_rows() if r["kernel"] == kernel]


def test_hbm_bytes_match_nsight_compute_where_sharers_keep_together():
    """The per-wave HBM bytes (each A/B panel once per wave that uses it; never tuned to DRAM
    counts) against dram__bytes_read of the real kernels, for those whose CTAs keep reading a
    shared panel's K slices together: V1 on three tiles, V3/V4 at 2 stages, V5 at 4, V5 128x256
    grouped, V2 64x256 in column order. Today within 1.3%. (The convoy model, predict's default,
    calls the last two free-running: dram_reuse.csv.)"""
    kernels = ("v1", "v1 128x192", "v1 64x256", "v3 s2", "v4 s2", "v5 s4", "v5 128x256 s4 grouped", "v2 64x256 s2")
    for name in kernels:
        model = sim.predict(catalog.schedule(name), N, N, N, gpu="h200-sxm", reuse="per-wave").bytes["hbm_read_bytes"] / 1e9
        for gb in _measured_gb(name):
            assert gb == pytest.approx(model, rel=0.03), (name, gb, model)


@pytest.mark.xfail(strict=True, reason="the ring's CTAs do not keep together: V2 at the seed's case reads 3.22-3.98 GB "
                   "from DRAM (Nsight Compute, runs 17-18), 2.0-2.4x the model's 1.63 (as the seed's profile, DRAM "
                   "25% -> 68%); likewise V2/V3/V5 at 3 stages (1.4-1.9x) and 64x256 in row order (4.8x). The loss "
                   "grows with K (V2 0.97/1.75/2.45x at K = 2048/4096/8192, run 20): the sharers drift apart. "
                   "Given the CTAs' measured timeline, an LRU replay (sim/l2cache.py) gives V2 6.27 GB against "
                   "6.10 measured in the same launch (run 29, tests/test_sim_l2cache.py). predict keeps the "
                   "per-wave estimate; the GPU-wide timeline (sim/timeline.py, --grid-timeline) spreads the "
                   "CTAs from the measured per-SM feed map and gives 2.55 GB: the loss, less than half its size")
def test_hbm_bytes_of_the_ring_match_nsight_compute():
    model = sim.predict(preset("v2"), N, N, N, gpu="h200-sxm").bytes["hbm_read_bytes"] / 1e9
    for gb in _measured_gb("v2"):
        assert gb == pytest.approx(model, rel=0.10)


def test_measured_l2_reuse_moves_v2_toward_the_seed():
    """A what-if: given each kernel's own DRAM bytes as Nsight Compute measured them on the H200
    in runs 17-18 (`predict(hbm_read_bytes=...)`), the H100 profile's V1 and V3 s2 move by
    nothing (they are held in convoy: their bytes are the model's), and V2 (local phases) lands
    between its per-wave bytes (598 TFLOPS) and the model's own free-running 5.3 GB (565):
    584-589 with 2.9-3.8 GB. Those early launches read less than the later ones (4.6-5.7 GB in
    runs 29-58, dram_reuse.csv): the loss varies launch by launch."""
    def trio(name):
        s = catalog.schedule(name)
        own = sim.predict(s, N, N, N, gpu="h100-sxm")
        per_wave = sim.predict(s, N, N, N, gpu="h100-sxm", reuse="per-wave")
        return own, per_wave, [sim.predict(s, N, N, N, gpu="h100-sxm", hbm_read_bytes=gb * 1e9)
                               for gb in _measured_gb(name)]
    for name in ("v1", "v3 s2"):
        own, per_wave, measured = trio(name)
        assert own.tflops == per_wave.tflops and all(abs(p.tflops / own.tflops - 1) < 0.01 for p in measured)
    own, per_wave, measured = trio("v2-local")
    assert len(measured) == 2
    assert all(own.tflops < p.tflops < per_wave.tflops and "what-if" in p.notes[-1] for p in measured)


@pytest.mark.xfail(strict=True, reason="the load-only loops that calibrated the L2 path (l2_sm_bytes_per_ns, "
                   "l2_request_ns, l2_miss_port_factor) read 3.57x (3 CTAs/SM) and 4.9x (128x128x16) the DRAM bytes "
                   "the model assumed for them (Nsight Compute, run 19; exact only at 1 CTA/SM); with their measured "
                   "misses and the calibrated factor the model is 10-16% too slow on them, and their slowdown with "
                   "fewer CTAs/SM is not a miss effect (1 CTA/SM misses less than 3 yet is slower)")
def test_load_loop_calibration_misses_match_nsight_compute():
    from experiments.paths import read_rows, results_dir
    measured = {r["kernel"]: float(r["dram_read_gb"]) * 1e9 for r in read_rows(results_dir() / "hbm_bytes.csv")
                if r["run"] == "run19"}
    for r in read_rows(results_dir() / "load_loop.csv"):
        if r["schedule"] not in LOAD_LOOP_CALIBRATION:
            continue
        s = preset("v2", block_m=int(r["block_m"]), block_n=int(r["block_n"]), block_k=int(r["block_k"]),
                   stages=int(r["stages"]))
        model = sim.predict(s, N, N, N, gpu="h200-sxm", mmas=False, ctas_per_sm=int(r["ctas_per_sm"]))
        assert measured[r["schedule"]] == pytest.approx(model.bytes["hbm_read_bytes"], rel=0.10)


def test_a_launch_the_hbm_paces_pays_its_streams_start_and_end():
    """A decode product streams its weights at the kernels' measured read rate after the launch
    and the stream's own fixed cost (hbm_stream_fixed_us, experiments.research.hbm_stream); a
    product the tensor cores pace is untouched by that cost."""
    import dataclasses
    g = load_profile("h200-sxm")
    without = dataclasses.replace(g, hbm_stream_fixed_us=0.0)
    decode = preset("v7", block_m=64, block_n=256, consumer_warpgroups=1, producer_registers=0, consumer_registers=0, stages=4)
    p = sim.predict(decode, 64, 22016, 4096, gpu=g)
    q = sim.predict(decode, 64, 22016, 4096, gpu=without)
    floor_s = g.launch_us * 1e-6 + g.hbm_stream_fixed_us * 1e-6 + p.bytes["hbm_bytes"] / g.hbm_read_bytes_per_s()
    assert p.call["kernel_ms"] * 1e-3 >= floor_s * (1 - 1e-9)
    assert 0.5 * g.hbm_stream_fixed_us <= (p.call["kernel_ms"] - q.call["kernel_ms"]) * 1e3 <= g.hbm_stream_fixed_us
    big = sim.predict(preset("v7"), N, N, N, gpu=g)
    assert big.ms == pytest.approx(sim.predict(preset("v7"), N, N, N, gpu=without).ms, rel=1e-12)


SWAP_SPLIT4 = ("v7:block_n=16,block_k=128,stages=5,split_k=4,swap_ab=true,epilogue=direct,"
               "producer_registers=0,consumer_registers=0")


def test_split_cluster_partials_stay_on_chip_and_clusters_of_four_hold_120_ctas():
    """split_cluster: a tile's slices add their partials through a cluster's shared memory, so
    HBM sees only C, and each unit pays the measured exchange (cluster_exchange_*), not the
    workspace's stores, handshake and sum. The H200 holds 30 clusters of 4 (cluster_slots): a
    down-projection's 32 tiles split 4 ways then run two units on some CTAs."""
    from gemm.schedule import from_spec
    from sim.engines import partial_tile_ns
    g = load_profile("h200-sxm")
    ws, cl = from_spec(SWAP_SPLIT4), from_spec(SWAP_SPLIT4 + ",split_cluster=true")
    send, after = partial_tile_ns(cl, g)
    tile = 128 * 16 * 4
    assert send == pytest.approx(tile * 3 / 4 / g.cluster_exchange_bytes_per_ns)
    assert after == pytest.approx(g.cluster_exchange_sync_us * 1e3 + tile / g.cluster_sum_bytes_per_ns)
    assert sum(partial_tile_ns(cl, g)) < sum(partial_tile_ns(ws, g))
    p_ws, p_cl = sim.predict(ws, 16, 4096, 11008), sim.predict(cl, 16, 4096, 11008)
    assert p_cl.bytes["hbm_write_bytes"] == 16 * 4096 * 2 < p_ws.bytes["hbm_write_bytes"]
    assert (p_ws.launch["ctas"], p_ws.launch["units_per_cta"]) == (128, 1)
    assert (p_cl.launch["ctas"], p_cl.launch["units_per_cta"]) == (120, 2)
    pair = from_spec("v7:block_n=64,stages=8,split_k=2,split_cluster=true")
    assert sim.predict(pair, 128, 4096, 11008).launch["ctas"] == 128     # clusters of 2: every SM


def test_clusters_of_three_run_in_two_rounds_where_the_driver_holds_39():
    """The H100's driver holds 39 clusters of three (cluster_slots): 128x96 tiles split 3 on a
    down-projection make 43, so the persistent grid of 117 CTAs walks a second round of units,
    and the call takes far longer than the one-round pair. A profile without a count for the
    size (the H200's has two and four) says what it assumed."""
    from gemm.schedule import from_spec
    three = from_spec("v7:block_n=96,stages=6,split_k=3,split_cluster=true")
    pair = from_spec("v7:block_n=64,stages=8,split_k=2,split_cluster=true")
    h100 = sim.predict(three, 128, 4096, 11008, gpu="h100-sxm")
    assert (h100.launch["ctas"], h100.launch["units_per_cta"]) == (117, 2)
    assert h100.ms > 1.3 * sim.predict(pair, 128, 4096, 11008, gpu="h100-sxm").ms
    assert not [n for n in h100.notes if "no count" in n]
    h200 = sim.predict(three, 128, 4096, 11008)
    assert h200.launch["ctas"] == 129
    assert [n for n in h200.notes if "clusters of 3: the profile has no count" in n]


DECODE_PAIR = ("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,swap_ab=true,"
               "epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true")


def test_split_lead_takes_the_handshake_off_the_first_ctas_path():
    """split_lead: the cluster's first CTA sums the others' whole partials, which they send during
    its lead's K tiles; the model charges what the lead does not cover (split_lead_wait_ns), in the
    fast path and the SimPy one alike, and the loop at the even share."""
    from gemm.schedule import from_spec
    from sim.engines import partial_tile_ns, split_lead_wait_ns
    from sim.fast import fast_predict
    g = load_profile("h200-sxm")
    pick, lead = from_spec(DECODE_PAIR), from_spec(DECODE_PAIR + ",split_lead=2")
    tile = 64 * 16 * 4
    assert partial_tile_ns(lead, g) == pytest.approx((0.0, tile / g.cluster_sum_bytes_per_ns))
    whole = tile / g.cluster_exchange_bytes_per_ns + g.cluster_exchange_sync_us * 1e3
    assert split_lead_wait_ns(lead, g, 0.0) == pytest.approx(whole)
    assert split_lead_wait_ns(lead, g, whole - 100.0) == pytest.approx(100.0)
    assert split_lead_wait_ns(lead, g, 2 * whole) == 0.0
    for model in (sim.predict, fast_predict):
        t = {s.split_lead: model(s, 16, 4096, 11008).call["queued_ms"] * 1e3 for s in (pick, lead)}
        # a 16 KB K tile at the HBM's share takes ~0.5 us: two of them cover the ~1 us handshake
        assert -0.8 < t[2] - t[0] < -0.2, t
    # dec128-down's pair sends a 32 KB partial: a lead of two 64-deep K tiles covers little of it
    wide = from_spec("v7:block_n=64,stages=8,split_k=2,split_cluster=true")
    short, long_ = (fast_predict(wide.replace(split_lead=L), 128, 4096, 11008).call["queued_ms"] for L in (2, 8))
    assert long_ < short


def test_preload_streams_the_first_ring_across_the_kernel_boundary():
    """preload: back to back, a dependent launch's first ring of the weights streams while the
    kernel ahead ends; the model takes that ring at the HBM's read rate off the time the launch
    pays beyond its loops, as far as the HBM paces it: one call (nothing ahead) is unchanged."""
    from gemm.schedule import from_spec
    from sim.call import preload_saving_s
    from sim.fast import fast_predict
    g = load_profile("h200-sxm")
    pick, pre = from_spec(DECODE_PAIR), from_spec(DECODE_PAIR + ",preload=b")
    ring = 128 * 8 * 64 * 128 * 2                      # 128 CTAs, 8 stages of a 64x128 weight box
    assert preload_saving_s(pre, 128, 43, g, 1.0, 1.0) == pytest.approx(ring / g.hbm_read_bytes_per_s())
    assert preload_saving_s(pre, 128, 43, g, 0.5, 1e-6) == pytest.approx(0.5e-6)
    assert preload_saving_s(pre, 128, 3, g, 1.0, 1.0) == pytest.approx(3 / 8 * ring / g.hbm_read_bytes_per_s())
    assert preload_saving_s(pick, 128, 43, g, 1.0, 1.0) == 0.0
    for model in (sim.predict, fast_predict):
        p0, p1 = (model(s, 16, 4096, 11008).call for s in (pick, pre))
        assert -2.0 < (p1["queued_ms"] - p0["queued_ms"]) * 1e3 < -0.5
        assert p1["timed_ms"] == pytest.approx(p0["timed_ms"])
    # the ring of a multicast operand comes from HBM once a pair
    pair = from_spec("v7:block_n=192,stages=4,cluster_m=2,preload=b")
    assert preload_saving_s(pair, 132, 64, g, 1.0, 1.0) == pytest.approx(
        132 * 4 * 192 * 64 * 2 / 2 / g.hbm_read_bytes_per_s())
