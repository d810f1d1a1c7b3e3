"""CPU tests of the model at every shape and for every Schedule feature: small grids, fixed
costs, the persistent / clustered / setmaxnreg / TMA-store / fp16-accumulate / split-K /
swap-AB kernels, batched launches, the call's extra kernels, the fast path and sim.rank."""
import dataclasses
import math
import time

import pytest

import sim
from gemm.schedule import PRESETS, ScheduleError, from_spec, preset
from sim import call
from sim.engines import launch_grid, memory_traffic, residency
from sim.schedules import simulate_sm

G = "h200-sxm"


@pytest.fixture(scope="module")
def g():
    return sim.load_profile(G)


def _per_sm_tflops(p):
    """TFLOPS per busy SM of the GEMM kernel alone (launch included)."""
    sh = p.shape
    flops = 2.0 * sh["m"] * sh["n"] * sh["k"] * sh.get("batch", 1)
    return flops / (p.call["kernel_ms"] * 1e-3) / p.launch["busy_sms"] / 1e12


# ---- small grids and fixed costs ----
@pytest.mark.parametrize("version", sorted(PRESETS))
@pytest.mark.parametrize("k", (256, 1024, 8192))
def test_a_small_grid_is_at_most_a_little_faster_per_sm_than_a_full_wave(version, k, g):
    """k x k tiles on k^2 SMs against one full wave of a near-square grid: per busy SM, at most
    10% faster. A lone SM's port is faster than its share of the L2 with every SM pulling, and
    its misses cost it less (the L2 fill is a GPU-wide cost shared by the busy SMs); measured
    (experiments/results/h200-sxm/port_by_sms.csv), the whole loops of 128x128x64 and 64x64 tiles
    run 3-9% faster per K tile on 16 SMs than on 132 (the port-heavy 128x64x128, 26%). Per-SM
    rates, not the GPU's aggregate ones."""
    s = PRESETS[version]
    c = residency(s, g)["ctas_per_sm"]
    tiles = g.sm_count * c
    tm = next(a for a in range(int(math.sqrt(tiles)), 0, -1) if tiles % a == 0 and a % s.cluster_m == 0)
    full = sim.predict(s, tm * s.block_m, tiles // tm * s.block_n, k, gpu=g)
    assert full.launch["busy_sms"] == g.sm_count and full.launch["units_per_cta"] == 1
    for t in (1, 2, 4, 8):
        small = sim.predict(s, t * s.block_m, t * s.block_n, k, gpu=g)
        assert small.launch["busy_sms"] <= max(t * t, s.cluster_size) < g.sm_count
        assert _per_sm_tflops(small) <= 1.10 * _per_sm_tflops(full), (t, _per_sm_tflops(small), _per_sm_tflops(full))


def test_fixed_costs_dominate_as_the_problem_shrinks(g):
    """The share of one call's time that is not the kernel's CTAs (host, launch) grows as the
    cube shrinks, and is most of it at 256^3 (over 70%)."""
    shares = []
    for size in (8192, 4096, 2048, 1024, 512, 256):
        p = sim.predict(preset("v5"), size, size, size, gpu=g)
        cta_s = p.call["kernel_ms"] - (g.launch_us + g.kernel_fixed_us) * 1e-3
        shares.append(1 - cta_s / p.timed_ms)
    assert shares == sorted(shares) and shares[0] < 0.05 and shares[-1] > 0.7


def test_one_call_as_the_events_see_it(g):
    """Two CUDA events around a call in the protocol's loop: a kernel far shorter than the host's
    work is timed at the host's floor, the host's call time and the kernel one after the other
    above it, never longer than the host's pace unless the kernel is; a long kernel at its own
    time and the events' tail. Back to back the longer of host and device; the device time
    alone is what the 8192^3 sweeps compare with."""
    p = sim.predict(preset("v3"), 256, 256, 256, gpu=g)
    assert p.timed_ms == pytest.approx(g.host_floor_us * 1e-3)
    assert p.call["serial_ms"] == pytest.approx(p.ms + g.host_call_us * 1e-3)
    assert p.call["queued_ms"] == pytest.approx(max(p.ms, g.host_call_us * 1e-3))
    assert p.bound == "host" and p.call["host_bound"]
    q = sim.predict(preset("v3"), 256, 256, 256, gpu=g, host_us=5.0)
    assert q.call["serial_ms"] == pytest.approx(q.ms + 5e-3) and q.ms == p.ms
    big = sim.predict(preset("v3"), 4096, 4096, 4096, gpu=g)    # the device outlasts the host
    assert big.call["queued_ms"] == pytest.approx(big.ms) and not big.call["host_bound"]
    assert big.timed_ms == pytest.approx(big.ms + g.event_tail_us * 1e-3)
    # the three regimes of the formula, and continuity between them
    floor, pace, host = g.host_floor_us, g.host_pace_us, g.host_call_us
    ev = lambda d_us: call.event_ms(d_us * 1e-3, host, floor, pace, g.event_tail_us) * 1e3  # noqa: E731
    assert ev(1.0) == pytest.approx(floor)
    assert ev(floor - host + 2) == pytest.approx(floor + 2)
    assert ev(pace - 2) == pytest.approx(pace)
    assert ev(pace + 5) == pytest.approx(pace + 5 + g.event_tail_us)
    times = [ev(d) for d in range(0, 80)]
    assert times == sorted(times) and all(t >= d for d, t in enumerate(times))
    # each further kernel adds its host launch to the call, the floor and the pace
    assert call.event_ms(1e-3, host, floor, pace, 1.0, 2, 7.0) * 1e3 == pytest.approx(floor + 14)


def test_unaligned_rows_cost_two_copies(g):
    """K x 2 bytes not a multiple of 16 (TMA's row alignment): the call copies A and B first."""
    assert call.operand_copies(4099) == 2 and call.operand_copies(4096) == 0 == call.operand_copies(1000)
    odd = sim.predict(preset("v5"), 4095, 4097, 4099, gpu=g)
    even = sim.predict(preset("v5"), 4095, 4097, 4096, gpu=g)
    assert odd.call["operand_copies"] == 2 and odd.call["copy_ms"] > 0 and even.call["copy_ms"] == 0
    assert odd.call["kernels"] == 3 and odd.ms > even.ms * 4099 / 4096


def test_edge_tiles_read_only_their_rows_but_compute_in_full(g):
    """TMA fills a box's rows outside the matrix with zeros without reading them; WGMMA still
    computes the whole tile."""
    s = preset("v3")
    tr = memory_traffic(s, 4095, 4097, 4096, per_wave=264)
    tm, tn = 32, 33
    assert tr["l2_to_sm_bytes"] == tn * 4095 * 4096 * 2 + tm * 4097 * 4096 * 2
    lg = launch_grid(s, 4095, 4097, 4096)
    assert (lg.tm, lg.tn, lg.units) == (tm, tn, tm * tn) and lg.b_rows < 128
    decode = sim.predict(s, 16, 4096, 4096, gpu=g)
    assert decode.launch["edge_rows"][0] == 16   # a 16-row A box on a 128-row tile


def test_rows_outside_the_matrix_cost_the_port_though_nothing_is_read(g):
    """TMA's zero fill of a box's rows outside the matrix takes the SM's port time (the profile's
    tma_oob_row_ns, from experiments.research.tma_oob_rows): a 128-row tile slows as M falls
    below it, where with the rows free it would not; a 64-row tile, left with fewer rows out,
    overtakes it; the HBM bytes are those of the rows inside either way."""
    assert g.tma_oob_row_ns > 0
    free = dataclasses.replace(g, tma_oob_row_ns=0.0)
    tall = preset("v7", block_n=64, stages=8, split_k=2)
    short = preset("v7", block_m=64, block_n=128, consumer_warpgroups=1, producer_registers=0,
                   consumer_registers=0, stages=8, split_k=4)
    for fn in (sim.predict, sim.fast_predict):
        at = {m: fn(tall, m, 3840, 8192, gpu=g).ms for m in (1, 32, 64, 128)}
        assert at[1] > at[32] > at[64] > at[128]
        assert fn(tall, 1, 3840, 8192, gpu=free).ms < 0.8 * at[1]
        assert fn(tall, 128, 3840, 8192, gpu=free).ms == pytest.approx(at[128])   # no row outside
        assert fn(short, 32, 3840, 8192, gpu=g).ms < fn(tall, 32, 3840, 8192, gpu=g).ms
    assert (sim.predict(tall, 1, 3840, 8192, gpu=g).bytes["hbm_read_bytes"]
            == sim.predict(tall, 1, 3840, 8192, gpu=free).bytes["hbm_read_bytes"])


# ---- every feature moves the prediction the way its mechanism says ----
def test_multicast_lowers_the_l2_reads_not_the_ports(g):
    """A cluster of two along M multicasts each B tile: each CTA loads half, so the B bytes L2
    reads halve (128x256: (128 + 128) / (128 + 256) of the bytes); HBM reads what a grid without
    clusters walking the same tiles in the same order reads (raster_group counts the clusters'
    rows of two tiles: 8 of them are 16 tile rows). Each SM's
    port still takes in the whole box (multicast_receive_cost = 1, run 87): the ports are as
    busy as without the cluster. Were the partner's half free to the port (cost 0), a port-bound
    128x128 tile would run faster clustered."""
    v7 = preset("v7")
    one, two = (sim.predict(v7.replace(cluster_m=c), 8192, 8192, 8192, gpu=g) for c in (1, 2))
    assert two.bytes["l2_to_sm_bytes"] == pytest.approx(one.bytes["l2_to_sm_bytes"] * 256 / 384)
    assert two.bytes["smem_fill_bytes"] == one.bytes["smem_fill_bytes"]
    same_order = sim.predict(v7.replace(raster_group=16), 8192, 8192, 8192, gpu=g)
    assert two.bytes["hbm_read_bytes"] == same_order.bytes["hbm_read_bytes"] < one.bytes["hbm_read_bytes"]
    assert two.utilization["tma"] == pytest.approx(one.utilization["tma"], rel=0.01) and two.ms >= one.ms * 0.999
    tile = preset("v7", block_n=128, stages=4)
    free = dataclasses.replace(g, multicast_receive_cost=0.0, clock_ghz=1.523)
    whole = dataclasses.replace(g, clock_ghz=1.523)
    for prof, faster in ((free, True), (whole, False)):
        plain, clustered = (sim.fast_predict(tile.replace(cluster_m=c), 4096, 4224, 2048, gpu=prof).ms for c in (1, 2))
        assert (clustered < 0.95 * plain) == faster


def test_cluster_barriers_cost_the_remote_arrival(g):
    """In a cluster a stage is free only once the partner's consumers have released it too (a
    remote arrive, cluster_arrive_clk later): a latency-bound ring slows as that grows."""
    s = preset("v7", stages=2, block_n=128, cluster_m=2)
    fast = sim.predict(s, 4096, 4096, 1024, gpu=dataclasses.replace(g, cluster_arrive_clk=0))
    slow = sim.predict(s, 4096, 4096, 1024, gpu=dataclasses.replace(g, cluster_arrive_clk=2000))
    assert slow.ms > 1.1 * fast.ms


def test_split_k_raises_parallelism_and_adds_traffic(g):
    """At 1024 x 1024 x 16384 (32 tiles of 128x256): split-K 4 runs 4x the CTAs, writes fp32
    partials (4 slices x 4 bytes against 2 bytes of C) and sums them inside the kernel (each
    tile's CTAs a share: no second kernel), and is faster. Each unit's CTA pays its partial's
    stores, the handshake and its share of the sum (sim.engines.partial_tile_ns); a profile
    without that measurement charges the sum after the K loops at the GPU's rates."""
    base = preset("v7", cluster_m=1, persistent=False, stages=4)
    one, four = (sim.predict(base.replace(split_k=sk), 1024, 1024, 16384, gpu=g) for sk in (1, 4))
    assert four.launch["ctas"] == 4 * one.launch["ctas"] == 128
    assert four.bytes["hbm_write_bytes"] == 8 * one.bytes["hbm_write_bytes"]
    assert four.call["kernels"] == 1
    free = sim.predict(base.replace(split_k=4), 1024, 1024, 16384, gpu=dataclasses.replace(g, split_sync_us=0.0))
    assert four.ms > free.ms + 1e-3 * 0.9 * g.split_sync_us   # the handshake on the unit's path, once
    unmeasured = dataclasses.replace(g, split_store_bytes_per_ns=None)
    old = sim.predict(base.replace(split_k=4), 1024, 1024, 16384, gpu=unmeasured)
    assert old.call["reduce_ms"] > 0 == one.call["reduce_ms"]
    assert four.bytes["hbm_read_bytes"] == pytest.approx(one.bytes["hbm_read_bytes"], rel=0.01)
    assert four.ms < one.ms


def test_stream_k_evens_out_a_partial_last_wave(g):
    """4096 x 4096 x 11008 in 128x256 tiles is 512 tiles, 3.9 waves of 132: whole tiles leave
    the last wave 12% idle; stream-K shares the last two waves' tiles out by K iteration, so
    every CTA runs the same count (668 of the 688 a busiest CTA runs whole). The whole tiles'
    thin last round runs at 0.94 of a whole one (engines.last_round_share, run 203), and with
    the partials' round trip the model has stream-K behind, as measured (5-15% at the 4096-row
    products, docs/research/notes.md items 84, 87). With whole waves (33 x 16 = 528 tiles on
    132) it changes nothing."""
    s = preset("v7", cluster_m=1)
    whole, shared = (sim.predict(s.replace(stream_k=on), 4096, 4096, 11008, gpu=g) for on in (False, True))
    assert shared.launch["ctas"] == whole.launch["ctas"] == 132
    assert whole.ms < shared.ms
    assert any("116 of 132 CTAs walk a last tile" in note for note in whole.notes)
    assert any("stream-K" in note and "668 K iterations" in note for note in shared.notes)
    even = [sim.predict(s.replace(stream_k=on), 4224, 4096, 4096, gpu=g) for on in (False, True)]
    assert even[0].ms == pytest.approx(even[1].ms)


def test_stream_k_waves_sets_how_much_is_shared(g):
    """stream_k_waves full waves are shared besides the partial one: 512 tiles of 172 K
    iterations on 132 CTAs share 116 tiles with none (a run of 152 iterations, then 3 whole
    tiles: 668 in all), 248 with one (a run of 324, then 2 whole tiles), 380 with two (496,
    then one). The busiest CTA's count is the same; the runs, and so the partials, grow."""
    from sim.engines import launch_grid
    s = preset("v7", cluster_m=1, stream_k=True)
    grids = {w: launch_grid(s.replace(stream_k_waves=w), 4096, 4096, 11008, slots=g.sm_count) for w in (0, 1, 2)}
    assert {w: (lg.stream_k_run, lg.stream_k_iters) for w, lg in grids.items()} == {
        0: (152, 668), 1: (324, 668), 2: (496, 668)}


def test_stream_k_finishing_a_tile_adds_every_other_share_in_turn(g):
    """The CTA that finishes a stream-K tile adds each other share of it, a whole fp32 tile each,
    one after the other (make_stream_k's `take`): a tile shared by 8 CTAs costs its handover and
    6 more tiles' sums at the measured rate (run 182: 512^2 x 8192 in 128x128 tiles, 25.8 us back to
    back, where one handover gave 16.4)."""
    from sim.call import stream_k_fixup_s
    from sim.engines import ACCUMULATOR_BYTES, partial_tile_ns
    s = preset("v7", block_n=128, stream_k=True)
    handover = sum(partial_tile_ns(s, g)) * 1e-9
    tile_sum = 128 * 128 * ACCUMULATOR_BYTES / g.split_sum_bytes_per_ns * 1e-9
    assert stream_k_fixup_s(s, 128, 128, g) == pytest.approx(handover)
    assert stream_k_fixup_s(s, 128, 16, g) == pytest.approx(handover + 6 * tile_sum)
    p = sim.predict(s, 512, 512, 8192, gpu=g, clock="load")
    assert 20e-3 < p.ms < 30e-3


def test_persistent_pays_the_prologue_once_and_hides_the_epilogue(g):
    """A persistent CTA starts once and its producer loads the next tile while the consumers
    store this one: with many short tiles it beats one CTA per tile on the same tile and ring."""
    s = preset("v7", cluster_m=1)
    pers = sim.predict(s, 8192, 8192, 512, gpu=g)
    flat = sim.predict(s.replace(persistent=False), 8192, 8192, 512, gpu=g)
    assert pers.launch["ctas"] == g.sm_count and pers.launch["units_per_cta"] == math.ceil(2048 / 132)
    assert flat.launch["ctas"] == 2048 and pers.ms < flat.ms


def test_setmaxnreg_sets_residency_by_the_launch_registers(g):
    """Under setmaxnreg every thread starts with the launch count (65536 / threads, the cap the
    launch bounds give ptxas): one CTA per SM, whatever the roles take later."""
    r = residency(preset("v7"), g)
    assert r["registers_per_thread"] == preset("v7").launch_registers == 168 and r["limits"]["registers"] == 1


@pytest.mark.parametrize("spec,traced_clk", [("v7", 1022), ("v7:block_m=256,block_n=128,cluster_n=2", 892)])
def test_staged_epilogue_costs_what_the_tile_trace_measured(g, spec, traced_clk):
    """The TMA-store epilogue holds the consumers for their share into shared memory, a barrier,
    a TMA issue a box and the fixed clocks around them (the last store's read, the second
    barrier, the async-proxy fence): run 47's per-tile trace, 1022 clocks a 64x256 share and 892
    a 128x128 one, which staged_epilogue_clk (their mean less the other terms) gives within 5%.
    The direct epilogue's store rate is assumed (store_bytes_per_clk), so the two are not ranked
    here: measured, st.global of C is slower (docs/model.md)."""
    spans = simulate_sm(from_spec(spec), g, ctas=1, k_iters=8, miss_rate=0.0, trace=True)["trace"].spans
    mine = [sp for sp in spans if sp[0] == "consumer 0"]
    start = next(t0 for _, name, _, t0, _ in mine if name == "accumulators -> shared")
    end = next(t1 for _, name, _, _, t1 in mine if name == "TMA store issue")
    assert end - start == pytest.approx(traced_clk, rel=0.05)


def test_a_second_staging_pass_waits_for_the_first_store(g):
    """A 128x320 tile stages each warpgroup's 64x320 share in two passes of 160 columns through one
    staging tile: the second waits until the first pass's TMA store has read it and syncs the
    warpgroup again; the simulation takes the step staged_epilogue_clk counts."""
    from sim.engines import staged_epilogue_clk, staging_passes_clk, tma_store_bytes_per_clk
    wide, one_pass = from_spec("v7:block_n=320"), from_spec("v7:block_n=320,stages=2")
    share = 64 * 320 * 2
    extra = staging_passes_clk(wide, g, share)
    assert extra == pytest.approx(share / 2 / tma_store_bytes_per_clk(g) + g.bar_sync_clk)
    assert staging_passes_clk(one_pass, g, share) == 0.0
    # (and its ten 32-column boxes, a 160-column pass's swizzle, against one pass's five of 64)
    boxes = (wide.c_store_boxes - one_pass.c_store_boxes) * g.tma_issue_clk
    assert staged_epilogue_clk(wide, g, share) == pytest.approx(staged_epilogue_clk(one_pass, g, share) + extra + boxes)
    spans = simulate_sm(wide, g, ctas=1, k_iters=8, miss_rate=0.0, trace=True)["trace"].spans
    steps = [t1 - t0 for role, name, _, t0, t1 in spans
             if role == "consumer 0" and name == "second staging pass: the first's store read"]
    assert steps and steps[0] == pytest.approx(extra)


def test_fp16_accumulation_halves_the_accumulators(g):
    """fp16 accumulators pack two to a register: more CTAs per SM where registers bind; the same
    tensor rate per instruction [datasheet]. The tutorial's V6 (256x256) exists only so."""
    s = preset("v3", stages=2)
    half = s.replace(accumulate="float16")
    assert half.accumulator_registers * 2 == s.accumulator_registers
    assert residency(half, g)["ctas_per_sm"] >= residency(s, g)["ctas_per_sm"]
    with pytest.raises(ScheduleError, match="accumulator registers"):
        preset("v6", accumulate="float32")
    v6 = sim.predict(preset("v6"), 8192, 8192, 8192, gpu=g)
    assert v6.tflops > 0 and v6.ctas_per_sm == 1 and v6.schedule["accumulate"] == "float16"


def test_swap_ab_makes_a_small_m_wgmma_n(g):
    """Swap-AB tiles C^T: the user's N along the tile's M, the user's M (16) as WGMMA's N. The
    tensor cores execute 16 columns instead of a 64- or 128-row tile's; an n16 instruction is
    bound by its A reads from shared memory (25.6 clk at WGMMA's measured ~100 B/clk, for 8
    clk of math)."""
    from sim.engines import wgmma_clk
    assert wgmma_clk(g, 16) == pytest.approx(25.6) and wgmma_clk(g, 256) == 128
    swap = preset("v7", block_n=16, swap_ab=True, epilogue="direct", cluster_m=1, persistent=False,
                  stages=6, producer_registers=0, consumer_registers=0)
    plain = preset("v5", block_m=64, block_n=128, consumer_warpgroups=1, stages=4)
    ps, pp = (sim.predict(s, 16, 22016, 4096, gpu=g) for s in (swap, plain))
    assert ps.launch["gemm_mn"] == [22016, 16] and ps.launch["tile_grid"] == [172, 1]
    assert ps.bytes["l2_to_sm_bytes"] <= pp.bytes["l2_to_sm_bytes"]
    assert ps.ms < pp.ms


def test_a_batch_is_more_tiles_in_one_launch(g):
    """batch independent products: grid = tiles x batch, each product's panels its own; the launch
    takes longer than one product and less than batch launches of it."""
    s = preset("v5")
    one = sim.predict(s, 1024, 1024, 1024, gpu=g)
    many = sim.predict(s, 1024, 1024, 1024, gpu=g, batch=16)
    assert many.launch["units"] == 16 * one.launch["units"] and many.shape["batch"] == 16
    # each product's panels once per wave; a wave boundary inside a product reads some twice
    assert 16 * one.bytes["hbm_read_bytes"] <= many.bytes["hbm_read_bytes"] <= 32 * one.bytes["hbm_read_bytes"]
    assert one.ms < many.ms < 16 * one.ms
    assert many.tflops == pytest.approx(2 * 16 * 1024 ** 3 / (many.ms * 1e-3) / 1e12)


def test_v6_and_v7_are_predicted(g):
    for v in ("v6", "v7"):
        p = sim.predict(preset(v), 8192, 8192, 8192, gpu=g)
        assert 0 < p.tflops <= g.peak_tflops and p.ctas_per_sm == 1


# ---- the fast path and the ranking ----
SHAPES = ((8192, 8192, 8192, 1), (4096, 4096, 11008, 1), (16, 22016, 4096, 1), (1024, 1024, 16384, 1),
          (256, 256, 4096, 64), (4095, 4097, 4099, 1))


def _candidates(m, n, k, batch):
    from experiments.predict import candidates
    return candidates(m, n, k, batch)


@pytest.mark.parametrize("shape", SHAPES)
def test_fast_path_follows_the_full_model(shape):
    """sim.fast_predict against sim.predict with the same per-wave bytes: the steady state in closed
    form within 3% (median) and 15% (every candidate), and the same first choice within 1%."""
    m, n, k, batch = shape
    cands = _candidates(m, n, k, batch)[::3]
    errs, fast, full = [], {}, {}
    for s in cands:
        a = sim.fast_predict(s, m, n, k, gpu=G, batch=batch)
        b = sim.predict(s, m, n, k, gpu=G, batch=batch, reuse="per-wave")
        errs.append(abs(a.ms / b.ms - 1))
        fast[s.name], full[s.name] = a.timed_ms, b.timed_ms
    errs.sort()
    assert errs[len(errs) // 2] < 0.03 and errs[-1] < 0.15, errs
    assert full[min(fast, key=fast.get)] <= 1.01 * min(full.values())


def test_rank_is_fastest_first_and_quick():
    """sim.rank orders by one call's predicted time and takes well under 100 ms of CPU a shape
    for the whole candidate list (cold). CPU time, not the wall clock: the tests run a worker a
    core, and another worker's compile must not make this one late."""
    import importlib
    importlib.import_module("sim.rank")._RESULTS.clear()
    for m, n, k, batch in SHAPES:
        cands = _candidates(m, n, k, batch)
        t0 = time.process_time()
        ranked = sim.rank(cands, m, n, k, batch=batch)
        dt = time.process_time() - t0
        assert dt < 0.1, (m, n, k, dt)
        times = [ms for _, ms in ranked]
        assert times == sorted(times) and len(ranked) == len(cands)
    ranked = sim.rank([preset("v3"), preset("v1")], 1024, 1024, 1024)
    assert [s.name for s, _ in ranked] == ["v3", "v1"]   # V1's serial loop is the slower


def test_candidate_names_round_trip():
    from experiments.predict import parse_schedule_name, schedule_name
    for s in _candidates(16, 4096, 11008, 1):
        base = s.name.split(":")[0]
        assert parse_schedule_name(s.name) == s and schedule_name(base, s) == s.name


# ---- the command line takes every new field ----
def _run(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "sim.run", "--gpu", G, *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_accepts_every_new_field():
    import json
    r = _run("--json", "--version", "v5", "--producer-warps", "4", "--block", "128x256x64", "--stages", "3",
             "--wgmma-in-flight", "0", "--persistent", "1", "--cluster-m", "2", "--cluster-n", "1",
             "--producer-registers", "40", "--consumer-registers", "232", "--epilogue", "tma", "--accumulate",
             "float16", "--split-k", "2", "--swap-ab", "0", "--batch", "2", "--m", "2048", "--n", "2048", "--k", "4096")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    s = d["schedule"]
    assert (s["persistent"], s["cluster_m"], s["producer_registers"], s["consumer_registers"], s["epilogue"],
            s["accumulate"], s["split_k"], s["swap_ab"]) == (True, 2, 40, 232, "tma", "float16", 2, False)
    assert d["shape"]["batch"] == 2 and d["launch"]["k_slices"] == 2 and d["timed_ms"] > d["ms"]
    swap = _run("--json", "--version", "v3", "--swap-ab", "1", "--block", "128x16x64", "--m", "16", "--n", "4096")
    assert swap.returncode == 0 and json.loads(swap.stdout)["launch"]["gemm_mn"] == [4096, 16]
    text = _run("--version", "v7", "--cluster-m", "2", "--m", "1024", "--n", "1024", "--k", "1024")
    assert "one call" in text.stdout and "persistent" in text.stdout and "cluster 2x1" in text.stdout


@pytest.mark.parametrize("args,limit", [
    (("--version", "v7", "--cluster-m", "3"), "power of two"),
    (("--version", "v7", "--cluster-m", "4", "--cluster-n", "4"), "portable maximum"),
    (("--version", "v2", "--cluster-m", "2"), "a feature of the specialized"),
    (("--version", "v1", "--cluster-m", "2"), "a feature of the specialized"),
    (("--version", "v7", "--producer-registers", "30"), "multiple of 8"),
    (("--version", "v7", "--consumer-registers", "0"), "both producer_registers and consumer_registers"),
    (("--version", "v3", "--producer-registers", "40", "--consumer-registers", "232"), "whole warpgroups"),
    (("--version", "v7", "--consumer-registers", "248", "--producer-registers", "168"), "registers per role"),
    (("--version", "v7", "--stages", "5"), "shared memory"),
    (("--version", "v6", "--accumulate", "float32"), "accumulator registers"),
    (("--version", "v7", "--split-k", "0"), "split_k must be >= 1"),
    (("--version", "v1", "--persistent", "1"), "specialized-family"),
    (("--version", "v7", "--batch", "0"), "batch"),
])
def test_cli_refuses_impossible_schedules_naming_the_limit(args, limit):
    r = _run(*args)
    assert r.returncode == 2 and limit in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_v4_at_one_cta_per_sm_is_what_the_h200_measures(g):
    """v4 (128x128x64, two consumer warpgroups, 2 stages, 288 threads) fits 2 CTAs per SM only
    up to 96 registers per thread (9 warps: 5 per scheduler x 3072); the old build had 96 and
    measured 603 TFLOPS, the model 591. At 97+ registers one CTA per SM is left and the 2-stage
    ring cannot hide the load latency: 369, inside the 330-420 the current build measures. With 4
    stages at one CTA per SM the model gives 570."""
    two = sim.predict(preset("v4"), 8192, 8192, 8192, gpu=g, registers=96)
    one = sim.predict(preset("v4"), 8192, 8192, 8192, gpu=g, registers=104)
    assert two.ctas_per_sm == 2 and one.ctas_per_sm == 1 and one.limited_by == "registers"
    assert 330 < one.tflops < 420 < 560 < two.tflops


def test_lines_off_128_bytes_cost_the_rows_each_sm_requests(g):
    """Operands read from lines 16-byte but not 128-byte multiples apart (K = 2056 elements) slow a
    large unclustered kernel; a cluster that multicasts B requests half of B's rows per SM and
    slows less; a pitch that is not a 16-byte multiple is copied into a 128-byte one, so costs
    nothing here; contiguous aligned K is the default."""
    from sim.model import line_starts
    assert line_starts((2056, 2048)) == ("inside a sector", "line") and line_starts((4099, 4096)) == ("line", "line")
    assert line_starts((2064, 2000)) == ("sector", "sector")
    v7 = preset("v7")
    def slowdown(s):
        aligned = sim.fast_predict(s, 5632, 3072, 2048, gpu=g).ms
        return sim.fast_predict(s, 5632, 3072, 2048, gpu=g, line_pitch=(2056, 2056)).ms / aligned
    plain, clustered = slowdown(v7), slowdown(v7.replace(cluster_m=2))
    assert plain > 1.2 and 1.0 <= clustered < plain
    free = dataclasses.replace(g, l2_misaligned_row_clk=0.0)
    assert sim.fast_predict(v7, 5632, 3072, 2048, gpu=free, line_pitch=(2056, 2056)).ms == pytest.approx(
        sim.fast_predict(v7, 5632, 3072, 2048, gpu=free).ms)
    # lines that start on a 32-byte sector cost less than lines that start inside one
    sector = sim.fast_predict(v7, 5632, 3072, 2048, gpu=g, line_pitch=(2064, 2064)).ms
    assert 1.0 <= sector / sim.fast_predict(v7, 5632, 3072, 2048, gpu=g).ms < 1.1 < plain
